SELECT epsilon, delta, measurements, release_id FROM ledger WHERE dataset = $dataset ORDER BY seq, created_at, release_id;
