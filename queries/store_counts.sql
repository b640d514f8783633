SELECT
    (SELECT count(*) FROM records WHERE split = 'aux'),
    (SELECT count(*) FROM records WHERE split = 'target'),
    (SELECT count(*) FROM records WHERE split = 'excluded'),
    (SELECT count(DISTINCT user_id) FROM records WHERE split = 'target'),
    (SELECT count(*) FROM atoms),
    (SELECT count(*) FROM assignments) + (SELECT COALESCE(SUM(len(atom_ids)), 0) FROM records);
