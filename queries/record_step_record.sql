-- The record step of the record-level sketch, written once and included (`-- @include`, queries.load)
-- by sketch_record.sql (the portable form) and sketch_store_record.sql (the store's slow records):
-- drop bad weights, keep each record's top $K atoms (atom-index tie-break), renormalise a record
-- over one unit so that Σ v ≤ $scale exactly. Reads `positive`'s input CTE `cleaned`; defines
-- positive, per_record, irregular, deduplicated, ranked, kept and record_vectors. The
-- regular/irregular split is explained in sketch_record.sql.
positive AS (
    SELECT record_id, atom_id, w FROM cleaned WHERE w > 0
),
per_record AS (
    SELECT record_id, COUNT(*) AS n, SUM(w) AS total, MIN(atom_id) AS lo, MAX(atom_id) AS hi,
           SUM(atom_id) AS atom_sum
    FROM positive
    GROUP BY record_id
),
irregular AS (
    SELECT record_id FROM per_record
    WHERE NOT (n <= $K AND total <= $scale
               AND (n = 1 OR (n = 2 AND lo < hi)
                    OR (n = 3 AND lo < atom_sum - lo - hi AND atom_sum - lo - hi < hi)))
),
deduplicated AS (
    SELECT p.record_id, p.atom_id, MAX(p.w) AS w
    FROM positive AS p
    JOIN irregular AS i ON i.record_id = p.record_id
    GROUP BY p.record_id, p.atom_id
),
ranked AS (
    SELECT record_id, atom_id, w,
           ROW_NUMBER() OVER (PARTITION BY record_id ORDER BY w DESC, atom_id ASC) AS k
    FROM deduplicated
),
kept AS (
    SELECT record_id, atom_id, w, CAST(SUM(w) OVER (PARTITION BY record_id) AS BIGINT) AS total
    FROM ranked
    WHERE k <= $K
),
record_vectors AS (
    SELECT p.record_id, p.atom_id, p.w AS v
    FROM positive AS p
    LEFT JOIN irregular AS i ON i.record_id = p.record_id
    WHERE i.record_id IS NULL
    UNION ALL
    SELECT record_id, atom_id, dpspin_clip(w, total, $scale) AS v
    FROM kept
)
