SELECT release_id, created_at, mechanism, epsilon, delta, params, plan_path
FROM ledger WHERE dataset = $dataset ORDER BY created_at, release_id;
