-- The canonical vector of every staged record that can hold one ($scale = 2^24).
-- A record qualifies when it is in `records`, has no vector and no raw rows yet, and its
-- rows that can ever count (a finite positive weight of at least one unit, a known atom)
-- name no atom twice and sum to at most $scale: then its vector (atom_ids, masses) is
-- exactly those rows, and the rows that can never count (dropped by every sketch
-- whatever the filter, K or split) are left out. Every other record's rows are stored as
-- given in `assignments` (insert_assignments.sql). Atom ids refer to the current
-- dictionary; replacing it clears both forms (clear_dictionary.sql).
CREATE OR REPLACE TEMP TABLE staged_vectors AS
WITH rows AS (
    SELECT CAST(record_id AS VARCHAR) AS record_id, CAST(atom_id AS INTEGER) AS atom_id,
           dpspin_fix(CAST(weight AS DOUBLE), $scale) AS w
    FROM staging_assignments
),
counted AS (
    SELECT r.record_id, r.atom_id, r.w
    FROM rows AS r
    JOIN atoms AS d ON d.atom_id = r.atom_id
    WHERE r.w > 0
),
per_record AS (
    SELECT r.record_id,
           COUNT(c.atom_id) AS n,
           COUNT(DISTINCT c.atom_id) AS n_atoms,
           COALESCE(SUM(c.w), 0) AS total,
           list(c.atom_id ORDER BY c.w DESC, c.atom_id) FILTER (WHERE c.atom_id IS NOT NULL) AS atom_ids,
           list(CAST(c.w AS INTEGER) ORDER BY c.w DESC, c.atom_id) FILTER (WHERE c.atom_id IS NOT NULL) AS masses
    FROM (SELECT DISTINCT record_id FROM rows WHERE record_id IS NOT NULL) AS r
    LEFT JOIN counted AS c ON c.record_id = r.record_id
    GROUP BY r.record_id
)
SELECT p.record_id, p.atom_ids, p.masses
FROM per_record AS p
JOIN records AS t ON t.record_id = p.record_id
WHERE p.n = p.n_atoms AND p.total <= $scale AND t.atom_ids IS NULL AND t.masses IS NULL
  AND p.record_id NOT IN (SELECT record_id FROM assignments WHERE record_id IS NOT NULL);
