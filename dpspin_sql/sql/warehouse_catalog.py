"""The warehouse's own catalog, against which the declared tables are checked.

The two-phase release over the warehouse's own tables (`sql/catalog.py`, docs/WAREHOUSE.md)
audits the statement against column types. Declared by hand they are the curator's word; a
wrong one (`score DOUBLE` where the warehouse has `score VARCHAR`) makes the audit reason on
types the sketch does not run on. Here the types come from the warehouse itself:

1. `catalog_query` writes one query in the warehouse's dialect over its
   `information_schema.columns` (BigQuery: `dataset.INFORMATION_SCHEMA.COLUMNS`; Snowflake
   and Trino: the database's or catalog's) listing table_catalog, table_schema, table_name,
   column_name, data_type and ordinal_position of exactly the tables the statement file
   declares (or, without declarations, reads). Spark SQL has no information_schema: there
   the curator writes the same columns from `DESCRIBE TABLE`.
2. The curator runs it and exports the rows (CSV, JSON Lines or a JSON array, Parquet:
   `read_catalog` reads them through `dpspin_sql.tabular`, the one file reader).
3. With that file (`--catalog` in both phases) every declared column must be in it with the
   same type (`check_declarations`), or, without declarations, the declarations are made from
   it (`build_declarations`).

Names are matched as the dialect stores them: DuckDB, Trino and Spark without regard to
case; PostgreSQL folds an unquoted name to lower case and Snowflake to upper case, a quoted
one is exact; BigQuery's dataset and table names are exact and its column names are not.
Types are compared as the audit reads them: each side parsed by sqlglot in the dialect and
resolved by DuckDB (`int8` and `bigint`, `text` and `character varying`, `float8` and
`double precision` are one type); in Snowflake every integer type is NUMBER(38,0). When
the catalog gives a type without parameters (`numeric`) the declared parameters are not
checked against it.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import sqlglot
from sqlglot import exp

from dpspin_sql.errors import BadInput
from dpspin_sql.sql.errors import refuse

COLUMNS = ("table_catalog", "table_schema", "table_name", "column_name", "data_type", "ordinal_position")
REQUIRED = ("table_name", "column_name", "data_type")
MAX_CATALOG_BYTES = 64 << 20
_INTEGERS = {exp.DataType.Type.TINYINT, exp.DataType.Type.SMALLINT, exp.DataType.Type.INT,
             exp.DataType.Type.BIGINT, exp.DataType.Type.UTINYINT, exp.DataType.Type.USMALLINT,
             exp.DataType.Type.UINT, exp.DataType.Type.UBIGINT}


@dataclass(frozen=True)
class CatalogColumn:
    name: str
    data_type: str
    position: int


@dataclass(frozen=True)
class CatalogTable:
    catalog: str | None
    schema: str | None
    name: str
    columns: tuple[CatalogColumn, ...]

    def shown(self) -> str:
        return ".".join(p for p in (self.catalog, self.schema, self.name) if p)


@dataclass(frozen=True)
class Catalog:
    """A catalog file as read: its tables, and the sha256 of its bytes (recorded in the ledger)."""

    path: Path
    sha256: str
    tables: tuple[CatalogTable, ...]


# -- names as each dialect stores them ------------------------------------------------------------

def _insensitive(dialect: str, part: str) -> bool:
    """Whether the dialect resolves this kind of name ("table" parts, "column") without regard to case."""
    if dialect == "bigquery":
        return part == "column"
    return dialect in ("duckdb", "trino", "spark")


def stored(ident: exp.Identifier, dialect: str, part: str) -> str:
    """The name as the dialect's catalog holds it (lower-cased where case does not count)."""
    name = ident.name
    if _insensitive(dialect, part):
        return name.lower()
    if ident.args.get("quoted") or dialect == "bigquery":
        return name
    return name.upper() if dialect == "snowflake" else name.lower()


def _same(ident: exp.Identifier, name: str | None, dialect: str, part: str) -> bool:
    if name is None:
        return False
    return stored(ident, dialect, part) == (name.lower() if _insensitive(dialect, part) else name)


def identifier(name: str, dialect: str) -> exp.Identifier:
    """A name from the catalog written so that the dialect reads it back as it is stored:
    quoted when it is not a plain identifier or when the dialect would fold it."""
    ident = exp.to_identifier(name)
    if not ident.args.get("quoted"):
        folded = sqlglot.Dialect.get_or_raise(dialect).normalize_identifier(ident.copy()).name
        if dialect in ("postgres", "snowflake") and folded != name:
            ident = exp.to_identifier(name, quoted=True)
    return ident


