-- CFPB complaints (JSONL with the CFPB export's columns, snake_cased): one record per
-- complaint, the narrative as text, Product / Issue / Sub-issue kept as metadata for the
-- `metadata` atom builder. No user id exists in CFPB data (record level only).
-- A complaint without an id (one in the shared sample) keeps its record under a
-- surrogate id derived from its narrative, marked `noid-`, rather than being dropped.
SELECT
    COALESCE(CAST(complaint_id AS VARCHAR), 'noid-' || md5(narrative)) AS record_id,
    narrative AS text,
    product,
    sub_product,
    issue,
    sub_issue,
    company,
    state,
    CAST(date_received AS VARCHAR) AS date_received
FROM read_json($path, format = 'newline_delimited')
WHERE narrative IS NOT NULL AND TRIM(narrative) <> '';
