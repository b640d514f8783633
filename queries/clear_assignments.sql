DELETE FROM assignments;