def _parts(table: exp.Table) -> list[tuple[exp.Identifier | None, str]]:
    """[(catalog, "table"), (schema, "table"), (name, "table")] as declared (None where not written)."""
    def ident(value) -> exp.Identifier | None:
        return value if isinstance(value, exp.Identifier) else None

    return [(ident(table.args.get("catalog")), "table"), (ident(table.args.get("db")), "table"),
            (ident(table.this), "table")]


# -- reading the file ---------------------------------------------------------------------------

def read_catalog(path: str | Path, dialect: str, fmt: str | None = None) -> Catalog:
    """The catalog file the curator exported (the columns of `COLUMNS`, any case; table_catalog,
    table_schema and ordinal_position may be left out). Unreadable or ambiguous files are bad input."""
    import duckdb

    from dpspin_sql import tabular

    path = Path(path)
    tf = tabular.table_file(path, fmt, what="--catalog file")
    digest = hashlib.sha256()
    size = 0
    for f in tf.files:
        data = Path(f).read_bytes()
        size += len(data)
        digest.update(data)
    if size > MAX_CATALOG_BYTES:
        raise BadInput(f"--catalog {path} is {size} bytes; a catalog of the declared tables is far smaller")
    con = duckdb.connect()
    try:
        got = tabular.read(con, tf)
        by_name = {c.lower(): c for c in got.columns}
        missing = [c for c in REQUIRED if c not in by_name]
        if missing:
            raise BadInput(f"--catalog {path} has no column {missing[0]} (its columns: {', '.join(got.columns)}); "
                           f"expected {', '.join(COLUMNS)}, as dpspin sql --catalog-query lists them")
        wanted = [c for c in COLUMNS if c in by_name]
        try:
            rows = got.relation.select(*[duckdb.ColumnExpression(by_name[c]) for c in wanted]).fetchall()
        except duckdb.Error as exc:
            raise BadInput(f"--catalog {path}: {tabular.read_error(path, tf.format, exc, tf.delimiter)}") from None
    finally:
        con.close()
    tabular.require_rows(len(rows), tf, "catalog rows")
    tables: dict[tuple[str | None, str | None, str], list[CatalogColumn]] = {}
    for n, row in enumerate(rows, start=1):
        value = {c: (None if v is None or str(v) == "" else str(v)) for c, v in zip(wanted, row)}
        for c in REQUIRED:
            if value[c] is None:
                raise BadInput(f"--catalog {path}: row {n} has no {c}")
        key = (value.get("table_catalog"), value.get("table_schema"), str(value["table_name"]))
        position = value.get("ordinal_position")
        if position is not None and not re.fullmatch(r"[0-9]+", position.strip()):
            raise BadInput(f"--catalog {path}: row {n} has an ordinal_position that is not a whole number")
        columns = tables.setdefault(key, [])
        column = str(value["column_name"])
        ident = exp.to_identifier(column, quoted=True)
        if any(_same(ident, c.name, dialect, "column") or c.name == column for c in columns):
            raise BadInput(f"--catalog {path} lists the column {column} of "
                           f"{'.'.join(p for p in key if p)} twice; export each table's columns once")
        columns.append(CatalogColumn(column, str(value["data_type"]),
                                     int(position) if position is not None else len(columns) + 1))
    return Catalog(path, "sha256:" + digest.hexdigest(), tuple(
        CatalogTable(k[0], k[1], k[2], tuple(sorted(cols, key=lambda c: c.position))) for k, cols in tables.items()))


def find_table(catalog: Catalog, table: exp.Table, dialect: str) -> CatalogTable | None:
    """The one catalog table the declared (or read) name means; None when there is none."""
    parts = _parts(table)
    found = [t for t in catalog.tables
             if all(ident is None or _same(ident, value, dialect, part)
                    for (ident, part), value in zip(parts, (t.catalog, t.schema, t.name)))]
    if len(found) > 1:
        raise BadInput(f"--catalog {catalog.path} has the table {table.sql(dialect)} twice "
                       f"({', '.join(t.shown() for t in found)}); qualify it in the statement file, or export "
                       "the catalog query's rows as they are")
    return found[0] if found else None


def _column(found: CatalogTable, ident: exp.Identifier, dialect: str) -> CatalogColumn | None:
    for c in found.columns:
        if _same(ident, c.name, dialect, "column"):
            return c
    return None


