"""The one resolver: what every name of a DP statement stands for, over one catalog model
(docs/SQL.md, "Names").

`Catalog` is the model every audit reads, store-shaped statements (sql/audit.py) and
statements over the user's own relations (sql/own.py) alike: the store's `assignments` and
`records` (their column types are totality.COLUMN_TYPES, the same the filters are typed
with), the store's other relations (never readable), the user's tables and views as DuckDB's
catalog holds them, files under the files root, and the tables the curator declared public.
`Resolver.relation` turns one FROM/JOIN item into a `Rel`; `Scope` resolves a column
reference to (Rel, column). A rule over relations or columns is written once, against these.

Names are resolved the way DuckDB binds them, and DuckDB is asked: a view's or CTE's
expansion (sql/rowwise.py) is cross-checked against DuckDB's own binding of the relation
(sql/binder.py) — the tables both scan must be the same, and none may be the store's (however
it is named: two or three parts, an ATTACH alias, the search path, `query`, `query_table`, a
table macro). A macro named like a built-in function is refused outright (it would change
what the audit reads as the built-in, and what the sketch's own SQL computes).
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sqlglot import exp

from dpspin_sql.errors import BadInput
from dpspin_sql.sql import binder
from dpspin_sql.sql.delta import is_delta_scan
from dpspin_sql.sql.errors import refuse
from dpspin_sql.sql.rowwise import Context, Derived, Expander, kind_of

ASSIGNMENTS, RECORDS = "assignments", "records"
STORE_NAMES = (ASSIGNMENTS, RECORDS)
# the store's two statement tables, as the filters are typed (sql/totality.py's COLUMN_TYPES)
_DUCK = {"VARCHAR": "VARCHAR", "INTEGER": "INTEGER", "DOUBLE": "DOUBLE", "JSON": "JSON"}


@dataclass(frozen=True)
class Found:
    """A table or view of the connection's catalog, as stored."""

    catalog: str
    schema: str
    name: str
    is_view: bool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.catalog.lower(), self.schema.lower(), self.name.lower())

    @property
    def label(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.name}"

    def table(self) -> exp.Table:
        return exp.Table(this=exp.to_identifier(self.name, quoted=True), db=exp.to_identifier(self.schema, quoted=True),
                         catalog=exp.to_identifier(self.catalog, quoted=True))


MAX_FILES = 10_000


def _is_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _hidden(name: str) -> bool:
    """Hadoop's convention, which Spark and Hive follow: _SUCCESS, _metadata, .crc files."""
    return name.startswith(("_", "."))


def dataset_files(path: Path, fmt: str, literal: str) -> list[str]:
    """The files `literal` names, sorted, each resolved: the file; the files of a folder, as
    Spark reads one (every file but the hidden ones: _SUCCESS, _metadata, .crc; Hive's part
    files have no suffix; a folder with subfolders, as a partitioned layout has, refused); or
    the files a glob matches (hidden ones skipped). Empty is an error; a file that is not of
    the format is refused when its schema is read."""
    if _is_glob(literal):
        found = [Path(p) for p in glob.glob(str(path))]
        files = sorted(str(p.resolve()) for p in found if p.is_file() and not _hidden(p.name))
        if not files:
            raise BadInput(f"no {fmt} file matches {literal}")
    elif path.is_dir():
        entries = sorted(path.iterdir())
        subfolders = [e for e in entries if e.is_dir() and not _hidden(e.name)]
        if subfolders:
            raise BadInput(f"the folder {literal} has subfolders ({subfolders[0].name}, a partitioned layout?): read "
                           f"its files with a glob, e.g. read_{fmt}('{literal.rstrip('/')}/*/*')")
        files = [str(e.resolve()) for e in entries if e.is_file() and not _hidden(e.name)]
        if not files:
            raise BadInput(f"the folder {literal} holds no {fmt} file (only hidden ones, if any)")
    elif path.is_file():
        files = [str(path)]
    else:
        raise BadInput(f"{fmt} file not found: {literal}")
    if len(files) > MAX_FILES:
        raise BadInput(f"{literal} names {len(files):,} files; a statement reads at most {MAX_FILES:,}")
    return files


