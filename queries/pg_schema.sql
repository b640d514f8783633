-- The tables the PostgreSQL engine reads, in the store's own shape (a warehouse that
-- already holds them needs none of this; `postgres.copy_store` uses it for tests and
-- for moving a store to a server). No constraints on assignments: the sketch enforces.
CREATE TABLE IF NOT EXISTS records (
    record_id TEXT PRIMARY KEY,
    user_id   TEXT,
    text      TEXT,
    split     TEXT NOT NULL,
    metadata  TEXT
);
CREATE TABLE IF NOT EXISTS assignments (
    record_id TEXT,
    atom_id   INTEGER,
    weight    DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS atoms (
    atom_id     INTEGER PRIMARY KEY,
    label       TEXT NOT NULL,
    description TEXT
);
TRUNCATE records, assignments, atoms;
