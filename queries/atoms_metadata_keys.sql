-- Metadata columns present in the auxiliary split (what --fields may name).
SELECT DISTINCT unnest(json_keys(metadata)) AS key
FROM records
WHERE split = 'aux' AND metadata IS NOT NULL
ORDER BY key;
