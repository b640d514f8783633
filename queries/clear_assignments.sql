DELETE FROM assignments;
DELETE FROM pipeline WHERE step = 'assignments';
