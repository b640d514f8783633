-- Is this store already at the current schema, with the package's macros? (read-only)
SELECT (SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'ledger_head') = 1
   AND (SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'pipeline') = 1
   AND (SELECT count(*) FROM duckdb_columns() WHERE table_name = 'ledger' AND column_name = 'row_hash') = 1
   AND (SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = 'users') = 1
   AND (SELECT count(*) FROM duckdb_columns() WHERE table_name = 'records' AND column_name = 'masses') = 1
   AND (SELECT count(*) FROM duckdb_views() WHERE schema_name = 'main' AND view_name = 'assignment_rows') = 1
   AND (SELECT count(DISTINCT function_name) FROM duckdb_functions()
        WHERE function_name IN (SELECT unnest($macros::VARCHAR[]))) = len($macros::VARCHAR[]);
