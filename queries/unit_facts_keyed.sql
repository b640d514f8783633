-- sketch_units.sql and shared_users.sql in one pass, on a store whose user keys the catalog
-- proves one-to-one with user ids (sketch.canonical_facts): every user is grouped by its
-- integer key (DuckDB's perfect hash aggregate) instead of its id string. A record without
-- a key takes its user's key from `users`; a user the store does not know (no keyed
-- record can have it: the foreign key) is grouped by its id. Records without a user id
-- are counted, not grouped, as in the portable queries.
WITH keyed AS (
    SELECT user_key, split FROM records WHERE user_key IS NOT NULL AND user_id IS NOT NULL
    UNION ALL
    SELECT u.user_key, r.split
    FROM records AS r
    JOIN users AS u ON u.user_id = r.user_id
    WHERE r.user_key IS NULL
),
named AS (
    SELECT r.user_id, r.split
    FROM records AS r
    WHERE r.user_key IS NULL AND r.user_id IS NOT NULL AND r.user_id NOT IN (SELECT user_id FROM users)
),
per_user AS (
    SELECT bool_or(split = 'target') AS target, bool_or(split = 'aux') AS aux, bool_or(split <> 'aux') AS other
    FROM keyed
    GROUP BY user_key
    UNION ALL
    SELECT bool_or(split = 'target'), bool_or(split = 'aux'), bool_or(split <> 'aux')
    FROM named
    GROUP BY user_id
)
SELECT (SELECT count(*) FROM records WHERE split = 'target') AS n_records,
       (SELECT count(*) FROM records WHERE split = 'target' AND user_id IS NULL) AS n_without_user,
       (SELECT count(*) FROM per_user WHERE target) AS n_users,
       (SELECT count(*) FROM per_user WHERE aux AND other) AS shared_users,
       (SELECT count(*) FROM records WHERE split = 'aux' AND user_id IS NULL) AS aux_without_user;
