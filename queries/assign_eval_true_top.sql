-- Evaluation only: the $L most frequent true metadata combinations of the target split
-- (ties by the combination's text), keyed like assign_eval_top1.sql.
SELECT array_to_string(list_transform($fields, lambda f: COALESCE(NULLIF(TRIM(json_extract_string(metadata, f)), ''), chr(0))), chr(31)) AS skey,
       count(*) AS n
FROM records
WHERE split = 'target'
GROUP BY skey
ORDER BY n DESC, skey ASC
LIMIT $L;
