-- Evaluation only (curator side, never released): how often a target record's top-1
-- atom (highest weight, lower atom_id on ties) is its true metadata combination, among
-- records whose true combination is an atom (a record that abstains has no top-1: a miss),
-- and how many of those records gave mass at all. `eval_atom_keys(atom_id, skey)` is
-- registered by the caller; skey joins the field values with chr(31), missing = chr(0).
WITH truth AS (
    SELECT record_id,
           array_to_string(list_transform($fields, lambda f: COALESCE(NULLIF(TRIM(json_extract_string(metadata, f)), ''), chr(0))), chr(31)) AS skey
    FROM records
    WHERE split = 'target'
),
top1 AS (
    SELECT record_id, atom_id
    FROM (
        SELECT record_id, atom_id,
               ROW_NUMBER() OVER (PARTITION BY record_id ORDER BY weight DESC, atom_id ASC) AS k
        FROM assignment_rows
        WHERE isfinite(weight) AND weight > 0
    )
    WHERE k = 1
)
SELECT
    count(*) AS n_target,
    count(k.atom_id) AS n_true_atom,
    count(*) FILTER (WHERE k.atom_id IS NOT NULL AND p.atom_id = k.atom_id) AS n_correct,
    count(p.atom_id) AS n_assigned,
    count(*) FILTER (WHERE k.atom_id IS NOT NULL AND p.atom_id IS NOT NULL) AS n_true_atom_assigned
FROM truth AS t
LEFT JOIN eval_atom_keys AS k ON k.skey = t.skey
LEFT JOIN top1 AS p ON p.record_id = t.record_id;
