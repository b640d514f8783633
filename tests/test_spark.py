"""The Spark engine on a real sample: its fixed-point sketch equals DuckDB's exactly.

One local[2] SparkSession per module; the store is the Amazon All_Beauty 2023 sample
(../shared/data), split by user, a phrase dictionary built from the auxiliary side and a
fitted similarity scorer. Deselect with -m 'not spark'.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.core import open_copy
from tests.helpers.data import data_root
from tests.helpers.prereq import missing_prerequisite

pytestmark = pytest.mark.spark

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (install the spark extra: "
                                                "pip install -e '.[spark]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("Java 17 is not installed (java on PATH or JAVA_HOME); the Spark tests need it "
                "(apt-get install openjdk-17-jre-headless; .ci/run installs it)", allow_module_level=True)

DATA = data_root()   # $DPSPIN_DATA, else ../shared/data (tests/helpers/data.py)
AMAZON = DATA / "amazon_all_beauty_2023" / "reviews.jsonl.gz"

# rows the enforced sketch must neutralise identically on both engines
HOSTILE_ROWS = """
INSERT INTO assignments
      (SELECT record_id, 0 AS atom_id, 'NaN'::DOUBLE AS w FROM records WHERE split = 'target' ORDER BY record_id LIMIT 7)
UNION ALL (SELECT record_id, 1, 'inf'::DOUBLE FROM records WHERE split = 'target' ORDER BY record_id LIMIT 7)
UNION ALL (SELECT record_id, 2, '-inf'::DOUBLE FROM records WHERE split = 'target' ORDER BY record_id LIMIT 7)
UNION ALL (SELECT record_id, 3, -0.5 FROM records WHERE split = 'target' ORDER BY record_id LIMIT 7)
UNION ALL (SELECT record_id, 4, 1e300 FROM records WHERE split = 'target' ORDER BY record_id DESC LIMIT 9)
UNION ALL (SELECT record_id, 5, 0.25 FROM records WHERE split = 'target' ORDER BY record_id DESC LIMIT 9)
UNION ALL (SELECT record_id, 5, 0.75 FROM records WHERE split = 'target' ORDER BY record_id DESC LIMIT 9)
UNION ALL (SELECT record_id, 9999, 1.0 FROM records WHERE split = 'target' LIMIT 5)
UNION ALL (SELECT record_id, 6, 1.0 FROM records WHERE split = 'aux' LIMIT 5)
UNION ALL (SELECT record_id, 7, NULL FROM records WHERE split = 'target' LIMIT 5)
"""


def statement(unit: str, *, K: int = 3, B: float = 1.0, where: str = "") -> str:
    unit_opts = f"privacy_unit_column = user_id, contribution_bound = {B}, " if unit == "user" else ""
    where = f" WHERE {where}" if where else ""
    return (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, {unit_opts}"
            f"max_atoms_per_record = {K}, mechanism = 'gaussian', top = 5) atom_id, DPSPIN_MASS(weight) "
            f"FROM assignments JOIN records USING (record_id){where} GROUP BY atom_id")


def build_amazon_store(path: Path) -> Path:
    from dpspin_sql import assign, builders, ledger, presets, split, store

    con = store.connect(path, create=True)
    ledger.set_budget(con, 50.0, 1e-3)
    presets.load_preset(con, "amazon", AMAZON)
    split.split(con, unit="user", aux_fraction=0.5, seed=1)
    builders.build(con, "phrases")
    assign.assign(con, scorer="similarity", K=3)
    con.close()
    return path


@pytest.fixture(scope="module")
def amazon(tmp_path_factory) -> Path:
    if not AMAZON.exists():
        missing_prerequisite(f"real sample not available: {AMAZON} is absent (../shared/data sits beside the checkout)")
    return build_amazon_store(tmp_path_factory.mktemp("spark") / "amazon.duckdb")


@pytest.fixture()
def con(amazon, tmp_path):
    """A copy of the clean store: its assignments are exactly what the saved scorer gives."""
    yield from open_copy(amazon, tmp_path)


@pytest.fixture()
def hostile(con):
    """The same store with malformed assignment rows added (what the table mode must survive)."""
    con.execute(HOSTILE_ROWS)
    return con


@pytest.mark.parametrize("unit, K, B, where, assign", [
    ("user", 3, 1.0, "split = 'target'", "scorer"),     # the example, assignment on Spark
    ("record", 3, 1.0, "", "scorer"),
    ("user", 2, 2.5, "", "table"),                      # stored assignments, hostile rows included
    ("record", 5, 1.0, "", "table"),
    ("user", 3, 0.5, "text ILIKE '%hair%' AND length(text) > 40", "table"),
    ("user", 3, 1.0, "(metadata filter)", None),        # replaced below (JSON extraction)
])
def test_spark_sketch_equals_duckdb_exactly(spark, con, request, unit, K, B, where, assign):
    from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
    from dpspin_sql.sketch.engines.spark import SparkEngine
    from dpspin_sql.sql import audit_statement

    if assign is None:  # a metadata filter: JSON extraction transpiled to GET_JSON_OBJECT
        where, assign = "TRY_CAST(metadata->>'$.rating' AS DOUBLE) >= 4", "table"
    if assign == "table":
        con = request.getfixturevalue("hostile")
    audited = audit_statement(statement(unit, K=K, B=B, where=where))
    ours = SparkEngine(audited.filters, session=spark, assign=assign).sketch(con, audited.request.bounds)
    theirs = DuckDBEngine(audited.filters).sketch(con, audited.request.bounds)
    assert ours.mass.sum() > 0
    np.testing.assert_array_equal(ours.mass, theirs.mass)
    assert (ours.unit, ours.K, ours.B, ours.n_records, ours.n_users) == \
           (theirs.unit, theirs.K, theirs.B, theirs.n_records, theirs.n_users)


def test_a_filter_that_raises_under_ansi_does_not_fail_the_spark_job(spark, con):
    """Division by zero raises in Spark's ANSI mode: a job failing on one record's value
    would be an error oracle. The filters run with ANSI off, so the raising term is NULL
    (no match) and the sketch equals the one of the remaining term. (Engines disagree on
    x / 0 itself — DuckDB gives inf — so this compares Spark with Spark.)"""
    from dpspin_sql.sketch.engines.spark import SparkEngine
    from dpspin_sql.sql import audit_statement

    raising = "length(text) / (length(text) - length(text)) > 0 OR text ILIKE '%hair%'"
    def on_spark(where):
        audited = audit_statement(statement("user", where=where))
        return SparkEngine(audited.filters, session=spark, assign="table").sketch(con, audited.request.bounds)

    got, plain = on_spark(raising), on_spark("text ILIKE '%hair%'")
    assert got.mass.sum() > 0
    np.testing.assert_array_equal(got.mass, plain.mass)


def test_spark_assignment_equals_one_batch_scoring(spark, con):
    """Per-partition, batched scoring on Spark gives the very floats of one in-process call."""
    from dpspin_sql.assign import load_scorer
    from dpspin_sql.sketch.engines.spark import assign_on_spark, saved_scorer_bytes

    rows = con.execute("SELECT record_id, text FROM records WHERE split = 'target' ORDER BY record_id").fetchall()
    records = spark.createDataFrame(rows, "record_id string, text string").repartition(3)
    got = sorted(tuple(r) for r in assign_on_spark(spark, records, saved_scorer_bytes(con), 3).collect())
    scored = load_scorer(con).score_top_k([t or "" for _, t in rows], 3)
    expected = sorted((rid, int(a), float(w)) for (rid, _), kept in zip(rows, scored) for a, w in kept)
    assert got == expected and got        # the same rows, abstaining records included (they have none)


def test_run_sql_on_spark_releases_and_charges(spark, con, tmp_path):
    from dpspin_sql import ledger
    from dpspin_sql.plan import load_plan
    from dpspin_sql.sql import run_sql

    plan = run_sql(con, statement("user"), tmp_path / "plan.json", engine="spark", spark=spark)
    assert load_plan(tmp_path / "plan.json").to_dict() == plan.to_dict()
    assert len(plan.atoms) == 5 and plan.unit == "user"
    assert ledger.status(con).epsilon_charged == pytest.approx(0.5)


ASSIGNED = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, {unit}max_atoms_per_record = 3, "
            "mechanism = 'gaussian', top = 5) atom_id, DPSPIN_MASS(weight) "
            "FROM dpspin_assign({reader}, 'text') GROUP BY atom_id")


@pytest.mark.parametrize("unit", ["user", "record"])
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_records_in_files_are_assigned_on_spark_by_the_saved_scorer(spark, con, tmp_path, monkeypatch, unit, fmt):
    """Records that live on the cluster (a Parquet folder, a CSV file) are assigned where they are, with the
    dictionary's saved scorer broadcast: the sketch equals the store's, whose records are the same rows and
    whose assignments the same scorer wrote; nothing of the files enters the store."""
    from dpspin_sql.embed import resolve, user_catalog
    from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
    from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine
    from dpspin_sql.sketch.engines.spark_tables import SparkCatalog
    from dpspin_sql.sql import audit_statement

    monkeypatch.chdir(tmp_path)
    target = "SELECT record_id, user_id, text FROM records WHERE split = 'target'"
    if fmt == "parquet":
        con.execute(f"COPY ({target}) TO 'target' (FORMAT parquet, ROW_GROUP_SIZE 2048, ROW_GROUPS_PER_FILE 1)")
        reader = "read_parquet('target')"
    else:
        con.execute(f"COPY ({target}) TO 'target.csv' (HEADER)")
        reader = "read_csv('target.csv')"
    opts = "privacy_unit_column = user_id, record_id_column = record_id, contribution_bound = 1, " if unit == "user" \
        else "record_id_column = record_id, "
    before = con.execute("SELECT count(*) FROM records").fetchall()
    with resolve(con) as s:
        audited = audit_statement(ASSIGNED.format(unit=opts, reader=reader), s, user_catalog=user_catalog(con),
                                  spark_tables=SparkCatalog(spark).columns)
        ours = SparkFilesEngine(audited.filters, source=audited.source, session=spark).sketch(s, audited.request.bounds)
    store = audit_statement(statement(unit, where="split = 'target'"))
    theirs = DuckDBEngine(store.filters).sketch(con, store.request.bounds)
    assert ours.mass.sum() > 0
    np.testing.assert_array_equal(ours.mass, theirs.mass)
    assert con.execute("SELECT count(*) FROM records").fetchall() == before


def test_dpspin_assign_is_refused_off_spark_and_on_bad_arguments(con, tmp_path, monkeypatch):
    from dpspin_sql.embed import resolve, user_catalog
    from dpspin_sql.errors import AuditRefusal
    from dpspin_sql.sql import audit_statement

    monkeypatch.chdir(tmp_path)
    con.execute("COPY (SELECT record_id, user_id, text, 1 AS n FROM records WHERE split = 'target') "
                "TO 't.parquet' (FORMAT parquet)")
    con.execute("COPY (SELECT record_id, text, 1.0 AS weight FROM records WHERE split = 'target') "
                "TO 'w.parquet' (FORMAT parquet)")
    opts = "record_id_column = record_id, "
    cases = [("read_parquet('t.parquet')", None, "--engine spark"),
             ("read_parquet('t.parquet'), 'body'", [], "no column 'body'"),
             ("read_parquet('t.parquet'), 'n'", [], "not text"),
             ("read_parquet('w.parquet'), 'text'", [], "already has 'weight'"),
             ("'t.parquet', 'text'", [], "takes a file reader")]
    for args, tables, reason in cases:
        sql = ASSIGNED.format(unit=opts, reader="X").replace("dpspin_assign(X, 'text')", f"dpspin_assign({args})")
        if reason == "--engine spark":
            sql = ASSIGNED.format(unit=opts, reader=args)
        with resolve(con) as s, pytest.raises(AuditRefusal) as info:
            audit_statement(sql, s, user_catalog=user_catalog(con),
                            spark_tables=None if tables is None else (lambda name: []))
        assert reason in str(info.value), (args, str(info.value))


def test_a_dpspin_assign_statement_releases_and_the_ledger_names_it(spark, con, tmp_path, monkeypatch):
    from dpspin_sql import ledger
    from dpspin_sql.sql import run_sql

    monkeypatch.chdir(tmp_path)
    con.execute("COPY (SELECT record_id, user_id, text FROM records WHERE split = 'target') TO 'target.parquet' "
                "(FORMAT parquet)")
    sql = ASSIGNED.format(unit="privacy_unit_column = user_id, record_id_column = record_id, contribution_bound = 1, ",
                          reader="read_parquet('target.parquet')")
    plan = run_sql(con, sql, tmp_path / "plan.json", engine="spark", spark=spark)
    assert len(plan.atoms) == 5 and plan.unit == "user"
    params = ledger.status(con).releases[-1]["params"]
    assert params["engine"] == "spark" and params["source_assignments"] == \
        f"dpspin_assign:parquet:{tmp_path / 'target.parquet'}"
