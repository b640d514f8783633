-- Users with records on both sides of the aux/target split, and aux records whose user
-- is unknown. A user-level guarantee needs neither: the atoms and the fitted scorer,
-- which are public, come from the auxiliary records, and a protected user must not
-- have shaped them.
SELECT
    (SELECT count(*) FROM (
        SELECT user_id
        FROM records
        WHERE user_id IS NOT NULL
        GROUP BY user_id
        HAVING bool_or(split = 'aux') AND bool_or(split <> 'aux')
    ) AS shared) AS shared_users,
    (SELECT count(*) FROM records WHERE split = 'aux' AND user_id IS NULL) AS aux_without_user;
