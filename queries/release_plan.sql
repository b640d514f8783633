-- The stored plan of one release (NULL release id: the last release that has one), with its ledger row's hash.
SELECT l.release_id, l.seq, l.row_hash, l.epsilon, l.delta, p.plan, p.dictionary
FROM ledger l JOIN release_plans p USING (release_id)
WHERE $release_id IS NULL OR l.release_id = $release_id
ORDER BY l.seq DESC NULLS LAST
LIMIT 1;
