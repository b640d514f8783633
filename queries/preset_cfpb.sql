-- CFPB complaints (the registered view cfpb_export: the CFPB's CSV or JSON export, or the
-- project's snake_cased JSON Lines, under one set of names, presets.CFPB_COLUMNS): one record per
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
FROM cfpb_export
WHERE narrative IS NOT NULL AND TRIM(narrative) <> '';
