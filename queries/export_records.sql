SELECT record_id, user_id, text, split, CAST(metadata AS VARCHAR) FROM records;
