-- The registered `assignment_file` as the store's assignment rows (after the checks of
-- assignments_file_facts.sql, every value here converts exactly): ids as text, atom ids as
-- the store's INTEGER, weights as DOUBLE (a missing weight stays missing).
SELECT CAST(record_id AS VARCHAR) AS record_id,
       CAST(TRY_CAST(atom_id AS DOUBLE) AS INTEGER) AS atom_id,
       TRY_CAST(weight AS DOUBLE) AS weight
FROM assignment_file
