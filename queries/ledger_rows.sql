-- Every ledger row in chain order, with everything its hash covers.
SELECT seq, prev_hash, row_hash, release_id, dataset, created_at, mechanism, epsilon, delta, params,
       measurements, plan_path, plan_stored
FROM ledger ORDER BY seq NULLS FIRST, created_at, release_id;