class Catalog:
    """Schema lookups on the connection the release runs on (names and types; rows only of
    public tables). `con` None: a statement without a connection, which can name the store's
    `assignments` and `records` only."""

    def __init__(self, con=None, user_catalog: str | None = None, files_root: str | Path | None = None,
                 public=(), spark_tables=None):
        self.con = con
        # name -> [(column, DuckDB type)] from the Spark session's catalog (sketch/engines/spark_tables.py);
        # None: not --engine spark, and spark_table(...) is refused
        self.spark_tables = spark_tables
        self.store: str = con.execute("SELECT current_database()").fetchall()[0][0] if con is not None else ""
        self.user: str = user_catalog or self.store
        self.files_root = Path(files_root if files_root is not None else Path.cwd()).resolve()
        self._path = binder.search_path(con) if con is not None else []
        self._queries: dict[tuple[str, str, str], exp.Expr] = {}
        self._file_sets: dict[frozenset[str], str] = {}   # a statement's file sets -> their label
        self.delta_versions: dict[str, int] = {}          # a Delta table's path -> the version read
        self.public: dict[tuple[str, str, str], Found] = {}
        for name in public or ():
            found = self._public_table(name)
            self.public[found.key] = found

    # -- the store's relations ------------------------------------------------------------------------
    @staticmethod
    def store_tables() -> set[str]:
        """Every relation the dpspin schema defines, tables and views (queries/schema.sql and its
        migration): never read by a statement by name. A view such as `assignment_rows` holds
        every split's rows, so it is as protected as the tables it reads."""
        from dpspin_sql import queries

        rx = r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\s+|TEMPORARY\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)"
        return {m.lower() for name in ("schema", "schema_migrate") for m in re.findall(rx, queries.load(name), re.I)}

    @staticmethod
    def store_columns(name: str) -> dict[str, tuple[str, str]]:
        from dpspin_sql.sketch.totality import COLUMN_TYPES

        return {c: (c, _DUCK[t]) for c, t in COLUMN_TYPES[name].items()}

    def forbidden(self, found: Found) -> str | None:
        """Why a relation may not be read (the store's, a system one), or None."""
        c, s, n = found.key
        if c in ("system", "temp"):
            return f"the {found.catalog} catalog ({found.label})"
        if self.store and c == self.store.lower():
            if self.store.lower() != self.user.lower():
                return f"the dpspin store's own tables (the catalog {found.catalog!r}: {found.label})"
            if s == "main" and n in self.store_tables():
                return f"the dpspin store's own tables ({found.label})"
        return None

    def forbidden_key(self, key: tuple[str, str, str]) -> str | None:
        return self.forbidden(Found(*key, False))

    # -- the user's relations ---------------------------------------------------------------------------
    def find(self, catalog: str, schema: str, name: str) -> Found | None:
        rows = self.con.execute(
            "SELECT database_name, schema_name, table_name, false FROM duckdb_tables() "
            "WHERE lower(database_name) = lower($c) AND lower(schema_name) = lower($s) "
            "AND lower(table_name) = lower($n) "
            "UNION ALL SELECT database_name, schema_name, view_name, true FROM duckdb_views() "
            "WHERE NOT internal AND lower(database_name) = lower($c) AND lower(schema_name) = lower($s) "
            "AND lower(view_name) = lower($n)", {"c": catalog, "s": schema, "n": name}).fetchall()
        return Found(*rows[0]) if rows else None

    def two_parts(self, schema: str | None) -> tuple[str, str]:
        """(catalog, schema) of a statement's `x.name`, as DuckDB reads it: the schema x of the
        user's catalog, else the catalog x (its schema main)."""
        if schema is None:
            return self.user, "main"
        if self.con is not None and not self.con.execute(
                "SELECT 1 FROM duckdb_schemas() WHERE lower(database_name) = lower(?) AND lower(schema_name) = lower(?)",
                [self.user, schema]).fetchall() and self._catalog_exists(schema):
            return schema, "main"
        return self.user, schema

    def _catalog_exists(self, name: str) -> bool:
        return bool(self.con.execute("SELECT 1 FROM duckdb_databases() WHERE lower(database_name) = lower(?)",
                                     [name]).fetchall())

    def lookup(self, table: exp.Table, ctx: Context) -> Found | None:
        """The relation a table name binds to: in the statement, the user's catalog (schema main
        unless named); in a view, DuckDB's order — the view's own catalog and schema, then the
        connection's search path (sql/binder.py cross-checks the result with DuckDB)."""
        if self.con is None:
            return None
        name = table.name
        schema = table.args["db"].name if table.args.get("db") else None
        catalog = table.args["catalog"].name if table.args.get("catalog") else None
        if catalog is not None:
            return self.find(catalog, schema or "main", name)
        if ctx.statement or ctx.catalog is None:
            catalog, schema = self.two_parts(schema)
            return self.find(catalog, schema, name)
        if schema is not None:   # two parts: a schema of the view's catalog, else a catalog
            found = self.find(str(ctx.catalog), schema, name)
            if found is None and self._catalog_exists(schema):
                found = self.find(schema, "main", name)
            for c, _ in self._path:
                found = found or self.find(c, schema, name)
            return found
        for c, s in [(ctx.catalog, ctx.schema or "main"), *self._path]:
            found = self.find(c, s, name)
            if found is not None:
                return found
        return None

    def columns(self, found: Found) -> list[tuple[str, str]]:
        return [tuple(r) for r in self.con.execute(
            "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = ? AND schema_name = ? "
            "AND table_name = ? ORDER BY column_index", [found.catalog, found.schema, found.name]).fetchall()]

    def view_query(self, found: Found) -> exp.Expr:
        """A view's query as DuckDB stores it (its text, parsed)."""
        import sqlglot

        from dpspin_sql.sketch.sqlglot_log import quiet

        if found.key in self._queries:
            return self._queries[found.key].copy()
        rows = self.con.execute(
            "SELECT sql FROM duckdb_views() WHERE NOT internal AND database_name = ? AND schema_name = ? "
            "AND view_name = ?", [found.catalog, found.schema, found.name]).fetchall()
        try:
            with quiet():
                tree = sqlglot.parse_one(rows[0][0], read="duckdb")
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, IndexError):
            refuse(f"view {found.label}: its definition cannot be read, so it is not known to be row-wise", None)
        if not isinstance(tree, exp.Create) or tree.args.get("expression") is None:
            refuse(f"view {found.label}: its definition is not CREATE VIEW … AS <query>", None)
        query = tree.args["expression"]
        self._queries[found.key] = query
        return query.copy()

    def is_public(self, found: Found) -> bool:
        return found.key in self.public and not found.is_view

    def _public_table(self, name: str) -> Found:
        parts = [p for p in str(name).split(".") if p]
        if not 1 <= len(parts) <= 3:
            raise BadInput(f"a public table is named name, schema.name or catalog.schema.name, not {name!r}")
        catalog = parts[0] if len(parts) == 3 else self.user
        schema = parts[-2] if len(parts) >= 2 else "main"
        found = self.find(catalog, schema, parts[-1]) if self.con is not None else None
        if found is None:
            raise BadInput(f"the public table {name!r} does not exist")
        if found.is_view:
            raise BadInput(f"{name!r} is a view: declare the tables it reads public (a view is public when every "
                           "table it reads is)")
        if self.forbidden(found):
            raise BadInput(f"{name!r} is one of the dpspin store's tables, not a table of yours")
        return found

    # -- files ------------------------------------------------------------------------------------------
    def file(self, fn: exp.Expr, ctx: Context):
        """(the scan, its columns, its label) of read_parquet/read_csv of one literal path under
        the files root: a file, a folder of part files (as Spark, DuckDB and Hive write them) or a
        glob; a CSV's columns are all read as text and a malformed row is skipped. The files are
        fixed here (`dataset_files`), every one under the root and with the same columns (each
        one's schema or header is read, never a row)."""
        delta = is_delta_scan(fn)
        fmt = "delta" if delta else "parquet" if isinstance(fn, exp.ReadParquet) else "csv"
        args = [fn.expressions] if delta else [v for _, v in fn.args.items() if v]
        flat = [a for v in args for a in (v if isinstance(v, list) else [v])]
        literal = flat[0].this if len(flat) == 1 and isinstance(flat[0], exp.Literal) and flat[0].is_string else None
        where = fn if ctx.statement else None
        prefix = "" if ctx.statement else f"{ctx.label}: "
        if literal is None:
            refuse(f"{prefix}delta_scan takes one literal path (the table's folder) and nothing else" if delta else
                   f"{prefix}read_{fmt} takes one literal path ('file.{fmt}', a folder or a glob) and nothing else",
                   where)
        given = Path(literal)
        path = Path(os.path.abspath(given if given.is_absolute() else Path.cwd() / given))
        if not _is_glob(literal):
            path = path.resolve()
        if not path.is_relative_to(self.files_root):
            refuse(f"{prefix}the file {literal!r} is outside the files root {self.files_root}; a statement reads "
                   "files under it only", where)
        if delta:
            files = self._delta_files(path, literal)
        else:
            files = dataset_files(path, fmt, literal)
        for f in files:
            if not Path(f).is_relative_to(self.files_root):
                refuse(f"{prefix}{literal!r} reaches the file {f} outside the files root {self.files_root} (a "
                       "link?); a statement reads files under it only", where)
        label = f"{fmt}:{path}"
        seen = self._file_sets.setdefault(frozenset(files), label)
        label = seen   # the same files however they are named: one base relation
        for other_files, other in self._file_sets.items():
            if other != label and not other_files.isdisjoint(files):
                refuse(f"{prefix}{literal!r} and {other.split(':', 1)[1]!r} share files but are not the same files; "
                       "read each file through one path", where)
        texts = [exp.Literal.string(f) for f in files]
        target: exp.Expr = texts[0] if len(texts) == 1 else exp.Array(expressions=texts)
        if fmt in ("parquet", "delta"):   # a Delta table: the Parquet files of its current snapshot
            scan: exp.Expr = exp.Anonymous(this="read_parquet", expressions=[target])
        else:   # every column text: the types cannot depend on the rows; a malformed row is skipped
            delim = "\t" if files[0].lower().removesuffix(".gz").endswith(".tsv") else ","
            scan = exp.Anonymous(this="read_csv", expressions=[target] + [
                exp.PropertyEQ(this=exp.to_identifier(k), expression=v) for k, v in (
                    ("header", exp.true()), ("all_varchar", exp.true()), ("ignore_errors", exp.true()),
                    ("delim", exp.Literal.string(delim)))])
        table = exp.Table(this=scan)
        read_as = "parquet" if delta else fmt
        first = self._describe_file(scan, files[0], read_as)
        for f in files[1:]:
            if self._describe_file(scan, f, read_as) != first:
                raise BadInput(f"the {fmt} files of {literal!r} differ in their columns ({files[0]} and {f}): "
                               "a statement reads files of one schema")
        return table, first, label

    def _delta_files(self, path: Path, literal: str) -> list[str]:
        """The Parquet files of the Delta table's current snapshot; its version is kept for the ledger."""
        from dpspin_sql.sql import delta

        if not path.is_dir():
            raise BadInput(f"Delta table not found: {literal}")
        if not delta.is_delta_table(path):
            raise BadInput(f"{literal} is not a Delta table (no {delta.LOG} folder in it)")
        snap = delta.snapshot(path)
        if not snap.files:
            raise BadInput(f"the Delta table {literal} has no data file at version {snap.version}")
        if len(snap.files) > MAX_FILES:
            raise BadInput(f"the Delta table {literal} has {len(snap.files):,} files; a statement reads at most "
                           f"{MAX_FILES:,}")
        self.delta_versions[str(path)] = snap.version
        return list(snap.files)

    def _describe_file(self, scan: exp.Expr, path: str, fmt: str) -> list[tuple[str, str]]:
        import duckdb

        one = scan.copy()
        one.set("expressions", [exp.Literal.string(path)] + list(one.expressions[1:]))
        try:
            rows = self.con.execute(f"DESCRIBE SELECT * FROM {exp.Table(this=one).sql('duckdb')}").fetchall()
        except duckdb.Error:
            raise BadInput(f"cannot read the {fmt} file {path} (its header or schema)") from None
        return [(r[0], r[1]) for r in rows]

    def spark_table(self, fn: exp.Expr, ctx: Context):
        """(the scan, its columns, its label) of spark_table('db.table'): the columns and types
        from the Spark session's catalog (a schema read, never a row), on --engine spark only."""
        args = fn.expressions
        literal = args[0].this if len(args) == 1 and isinstance(args[0], exp.Literal) and args[0].is_string else None
        where = fn if ctx.statement else None
        if literal is None:
            refuse("spark_table takes one literal table name ('db.table' or 'table') and nothing else", where)
        if self.spark_tables is None:
            refuse(f"spark_table({literal!r}) reads a table of the Spark session's catalog: run the statement with "
                   "--engine spark", where)
        cols = self.spark_tables(literal)
        scan = exp.Table(this=exp.Anonymous(this="spark_table", expressions=[exp.Literal.string(literal)]))
        return scan, cols, f"spark_table:{literal}"

    def assigned(self, fn: exp.Expr, ctx: Context):
        """(the scan, its columns, its label) of dpspin_assign(read_parquet('path'), 'text'): the rows of a
        file (or folder, glob, Delta table) of records with, for each, one row per atom the dictionary's saved
        scorer gives its text (`atom_id` INTEGER, `weight` DOUBLE beside the record's columns), computed on
        Spark where the records are (--engine spark only). Each output row is a function of one record's row,
        so the relation is row-wise; the sketch then bounds each record id and unit as for any relation."""
        args = fn.expressions
        where = fn if ctx.statement else None
        text = args[1].this if len(args) == 2 and isinstance(args[1], exp.Literal) and args[1].is_string else None
        inner: exp.Expr = args[0] if args else exp.Null()
        if text is None or not (isinstance(inner, (exp.ReadParquet, exp.ReadCSV)) or is_delta_scan(inner)):
            refuse("dpspin_assign takes a file reader and the name of its text column: dpspin_assign("
                   "read_parquet('reviews.parquet'), 'body') (read_csv and delta_scan too)", where)
        if self.spark_tables is None:
            refuse("dpspin_assign(...) runs the dictionary's saved scorer on Spark, where the records are: run the "
                   "statement with --engine spark (on duckdb: dpspin load, dpspin assign, then a statement over the "
                   "store)", where)
        scan, cols, label = self.file(inner, ctx)
        names = {n.lower(): (n, t) for n, t in cols}
        if text.lower() not in names:
            refuse(f"dpspin_assign: {label} has no column {text!r} (its columns: "
                   f"{', '.join(n for n, _ in cols)})", where)
        if names[text.lower()][1].upper() != "VARCHAR":
            refuse(f"dpspin_assign: the column {text!r} is {names[text.lower()][1]}, not text", where)
        clash = [n for n in ("atom_id", "weight") if n in names]
        if clash:
            refuse(f"dpspin_assign adds the columns atom_id and weight, but {label} already has {clash[0]!r}", where)
        out = exp.Table(this=exp.Anonymous(this="dpspin_assign", expressions=[scan.this, exp.Literal.string(
            names[text.lower()][0])]))
        return out, [*cols, ("atom_id", "INTEGER"), ("weight", "DOUBLE")], f"dpspin_assign:{label}"

    # -- DuckDB on the emitted SQL ------------------------------------------------------------------------
    def describe(self, sql: exp.Expr) -> list[tuple[str, str]]:
        import duckdb

        try:
            rows = self.con.execute(f"DESCRIBE SELECT * FROM ({sql.sql('duckdb')}) AS d").fetchall()
        except duckdb.Error as exc:
            raise BadInput(f"DuckDB cannot bind a relation the statement reads: {str(exc).splitlines()[0]}") from None
        return [(r[0], r[1]) for r in rows]

    def run_public(self, sql: exp.Expr, ctx: Context) -> list[tuple[str, str]]:
        """A query over public tables: typed, and run once in full (its rows are public), so that
        no part of it can fail later on a subset of rows the protected data would choose."""
        import duckdb

        cols = self.describe(sql)
        try:
            self.con.execute(f"SELECT count(*) FROM ({sql.sql('duckdb')}) AS d").fetchall()
        except duckdb.Error:   # a fixed message: the engine's could quote a value
            raise BadInput(f"{ctx.label}: a query over public tables fails in DuckDB") from None
        return cols


