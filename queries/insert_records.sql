-- Copy the mapped staging relation into `records`. The loader has renamed the user's
-- id/user/text columns to __record_id/__user_id/__text; every other column is kept
-- as JSON metadata (public atoms may be built from it on the auxiliary split). Each
-- record gets its user's integer key (insert_users.sql) and the rows go in in key order,
-- so a user's records sit together in the table whatever order the file had.
INSERT INTO records (record_id, user_id, text, split, metadata, user_key)
SELECT s.record_id, s.user_id, s.text, $split, s.metadata, u.user_key
FROM (
    SELECT
        CAST(__record_id AS VARCHAR) AS record_id,
        NULLIF(TRIM(CAST(__user_id AS VARCHAR)), '') AS user_id,
        CAST(__text AS VARCHAR) AS text,
        to_json(struct_pack(*COLUMNS(* EXCLUDE (__record_id, __user_id, __text)))) AS metadata
    FROM staging
) AS s
LEFT JOIN users AS u ON u.user_id = s.user_id
ORDER BY u.user_key, s.record_id;
