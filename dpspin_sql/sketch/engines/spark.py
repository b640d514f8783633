"""The sketch on Spark (`dpspin sql --engine spark`), for data too big for one machine.

1. The target records go to Spark (from the DuckDB store here; on a cluster they would
   already be there) and, when the dictionary has a fitted scorer, the assignment map
   runs on Spark: the saved scorer (`assign.load_scorer`) is broadcast as bytes and
   applied per partition (`mapPartitions`), batch by batch. Without a scorer (assignments
   loaded from the user's own classifier) the stored assignments table is used.
2. The enforced sketch runs as Spark SQL transpiled from the same rewritten core query
   (`sketch/transpile.py`: macros inlined, HUGEINT → DECIMAL(38, 0), `//` → DIV), so the
   fixed-point result equals DuckDB's exactly.
3. Only the sketch vector — one (atom_id, mass) row per atom — is collected to the driver;
   the release and the ledger are the same as for DuckDB (`release.release`).

pyspark is the optional extra `spark`.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import Sketch, assemble, target_facts
from dpspin_sql.sketch.rewrite import SketchFilters
from dpspin_sql.sketch.transpile import sketch_sql

ASSIGN_MODES = ("auto", "scorer", "table")
BATCH = 2048


def _pyspark():
    from dpspin_sql.extras import require

    require("pyspark")
    from pyspark.sql import SparkSession

    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise BadInput("the Spark engine needs Java 17 (java on PATH or JAVA_HOME); e.g. apt-get install "
                       "openjdk-17-jre-headless")
    return SparkSession


CONNECT = "sc://"


def is_connect(master: str | None) -> bool:
    """A Spark Connect URL (sc://host:port): a server that runs the queries, no SparkContext here."""
    return bool(master) and str(master).startswith(CONNECT)


def is_connect_session(session) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


def get_session(master: str | None = None, app_name: str = "dpspin-sql"):
    """A SparkSession (the active one if any); local sessions use this Python for their workers.
    `master`: local[2] by default, a cluster's URL (spark://host:port, `--spark-master`), or a
    Spark Connect server's (sc://host:port: the `connect` extra of pyspark; the server reads
    the files, so paths must be the server's)."""
    master = master or os.environ.get("DPSPIN_SPARK_MASTER") or "local[2]"
    SparkSession = _pyspark()
    if is_connect(master):
        from dpspin_sql.extras import require

        require("grpc")
        try:
            session = SparkSession.builder.remote(master).getOrCreate()
            session.conf.set("spark.sql.session.timeZone", "UTC")
        except Exception as exc:   # said in one line; a connection error quotes nothing of the data
            if "SESSION_ALREADY_EXIST" in str(exc):
                raise BadInput(f"this process already runs a classic Spark session, so it cannot open one on Spark "
                               f"Connect ({master}): run the statement in a process of its own") from None
            raise BadInput(f"cannot reach the Spark Connect server at {master}") from None
        return session
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder
    if os.environ.get("DPSPIN_SPARK_EXECUTOR_MEMORY"):   # a cluster's executors (a worker offers less than 1g)
        builder = builder.config("spark.executor.memory", os.environ["DPSPIN_SPARK_EXECUTOR_MEMORY"])
    return _quiet(builder.master(master).appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", os.environ.get("DPSPIN_SPARK_DRIVER_MEMORY", "2g"))
            .getOrCreate())


def _quiet(session):
    session.sparkContext.setLogLevel(os.environ.get("DPSPIN_SPARK_LOG_LEVEL", "ERROR"))
    return session


def saved_scorer_bytes(con: duckdb.DuckDBPyConnection) -> bytes | None:
    row = con.table("dictionary").select("scorer").fetchall()
    return bytes(row[0][0]) if row and row[0][0] is not None else None


class SparkEngine:
    """`assign`: auto | scorer | table — assign on Spark with the saved scorer, or read the
    stored assignments (auto: the scorer when the dictionary has one)."""

    name = "spark"

    @staticmethod
    def admit(filters: SketchFilters | None) -> None:
        """`check_filters`: what this engine refuses of the audited filters."""
        check_filters(filters)

    def __init__(self, filters: SketchFilters | None = None, *, session=None, assign: str = "auto",
                 master: str | None = None):
        if assign not in ASSIGN_MODES:
            raise BadInput(f"--spark-assign must be one of {', '.join(ASSIGN_MODES)}, not {assign!r}")
        self.admit(filters)
        self.filters, self.session, self.assign = filters or SketchFilters(), session, assign
        self.master = master

    def details(self) -> dict:
        return {"engine": self.name, "spark_assign": self.assign}

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        """The enforced sketch computed on Spark from the store's target split."""
        if is_connect(self.master) or (self.session is not None and is_connect_session(self.session)):
            raise BadInput("a statement over the store's tables runs on a Spark cluster (spark://) or locally: it "
                           "ships the store's rows from this machine; on Spark Connect read the data where the "
                           "server is (read_parquet('PATH'), delta_scan('PATH') or spark_table('db.table'))")
        facts = target_facts(con, bounds.unit)
        scorer = saved_scorer_bytes(con) if self.assign != "table" else None
        if self.assign == "scorer" and scorer is None:
            raise BadInput("the dictionary has no fitted scorer: run dpspin assign first, or use the assignments table")
        spark = self.session or get_session(self.master)
        with tempfile.TemporaryDirectory(prefix="dpspin-spark-") as tmp:
            records = _export(con.table("records").filter("split = 'target'").select(
                "record_id, user_id, text, split, CAST(metadata AS VARCHAR) AS metadata"), Path(tmp) / "records")
            atoms = _export(con.table("atoms").select("atom_id"), Path(tmp) / "atoms")
            records_df = spark.read.parquet(records)
            if scorer is not None:
                assignments_df = assign_on_spark(spark, records_df, scorer, bounds.K)
            else:
                assignments_df = spark.read.parquet(_export(
                    con.table("assignment_rows").select("record_id, atom_id, weight"), Path(tmp) / "assignments"))
            rows = sketch_from_frames(spark, bounds, self.filters, records_df, assignments_df,
                                      spark.read.parquet(atoms))
        return assemble(facts, rows, bounds)


def check_filters(filters: SketchFilters | None) -> None:
    """Refuse, before Spark or the data is touched, what the audit admits for DuckDB but Spark
    could fail on or take super-linear time over (sketch/totality.py `check_engine`)."""
    from dpspin_sql.sketch.totality import check_engine

    if filters:
        check_engine([filters.records, filters.assignments], "spark")


def filter_sql(term, names: dict | None = None) -> str:
    """A filter term in its total form as Spark SQL (never a sqlglot warning on stderr); `names`
    types its columns (default: the store's), as for `rewrite`."""
    import sqlglot

    from dpspin_sql.sketch.sqlglot_log import quiet
    from dpspin_sql.sketch.totality import total_form

    with quiet():
        return total_form(term, "spark", names).sql(dialect="spark", unsupported_level=sqlglot.ErrorLevel.RAISE)


def apply_filters(spark, filters: SketchFilters, records_df, assignments_df):
    """Evaluate the statement's WHERE filters on their own and materialize the filtered frames
    (localCheckpoint) before the exact sketch runs with ANSI mode on.

    The audit admits only filters that cannot raise on any row (sql/totality.py): arithmetic
    in DOUBLE with division by NULLIF(d, 0), TRY_CAST for conversions, literal patterns and
    paths, no regular expressions on Spark. The filters still run with ANSI mode off, as
    defence in depth: a job that failed on one record's value would answer a question about
    that record.
    """
    if not filters:
        return records_df, assignments_df
    previous = spark.conf.get("spark.sql.ansi.enabled", "true")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        if filters.records is not None:
            records_df = records_df.where(filter_sql(filters.records, filters.names)).localCheckpoint(eager=True)
        if filters.assignments is not None:
            assignments_df = assignments_df.where(filter_sql(filters.assignments, filters.names)).localCheckpoint(
                eager=True)
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)
    return records_df, assignments_df


