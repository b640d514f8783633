-- The records with the vectors canonicalise.sql found (records with no countable row keep
-- none); store.rewrite_records writes these rows as the new records table.
SELECT r.* REPLACE (COALESCE(v.atom_ids, r.atom_ids) AS atom_ids, COALESCE(v.masses, r.masses) AS masses)
FROM records AS r
LEFT JOIN staged_vectors AS v ON v.record_id = r.record_id AND v.atom_ids IS NOT NULL
