SELECT epsilon, delta FROM ledger WHERE dataset = $dataset ORDER BY created_at, release_id;
