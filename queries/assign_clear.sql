-- A new assignment map replaces every previous assignment row.
DELETE FROM assignments;
-- (the canonical vectors in records: store.clear_vectors, run with this file)
DELETE FROM pipeline WHERE step = 'assignments';
