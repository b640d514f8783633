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
-- @include record_step_user
,
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
