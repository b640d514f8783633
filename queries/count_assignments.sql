SELECT count(*) FROM assignments;
