UPDATE ledger_head SET seq = $seq, head_hash = $head_hash WHERE id = 1 AND seq = $previous_seq;
