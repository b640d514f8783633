SELECT count(*) FROM staging WHERE __record_id IS NULL;
