SELECT measurements FROM ledger WHERE release_id = $release_id;
