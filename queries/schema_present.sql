-- Is this connection's default database already at the current schema? (read-only; the
-- package's macros are probed apart: store.set_up, udfs.probe). Scoped to current_database(): another attached
-- database (a user's, when the store is embedded with dpspin_sql.install) never counts.
SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
        AND schema_name = 'main' AND table_name = 'ledger_head') = 1
   AND (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
        AND schema_name = 'main' AND table_name = 'pipeline') = 1
   AND (SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database()
        AND schema_name = 'main' AND table_name = 'ledger' AND column_name = 'row_hash') = 1
   AND (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
        AND schema_name = 'main' AND table_name = 'users') = 1
   AND (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()
        AND schema_name = 'main' AND table_name IN ('ledger', 'budget', 'ledger_events', 'release_plans')) = 4
   AND (SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database()
        AND schema_name = 'main' AND table_name = 'ledger' AND column_name = 'plan_stored') = 1
   AND (SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database()
        AND schema_name = 'main' AND table_name = 'records' AND column_name = 'masses') = 1
   AND (SELECT count(*) FROM duckdb_views() WHERE database_name = current_database()
        AND schema_name = 'main' AND view_name = 'assignment_rows') = 1,
       current_database();
