-- Every event of the chain other than a release (creation, budget changes), with everything its hash covers.
SELECT seq, prev_hash, row_hash, event_id, kind, dataset, created_at, epsilon_total, delta_total, details
FROM ledger_events ORDER BY seq, created_at, event_id;
