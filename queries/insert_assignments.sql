-- Bring-your-own-classifier assignments. Rows of records that got a canonical vector
-- (canonicalise.sql, run first) are already stored there; every other row is loaded as
-- given: the sketch query, not this loader, is what enforces non-negativity,
-- K-sparsity and the L1 bounds.
INSERT INTO assignments (record_id, atom_id, weight)
SELECT CAST(record_id AS VARCHAR), CAST(atom_id AS INTEGER), CAST(weight AS DOUBLE)
FROM staging_assignments
WHERE record_id IS NULL OR CAST(record_id AS VARCHAR) NOT IN (SELECT record_id FROM staged_vectors);
DROP TABLE staged_vectors;
