-- The aux split changed: a scorer fitted on the old aux split may have seen records
-- that are now protected, so it and the assignments it produced are dropped.
DELETE FROM assignments;
UPDATE records SET atom_ids = NULL, masses = NULL WHERE atom_ids IS NOT NULL OR masses IS NOT NULL;
DELETE FROM pipeline WHERE step = 'assignments';
UPDATE dictionary SET scorer = NULL;
