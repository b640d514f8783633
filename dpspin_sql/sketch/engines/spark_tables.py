"""Tables of the Spark session's catalog (or metastore) in a DP statement: `spark_table('db.table')`.

    SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, privacy_unit_column = author) s.theme,
           DPSPIN_MASS(s.score)
    FROM spark_table('analytics.theme_scores') AS s JOIN spark_table('analytics.reviews') AS r USING (review_id)
    GROUP BY s.theme

runs with `--engine spark` only. The audit (sql/resolve.py `Catalog.spark_table`) is given each
table's column names and types from Spark's catalog by `SparkCatalog.columns` — a schema read
(`spark.catalog.tableExists`, `getTable`, `spark.table(name).schema`), no row and no Spark job —
mapped to DuckDB's types (`duckdb_type`), and audits the relation exactly as a file's. A column of
a type with no counterpart here keeps its Spark type, which no role of the statement accepts: the
statement is refused, naming the column and type, when it reads that column (and only then).
A Spark view (temporary or persistent) is refused: its query is not known to be row-wise (the
audit expands DuckDB views to check that; Spark's it cannot read). engines/spark_files.py then
reads the table in place (`spark.table(name)` as a temporary view), checking that its schema is
still the one audited; only the m-vector comes back to the driver.
"""
from __future__ import annotations

import re

from dpspin_sql.errors import BadInput

SPARK_TYPES = {"string": "VARCHAR", "bigint": "BIGINT", "long": "BIGINT", "int": "INTEGER", "integer": "INTEGER",
               "smallint": "SMALLINT", "short": "SMALLINT", "tinyint": "TINYINT", "byte": "TINYINT",
               "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE", "timestamp": "TIMESTAMP"}
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}")
ROW_TABLES = ("MANAGED", "EXTERNAL")


def duckdb_type(spark_type: str) -> str:
    """The DuckDB type of a Spark type (its simpleString); a type with no counterpart stays
    `Spark <type>`, which the audit's roles refuse by name."""
    t = spark_type.strip().lower()
    m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", t)
    if m:
        return f"DECIMAL({m[1]},{m[2]})"
    if re.fullmatch(r"(var)?char\(\d+\)", t):
        return "VARCHAR"
    return SPARK_TYPES.get(t, f"Spark {spark_type}")


def schema_of(df) -> list[tuple[str, str]]:
    """(column, DuckDB type) of a DataFrame's schema: no row is read."""
    return [(f.name, duckdb_type(f.dataType.simpleString())) for f in df.schema.fields]


class SparkCatalog:
    """The schema lookups of `spark_table(...)` on one Spark session (started on first use)."""

    def __init__(self, session=None, master: str | None = None):
        self.session, self.master = session, master

    def spark(self):
        if self.session is None:
            from dpspin_sql.sketch.engines.spark import get_session

            self.session = get_session(self.master)
        return self.session

    def columns(self, name: str) -> list[tuple[str, str]]:
        """The table's (column, DuckDB type) from Spark's catalog; BadInput, one line, when there
        is no such table, it is a view, or its schema cannot be read."""
        if not NAME.fullmatch(name):
            raise BadInput(f"spark_table({name!r}): name a table of the Spark catalog as 'table', 'db.table' or "
                           "'catalog.db.table' (letters, digits, underscores)")
        spark = self.spark()
        try:
            exists = bool(spark.catalog.tableExists(name))
        except Exception:   # a malformed or unknown catalog / database: there is no such table
            exists = False
        if not exists:
            raise BadInput(f"there is no table {name!r} in the Spark session's catalog; spark_table('db.table') "
                           "names a table that SHOW TABLES IN db lists")
        try:
            kind = str(spark.catalog.getTable(name).tableType or "").upper()
        except Exception:
            kind = ""
        if kind not in ROW_TABLES:
            what = "a temporary view" if kind == "TEMPORARY" else "a view"
            raise BadInput(f"{name!r} is {what} of the Spark session, not a table: its query is not known to be "
                           "row-wise; read the tables it reads with spark_table('db.table')")
        try:
            return schema_of(spark.table(name))
        except Exception:   # never the engine's message
            raise BadInput(f"Spark cannot read the schema of the table {name!r}") from None
