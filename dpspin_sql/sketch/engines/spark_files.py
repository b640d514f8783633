"""The sketch on Spark over the user's own files (`dpspin sql --engine spark` with read_parquet /
read_csv) and tables of the Spark session's catalog (`spark_table('db.table')`,
engines/spark_tables.py): the files are read in place by Spark's own readers, the tables by
`spark.table`, and only the m-vector comes back.

The statement is audited exactly as for DuckDB (sql/audit.py, sql/own.py: DuckDB reads the
files' Parquet schemas and CSV headers, never a row), which gives the `SketchSource`: one
fixed projection per relation under the logical names (record_id, user_id, atom_id, weight,
the filters' private columns). Here each projection is rendered for Spark:

- a file scan, `read_parquet('/abs/path')` or `read_csv('/abs/path', …)`, becomes a temporary
  view over `spark.read.parquet(path)`, or over `spark.read.csv(path)` with the header line
  skipped, every column text under the names the audit read (DuckDB's `all_varchar`; the
  schema is given, never inferred from rows) and malformed rows dropped (`ignore_errors`);
- a Spark table, `spark_table('db.table')`, becomes a temporary view over `spark.table(name)`,
  whose schema must still be the one the audit read from the catalog;
- the store's `atoms` (the dictionary: public) and, at user level, the store's auxiliary users
  (units with auxiliary records are left out of the sketch, as on DuckDB) are shipped to
  Spark as small DataFrames;
- DuckDB's TRY_CAST of an integer atom column to INTEGER becomes a range-guarded CAST
  (sketch/transpile.py `guard_int_casts`), and the rest is transpiled (sketch/transpile.py `for_engine`).

The statement's filters are applied to the projections with ANSI mode off and materialized
before the sketch runs (engines/spark.py `apply_filters`, as for the store's tables); the
enforced sketch is then the portable query over the projections, transpiled to Spark as for
the store (macros inlined, HUGEINT → DECIMAL(38, 0), `//` → DIV), so its fixed-point result
equals DuckDB's integer for integer. Only (atom_id, mass) rows are collected to the driver;
nothing of the files is copied to the driver or into the store.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import Sketch, TargetFacts, assemble, check_aux_users, dictionary_atoms
from dpspin_sql.sketch.rewrite import SketchFilters
from dpspin_sql.source import Relation, SketchSource

VIEW_PREFIX = "dpspin_"
ATOMS_VIEW = "atoms"                 # the name the sketch query reads the dictionary by
AUX_VIEW = "dpspin_aux_records"      # the store's auxiliary users (user_id, split = 'aux')
READERS = ("read_parquet", "read_csv")
SPARK_TABLE = "spark_table"
ASSIGN = "dpspin_assign"   # records read in place, assigned on Spark by the dictionary's saved scorer
FORMATS = ("parquet", "csv", "delta", SPARK_TABLE, ASSIGN)   # delta: the Parquet files of its snapshot
OWN_TABLES = ("tables of your DuckDB database cannot be read by Spark, files can: on --engine spark read your "
              "data with read_parquet('FILE') or read_csv('FILE') (or a table of the Spark catalog with "
              "spark_table('db.table')), or drop --engine spark to run it on duckdb")


@dataclass
class _File:
    view: str
    path: str | tuple[str, ...]   # a Spark table's name, or the files the audit fixed (one or more)
    format: str
    columns: tuple[tuple[str, str], ...]
    delimiter: str = ","
    assign_text: str | None = None   # dpspin_assign: the text column the saved scorer reads


@dataclass
class _Rendered:
    """The source's projections as Spark SQL over views, and the files behind the views."""

    assignments: str
    records: str | None
    files: list[_File] = field(default_factory=list)
    reads_aux: bool = False


def _scan_files(scan: exp.Expr) -> tuple[tuple[str, ...], str, str]:
    """(the files, their format, the CSV delimiter) of a file scan the audit wrote: read_parquet or
    read_csv of one path or a list of paths (sql/resolve.py `Catalog.file`)."""
    args = scan.expressions
    paths = tuple(e.this for e in (args[0].expressions if isinstance(args[0], exp.Array) else [args[0]]))
    delimiter = next((a.expression.this for a in args[1:] if isinstance(a, exp.PropertyEQ)
                      and a.this.name.lower() in ("delim", "delimiter")), ",")
    return paths, "parquet" if scan.name.lower() == "read_parquet" else "csv", delimiter


def files_only(source: SketchSource) -> str | None:
    """None when every relation of `source` is a file read directly (what Spark can read in
    place); else why not, one line that says what to do."""
    for rel in (source.assignments, source.records):
        if rel is None:
            continue
        if rel.table is not None:   # a table or view of the user's database
            return OWN_TABLES
        if rel.path is None or rel.format not in FORMATS or getattr(rel, "select", None) is None:
            return ("a CTE or FROM subquery runs on the duckdb engine only; on --engine spark read the files "
                    "themselves (read_parquet('FILE') / read_csv('FILE')), or drop --engine spark")
    return None