# -- the statement's relations ----------------------------------------------------------------------

@dataclass
class Rel:
    """One relation of the statement: where it is, its qualifier, its columns, and which of
    them can be the record id (`keys`, from sql/rowwise.py)."""

    qualifier: str
    label: str                          # for messages and the ledger: a table name or format:path
    scan: exp.Expr | None         # the FROM item the projection reads (None: the store's table)
    columns: dict[str, tuple[str, str]]  # lower name -> (name, DuckDB type)
    node: exp.Expr
    table: str | None = None
    path: str | None = None
    format: str | None = None
    letter: str = "a"                   # a: assignments-like, r: records-like
    used: dict[str, str] = field(default_factory=dict)   # filter column (lower) -> private name
    store: str | None = None            # the store's assignments / records
    keys: dict[str, dict[str, str] | None] = field(default_factory=dict)
    why: dict[str, str | None] = field(default_factory=dict)
    public: bool = False

    def kind(self, name: str) -> str:
        return kind_of(self.columns[name][1])

    def col(self, name: str, alias: str = "s") -> exp.Column:
        return exp.column(exp.to_identifier(self.columns[name][0], quoted=True), table=alias)


def reads_own_relations(select: exp.Select) -> bool:
    """Whether the statement reads anything but the store's `assignments` / `records`."""
    items = [select.args["from_"].this] + [j.this for j in select.args.get("joins") or []]
    for item in items:
        if not (isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier)
                and not item.args.get("db") and not item.args.get("catalog")
                and item.name.lower() in STORE_NAMES):
            return True
    return False


