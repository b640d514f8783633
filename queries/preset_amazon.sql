-- Amazon Reviews 2023 (JSONL: user_id, parent_asin, asin, rating, title, text,
-- timestamp, ...). Text is title + body. Exact duplicate reviews (the same review
-- listed twice in the source) are dropped: one per (user, item, time, rating, title,
-- text). The record id is a hash of that key, so it is stable across loads.
WITH src AS (
    SELECT * FROM read_json($path, format = 'newline_delimited')
),
dedup AS (
    SELECT DISTINCT ON (user_id, parent_asin, asin, "timestamp", rating, title, text)
           user_id, parent_asin, asin, rating, title, text, "timestamp"
    FROM src
    ORDER BY user_id, parent_asin, asin, "timestamp", rating, title, text
)
SELECT
    'amz-' || substr(md5(concat_ws(chr(31), user_id, parent_asin, asin, CAST("timestamp" AS VARCHAR),
                                   CAST(rating AS VARCHAR), title, text)), 1, 24) AS record_id,
    user_id,
    TRIM(concat_ws('. ', NULLIF(TRIM(title), ''), NULLIF(TRIM(text), ''))) AS text,
    parent_asin,
    CAST(rating AS DOUBLE) AS rating,
    CAST("timestamp" AS BIGINT) AS "timestamp"
FROM dedup;
