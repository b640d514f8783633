-- A new assignment map replaces every previous assignment row.
DELETE FROM assignments;
UPDATE records SET atom_ids = NULL, masses = NULL WHERE atom_ids IS NOT NULL OR masses IS NOT NULL;
DELETE FROM pipeline WHERE step = 'assignments';
