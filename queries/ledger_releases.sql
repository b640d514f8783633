SELECT release_id, created_at, mechanism, epsilon, delta, params, plan_path, row_hash
FROM ledger WHERE dataset = $dataset ORDER BY seq, created_at, release_id;
