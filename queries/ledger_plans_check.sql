-- Each release row next to its stored plan (either side may be missing), with what the plan
-- says of itself (its release id, chain hash and privacy cost) and whether its text and its
-- dictionary's are those whose hashes the chain's plan event holds (docs/DESIGN.md §4).
WITH pins AS (
    SELECT json_extract_string(details, '$.release_id') AS release_id, seq,
           json_extract_string(details, '$.plan_sha256') AS plan_sha256,
           json_extract_string(details, '$.dictionary_sha256') AS dictionary_sha256
    FROM ledger_events WHERE kind = 'plan' AND json_valid(details)
), plans AS (
    SELECT release_id, plan, dictionary, json_valid(plan) AND json_valid(dictionary) AS valid
    FROM release_plans
)
SELECT coalesce(l.release_id, p.release_id) AS release_id, l.seq, l.row_hash, l.epsilon, l.delta,
       l.plan_stored, l.release_id IS NOT NULL AS has_row, p.release_id IS NOT NULL AS has_plan,
       CASE WHEN p.valid THEN json_extract_string(p.plan, '$.release_id') END AS plan_release,
       CASE WHEN p.valid THEN json_extract_string(p.plan, '$.ledger_chain') END AS plan_chain,
       CASE WHEN p.valid THEN TRY_CAST(json_extract(p.plan, '$.privacy_cost.epsilon') AS DOUBLE) END AS plan_epsilon,
       CASE WHEN p.valid THEN TRY_CAST(json_extract(p.plan, '$.privacy_cost.delta') AS DOUBLE) END AS plan_delta,
       coalesce(p.valid, FALSE) AS plan_valid,
       pins.release_id IS NOT NULL AS pinned, pins.seq AS pinned_seq,
       coalesce('sha256:' || sha256(p.plan) = pins.plan_sha256
                AND 'sha256:' || sha256(p.dictionary) = pins.dictionary_sha256, FALSE) AS same_texts
FROM ledger l FULL OUTER JOIN plans p ON p.release_id = l.release_id
LEFT JOIN pins ON pins.release_id = coalesce(l.release_id, p.release_id)
ORDER BY l.seq NULLS LAST, release_id;
