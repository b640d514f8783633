-- A new dictionary invalidates the old atom ids, so assignments (and the record that
-- they were made) go with it.
DELETE FROM assignments;
-- (the canonical vectors in records: store.clear_vectors, run with this file)
DELETE FROM pipeline WHERE step = 'assignments';
DELETE FROM atoms;
DELETE FROM dictionary;
