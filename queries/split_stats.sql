-- Per-split record and user counts, and users found on both sides of aux/non-aux
-- (zero after a user-level split).
SELECT
    count(*) FILTER (WHERE split = 'aux') AS aux_records,
    count(*) FILTER (WHERE split = 'target') AS target_records,
    count(*) FILTER (WHERE split = 'excluded') AS excluded_records,
    count(DISTINCT user_id) FILTER (WHERE split = 'aux') AS aux_users,
    count(DISTINCT user_id) FILTER (WHERE split = 'target') AS target_users,
    (SELECT count(*) FROM (
        SELECT user_id FROM records WHERE user_id IS NOT NULL
        GROUP BY user_id
        HAVING count(*) FILTER (WHERE split = 'aux') > 0 AND count(*) FILTER (WHERE split <> 'aux') > 0
    )) AS shared_users
FROM records;