def render(source: SketchSource) -> _Rendered:
    """The projections in Spark SQL, their file scans as views (see the module docstring)."""
    from dpspin_sql.sketch.sqlglot_log import quiet
    from dpspin_sql.sketch.transpile import for_engine, guard_int_casts

    files: list[_File] = []
    reads_aux = False

    def one(rel) -> str:
        nonlocal reads_aux
        select = rel.select.copy()
        for table in list(select.find_all(exp.Table)):
            alias = table.args.get("alias")
            if isinstance(table.this, exp.Anonymous) and table.this.name.lower() in READERS:
                paths, fmt, delimiter = _scan_files(table.this)
                f = _File(f"{VIEW_PREFIX}file_{len(files)}", paths, fmt, tuple(rel.file_columns), delimiter)
                if f.format != ("parquet" if rel.format == "delta" else rel.format) or not paths:
                    raise AssertionError("a projection reads another file than its relation's")
                files.append(f)
                name = f.view
            elif isinstance(table.this, exp.Anonymous) and table.this.name.lower() == ASSIGN:
                inner, text = table.this.expressions
                paths, fmt, delimiter = _scan_files(inner)
                if rel.format != ASSIGN or not paths or tuple(rel.file_columns)[-2:] != (
                        ("atom_id", "INTEGER"), ("weight", "DOUBLE")):
                    raise AssertionError("a projection reads another relation than its dpspin_assign")
                f = _File(f"{VIEW_PREFIX}assigned_{len(files)}", paths, fmt, tuple(rel.file_columns)[:-2], delimiter,
                          assign_text=text.this)
                files.append(f)
                name = f.view
            elif isinstance(table.this, exp.Anonymous) and table.this.name.lower() == SPARK_TABLE:
                name_ = table.this.expressions[0].this
                if rel.format != SPARK_TABLE or str(name_) != str(rel.path):
                    raise AssertionError("a projection reads another Spark table than its relation's")
                f = _File(f"{VIEW_PREFIX}table_{len(files)}", name_, SPARK_TABLE, tuple(rel.file_columns))
                files.append(f)
                name = f.view
            elif isinstance(table.this, exp.Identifier) and table.args.get("catalog") is not None \
                    and table.name.lower() in ("atoms", "records"):
                name = ATOMS_VIEW if table.name.lower() == "atoms" else AUX_VIEW   # the store's
                reads_aux = reads_aux or name == AUX_VIEW
            else:
                raise AssertionError(f"a projection over files reads {table.sql('duckdb')}")
            new = exp.Table(this=exp.to_identifier(name))
            if alias is not None:
                new.set("alias", alias.copy())
            table.replace(new)
        tree = for_engine(guard_int_casts(select, "spark"), "spark")
        with quiet():
            import sqlglot

            return tree.sql(dialect="spark", unsupported_level=sqlglot.ErrorLevel.RAISE)

    assignments = one(source.assignments)
    records = one(source.records) if source.records is not None else None
    return _Rendered(assignments, records, files, reads_aux)


def _csv_frame(spark, f: _File):
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(name, StringType(), True) for name, _ in f.columns])
    return spark.read.csv(list(f.path), schema=schema, header=True, enforceSchema=True, sep=f.delimiter, quote='"',
                          escape='"', multiLine=True, mode="DROPMALFORMED")


def _parquet_frame(spark, f: _File):
    df = spark.read.parquet(*f.path)
    seen = {c.lower() for c in df.columns}
    missing = [name for name, _ in f.columns if name.lower() not in seen]
    if missing:   # the file changed between the audit and the run
        raise BadInput(f"the parquet file {f.path[0]} has no column {missing[0]!r} on Spark; it was read with it a "
                       "moment ago (did the file change?): run the statement again")
    return df


def _table_frame(spark, f: _File):
    from dpspin_sql.sketch.engines.spark_tables import schema_of

    assert isinstance(f.path, str)
    df = spark.table(f.path)
    if [(n.lower(), t) for n, t in schema_of(df)] != [(n.lower(), t) for n, t in f.columns]:
        raise BadInput(f"the Spark table {f.path} has another schema than the one the audit read a moment ago (did "
                       "the table change?): run the statement again")
    return df


def _frame(spark, f: _File):
    if f.format == SPARK_TABLE:
        return _table_frame(spark, f)
    return _parquet_frame(spark, f) if f.format == "parquet" else _csv_frame(spark, f)


