-- The canonical vector of every staged record that can hold one ($scale = 2^24).
-- A record qualifies when it is in `records`, has no vector and no raw rows yet, and its
-- rows that can ever count (a finite positive weight of at least one unit, a known atom)
-- name no atom twice and sum to at most $scale: then its vector (atom_ids, masses) is
-- exactly those rows, and the rows that can never count (dropped by every sketch
-- whatever the filter, K or split) are left out. Every other record's rows are stored as
-- given in `assignments` (insert_assignments.sql). Atom ids refer to the current
-- dictionary; replacing it clears both forms (clear_dictionary.sql).
--
-- One hash aggregation over the rows: each counting row's (mass, atom) is packed into one
-- BIGINT whose ascending order is mass descending, then atom id ($scale - w < 2^24 above
-- the atom id's 32 bits offset by 2^31), so a plain `list` sorted once per record gives
-- the vector's order (an ordered aggregate, `list(... ORDER BY ...)`, sorted every group
-- apart and took 4 of the statement's 9 CPU-seconds at 10^6 records). An atom named
-- twice is a packed list whose atoms are not distinct (the CHECK on records.atom_ids).
-- `n_rows` (every staged row of the record) tells the loader when no row is left for
-- `assignments` (insert_assignments.sql is skipped then: it would read the file for nothing).
CREATE OR REPLACE TEMP TABLE staged_vectors AS
WITH rows AS (
    SELECT CAST(s.record_id AS VARCHAR) AS record_id, CAST(s.atom_id AS INTEGER) AS atom_id,
           dpspin_fix(CAST(s.weight AS DOUBLE), $scale) AS w, d.atom_id IS NOT NULL AS known
    FROM staging_assignments AS s
    LEFT JOIN atoms AS d ON d.atom_id = CAST(s.atom_id AS INTEGER)
),
per_record AS (
    SELECT record_id,
           list_sort(list(($scale - w) * 4294967296 + (CAST(atom_id AS BIGINT) + 2147483648))
                     FILTER (WHERE known AND w > 0)) AS packed,
           COALESCE(SUM(w) FILTER (WHERE known AND w > 0), 0) AS total,
           count(*) AS n_rows
    FROM rows
    WHERE record_id IS NOT NULL
    GROUP BY record_id
),
unpacked AS (
    SELECT record_id, total, n_rows,
           list_transform(packed, lambda k: CAST(k % 4294967296 - 2147483648 AS INTEGER)) AS atom_ids,
           list_transform(packed, lambda k: CAST($scale - k // 4294967296 AS INTEGER)) AS masses
    FROM per_record
)
SELECT p.record_id, p.atom_ids, p.masses, p.n_rows
FROM unpacked AS p
JOIN records AS t ON t.record_id = p.record_id
WHERE COALESCE(len(list_distinct(p.atom_ids)) = len(p.atom_ids), TRUE) AND p.total <= $scale
  AND t.atom_ids IS NULL AND t.masses IS NULL
  AND p.record_id NOT IN (SELECT record_id FROM assignments WHERE record_id IS NOT NULL);
