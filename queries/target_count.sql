-- The target split's record count (record-level releases need no user facts).
SELECT count(*) AS n_records FROM records WHERE split = 'target';
