"""A DP statement over tables of the Spark session's catalog, `spark_table('db.table')`, on
`--engine spark` (dpspin_sql/sketch/engines/spark_tables.py, spark_files.py).

The tables are managed tables of a Spark database `t28` (`CREATE DATABASE … LOCATION` under
the test's temporary directory, `DataFrame.write.saveAsTable`: a real catalog write, not a
temporary view), holding the same hostile rows as tests/test_spark_files.py's Parquet files.

- the m-vector Spark computes over the tables equals, integer for integer, DuckDB's over the
  same rows in Parquet files (user and record level; a Spark table joined to a file);
- `dpspin sql --engine spark` over the tables charges the ledger once, copies no row into the
  store and records the tables' names;
- refusals, each one line, nothing charged, no plan: spark_table on the duckdb engine; a column
  of a type with no DuckDB counterpart that the statement reads (one it does not read is fine);
  a table not in the Spark catalog; a Spark temporary view.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.embed import resolve, user_catalog
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql.audit import audit_statement
from tests.helpers.core import assert_one_line_error, cli
from tests.test_spark_files import ATOMS, PQ_RECORD, PQ_USER, _store_counts, files  # noqa: F401 (a fixture)

pytestmark = pytest.mark.spark

SCORES, REVIEWS = "spark_table('t28.scores')", "spark_table('t28.reviews')"


def on_tables(statement: str, scores: bool = True, reviews: bool = True) -> str:
    if scores:
        statement = statement.replace("read_parquet('scores.parquet')", SCORES)
    if reviews:
        statement = statement.replace("read_parquet('reviews.parquet')", REVIEWS)
    return statement


@pytest.fixture(scope="module")
def tables(files, spark):
    """t28.scores / t28.reviews: managed Spark tables with the rows of the Parquet files;
    t28.tagged: the scores with an array column."""
    from pyspark.sql import functions as F

    tmp, path = files
    spark.sql(f"CREATE DATABASE IF NOT EXISTS t28 LOCATION '{tmp / 't28.db'}'")
    started = time.perf_counter()
    for name in ("scores", "reviews"):
        spark.read.parquet(str(tmp / f"{name}.parquet")).write.mode("overwrite").saveAsTable(f"t28.{name}")
    spark.table("t28.scores").withColumn("tags", F.array(F.lit("a"))).write.mode("overwrite") \
        .saveAsTable("t28.tagged")
    print(f"three saveAsTable: {time.perf_counter() - started:.2f} s")
    yield tmp, path
    spark.sql("DROP DATABASE IF EXISTS t28 CASCADE")


def sketches(path, statement: str, spark):
    """(DuckDB's sketch of `statement` over the files, Spark's of it over the tables)."""
    from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine
    from dpspin_sql.sketch.engines.spark_tables import SparkCatalog

    con = store.connect(path)
    try:
        user_db = user_catalog(con)
        with resolve(con) as s:
            audited = audit_statement(statement, s, user_catalog=user_db)
            own = OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds)
            st = audit_statement(on_tables(statement), s, user_catalog=user_db,
                                 spark_tables=SparkCatalog(spark).columns)
            assert st.request.bounds == audited.request.bounds
            engine = SparkFilesEngine(st.filters, source=st.source, session=spark)
            assert engine.details()["spark_reads"] == "Spark tables in place"
            started = time.perf_counter()
            on_spark = engine.sketch(s, st.request.bounds)
            print(f"spark sketch over tables: {time.perf_counter() - started:.2f} s")
    finally:
        con.close()
    return own, on_spark


@pytest.mark.parametrize("statement", [PQ_USER, PQ_RECORD], ids=["user", "record"])
def test_the_spark_sketch_over_tables_equals_duckdbs_over_files(tables, spark, monkeypatch, statement):
    tmp, path = tables
    monkeypatch.chdir(tmp)
    own, on_spark = sketches(path, statement, spark)
    assert on_spark.mass.dtype == np.int64 and on_spark.bounds == own.bounds
    assert np.array_equal(on_spark.atom_ids, own.atom_ids) and list(own.atom_ids) == ATOMS
    assert np.array_equal(on_spark.mass, own.mass), (on_spark.mass, own.mass)
    assert own.mass.sum() > 0 and np.count_nonzero(own.mass) >= 3


def test_a_spark_table_joined_to_a_file(tables, spark, monkeypatch):
    from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine
    from dpspin_sql.sketch.engines.spark_tables import SparkCatalog

    tmp, path = tables
    monkeypatch.chdir(tmp)
    own, _ = sketches(path, PQ_USER, spark)
    con = store.connect(path)
    try:
        with resolve(con) as s:
            st = audit_statement(on_tables(PQ_USER, reviews=False), s, spark_tables=SparkCatalog(spark).columns)
            engine = SparkFilesEngine(st.filters, source=st.source, session=spark)
            assert engine.details()["spark_reads"] == "Spark tables and files in place"
            assert np.array_equal(engine.sketch(s, st.request.bounds).mass, own.mass)
    finally:
        con.close()


def test_dpspin_sql_over_spark_tables_writes_a_plan_and_records_the_tables(tables, spark, monkeypatch, capsys):
    tmp, path = tables
    monkeypatch.chdir(tmp)
    before = _store_counts(path)
    plan_path = tmp / "plan_tables.json"
    started = time.perf_counter()
    rc, _, err = cli(capsys, "sql", "--db", path, "--engine", "spark", on_tables(PQ_USER), "--out", plan_path, "-q")
    print(f"dpspin sql --engine spark over Spark tables: {time.perf_counter() - started:.2f} s")
    assert rc == 0, err
    assert plan_path.is_file()
    after = _store_counts(path)
    assert after.pop("ledger") == before.pop("ledger") + 1
    for bookkeeping in ("ledger_events", "release_plans"):
        after.pop(bookkeeping), before.pop(bookkeeping)
    assert {"records", "assignments", "atoms"} <= set(before) and after == before
    con = store.connect(path)
    try:
        params = ledger.status(con).releases[-1]["params"]
    finally:
        con.close()
    assert params["engine"] == "spark" and params["spark_reads"] == "Spark tables in place"
    assert params["source_assignments"] == "spark_table:t28.scores"
    assert params["source_records"] == "spark_table:t28.reviews"
    assert "spark_table:t28.scores (review_id)" in params["record_key"]


def _refused(capsys, path, tmp, statement, *engine, code: int = 2) -> str:
    """A refusal (code 1: the audit's, 2: bad input), one line: nothing charged, no plan."""
    before = _store_counts(path)["ledger"]
    out_path = tmp / "no.json"
    rc, out, err = cli(capsys, "sql", "--db", path, *engine, statement, "--out", out_path)
    assert_one_line_error(rc, out, err, code=code)
    assert _store_counts(path)["ledger"] == before and not out_path.exists()
    return err


def test_spark_table_refusals_are_one_line_and_charge_nothing(tables, spark, monkeypatch, capsys):
    tmp, path = tables
    monkeypatch.chdir(tmp)
    spark_ = ("--engine", "spark")
    err = _refused(capsys, path, tmp, on_tables(PQ_USER), code=1)   # the duckdb engine
    assert "spark_table('t28.scores')" in err and "--engine spark" in err, err
    err = _refused(capsys, path, tmp, on_tables(PQ_USER), "--engine", "postgres", code=1)
    assert "--engine spark" in err, err
    tagged = on_tables(PQ_USER).replace(SCORES, "spark_table('t28.tagged')")
    err = _refused(capsys, path, tmp, tagged.replace("DPSPIN_MASS(score)", "DPSPIN_MASS(tags)"), *spark_, code=1)
    assert "'tags'" in err and "array<string>" in err, err
    err = _refused(capsys, path, tmp, tagged.replace("GROUP BY", "WHERE tags IS NOT NULL GROUP BY"), *spark_, code=1)
    assert "tags" in err and "array<string>" in err, err
    err = _refused(capsys, path, tmp, on_tables(PQ_USER).replace("t28.reviews", "t28.nope"), *spark_)
    assert "no table 't28.nope'" in err and "Spark" in err, err
    spark.table("t28.reviews").createOrReplaceTempView("t28_reviews_view")
    try:
        err = _refused(capsys, path, tmp, on_tables(PQ_USER).replace("t28.reviews", "t28_reviews_view"), *spark_)
        assert "temporary view" in err and "row-wise" in err, err
    finally:
        spark.catalog.dropTempView("t28_reviews_view")
    err = _refused(capsys, path, tmp, on_tables(PQ_USER).replace("'t28.reviews'", "'t28.reviews; drop'"), *spark_)
    assert "letters, digits, underscores" in err, err


def test_an_unread_column_of_any_type_is_fine(tables, spark, monkeypatch):
    from dpspin_sql.sketch.engines.spark_tables import SparkCatalog, duckdb_type

    tmp, path = tables
    monkeypatch.chdir(tmp)
    con = store.connect(path)
    try:
        with resolve(con) as s:
            audited = audit_statement(on_tables(PQ_USER).replace(SCORES, "spark_table('t28.tagged')"), s,
                                      spark_tables=SparkCatalog(spark).columns)
            assert audited.source.details()["source_assignments"] == "spark_table:t28.tagged"
    finally:
        con.close()
    assert [duckdb_type(t) for t in ("string", "bigint", "int", "smallint", "tinyint", "double", "float", "boolean",
                                     "decimal(12,3)", "date", "timestamp", "varchar(4)")] == [
        "VARCHAR", "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "DOUBLE", "FLOAT", "BOOLEAN", "DECIMAL(12,3)", "DATE",
        "TIMESTAMP", "VARCHAR"]
    assert duckdb_type("map<string,int>") == "Spark map<string,int>"
