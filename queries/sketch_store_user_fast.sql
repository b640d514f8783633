-- User-level sketch of a DuckDB store whose every target record is fast (sketch.store_plan
-- proved it in the same snapshot: $all_fast, which needs the catalog's keys, $keyed):
-- sketch_store_user.sql without its slow branch and its per-user-id groups, which would be
-- empty. A fast record's canonical vector is its record vector and its user key is its
-- user (why: sketch_store_user.sql); a record without a vector gives no row. Bit for bit
-- that query's result on such a store (tests/test_sketch_store.py); `keyed_sums` and the
-- final SELECT are its own text. $chunked with [$lo, $hi): as there. $atoms_dense: the
-- dictionary's ids are exactly the integers $atom_lo..$atom_hi (store_plan reads it in the
-- same snapshot), so a range test is the dictionary test, without a join per row.
WITH target AS NOT MATERIALIZED (
    SELECT user_key, atom_ids, masses FROM records
    WHERE split = 'target' AND (NOT $chunked OR (user_key >= $lo AND user_key < $hi))
),
fast_vectors AS (
    SELECT user_key, atom_id, v
    FROM (SELECT user_key, unnest(atom_ids) AS atom_id, unnest(masses) AS v FROM target) AS e
    WHERE v > 0 AND (($atoms_dense AND atom_id BETWEEN $atom_lo AND $atom_hi)
                     OR (NOT $atoms_dense AND atom_id IN (SELECT atom_id FROM atoms)))
),
keyed_vectors AS (
    SELECT user_key, atom_id, CAST(SUM(v) AS BIGINT) AS u
    FROM fast_vectors
    GROUP BY user_key, atom_id
),
keyed_sums AS (
    SELECT user_key, CAST(SUM(u) AS BIGINT) AS total FROM keyed_vectors GROUP BY user_key
),
user_totals AS (
    SELECT v.atom_id, v.u, s.total FROM keyed_vectors AS v JOIN keyed_sums AS s ON s.user_key = v.user_key
)
SELECT atom_id,
       CAST(SUM(dpspin_clip(u, total, $bound)) AS HUGEINT) AS mass
FROM user_totals
GROUP BY atom_id
ORDER BY atom_id;
