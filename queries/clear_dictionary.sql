-- A new dictionary invalidates the old atom ids, so assignments (and the record that
-- they were made) go with it.
DELETE FROM assignments;
UPDATE records SET atom_ids = NULL, masses = NULL WHERE atom_ids IS NOT NULL OR masses IS NOT NULL;
DELETE FROM pipeline WHERE step = 'assignments';
DELETE FROM atoms;
DELETE FROM dictionary;
