-- Store the vectors canonicalise.sql found (records with no countable row keep none).
UPDATE records SET atom_ids = v.atom_ids, masses = v.masses
FROM staged_vectors AS v
WHERE records.record_id = v.record_id AND v.atom_ids IS NOT NULL;
