-- Copy the mapped staging relation into `records`. The loader has renamed the user's
-- id/user/text columns to __record_id/__user_id/__text; every other column is kept
-- as JSON metadata (public atoms may be built from it on the auxiliary split).
INSERT INTO records (record_id, user_id, text, split, metadata)
SELECT
    CAST(__record_id AS VARCHAR),
    NULLIF(TRIM(CAST(__user_id AS VARCHAR)), ''),
    CAST(__text AS VARCHAR),
    $split,
    to_json(struct_pack(*COLUMNS(* EXCLUDE (__record_id, __user_id, __text))))
FROM staging;
