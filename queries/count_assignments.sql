-- Logical assignment rows: those stored as given plus the entries of canonical vectors.
SELECT (SELECT count(*) FROM assignments) + (SELECT COALESCE(SUM(len(atom_ids)), 0) FROM records);
