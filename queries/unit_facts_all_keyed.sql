-- unit_facts_keyed.sql when every record with a user id also has its user's key (the engine
-- counts the others first, in the same transaction): then grouping the records by key is
-- grouping them by user, with no join to `users` and no string in the hash table.
WITH per_user AS (
    SELECT bool_or(split = 'target') AS target, bool_or(split = 'aux') AS aux, bool_or(split <> 'aux') AS other
    FROM records
    WHERE user_id IS NOT NULL AND user_key IS NOT NULL
    GROUP BY user_key
)
SELECT (SELECT count(*) FROM records WHERE split = 'target') AS n_records,
       (SELECT count(*) FROM records WHERE split = 'target' AND user_id IS NULL) AS n_without_user,
       u.n_users, u.shared_users,
       (SELECT count(*) FROM records WHERE split = 'aux' AND user_id IS NULL) AS aux_without_user
FROM (SELECT count(*) FILTER (WHERE target) AS n_users, count(*) FILTER (WHERE aux AND other) AS shared_users
      FROM per_user) AS u;
