-- User-level DP-SPIN sketch C(D) = Σ_u Clip_B(Σ_{x∈D_u} v(x)) in exact fixed point.
-- The record step is the same as in sketch_record.sql (drop bad weights, top-$K with
-- atom-index tie-break, Σ v ≤ $scale per record). Each user's vector is then clipped
-- with integer arithmetic so that Σ_j V_uj ≤ $bound (= floor(B·$scale)) exactly:
-- V_uj = floor(U_uj · bound / ‖U_u‖₁) when ‖U_u‖₁ > bound. The clip is window SQL with
-- the integer macros dpspin_fix / dpspin_clip (udfs/macros.sql), not a Python UDF: a
-- scalar UDF is ~35x slower, and with an arrow UDF for the clip the whole query took
-- 0.75 s against 0.48 s at 10^6 rows (bench/bench_sketch.py --udf-at); this SQL also
-- stays exact and transpiles to Spark and other engines (the SQL surface inlines the
-- macros there).
WITH target AS (
    SELECT record_id, user_id FROM records WHERE split = 'target'
),
cleaned AS (
    SELECT a.record_id, t.user_id, a.atom_id, MAX(dpspin_fix(a.weight, $scale)) AS w
    FROM assignments AS a
    JOIN target AS t ON t.record_id = a.record_id
    JOIN atoms AS d ON d.atom_id = a.atom_id
    GROUP BY a.record_id, t.user_id, a.atom_id
),
ranked AS (
    SELECT record_id, user_id, atom_id, w,
           ROW_NUMBER() OVER (PARTITION BY record_id ORDER BY w DESC, atom_id ASC) AS k
    FROM cleaned
    WHERE w > 0
),
kept AS (
    SELECT record_id, user_id, atom_id, w, CAST(SUM(w) OVER (PARTITION BY record_id) AS BIGINT) AS total
    FROM ranked
    WHERE k <= $K
),
record_vectors AS (
    SELECT record_id, user_id, atom_id, dpspin_clip(w, total, $scale) AS v
    FROM kept
),
user_vectors AS (
    SELECT user_id, atom_id, CAST(SUM(v) AS BIGINT) AS u
    FROM record_vectors
    GROUP BY user_id, atom_id
),
user_totals AS (
    SELECT user_id, atom_id, u, CAST(SUM(u) OVER (PARTITION BY user_id) AS BIGINT) AS total
    FROM user_vectors
)
SELECT atom_id,
       CAST(SUM(dpspin_clip(u, total, $bound)) AS HUGEINT) AS mass
FROM user_totals
GROUP BY atom_id
ORDER BY atom_id;
