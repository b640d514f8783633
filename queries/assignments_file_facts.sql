-- What an assignments file holds (`dpspin assignments load`, store.load_assignment_file), in
-- one pass over the registered `assignment_file` (record_id, atom_id, weight as the file has
-- them: text for CSV, typed for Parquet/JSON). Refused: atom ids that are not integers or lie
-- outside the store's 32-bit range ($lo..$hi), weights that are not numbers. Counted (kept as
-- given; the sketch never counts them), each row once, in this order: an atom not in the
-- dictionary, a record not in the store, a weight that is not a positive finite number, a
-- weight that fixes to 0 at the resolution 1/$scale. Last, how many atom values are labels of
-- the dictionary that are not numbers (store._atom_labels reads the file as labels then; this
-- count here spares a pass over the file when it holds ids).
WITH s AS (
    SELECT CAST(record_id AS VARCHAR) AS record_id,
           TRY_CAST(atom_id AS DOUBLE) AS atom, atom_id IS NULL AS atom_missing,
           TRY_CAST(CAST(atom_id AS VARCHAR) AS DOUBLE) IS NULL
               AND CAST(atom_id AS VARCHAR) IN (SELECT label FROM atoms) AS is_label,
           TRY_CAST(weight AS DOUBLE) AS w, weight IS NULL AS w_missing
    FROM assignment_file
),
c AS (
    SELECT s.*,
           NOT atom_missing AND atom IS NULL OR (atom IS NOT NULL AND isfinite(atom) AND atom <> floor(atom))
               OR (atom IS NOT NULL AND NOT isfinite(atom)) AS not_integer,
           atom IS NOT NULL AND isfinite(atom) AND atom = floor(atom) AND (atom < $lo OR atom > $hi) AS out_of_range,
           NOT w_missing AND w IS NULL AS not_number
    FROM s
),
k AS (
    SELECT c.*,
           atom IS NULL OR not_integer OR out_of_range
               OR TRY_CAST(atom AS INTEGER) NOT IN (SELECT atom_id FROM atoms) AS unknown_atom,
           record_id IS NULL OR record_id NOT IN (SELECT record_id FROM records) AS unknown_record,
           w IS NULL OR NOT isfinite(w) OR w <= 0 AS not_positive
    FROM c
)
SELECT count(*),
       count(*) FILTER (WHERE not_integer),
       count(*) FILTER (WHERE out_of_range),
       count(*) FILTER (WHERE not_number),
       count(*) FILTER (WHERE unknown_atom),
       count(*) FILTER (WHERE NOT unknown_atom AND unknown_record),
       count(*) FILTER (WHERE NOT unknown_atom AND NOT unknown_record AND not_positive),
       count(*) FILTER (WHERE NOT unknown_atom AND NOT unknown_record AND NOT not_positive
                        AND floor(least(w, 1.0) * $scale) = 0),
       count(*) FILTER (WHERE is_label)
FROM k;
