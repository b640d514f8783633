-- Public-shape facts about the target split the release needs before it runs:
-- records, distinct users, and records without a user id (an error at user level).
SELECT count(*) AS n_records,
       count(DISTINCT user_id) AS n_users,
       count(*) FILTER (WHERE user_id IS NULL) AS n_without_user
FROM records
WHERE split = 'target';
