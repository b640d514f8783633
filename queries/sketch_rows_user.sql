-- The head of the user-level sketch when the assignment rows carry their own user
-- (an assignments file with user_id and no records file): every record in it is a target
-- record, its user is the row's user_id, and a record is (user_id, record_id), so a
-- record id seen with two users is two records, each bounded on its own and counted in
-- its own user's clip. It replaces the `target` and `cleaned` CTEs of sketch_user.sql;
-- the rest of that query runs unchanged.
WITH cleaned AS (
    SELECT a.record_id, a.user_id, a.atom_id, dpspin_fix(a.weight, $scale) AS w
    FROM assignments AS a
    JOIN atoms AS d ON d.atom_id = a.atom_id
    WHERE a.record_id IS NOT NULL
)
SELECT * FROM cleaned;
