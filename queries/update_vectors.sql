-- The records with the vectors in `staged_vectors` (canonicalise.sql or dpspin_sql.canonical
-- found them; records with no countable row keep none); with $replace, every record not
-- staged loses the vector it had (a new assignment map), in the same rewrite.
-- store.rewrite_records writes these rows as the new records table.
SELECT r.* REPLACE (CASE WHEN v.record_id IS NOT NULL THEN v.atom_ids
                         WHEN $replace THEN NULL ELSE r.atom_ids END AS atom_ids,
                    CASE WHEN v.record_id IS NOT NULL THEN v.masses
                         WHEN $replace THEN NULL ELSE r.masses END AS masses)
FROM records AS r
LEFT JOIN staged_vectors AS v ON v.record_id = r.record_id AND v.atom_ids IS NOT NULL
