-- Does the store have auxiliary records, and do any lack a user id? (A user-level release
-- from files checks the files' users against the store's auxiliary users.)
SELECT count(*) AS n_aux, count(*) FILTER (WHERE user_id IS NULL) AS aux_without_user
FROM records
WHERE split = 'aux';
