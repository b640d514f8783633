-- Record-level sketch of a DuckDB store whose every target record is fast (sketch.store_plan
-- proved it in the same snapshot: $all_fast): sketch_store_record.sql without its slow
-- branch, which would be empty. Each target record's canonical vector is its record vector
-- (why: sketch_store_record.sql); a record without one gives no row. Bit for bit that
-- query's result on such a store (tests/test_sketch_store.py), and its CTEs here are its
-- own, minus the slow rows. Statement filters over records go into `target`, as there.
-- $atoms_dense: the dictionary's ids are exactly the integers $atom_lo..$atom_hi
-- (store_plan reads it in the same snapshot): a range test is the dictionary test.
WITH target AS NOT MATERIALIZED (
    SELECT atom_ids, masses FROM records WHERE split = 'target'
),
fast_vectors AS (
    SELECT atom_id, v
    FROM (SELECT unnest(atom_ids) AS atom_id, unnest(masses) AS v FROM target) AS e
    WHERE v > 0
)
SELECT atom_id, CAST(SUM(v) AS HUGEINT) AS mass
FROM fast_vectors
WHERE ($atoms_dense AND atom_id BETWEEN $atom_lo AND $atom_hi)
   OR (NOT $atoms_dense AND atom_id IN (SELECT atom_id FROM atoms))
GROUP BY atom_id
ORDER BY atom_id;
