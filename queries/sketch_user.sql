-- User-level DP-SPIN sketch C(D) = Σ_u Clip_B(Σ_{x∈D_u} v(x)) in exact fixed point.
-- The record step is the same as in sketch_record.sql (drop bad weights, top-$K with
-- atom-index tie-break, Σ v ≤ $scale per record). Each user's vector is then clipped
-- with integer arithmetic so that Σ_j V_uj ≤ $bound (= floor(B·$scale)) exactly:
-- V_uj = floor(U_uj · bound / ‖U_u‖₁) when ‖U_u‖₁ > bound. The clip is SQL with the
-- integer macros dpspin_fix / dpspin_clip (udfs/macros.sql), not a Python UDF (a scalar
-- UDF is ~35x slower); it stays exact and transpiles to Spark and other engines (the SQL
-- surface inlines the macros there).
--
-- A record is (user_id, record_id) throughout: in a store record_id alone decides the
-- user (it is the records table's key), and in a file that gives each row its own user a
-- record id seen with two users is two records, one per user, so no user's rows can
-- change which atoms another user's record keeps (docs/PERFORMANCE.md, "files"). The
-- per-user totals are a GROUP BY joined back to the per-(user, atom) sums rather than a
-- window over the user. The record step's regular/irregular split is explained in
-- sketch_record.sql.
WITH target AS (
    SELECT record_id, user_id FROM records WHERE split = 'target'
),
cleaned AS (
    -- t.record_id: the bounds hold per target record whatever the id columns' types (sketch_record.sql)
    SELECT t.record_id, t.user_id, a.atom_id, dpspin_fix(a.weight, $scale) AS w
    FROM assignments AS a
    JOIN target AS t ON t.record_id = a.record_id
    JOIN atoms AS d ON d.atom_id = a.atom_id
),
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
),
user_vectors AS (
    SELECT user_id, atom_id, CAST(SUM(v) AS BIGINT) AS u
    FROM record_vectors
    GROUP BY user_id, atom_id
),
user_sums AS (
    SELECT user_id, CAST(SUM(u) AS BIGINT) AS total
    FROM user_vectors
    GROUP BY user_id
),
user_totals AS (
    SELECT uv.user_id, uv.atom_id, uv.u, us.total
    FROM user_vectors AS uv
    JOIN user_sums AS us ON us.user_id = uv.user_id
)
SELECT atom_id,
       CAST(SUM(dpspin_clip(u, total, $bound)) AS HUGEINT) AS mass
FROM user_totals
GROUP BY atom_id
ORDER BY atom_id;
