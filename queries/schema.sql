-- The dpspin store. Every table lives in one DuckDB file so that the data, the public
-- dictionary and the budget ledger that guards them travel together.
-- Integer surrogates of the users' own ids, assigned when records are loaded. Keys and ids
-- are one-to-one (PRIMARY KEY and UNIQUE), and the foreign key below makes DuckDB check on
-- every write that a record's (user_key, user_id) pair is a row of this table: so grouping
-- by user_key is grouping by user_id, proved by the catalog, not trusted (sketch/__init__.py).
CREATE TABLE IF NOT EXISTS users (
    user_key INTEGER PRIMARY KEY,
    user_id  VARCHAR NOT NULL UNIQUE,
    UNIQUE (user_key, user_id)
);
CREATE TABLE IF NOT EXISTS records (
    record_id VARCHAR PRIMARY KEY,
    user_id   VARCHAR,
    text      VARCHAR,
    split     VARCHAR NOT NULL DEFAULT 'target',   -- 'aux' | 'target' | 'excluded'
    metadata  JSON,
    user_key  INTEGER,                             -- users.user_key of user_id (NULL: not assigned)
    -- The record's assignment rows in canonical fixed point, as `dpspin assign` and
    -- `dpspin assignments load` write them (queries/canonicalise.sql): atom_ids[i] has
    -- weight masses[i] / 2^24. DuckDB checks on every write that the atoms are distinct and
    -- that the masses are non-negative with a sum of at most 2^24; that is what lets the
    -- sketch skip the per-record work for these records (queries/sketch_store_*.sql).
    -- Each check reads one column only: DuckDB re-evaluates a CHECK over two columns on
    -- every UPDATE of the table, which made `UPDATE records SET split = ...` 60x slower.
    atom_ids  INTEGER[] CHECK (COALESCE(len(list_distinct(atom_ids)) = list_count(atom_ids), TRUE)),
    masses    INTEGER[] CHECK (COALESCE(list_min(masses), 0) >= 0 AND COALESCE(list_sum(masses), 0) <= 16777216),
    FOREIGN KEY (user_key, user_id) REFERENCES users (user_key, user_id)
);
CREATE TABLE IF NOT EXISTS atoms (
    atom_id       INTEGER PRIMARY KEY,
    label         VARCHAR NOT NULL,
    description   VARCHAR,
    aux_support   DOUBLE,
    dictionary_id VARCHAR
);
-- Assignment rows as given (hand-written, hostile, or ones the canonical form cannot
-- hold: duplicated atoms, a record whose weights sum past 1). No constraints on purpose:
-- the sketch query re-imposes every bound itself. A record's logical assignment rows are
-- its rows here plus its canonical vector in `records`.
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
    row_hash     VARCHAR,       -- sha256 over this row's content and prev_hash
    plan_stored  BOOLEAN        -- its plan is in release_plans (hashed; NULL on rows of earlier versions)
);
-- The chain's other events (docs/DESIGN.md §4): the store's creation and every change of a
-- budget's total. One hash chain runs through this table and `ledger`, in `seq` order.
CREATE TABLE IF NOT EXISTS ledger_events (
    event_id      VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL,   -- 'created' | 'budget' | 'migrated'
    dataset       VARCHAR,
    created_at    TIMESTAMP NOT NULL,
    epsilon_total DOUBLE,
    delta_total   DOUBLE,
    details       VARCHAR,            -- JSON
    seq           BIGINT NOT NULL,
    prev_hash     VARCHAR NOT NULL,
    row_hash      VARCHAR NOT NULL
);
-- Each release's plan and dictionary, exactly as their files are written, stored in the
-- transaction that charges the release: a paid-for plan is never lost (`dpspin recover`).
CREATE TABLE IF NOT EXISTS release_plans (
    release_id VARCHAR PRIMARY KEY,
    plan       VARCHAR NOT NULL,
    dictionary VARCHAR NOT NULL
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
-- The view assignment_rows (every logical assignment row) is created by schema_migrate.sql,
-- which runs next: on a store of an older version its records table gets the vector columns
-- there first, and a view over columns that do not exist yet cannot be created.
