-- A new assignment map replaces every previous assignment row.
DELETE FROM assignments;
DELETE FROM pipeline WHERE step = 'assignments';
