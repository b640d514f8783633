-- Record-level DP-SPIN sketch C(D) = Σ_i v_i in exact fixed point (units of 1/$scale).
-- It trusts nothing in `assignments`: it drops non-finite and non-positive weights,
-- unknown atoms and non-target records, collapses duplicated (record, atom) rows, caps
-- each weight at 1, keeps the top $K atoms per record (lower atom_id wins ties) and
-- renormalises every record to Σ v ≤ $scale with integer arithmetic (the macros
-- dpspin_fix and dpspin_clip of udfs/macros.sql), so the
-- per-record L1 bound holds exactly whatever the input holds.
WITH target AS (
    SELECT record_id FROM records WHERE split = 'target'
),
cleaned AS (
    SELECT a.record_id, a.atom_id, MAX(dpspin_fix(a.weight, $scale)) AS w
    FROM assignments AS a
    JOIN target AS t ON t.record_id = a.record_id
    JOIN atoms AS d ON d.atom_id = a.atom_id
    GROUP BY a.record_id, a.atom_id
),
ranked AS (
    SELECT record_id, atom_id, w,
           ROW_NUMBER() OVER (PARTITION BY record_id ORDER BY w DESC, atom_id ASC) AS k
    FROM cleaned
    WHERE w > 0
),
kept AS (
    SELECT record_id, atom_id, w, CAST(SUM(w) OVER (PARTITION BY record_id) AS BIGINT) AS total
    FROM ranked
    WHERE k <= $K
),
record_vectors AS (
    SELECT record_id, atom_id, dpspin_clip(w, total, $scale) AS v
    FROM kept
)
SELECT atom_id, CAST(SUM(v) AS HUGEINT) AS mass
FROM record_vectors
GROUP BY atom_id
ORDER BY atom_id;
