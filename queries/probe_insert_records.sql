-- Probe-atom experiment: add the registered synthetic probe records to the target split.
INSERT INTO records (record_id, user_id, text, split, metadata)
SELECT record_id, user_id, text, 'target', NULL FROM probe_records;
