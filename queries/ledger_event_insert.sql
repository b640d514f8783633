INSERT INTO ledger_events (event_id, kind, dataset, created_at, epsilon_total, delta_total, details, seq,
                           prev_hash, row_hash)
VALUES ($event_id, $kind, $dataset, $created_at, $eps, $delta, $details, $seq, $prev_hash, $row_hash);
