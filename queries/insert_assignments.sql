-- Bring-your-own-classifier assignments. Loaded as given: the sketch query, not this
-- loader, is what enforces non-negativity, K-sparsity and the L1 bounds.
INSERT INTO assignments (record_id, atom_id, weight)
SELECT CAST(record_id AS VARCHAR), CAST(atom_id AS INTEGER), CAST(weight AS DOUBLE)
FROM staging_assignments;
