-- What the connection's default database is (store.store_kind): how many tables, views and
-- sequences its main schema holds, and how many of them are tables only a dpspin store has
-- ($marks: store.STORE_TABLES). Read-only; another attached database never counts.
SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'
          AND NOT temporary)
     + (SELECT count(*) FROM duckdb_views() WHERE database_name = current_database() AND schema_name = 'main'
          AND NOT internal AND NOT temporary)
     + (SELECT count(*) FROM duckdb_sequences() WHERE database_name = current_database() AND schema_name = 'main'
          AND NOT temporary),
       (SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'
          AND NOT temporary AND list_contains($marks, table_name));