# -- types as the audit reads them --------------------------------------------------------------------

def _parse_type(text: str, dialect: str) -> exp.DataType | None:
    from dpspin_sql.sketch.sqlglot_log import quiet

    try:
        with quiet():
            return exp.DataType.build(text, dialect=dialect)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None


@cache
def _duckdb():
    import duckdb

    return duckdb.connect(":memory:", config={"enable_external_access": False})


def canonical(kind: exp.DataType | None, dialect: str) -> str | None:
    """The type as DuckDB (and so the audit) holds it, or None when it has no DuckDB reading."""
    import duckdb

    if kind is None or kind.this in (exp.DataType.Type.USERDEFINED, exp.DataType.Type.UNKNOWN):
        return None
    if dialect == "snowflake" and (kind.this in _INTEGERS or (kind.this == exp.DataType.Type.DECIMAL
                                                              and not kind.expressions)):
        return "DECIMAL(38,0)"    # Snowflake's integers are all NUMBER(38,0), as NUMBER itself
    try:
        (value,) = _duckdb().execute(f"SELECT typeof(CAST(NULL AS {kind.sql('duckdb')}))").fetchone()
    except duckdb.Error:
        return None
    return str(value).replace(" ", "")


def same_type(declared: exp.DataType, catalog_text: str, dialect: str) -> bool:
    ours, theirs = canonical(declared, dialect), canonical(_parse_type(catalog_text, dialect), dialect)
    if ours is None or theirs is None:
        return False
    if ours == theirs:
        return True
    return "(" not in catalog_text and ours.split("(")[0] == theirs.split("(")[0]   # no parameters to compare


# -- the checks -----------------------------------------------------------------------------------

def _shown(kind, dialect: str) -> str:
    """The declared type as the dialect writes it (DuckDB's own name on DuckDB: VARCHAR, not TEXT)."""
    if not isinstance(kind, exp.DataType):
        return "?"
    return (canonical(kind, dialect) if dialect == "duckdb" else None) or kind.sql(dialect)


def check_declarations(creates: list[exp.Create], catalog: Catalog, dialect: str) -> None:
    """Every declared table and column is in the catalog with the declared type, or one refusal."""
    for create in creates:
        schema = create.this
        table = schema.this
        found = find_table(catalog, table, dialect)
        if found is None:
            refuse(f"the declared table {table.sql(dialect)} is not in the warehouse's catalog ({catalog.path}); "
                   "declare the warehouse's tables under their names there", None)
        for col in schema.expressions:
            kind = col.args.get("kind")
            shown = _shown(kind, dialect)
            have = _column(found, col.this, dialect)
            if have is None:
                refuse(f"the declared column {table.name}.{col.name} ({shown}) is not in the warehouse's catalog "
                       f"table {found.shown()} ({catalog.path})", None)
            if not isinstance(kind, exp.DataType) or not same_type(kind, have.data_type, dialect):
                refuse(f"the declared type of {table.name}.{col.name} is {shown}, the warehouse's catalog has "
                       f"{have.data_type} ({catalog.path}); declare the warehouse's type, or leave the "
                       "declarations out to take them from --catalog", None)


def build_declarations(tables: list[exp.Table], used: set[str], catalog: Catalog, dialect: str) -> list[exp.Create]:
    """CREATE TABLE declarations of the tables a statement reads, from the catalog: each name as
    the catalog stores it, each column with the catalog's type. A column whose type has no
    reading here is left out, and refused if the statement names it (`used`: lower-case names)."""
    creates = []
    for table in tables:
        found = find_table(catalog, table, dialect)
        if found is None:
            refuse(f"the statement reads {table.sql(dialect)}, which the warehouse's catalog ({catalog.path}) "
                   "does not list", None)
        parts = {}
        for (ident, _), key, value in zip(_parts(table), ("catalog", "db", "this"),
                                          (found.catalog, found.schema, found.name)):
            if ident is not None and value is not None:
                parts[key] = identifier(value, dialect)
        columns = []
        for c in found.columns:
            kind = _parse_type(c.data_type, dialect)
            if canonical(kind, dialect) is None:
                if c.name.lower() in used:
                    refuse(f"the column {found.name}.{c.name} has the catalog type {c.data_type}, which the audit "
                           f"cannot read as a {dialect} type", None)
                continue
            assert kind is not None
            if dialect == "snowflake" and kind.this == exp.DataType.Type.DECIMAL and (
                    len(kind.expressions) < 2 or kind.expressions[1].name == "0"):
                kind = exp.DataType.build("BIGINT")   # NUMBER(p, 0) is what Snowflake's integer types are
            columns.append(exp.ColumnDef(this=identifier(c.name, dialect), kind=kind))
        if not columns:
            refuse(f"no column of {found.shown()} in the catalog has a type the audit can read", None)
        creates.append(exp.Create(kind="TABLE", this=exp.Schema(this=exp.Table(**parts), expressions=columns)))
    return creates


