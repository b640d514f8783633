-- Bring a store written by an earlier version up to this schema (idempotent).
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS seq BIGINT;
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS prev_hash VARCHAR;
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS row_hash VARCHAR;
