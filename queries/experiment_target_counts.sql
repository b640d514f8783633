-- Records and distinct users of the target split, recorded per experiment run.
SELECT count(*), count(DISTINCT user_id) FROM records WHERE split = 'target';
