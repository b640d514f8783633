SELECT count(*) FROM records;
