-- Dataset statistics: the per-user contribution distribution (users with several records,
-- quantiles, and users bucketed by their number of records; the bucket aliases are the keys
-- of `users_by_records`, in this order).
WITH per AS (
    SELECT user_id, count(*) AS k FROM records WHERE user_id IS NOT NULL GROUP BY user_id
)
SELECT
    count(*) FILTER (WHERE k > 1) AS several,
    avg(k) AS mean,
    quantile_cont(k, 0.5) AS p50,
    quantile_cont(k, 0.9) AS p90,
    quantile_cont(k, 0.99) AS p99,
    max(k) AS max,
    count(*) FILTER (WHERE k >= 1 AND k <= 1) AS "1",
    count(*) FILTER (WHERE k >= 2 AND k <= 2) AS "2",
    count(*) FILTER (WHERE k >= 3 AND k <= 3) AS "3",
    count(*) FILTER (WHERE k >= 4 AND k <= 5) AS "4-5",
    count(*) FILTER (WHERE k >= 6 AND k <= 10) AS "6-10",
    count(*) FILTER (WHERE k >= 11 AND k <= 20) AS "11-20",
    count(*) FILTER (WHERE k >= 21) AS ">=21"
FROM per;
