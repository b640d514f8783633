-- A new dictionary invalidates the old atom ids, so assignments (and the record that
-- they were made) go with it.
DELETE FROM assignments;
DELETE FROM pipeline WHERE step = 'assignments';
DELETE FROM atoms;
DELETE FROM dictionary;
