-- Are the dictionary's ids exactly the integers lo..hi? (sketch.store_plan: then a range
-- test is the dictionary test.) Only for an INTEGER atom_id, as schema.sql declares it: a
-- table re-made with another type (1.5 is not an atom id the range may admit) is never dense.
SELECT count(DISTINCT atom_id) AS n, CAST(min(atom_id) AS BIGINT) AS lo, CAST(max(atom_id) AS BIGINT) AS hi,
       (SELECT data_type FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main'
          AND table_name = 'atoms' AND column_name = 'atom_id') = 'INTEGER' AS integer_ids
FROM atoms
WHERE (SELECT data_type FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main'
         AND table_name = 'atoms' AND column_name = 'atom_id') = 'INTEGER';
