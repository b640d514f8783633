-- The staged records' users that the store does not know yet get the next integer keys
-- (in user_id order; keys are dense from 0). `insert_records` then stores each record's key.
INSERT INTO users (user_key, user_id)
SELECT (SELECT COALESCE(MAX(user_key), -1) FROM users) + row_number() OVER (ORDER BY user_id), user_id
FROM (SELECT DISTINCT NULLIF(TRIM(CAST(__user_id AS VARCHAR)), '') AS user_id FROM staging) AS s
WHERE user_id IS NOT NULL AND user_id NOT IN (SELECT user_id FROM users);