class Resolver:
    """The relations of one statement (FROM and JOIN items) over one catalog model."""

    def __init__(self, cat: Catalog, select: exp.Select):
        self.cat = cat
        self.expander = Expander(cat)
        ctes: dict[str, tuple] = {}
        with_ = select.args.get("with_")
        self.with_ = with_
        self.ctx = Context(catalog=None, schema=None, label="the statement", statement=True)
        if with_ is not None:
            if with_.args.get("recursive"):
                refuse("a recursive CTE (WITH RECURSIVE) reads the rows it produces", with_)
            for cte in with_.expressions:
                alias = cte.args.get("alias")
                names = [c.name for c in alias.args.get("columns") or []] if alias is not None else []
                ctes[cte.alias_or_name.lower()] = (cte.this, Context(catalog=None, schema=None, statement=True,
                                                                     label=f"the CTE {cte.alias_or_name}",
                                                                     ctes=dict(ctes)), names)
            self.ctx.ctes = ctes

    def store_relation(self, item: exp.Table, name: str) -> Rel:
        alias = item.args.get("alias")
        columns = self.cat.store_columns(name)
        return Rel(qualifier=(alias.name if alias is not None else name).lower(), label=name, scan=None,
                   columns=columns, node=item, table=name, store=name,
                   keys={c: {f"store.{name}": c} for c in columns}, why={c: None for c in columns})

    def relation(self, item: exp.Expr, where: str) -> Rel:
        if isinstance(item, exp.Table):
            for key, value in item.args.items():
                if key not in ("this", "alias", "db", "catalog") and value:
                    refuse(f"table modifiers ({key}) are not allowed in {where}", item)
        alias = item.args.get("alias")
        if alias is not None and (alias.args.get("columns") or not alias.name):
            refuse("column aliases on a table are not allowed", item)
        if isinstance(item, exp.Table) and (isinstance(item.this, (exp.ReadParquet, exp.ReadCSV)) or
                                            is_delta_scan(item.this)):
            rel = self._file(item)
        elif isinstance(item, exp.Table) and isinstance(item.this, exp.Anonymous) and \
                item.this.name.lower() == "dpspin_assign":
            rel = self._file(item, assigned=True)
        elif isinstance(item, exp.Table) and isinstance(item.this, exp.Anonymous) and \
                item.this.name.lower() == "spark_table":
            rel = self._file(item, spark=True)
        elif isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
            rel = self._table(item, where)
        elif isinstance(item, exp.Table) and isinstance(item.this, (exp.Func, exp.Anonymous)):
            refuse(f"{where} reads the table function {item.this.sql('duckdb').split('(')[0]}; the only file "
                   "readers allowed are read_parquet('path'), read_csv('path') and delta_scan('path')", item)
        elif isinstance(item, (exp.Subquery, exp.Select)):
            sub = item if isinstance(item, exp.Subquery) else exp.Subquery(this=item)
            for key, value in sub.args.items():
                if key not in ("this", "alias") and value:
                    refuse(f"{key.upper()} on the subquery in {where} is not allowed", item)
            derived = self.expander.query(sub.this, self.ctx.under(f"the subquery in {where}"))
            rel = self._derived(item, derived, "subquery", f"the subquery in {where}")
        else:
            refuse(f"{where} reads something other than a table, a view, a file or a subquery", item)
        rel.qualifier = (alias.name if alias is not None else rel.qualifier).lower()
        rel.node = item
        return rel

    def _file(self, item: exp.Table, spark: bool = False, assigned: bool = False) -> Rel:
        read = self.cat.assigned if assigned else self.cat.spark_table if spark else self.cat.file
        scan, cols, label = read(item.this, self.ctx)
        fmt, path = label.split(":", 1)
        columns = {n.lower(): (n, t) for n, t in cols}
        if len(columns) != len(cols):
            refuse(f"{label} has two columns whose names differ only in case", item)
        qualifier = fmt if spark or assigned else "delta_scan" if fmt == "delta" else f"read_{fmt}"
        return Rel(qualifier=qualifier, label=label, scan=scan, columns=columns, node=item, path=path, format=fmt,
                   keys={c: {label: n} for c, (n, _) in columns.items()}, why={c: None for c in columns})

    def _table(self, item: exp.Table, where: str) -> Rel:
        cat = self.cat
        name = item.name
        schema = item.args["db"].name if item.args.get("db") else None
        catalog = item.args["catalog"].name if item.args.get("catalog") else None
        if catalog is None and schema is not None:
            two = cat.two_parts(schema)
            if two[0] != cat.user:
                catalog, schema = two
        if catalog is None and schema is None and name.lower() in self.ctx.ctes:
            derived = self.expander.relation(item.copy(), self.ctx)
            return self._derived(item, derived, name, f"the CTE {name}")
        if catalog is None and schema is None and name.lower() in STORE_NAMES:
            refuse(f"{where} reads the store's {name.lower()} table together with a table of your own; read either "
                   f"the store's assignments and records, or your own relations (main.{name} names yours)", item)
        if catalog is not None and catalog.lower() in ("system", "temp"):
            refuse(f"{where} reads the {catalog} catalog; a DP statement reads your own tables", item)
        if catalog is not None and catalog.lower() == cat.store.lower() and cat.store != cat.user:
            refuse(f"{where} reads the dpspin store's catalog {catalog!r}; a statement reads the store's assignments "
                   "and records unqualified, and your own tables", item)
        c, sch = catalog or cat.user, schema or "main"
        if c.lower() == cat.store.lower() and sch.lower() == "main" and name.lower() in cat.store_tables():
            refuse(f"reads table {name!r}, which is not allowed; a DP statement reads {ASSIGNMENTS} and {RECORDS} "
                   "of the store, or tables of your own", item)
        found = cat.find(c, sch, name)
        if found is None:
            refuse(f"{where}: there is no table or view {'.'.join((c, sch, name))!r}; a statement reads the "
                   "store's assignments and records, tables and views of --db's database, or files through "
                   "read_parquet('FILE') / read_csv('FILE')", item)
        if not found.is_view:
            columns = {cn.lower(): (cn, t) for cn, t in cat.columns(found)}
            public = cat.is_public(found)
            return Rel(qualifier=found.name.lower(), label=found.label, scan=found.table(), columns=columns, node=item,
                       table=found.label, public=public,
                       keys={c: ({} if public else {found.label: n}) for c, (n, _) in columns.items()},
                       why={c: None for c in columns})
        derived = self.expander.view(found)
        rel = self._derived(item, derived, found.name, f"view {found.label}", original=f"SELECT * FROM "
                            f"{found.table().sql('duckdb')}")
        rel.table = found.label
        return rel

    def _derived(self, item: exp.Expr, derived: Derived, qualifier: str, label: str,
                 original: str | None = None) -> Rel:
        """A relation the expander read: cross-checked with DuckDB's binder, typed by DuckDB."""
        if original is None:   # the analyst's own CTE or subquery, as the statement wrote it
            source = item.copy()
            if isinstance(source, exp.Subquery):
                source.set("alias", None)
            query = exp.select("*").from_(source)
            if self.with_ is not None:
                query.set("with_", self.with_.copy())
            original = query.sql("duckdb")
        self.cross_check(label, original, derived, item)
        cols = self.cat.describe(derived.sql)
        if [c.lower() for c, _ in cols] != [c.lower() for c in derived.columns]:
            refuse(f"{label}: DuckDB names its columns {[c for c, _ in cols]}, the audit {derived.columns}", item)
        if len({c.lower() for c, _ in cols}) != len(cols):
            dup = next(c for c, _ in cols if [d.lower() for d, _ in cols].count(c.lower()) > 1)
            refuse(f"{label} has two columns named {dup!r}; alias one of them", item)
        columns = {n.lower(): (n, t) for n, t in cols}
        scan = derived.sql.copy() if isinstance(derived.sql, exp.Table) else exp.Subquery(this=derived.sql.copy())
        return Rel(qualifier=qualifier.lower(), label=label.removeprefix("view "), scan=scan, columns=columns,
                   node=item, keys={c.lower(): k for c, k in zip(derived.columns, derived.keys)},
                   why={c.lower(): w for c, w in zip(derived.columns, derived.why)}, public=derived.public)

    def cross_check(self, label: str, original: str, derived: Derived, node) -> None:
        """DuckDB's binder must read the relation from the tables the audit read, none of the
        store's, and no table function but the file readers (sql/binder.py)."""
        import duckdb

        try:
            theirs = binder.scans(self.cat.con, original)
        except duckdb.Error as exc:
            raise BadInput(f"DuckDB cannot bind {label}: {str(exc).splitlines()[0]}") from None
        for key in sorted(theirs.tables):
            reason = self.cat.forbidden_key(key)
            if reason:
                refuse(f"{label} reads {reason}, as DuckDB binds it; a DP statement reads the store's assignments "
                       "and records unqualified, or tables of your own", node)
        if theirs.other_functions:
            refuse(f"{label} reads the table function {sorted(theirs.other_functions)[0].lower()}, as DuckDB binds "
                   "it; the only table functions allowed are read_parquet('path'), read_csv('path') and "
                   "delta_scan('path')", node)
        ours = binder.scans(self.cat.con, f"SELECT * FROM ({derived.sql.sql('duckdb')}) AS d")
        expected = self.expander.tables
        if theirs.tables != ours.tables or not ours.tables <= expected or \
                bool(theirs.functions & binder.FILE_SCANS) != bool(ours.functions & binder.FILE_SCANS):
            seen = ", ".join(".".join(t) for t in sorted(theirs.tables)) or "no table"
            read = ", ".join(".".join(t) for t in sorted(ours.tables)) or "no table"
            refuse(f"DuckDB binds {label} to {seen}, the audit read {read}; name the tables it reads in full "
                   "(catalog.schema.name)", node)


