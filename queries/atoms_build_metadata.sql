-- Top-$m combinations of the chosen metadata columns by auxiliary support (records of
-- the aux split only). Empty strings count as missing; a combination needs at least
-- one non-missing value. Ties break on the combination's text, so the ranking is
-- deterministic. `candidates` is the number of distinct combinations before the cut.
WITH aux AS (
    SELECT list_transform($fields, lambda f: NULLIF(TRIM(json_extract_string(metadata, f)), '')) AS key
    FROM records
    WHERE split = 'aux'
),
combos AS (
    SELECT key, count(*) AS support
    FROM aux
    WHERE list_bool_or(list_transform(key, lambda v: v IS NOT NULL))
    GROUP BY key
)
SELECT key, support, count(*) OVER () AS candidates
FROM combos
ORDER BY support DESC, array_to_string(list_transform(key, lambda v: COALESCE(v, '')), chr(31)) ASC
LIMIT $m;
