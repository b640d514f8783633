-- Record-level DP-SPIN sketch C(D) = Σ_i v_i in exact fixed point (units of 1/$scale).
-- It trusts nothing in `assignments`: it drops non-finite and non-positive weights,
-- unknown atoms and non-target records, collapses duplicated (record, atom) rows, caps
-- each weight at 1, keeps the top $K atoms per record (lower atom_id wins ties) and
-- renormalises every record to Σ v ≤ $scale with integer arithmetic (the macros
-- dpspin_fix and dpspin_clip of udfs/macros.sql), so the
-- per-record L1 bound holds exactly whatever the input holds.
--
-- How (docs/PERFORMANCE.md): one aggregation per record finds the records whose rows are
-- already canonical — at most $K rows, no atom twice, Σ w ≤ $scale — for which
-- deduplication, top-$K and renormalisation are the identity; only the other ("irregular")
-- records go through the deduplicate / rank / renormalise steps. The distinct-atom test is
-- exact for up to 3 rows (min < middle < max, middle = sum - min - max); a record with
-- more rows counts as irregular and is handled exactly. This is the portable form: the
-- same text runs on Spark and PostgreSQL (sketch/transpile.py) and over Parquet/CSV files.
WITH target AS (
    SELECT record_id FROM records WHERE split = 'target'
),
cleaned AS (
    -- t.record_id, not a.record_id: when the two id columns differ in type (a file's DOUBLE ids
    -- against BIGINT ones, '01' against 1), several assignment ids can equal one target id, and
    -- every bound below must hold per target record
    SELECT t.record_id, a.atom_id, dpspin_fix(a.weight, $scale) AS w
    FROM assignments AS a
    JOIN target AS t ON t.record_id = a.record_id
    JOIN atoms AS d ON d.atom_id = a.atom_id
),
-- @include record_step_record
SELECT atom_id, CAST(SUM(v) AS HUGEINT) AS mass
FROM record_vectors
GROUP BY atom_id
ORDER BY atom_id;
