-- Bring-your-own-classifier assignments. Rows of records that got a canonical vector
-- (canonicalise.sql, run first) are already stored there; every other row is loaded as
-- given: the sketch query, not this loader, is what enforces non-negativity,
-- K-sparsity and the L1 bounds. $any_raw is false when the staged records' rows are all the
-- file's rows (store.write_assignments counts them): then nothing is inserted and the file is
-- not read again. (store.write_assignments drops staged_vectors after.)
INSERT INTO assignments (record_id, atom_id, weight)
SELECT CAST(record_id AS VARCHAR), CAST(atom_id AS INTEGER), CAST(weight AS DOUBLE)
FROM staging_assignments
WHERE $any_raw AND (record_id IS NULL OR CAST(record_id AS VARCHAR) NOT IN (SELECT record_id FROM staged_vectors));
