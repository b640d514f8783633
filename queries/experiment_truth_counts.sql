-- True label counts of the target split per label key ($fields: the metadata fields of
-- the key, e.g. CFPB Product / Issue / Sub-issue), for the experiments' value-error metrics.
SELECT list_transform($fields, lambda f: NULLIF(TRIM(json_extract_string(metadata, f)), '')) AS key, count(*)
FROM records
WHERE split = 'target'
GROUP BY key;
