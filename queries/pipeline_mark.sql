-- Record that a pipeline step ran for the current dictionary.
INSERT INTO pipeline (step, dictionary_id, done_at)
SELECT $step, (SELECT max(dictionary_id) FROM dictionary), $done_at
ON CONFLICT (step) DO UPDATE SET dictionary_id = excluded.dictionary_id, done_at = excluded.done_at;
