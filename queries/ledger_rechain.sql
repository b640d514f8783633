UPDATE ledger SET seq = $seq, prev_hash = $prev_hash, row_hash = $row_hash WHERE release_id = $release_id;
