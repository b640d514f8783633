-- The head of the record-level sketch when there is no records relation (an assignments
-- file alone): every record in it is a target record. It replaces the `target` and
-- `cleaned` CTEs of sketch_record.sql; the rest of that query runs unchanged.
WITH cleaned AS (
    SELECT a.record_id, a.atom_id, dpspin_fix(a.weight, $scale) AS w
    FROM assignments AS a
    JOIN atoms AS d ON d.atom_id = a.atom_id
    WHERE a.record_id IS NOT NULL
)
SELECT * FROM cleaned;
