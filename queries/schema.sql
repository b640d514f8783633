-- The dpspin store. Every table lives in one DuckDB file so that the data, the public
-- dictionary and the budget ledger that guards them travel together.
CREATE TABLE IF NOT EXISTS records (
    record_id VARCHAR PRIMARY KEY,
    user_id   VARCHAR,
    text      VARCHAR,
    split     VARCHAR NOT NULL DEFAULT 'target',   -- 'aux' | 'target' | 'excluded'
    metadata  JSON
);
CREATE TABLE IF NOT EXISTS atoms (
    atom_id       INTEGER PRIMARY KEY,
    label         VARCHAR NOT NULL,
    description   VARCHAR,
    aux_support   DOUBLE,
    dictionary_id VARCHAR
);
-- No constraints on purpose: the sketch query re-imposes every bound itself.
CREATE TABLE IF NOT EXISTS assignments (
    record_id VARCHAR,
    atom_id   INTEGER,
    weight    DOUBLE
);
CREATE TABLE IF NOT EXISTS dictionary (
    dictionary_id VARCHAR,
    builder       VARCHAR,
    manifest      JSON,
    scorer        BLOB,
    created_at    TIMESTAMP
);
CREATE TABLE IF NOT EXISTS budget (
    dataset       VARCHAR PRIMARY KEY,
    epsilon_total DOUBLE NOT NULL,
    delta_total   DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    release_id   VARCHAR PRIMARY KEY,
    dataset      VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    mechanism    VARCHAR NOT NULL,
    epsilon      DOUBLE NOT NULL,
    delta        DOUBLE NOT NULL,
    params       JSON,
    measurements JSON,
    plan_path    VARCHAR,
    seq          BIGINT,        -- position in the hash chain (1, 2, ...)
    prev_hash    VARCHAR,       -- row_hash of the previous row (the genesis hash for the first)
    row_hash     VARCHAR        -- sha256 over this row's content and prev_hash
);
-- The head of the ledger's hash chain (one row; see queries/ledger_head.sql).
CREATE TABLE IF NOT EXISTS ledger_head (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    seq       BIGINT NOT NULL,
    head_hash VARCHAR NOT NULL
);
-- Which pipeline steps ran (the release's preconditions are checked on these facts
-- about what the curator did, never on the protected records themselves).
CREATE TABLE IF NOT EXISTS pipeline (
    step          VARCHAR PRIMARY KEY,   -- 'assignments'
    dictionary_id VARCHAR,
    done_at       TIMESTAMP
);