def sketch_from_frames(spark, bounds: Bounds, filters: SketchFilters | None, records_df, assignments_df,
                       atoms_df) -> list[tuple[int, int]]:
    """Run the transpiled sketch over DataFrames already in Spark; collect only (atom_id, mass)."""
    check_filters(filters)  # a refusal, not a failed job: outside the try below
    try:
        records_df, assignments_df = apply_filters(spark, filters or SketchFilters(), records_df, assignments_df)
        records_df.createOrReplaceTempView("records")
        assignments_df.createOrReplaceTempView("assignments")
        atoms_df.createOrReplaceTempView("atoms")
        return [(int(r[0]), int(r[1])) for r in spark.sql(sketch_sql(bounds, None, "spark", pretty=False)).collect()]
    except Exception:  # never the engine's message: it can quote protected values
        raise BadInput("the sketch query failed on Spark") from None
    finally:
        for view in ("records", "assignments", "atoms"):
            spark.catalog.dropTempView(view)


def scored(spark, rdd, scorer_bytes: bytes, K: int, text_index: int, emit):
    """The assignment map per partition: the saved scorer broadcast as bytes, rebuilt once per
    partition and applied batch by batch to each row's text (`row[text_index]`); `emit(row,
    atom_id, weight)` makes the output row for each atom it keeps."""
    shared = spark.sparkContext.broadcast(scorer_bytes)
    K = int(K)

    def per_partition(rows):
        from itertools import islice

        from dpspin_sql.assign import scorer_from_bytes

        scorer = scorer_from_bytes(shared.value)
        rows = iter(rows)
        while batch := list(islice(rows, BATCH)):
            texts = [r[text_index] or "" for r in batch]
            for row, kept in zip(batch, scorer.score_top_k(texts, K)):
                for atom_id, weight in kept:
                    yield emit(row, int(atom_id), float(weight))

    return rdd.mapPartitions(per_partition)


def assign_on_spark(spark, records_df, scorer_bytes: bytes, K: int):
    """The assignment map per partition: (record_id, atom_id, weight) rows from the saved scorer."""
    pairs = scored(spark, records_df.select("record_id", "text").rdd, scorer_bytes, K, 1,
                   lambda row, atom_id, weight: (row[0], atom_id, weight))
    return spark.createDataFrame(pairs, "record_id string, atom_id int, weight double")


def _export(rel: duckdb.DuckDBPyRelation, path: Path) -> str:
    path.mkdir(parents=True, exist_ok=True)
    target = str(path / "part-0.parquet")
    rel.write_parquet(target)
    return str(path)
