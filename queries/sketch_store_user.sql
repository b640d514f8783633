-- User-level sketch of a DuckDB store (what the DuckDB engine runs; sketch_user.sql is the
-- portable form), bit for bit the result of sketch_user.sql on the store's logical rows.
-- Fast and slow records are as in sketch_store_record.sql; a fast record here also needs
-- a user key, and $keyed says the catalog proves keys and user ids one-to-one (the
-- foreign key from records (user_key, user_id) to users, whose key and id are each
-- unique: sketch.canonical_facts). Then grouping by user_key is grouping by user_id, on
-- integers: the per-user totals use DuckDB's perfect hash aggregate (the keys are dense).
-- A slow record without a key takes its user's key from `users` when the store knows the
-- user; a user the store does not know has no keyed record at all (the foreign key), and
-- is grouped by user_id in `named_*`. So every user is exactly one group, whatever mix of
-- fast, slow, keyed and unkeyed records it has.
--
-- What the engine binds besides the bounds (sketch.run_sketch, all read in one transaction):
-- $raw: the `assignments` table has rows (when it has none, no record can have raw rows and
-- the fast test needs no record id at all); $chunked with [$lo, $hi): the query covers the
-- users whose keys are in that range, and the engine adds up the chunks' masses (only when
-- every target record has a key: then each user is wholly inside one chunk, and the sum over
-- chunks of each chunk's Σ_u Clip_B is the Σ_u Clip_B of the whole split, exactly, in
-- integers; a chunk's hash tables are a fraction of the whole's: the memory bound);
-- $all_keyed: every target record has a key, so no slow record looks its key up in `users`.
-- $all_fast: every target record of the snapshot is fast (sketch.store_plan counts the
-- others in the same transaction), so the slow branch is empty and left out of the plan:
-- no record's strings are read at all.
WITH target AS NOT MATERIALIZED (
    SELECT record_id, user_id, user_key, atom_ids, masses FROM records
    WHERE split = 'target' AND (NOT $chunked OR (user_key >= $lo AND user_key < $hi))
),
raw_records AS (
    SELECT DISTINCT record_id FROM assignments WHERE record_id IS NOT NULL
),
flagged AS NOT MATERIALIZED (
    SELECT t.record_id, t.user_id, t.user_key, t.atom_ids, t.masses,
           COALESCE($all_fast OR ($canonical AND $keyed AND t.user_key IS NOT NULL AND len(t.atom_ids) <= $K
                    AND len(t.masses) <= $K
                    AND (NOT $raw OR t.record_id NOT IN (SELECT record_id FROM raw_records))), FALSE) AS fast
    FROM target AS t
),
fast_vectors AS (
    SELECT user_key, atom_id, v
    FROM (SELECT user_key, unnest(atom_ids) AS atom_id, unnest(masses) AS v FROM flagged WHERE fast) AS e
    WHERE v > 0 AND atom_id IN (SELECT atom_id FROM atoms)
),
slow AS (
    SELECT f.record_id, f.user_id, CASE WHEN $keyed THEN COALESCE(f.user_key, u.user_key) END AS user_key,
           f.atom_ids, f.masses
    FROM flagged AS f
    LEFT JOIN (SELECT user_id, user_key FROM users WHERE NOT $all_keyed) AS u ON u.user_id = f.user_id
    WHERE NOT f.fast AND NOT $all_fast
),
cleaned AS (
    SELECT a.record_id, t.user_id, a.atom_id, dpspin_fix(a.weight, $scale) AS w
    FROM (
        SELECT record_id, atom_id, weight FROM assignments
        UNION ALL
        SELECT record_id, unnest(atom_ids) AS atom_id, unnest(masses) / $scale AS weight FROM slow
    ) AS a
    JOIN slow AS t ON t.record_id = a.record_id
    JOIN atoms AS d ON d.atom_id = a.atom_id
),
-- @include record_step_user
,
slow_vectors AS (
    SELECT s.user_key, r.user_id, r.atom_id, r.v
    FROM record_vectors AS r
    JOIN slow AS s ON s.record_id = r.record_id
),
keyed_vectors AS (
    SELECT user_key, atom_id, CAST(SUM(v) AS BIGINT) AS u
    FROM (SELECT user_key, atom_id, v FROM fast_vectors
          UNION ALL
          SELECT user_key, atom_id, v FROM slow_vectors WHERE user_key IS NOT NULL) AS k
    GROUP BY user_key, atom_id
),
keyed_sums AS (
    SELECT user_key, CAST(SUM(u) AS BIGINT) AS total FROM keyed_vectors GROUP BY user_key
),
named_vectors AS (
    SELECT user_id, atom_id, CAST(SUM(v) AS BIGINT) AS u
    FROM slow_vectors
    WHERE user_key IS NULL
    GROUP BY user_id, atom_id
),
named_sums AS (
    SELECT user_id, CAST(SUM(u) AS BIGINT) AS total FROM named_vectors GROUP BY user_id
),
user_totals AS (
    SELECT v.atom_id, v.u, s.total FROM keyed_vectors AS v JOIN keyed_sums AS s ON s.user_key = v.user_key
    UNION ALL
    SELECT v.atom_id, v.u, s.total FROM named_vectors AS v JOIN named_sums AS s ON s.user_id = v.user_id
)
SELECT atom_id,
       CAST(SUM(dpspin_clip(u, total, $bound)) AS HUGEINT) AS mass
FROM user_totals
GROUP BY atom_id
ORDER BY atom_id;
