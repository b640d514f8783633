-- The record step of the user-level sketch, written once and included (`-- @include`, queries.load)
-- by sketch_user.sql (the portable form) and sketch_store_user.sql (the store's slow records): the
-- record step of record_step_record.sql with every record keyed by (user_id, record_id). Reads
-- `cleaned`; defines positive, per_record, irregular, deduplicated, ranked, kept and record_vectors.
positive AS (
    SELECT record_id, user_id, atom_id, w FROM cleaned WHERE w > 0 AND user_id IS NOT NULL
),
per_record AS (
    SELECT user_id, record_id, COUNT(*) AS n, SUM(w) AS total, MIN(atom_id) AS lo, MAX(atom_id) AS hi,
           SUM(atom_id) AS atom_sum
    FROM positive
    GROUP BY user_id, record_id
),
irregular AS (
    SELECT user_id, record_id FROM per_record
    WHERE NOT (n <= $K AND total <= $scale
               AND (n = 1 OR (n = 2 AND lo < hi)
                    OR (n = 3 AND lo < atom_sum - lo - hi AND atom_sum - lo - hi < hi)))
),
deduplicated AS (
    SELECT p.record_id, p.user_id, p.atom_id, MAX(p.w) AS w
    FROM positive AS p
    JOIN irregular AS i ON i.record_id = p.record_id AND i.user_id = p.user_id
    GROUP BY p.record_id, p.user_id, p.atom_id
),
ranked AS (
    SELECT record_id, user_id, atom_id, w,
           ROW_NUMBER() OVER (PARTITION BY user_id, record_id ORDER BY w DESC, atom_id ASC) AS k
    FROM deduplicated
),
kept AS (
    SELECT record_id, user_id, atom_id, w,
           CAST(SUM(w) OVER (PARTITION BY user_id, record_id) AS BIGINT) AS total
    FROM ranked
    WHERE k <= $K
),
record_vectors AS (
    SELECT p.record_id, p.user_id, p.atom_id, p.w AS v
    FROM positive AS p
    LEFT JOIN irregular AS i ON i.record_id = p.record_id AND i.user_id = p.user_id
    WHERE i.record_id IS NULL
    UNION ALL
    SELECT record_id, user_id, atom_id, dpspin_clip(w, total, $scale) AS v
    FROM kept
)
