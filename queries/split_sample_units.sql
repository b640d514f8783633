-- Protected units available in the target split.
SELECT count(DISTINCT CASE WHEN $unit = 'user' THEN user_id ELSE record_id END)
FROM records WHERE split = 'target';
