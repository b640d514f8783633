-- Record-level sketch of a DuckDB store (what the DuckDB engine runs; sketch_record.sql is
-- the portable form). The result is the same as sketch_record.sql's on the store's
-- logical assignment rows (the rows in `assignments` plus the entries of the canonical
-- vectors in `records`), bit for bit; only the work differs.
--
-- Fast records: a target record with a canonical vector of at most $K entries and no raw
-- rows. DuckDB has checked on write that its atoms are distinct and its masses are
-- non-negative with Σ ≤ $scale (the CHECKs in schema.sql; $canonical says the catalog
-- still has them, sketch.canonical_facts), so dropping bad weights, deduplicating,
-- keeping the top $K and renormalising are all the identity on it: its entries are its
-- record vector, with no grouping by record at all. Unknown atoms and zero masses are
-- dropped as the enforcement would drop them (with at most $K entries, dropping one
-- changes no other entry).
--
-- Every other target record (raw rows, a longer vector, or $canonical false) goes
-- through the enforcement of sketch_record.sql, unchanged from `positive` on, over its
-- logical rows; statement filters on assignment columns are applied in `cleaned`, where
-- those rows are first read (run.py sets $canonical false then, so that every row passes
-- through the filter). $raw says the `assignments` table has rows (read in the same
-- transaction, sketch.run_sketch): without any, no record has raw rows, and the fast test
-- reads no record id (the target records' strings are read only for the slow ones).
-- $all_fast says every target record of the snapshot is fast (sketch.store_plan counts the
-- others in the same transaction): then the slow branch is empty and is left out of the
-- plan, so no record's strings are read at all.
WITH target AS NOT MATERIALIZED (
    SELECT record_id, atom_ids, masses FROM records WHERE split = 'target'
),
raw_records AS (
    SELECT DISTINCT record_id FROM assignments WHERE record_id IS NOT NULL
),
flagged AS NOT MATERIALIZED (
    SELECT t.record_id, t.atom_ids, t.masses,
           COALESCE($all_fast OR ($canonical AND len(t.atom_ids) <= $K AND len(t.masses) <= $K
                    AND (NOT $raw OR t.record_id NOT IN (SELECT record_id FROM raw_records))), FALSE) AS fast
    FROM target AS t
),
fast_vectors AS (
    SELECT record_id, atom_id, v
    FROM (SELECT record_id, unnest(atom_ids) AS atom_id, unnest(masses) AS v FROM flagged WHERE fast) AS e
    WHERE v > 0
),
slow AS (
    SELECT record_id, atom_ids, masses FROM flagged WHERE NOT fast AND NOT $all_fast
),
cleaned AS (
    SELECT a.record_id, a.atom_id, dpspin_fix(a.weight, $scale) AS w
    FROM (
        SELECT record_id, atom_id, weight FROM assignments
        UNION ALL
        SELECT record_id, unnest(atom_ids) AS atom_id, unnest(masses) / $scale AS weight FROM slow
    ) AS a
    JOIN slow AS t ON t.record_id = a.record_id
    JOIN atoms AS d ON d.atom_id = a.atom_id
),
-- @include record_step_record
,
vectors AS (
    SELECT record_id, atom_id, v FROM record_vectors
    UNION ALL
    SELECT record_id, atom_id, v FROM fast_vectors
)
SELECT atom_id, CAST(SUM(v) AS HUGEINT) AS mass
FROM vectors
WHERE atom_id IN (SELECT atom_id FROM atoms)
GROUP BY atom_id
ORDER BY atom_id;
