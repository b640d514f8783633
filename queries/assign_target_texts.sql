-- Target records to assign, streamed in batches by the assignment map. Only the
-- protected split is read here; the scorer was fitted before this runs.
SELECT record_id, COALESCE(text, '') AS text
FROM records
WHERE split = 'target';
