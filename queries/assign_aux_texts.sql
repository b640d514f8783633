-- The auxiliary split only: the scorer's vocabulary, IDF weights, centroids and
-- classifier are fitted on these rows and nothing else.
SELECT record_id, COALESCE(text, '') AS text, metadata
FROM records
WHERE split = 'aux'
ORDER BY record_id;
