COPY records (record_id, user_id, text, split, metadata) FROM STDIN
