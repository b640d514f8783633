-- Bring a store written by an earlier version up to this schema (idempotent).
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS seq BIGINT;
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS prev_hash VARCHAR;
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS row_hash VARCHAR;
ALTER TABLE ledger ADD COLUMN IF NOT EXISTS plan_stored BOOLEAN;
-- Stores written before the canonical vectors: the columns arrive without the CHECKs and the
-- foreign key (ALTER TABLE cannot add them), so the sketch never takes the fast path there
-- (sketch.canonical_facts reads the catalog) and treats the columns as untrusted rows.
CREATE TABLE IF NOT EXISTS users (
    user_key INTEGER PRIMARY KEY,
    user_id  VARCHAR NOT NULL UNIQUE,
    UNIQUE (user_key, user_id)
);
ALTER TABLE records ADD COLUMN IF NOT EXISTS user_key INTEGER;
ALTER TABLE records ADD COLUMN IF NOT EXISTS atom_ids INTEGER[];
ALTER TABLE records ADD COLUMN IF NOT EXISTS masses INTEGER[];
-- Every logical assignment row: the rows stored as given and the entries of the canonical
-- vectors (weight = mass / 2^24, exact in DOUBLE). What the other engines read and what a
-- curator queries; the DuckDB sketch reads both forms itself (queries/sketch_store_*.sql).
CREATE VIEW IF NOT EXISTS assignment_rows AS
SELECT record_id, atom_id, weight FROM assignments
UNION ALL
SELECT record_id, unnest(atom_ids) AS atom_id, unnest(masses) / 16777216 AS weight
FROM records
WHERE atom_ids IS NOT NULL OR masses IS NOT NULL;