class Scope:
    """Column references of a statement, resolved to (Rel, column) over its relations."""

    def __init__(self, rels: list[Rel], using: str | None = None, *, noun: str = "relation", hint=None):
        self.rels = rels
        self.using = using
        self.prefer = rels[-1]   # the relation an unqualified USING key names (the records-like one)
        self.noun = noun         # "table" for the store's tables
        self.hint = hint         # the store's: a column of records read without the join
        seen = set()
        for rel in rels:
            if rel.qualifier in seen:
                refuse(f"the name {rel.qualifier!r} names two {noun}s; give each its own alias "
                       f"(... AS a JOIN ... AS b)", rel.node)
            seen.add(rel.qualifier)

    def resolve(self, column: exp.Column, where: str) -> tuple[Rel, str]:
        if not isinstance(column.this, exp.Identifier):
            refuse(f"{column.sql()} in {where} is not a plain column", column)
        if column.args.get("db") or column.args.get("catalog"):
            refuse(f"a qualified column in {where} names a table outside the statement", column)
        name = column.name.lower()
        if column.table:
            rel = next((r for r in self.rels if r.qualifier == column.table.lower()), None)
            if rel is None:
                refuse(f"{column.table!r} in {where} is not a {self.noun} of this statement", column)
            if name not in rel.columns:
                refuse(f"{rel.label} has no column {column.name!r}", column)
            return rel, name
        owners = [r for r in self.rels if name in r.columns]
        if not owners:
            if self.hint is not None:
                self.hint(column)
            refuse(f"unknown column {column.name!r} in {where}", column)
        if len(owners) > 1:
            if name == self.using:
                return self.prefer, name
            refuse(f"column {column.name!r} in {where} is in both relations; qualify it", column)
        return owners[0], name


def check_macros(con) -> None:
    """Refuse while a macro on the connection is named like a built-in function."""
    shadows = binder.shadowing_macros(con)
    if shadows:
        refuse(f"the macro {shadows[0]} is named like DuckDB's built-in function "
               f"{shadows[0].rsplit('.', 1)[-1]}: it would change what the audit and the sketch read as the "
               "built-in on this connection; rename or drop it", None)
