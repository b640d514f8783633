-- The head of the ledger's hash chain: one row, updated by every charge. Two charges
-- that run at once both update this row, so one of them conflicts and is retried after
-- re-reading what was spent: no charge can commit on a stale view of the budget.
SELECT seq, head_hash FROM ledger_head WHERE id = 1;
