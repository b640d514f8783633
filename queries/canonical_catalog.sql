-- The constraints and column types the store query relies on (sketch.canonical_facts
-- compares them with those of a fresh store made from schema.sql). Read-only.
SELECT table_name, constraint_type, COALESCE(expression, constraint_text), constraint_column_names,
       referenced_table, referenced_column_names
FROM duckdb_constraints()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name IN ('records', 'users')
  AND constraint_type IN ('CHECK', 'PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY')
UNION ALL
SELECT table_name, 'TYPE', data_type, [column_name], NULL, NULL
FROM duckdb_columns()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name IN ('records', 'users')
  AND column_name IN ('atom_ids', 'masses', 'user_key', 'user_id');
