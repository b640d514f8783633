-- The aux split changed: a scorer fitted on the old aux split may have seen records
-- that are now protected, so it and the assignments it produced are dropped.
DELETE FROM assignments;
-- (the canonical vectors in records: store.clear_vectors, run with this file)
DELETE FROM pipeline WHERE step = 'assignments';
UPDATE dictionary SET scorer = NULL;
