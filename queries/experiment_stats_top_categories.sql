-- Dataset statistics: the $top most frequent values of one metadata field ($field), read
-- as a JSON string ($how = 'string'), as the JSON text of the value ('json', e.g. numeric
-- ratings) or as a $sep-separated list of several values per record ('split').
SELECT v, count(*) AS c FROM (
    SELECT unnest(CASE $how
        WHEN 'split' THEN string_split(json_extract_string(metadata, $field), $sep)
        WHEN 'json' THEN [CAST(json_extract(metadata, $field) AS VARCHAR)]
        ELSE [json_extract_string(metadata, $field)]
    END) AS v
    FROM records
)
WHERE v IS NOT NULL
GROUP BY v
ORDER BY c DESC, v
LIMIT $top;