# -- the query the curator runs ------------------------------------------------------------------

def _lit(value: str, dialect: str) -> str:
    return exp.Literal.string(value).sql(dialect)


def _name_test(column: str, ident: exp.Identifier, dialect: str, part: str) -> str:
    if _insensitive(dialect, part):
        return f"LOWER({column}) = {_lit(ident.name.lower(), dialect)}"
    return f"{column} = {_lit(stored(ident, dialect, part), dialect)}"


_CURRENT_SCHEMA = {"duckdb": "current_schema()", "postgres": "current_schema()", "snowflake": "CURRENT_SCHEMA()",
                   "trino": "current_schema"}
_DATA_TYPE = {   # the type with its parameters where the view keeps them in other columns
    "postgres": ("CASE WHEN data_type = 'numeric' AND numeric_precision IS NOT NULL THEN 'numeric(' || "
                 "CAST(numeric_precision AS TEXT) || ',' || CAST(numeric_scale AS TEXT) || ')' ELSE data_type END"),
    "snowflake": ("CASE WHEN data_type = 'NUMBER' AND numeric_precision IS NOT NULL THEN 'NUMBER(' || "
                  "TO_VARCHAR(numeric_precision) || ',' || TO_VARCHAR(numeric_scale) || ')' ELSE data_type END"),
}


def catalog_query(tables: list[exp.Table], dialect: str) -> str:
    """The one query that lists the tables' columns from the warehouse's information_schema."""
    if dialect == "spark":
        raise BadInput("--catalog-query: Spark SQL has no information_schema; write the catalog file yourself "
                       "(table_schema, table_name, column_name, data_type, ordinal_position: DESCRIBE TABLE or "
                       "spark.catalog.listColumns give them) and pass it with --catalog")
    groups: dict[tuple[str, ...], tuple[str, list[str]]] = {}
    for table in tables:
        catalog, schema, name = (ident for ident, _ in _parts(table))
        assert name is not None
        tests = [_name_test("table_name", name, dialect, "table")]
        view = "information_schema.columns"
        if dialect == "bigquery":
            if schema is None:
                raise BadInput(f"--catalog-query on bigquery: declare {table.sql(dialect)} with its dataset "
                               "(dataset.table): BigQuery's INFORMATION_SCHEMA.COLUMNS is per dataset")
            where = [p for p in (catalog, schema) if p is not None]
            view = ".".join(p.sql(dialect) for p in where) + ".INFORMATION_SCHEMA.COLUMNS"
        else:
            if dialect in ("snowflake", "trino") and catalog is not None:
                view = f"{catalog.sql(dialect)}.{'INFORMATION_SCHEMA.COLUMNS' if dialect == 'snowflake' else view}"
            elif dialect == "snowflake":
                view = "INFORMATION_SCHEMA.COLUMNS"
            elif catalog is not None:
                tests.insert(0, _name_test("table_catalog", catalog, dialect, "table"))
            elif dialect == "duckdb":
                tests.insert(0, "table_catalog = current_database()")
            tests.insert(-1, _name_test("table_schema", schema, dialect, "table") if schema is not None
                         else f"table_schema = {_CURRENT_SCHEMA[dialect]}")
        groups.setdefault((view,), (view, []))[1].append("(" + " AND ".join(tests) + ")")
    data_type = f"{_DATA_TYPE[dialect]} AS data_type" if dialect in _DATA_TYPE else "data_type"
    selects = [f"SELECT table_catalog, table_schema, table_name, column_name, {data_type}, "
               f"ordinal_position FROM {view} WHERE " + " OR ".join(tests) for view, tests in groups.values()]
    body = "\nUNION ALL\n".join(selects)
    order = "ORDER BY table_catalog, table_schema, table_name, ordinal_position"
    if len(selects) > 1:
        return f"SELECT * FROM (\n{body}\n) AS catalog_columns\n{order};\n"
    return f"{body}\n{order};\n"
