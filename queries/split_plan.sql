-- The aux/target decision for every record, from a seeded hash of its protected unit
-- (the record id at record level, the user id at user level, so every record of a user
-- lands on one side). A unit goes to aux when its hash falls below the threshold
-- ($threshold out of 1,000,000). `changes` counts records whose aux membership would flip.
CREATE OR REPLACE TEMP TABLE split_plan AS
SELECT
    record_id,
    split AS old_split,
    CASE WHEN dpspin_unit_hash(CASE WHEN $unit = 'user' THEN user_id ELSE record_id END, $seed) % 1000000
              < $threshold
         THEN 'aux' ELSE 'target' END AS new_split
FROM records;
