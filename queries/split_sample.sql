-- Keep $n protected units of the target split, chosen by a seeded hash rule (lowest
-- hashes first, unit id breaks ties); the other target records become 'excluded'.
-- The selection depends on the seed and the unit ids only, never on row order.
WITH units AS (
    SELECT DISTINCT CASE WHEN $unit = 'user' THEN user_id ELSE record_id END AS unit
    FROM records WHERE split = 'target'
),
chosen AS (
    SELECT unit FROM units
    ORDER BY dpspin_unit_hash(unit, 'sample:' || CAST($seed AS VARCHAR)), unit
    LIMIT $n
)
UPDATE records SET split = 'excluded'
WHERE split = 'target'
  AND (CASE WHEN $unit = 'user' THEN user_id ELSE record_id END) NOT IN (SELECT unit FROM chosen);
