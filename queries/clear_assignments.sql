DELETE FROM assignments;
-- (the canonical vectors in records: store.clear_vectors, run with this file)
DELETE FROM pipeline WHERE step = 'assignments';