class SparkFilesEngine:
    """The enforced sketch on Spark over the files of an audited statement (module docstring)."""

    name = "spark"

    @staticmethod
    def admit(filters: SketchFilters | None) -> None:
        """Spark's admission (`SparkEngine.admit`): the same engine over other inputs."""
        from dpspin_sql.sketch.engines.spark import SparkEngine

        SparkEngine.admit(filters)

    def __init__(self, filters: SketchFilters | None, *, source: SketchSource, session=None,
                 master: str | None = None):
        why = files_only(source)
        if why is not None:
            raise BadInput(why)
        self.admit(filters)   # before Spark or any file is touched
        self.filters, self.source, self.session, self.master = filters or SketchFilters(), source, session, master
        self.rendered = render(source)

    def details(self) -> dict:
        formats = {f.format for f in self.rendered.files}
        reads = " and ".join(w for w, there in (("Spark tables", SPARK_TABLE in formats),
                                                ("files", bool(formats - {SPARK_TABLE}))) if there)
        return {"engine": self.name, "spark_reads": f"{reads} in place"} | self.source.details()

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        from dpspin_sql.sketch.engines.spark import get_session

        atom_ids = dictionary_atoms(con)
        check_aux_users(con, bounds.unit)
        atoms = [(int(a), str(lab)) for a, lab in con.execute("SELECT atom_id, label FROM atoms").fetchall()]
        aux = ([(str(u[0]),) for u in con.execute(
            "SELECT DISTINCT user_id FROM records WHERE split = 'aux' AND user_id IS NOT NULL").fetchall()]
            if self.rendered.reads_aux else [])
        scorer = None
        if any(f.assign_text for f in self.rendered.files):
            from dpspin_sql.sketch.engines.spark import is_connect, is_connect_session, saved_scorer_bytes

            scorer = saved_scorer_bytes(con)
            if scorer is None:
                raise BadInput("dpspin_assign needs the dictionary's fitted scorer: run dpspin assign on the store "
                               "first (it saves the scorer with the dictionary)")
            if is_connect(self.master) or (self.session is not None and is_connect_session(self.session)):
                raise BadInput("dpspin_assign runs the saved scorer inside Spark's executors, which Spark Connect "
                               "does not offer: run it on a cluster (spark://) or locally")
        spark = self.session or get_session(self.master)
        rows = sketch_over_files(spark, bounds, self.filters, self.rendered, atoms, aux, scorer)
        return assemble(TargetFacts(atom_ids, None, None), rows, bounds)


def assign_frame(spark, df, scorer_bytes: bytes, K: int, text: str):
    """The records' rows, each once per atom the saved scorer gives its text (`spark.scored`, the
    map `--spark-assign scorer` runs, carrying every column of the row): (columns…, atom_id, weight)."""
    from pyspark.sql.types import DoubleType, IntegerType, StructField, StructType

    from dpspin_sql.sketch.engines.spark import scored

    index = [c.lower() for c in df.columns].index(text.lower())
    schema = StructType([*df.schema.fields, StructField("atom_id", IntegerType(), True),
                         StructField("weight", DoubleType(), True)])
    rows = scored(spark, df.rdd, scorer_bytes, K, index, lambda row, atom_id, weight: (*row, atom_id, weight))
    return spark.createDataFrame(rows, schema)


def sketch_over_files(spark, bounds: Bounds, filters: SketchFilters, rendered: _Rendered, atoms, aux,
                      scorer: bytes | None = None) -> list[tuple[int, int]]:
    """Register the views, run the projections, the filters and the sketch; collect (atom_id, mass)."""
    from dpspin_sql.sketch.engines.spark import apply_filters
    from dpspin_sql.sketch.transpile import sketch_sql

    views: list[str] = []

    def view(df, name: str) -> None:
        df.createOrReplaceTempView(name)
        views.append(name)

    try:
        frames = [_frame(spark, f) for f in rendered.files]
    except BadInput:
        raise
    except Exception:   # never the engine's message: a reader's error can quote a row
        raise BadInput("Spark cannot read the statement's files or tables (their schema or header)") from None
    try:
        for f, df in zip(rendered.files, frames):
            if f.assign_text is not None:
                assert scorer is not None   # SparkFilesEngine.sketch refuses a dpspin_assign without one
                df = assign_frame(spark, df, scorer, bounds.K, f.assign_text)
            view(df, f.view)
        view(spark.createDataFrame(atoms, "atom_id int, label string"), ATOMS_VIEW)
        if rendered.reads_aux:
            view(spark.createDataFrame([(u, "aux") for (u,) in aux], "user_id string, split string"), AUX_VIEW)
        assignments_df = spark.sql(rendered.assignments)
        records_df = spark.sql(rendered.records) if rendered.records is not None else None
        records_df, assignments_df = apply_filters(spark, filters, records_df, assignments_df)
        a_view, r_view = f"{VIEW_PREFIX}assignments", f"{VIEW_PREFIX}records"
        view(assignments_df, a_view)
        records = None
        if records_df is not None:
            view(records_df, r_view)
            records = Relation(table=r_view, available=tuple(records_df.columns))
        source = SketchSource(Relation(table=a_view, available=tuple(assignments_df.columns)), records)
        query = sketch_sql(bounds, None, "spark", pretty=False, source=source)
        return [(int(r[0]), int(r[1])) for r in spark.sql(query).collect()]
    except BadInput:
        raise
    except Exception:   # never the engine's message: it can quote protected values
        raise BadInput("the sketch query failed on Spark") from None
    finally:
        for name in views:
            spark.catalog.dropTempView(name)
