-- A dpspin store as versions before the canonical vectors wrote it (no users table, records
-- without user_key/atom_ids/masses and their CHECKs, a ledger without its hash chain, no
-- ledger events): tests/test_catalog_proofs.py opens it to check the migration takes no proof.
CREATE TABLE records (record_id VARCHAR PRIMARY KEY, user_id VARCHAR, text VARCHAR,
    split VARCHAR NOT NULL DEFAULT 'target', metadata JSON);
CREATE TABLE atoms (atom_id INTEGER PRIMARY KEY, label VARCHAR NOT NULL, description VARCHAR,
    aux_support DOUBLE, dictionary_id VARCHAR);
CREATE TABLE assignments (record_id VARCHAR, atom_id INTEGER, weight DOUBLE);
CREATE TABLE dictionary (dictionary_id VARCHAR, builder VARCHAR, manifest JSON, scorer BLOB, created_at TIMESTAMP);
CREATE TABLE budget (dataset VARCHAR PRIMARY KEY, epsilon_total DOUBLE NOT NULL, delta_total DOUBLE NOT NULL);
CREATE TABLE ledger (release_id VARCHAR PRIMARY KEY, dataset VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL,
    mechanism VARCHAR NOT NULL, epsilon DOUBLE NOT NULL, delta DOUBLE NOT NULL, params JSON,
    measurements JSON, plan_path VARCHAR);
CREATE TABLE pipeline (step VARCHAR PRIMARY KEY, dictionary_id VARCHAR, done_at TIMESTAMP);
INSERT INTO budget VALUES ('default', 1.0, 1e-5);
