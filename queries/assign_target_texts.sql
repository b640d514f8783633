-- Target records to assign, streamed in batches by the assignment map. Only the
-- protected split is read here (excluded records too, so re-sampling needs no
-- re-assignment); the scorer was fitted before this runs.
SELECT record_id, COALESCE(text, '') AS text
FROM records
WHERE split IN ('target', 'excluded');   -- excluded: target records outside the current sample
