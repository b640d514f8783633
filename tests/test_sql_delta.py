"""Delta tables in a DP statement: `delta_scan('path')` reads the Parquet files of the table's
current snapshot (dpspin_sql/sql/delta.py), on DuckDB and on Spark.

Tables are written by delta-rs (the `deltalake` package), as a data team's pipeline would:
appends, a DELETE (files rewritten: `remove` and `add` actions), a checkpoint, an append after
it. The sketch over `delta_scan` equals the sketch over the rows delta-rs itself reads for the
table; the tables whose Parquet files are not their rows (deletion vectors, column mapping,
partition columns) and logs that cannot be replayed are one-line refusals.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import dpspin_sql
from dpspin_sql import ledger
from dpspin_sql.embed import resolve, user_catalog
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql.audit import audit_statement
from tests.helpers.core import assert_one_line_error, cli, install_atoms, new_store

dl = pytest.importorskip("deltalake", reason="deltalake (delta-rs) is not installed: no Delta table to write")
pa = pytest.importorskip("pyarrow")

THEMES = ["refund delay", "app crash", "double charge", "password reset"]
STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author, "
             "contribution_bound = 1, max_atoms_per_record = 2, mechanism = 'gaussian', top = 3) s.theme, "
             "DPSPIN_MASS(s.score) FROM {scores} AS s JOIN read_parquet('reviews.parquet') AS r USING (review_id) "
             "GROUP BY s.theme")


def _scores(lo: int, hi: int):
    ids = list(range(lo, hi))
    return pa.table({"review_id": pa.array(ids, pa.int64()),
                     "theme": [THEMES[i % 4] if i % 9 else "not an atom" for i in ids],
                     "score": [0.1 + (i % 8) / 10 for i in ids]})


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "store.duckdb"
    con = new_store(path, epsilon_budget=10.0)
    install_atoms(con, list(range(len(THEMES))), THEMES)
    con.execute("COPY (SELECT i AS review_id, 'author-' || (i % 23) AS author FROM range(2000) t(i)) "
                "TO 'reviews.parquet' (FORMAT parquet)")
    con.close()
    table = tmp_path / "scores_delta"
    dl.write_deltalake(str(table), _scores(0, 800))
    dl.write_deltalake(str(table), _scores(800, 1400), mode="append")
    dl.DeltaTable(str(table)).delete("review_id % 5 = 0")   # rewrites files: remove + add
    dl.DeltaTable(str(table)).create_checkpoint()
    dl.write_deltalake(str(table), _scores(1400, 2000), mode="append")
    dl.write_deltalake(str(table), _scores(1990, 2000), mode="append")   # repeated rows: the sketch's bounds
    return path


def sketch(path, statement):
    con = dpspin_sql.store.connect(path)
    try:
        with resolve(con) as s:
            audited = audit_statement(statement, s, user_catalog=user_catalog(con))
            return audited, OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds)
    finally:
        con.close()


def test_the_delta_sketch_is_the_sketch_of_the_rows_delta_rs_reads(store, tmp_path):
    table = tmp_path / "scores_delta"
    rows = dl.DeltaTable(str(table)).to_pyarrow_table()
    import pyarrow.parquet as pq

    pq.write_table(rows, tmp_path / "current.parquet")   # what delta-rs says the table holds now
    audited, got = sketch(store, STATEMENT.format(scores="delta_scan('scores_delta')"))
    _, want = sketch(store, STATEMENT.format(scores="read_parquet('current.parquet')"))
    assert want.mass.sum() > 0 and np.array_equal(got.mass, want.mass)
    # the removed files are on disk but not read
    on_disk = [p for p in table.iterdir() if p.suffix == ".parquet"]
    read = audited.source.assignments.select.sql("duckdb").count(".parquet'")
    assert 0 < read < len(on_disk)


def test_a_delta_release_is_charged_once_and_names_the_table(store, tmp_path, capsys):
    rc, _, err = cli(capsys, "sql", "--db", store, STATEMENT.format(scores="delta_scan('scores_delta')"),
                     "--out", tmp_path / "p.json", "-q")
    assert rc == 0, err
    con = dpspin_sql.store.connect(store)
    (row,) = ledger.status(con).releases
    con.close()
    assert row["params"]["source_assignments"] == f"delta:{tmp_path / 'scores_delta'}"
    version = dl.DeltaTable(str(tmp_path / "scores_delta")).version()
    assert row["params"]["delta_versions"] == f"{tmp_path / 'scores_delta'}@v{version}" and version == 4   # create, append, delete, append, append


def _log_lines(table, version: int) -> list[dict]:
    return [json.loads(x) for x in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines() if x]


def _rewrite(table, version: int, lines: list[dict]) -> None:
    (table / "_delta_log" / f"{version:020d}.json").write_text("".join(json.dumps(x) + "\n" for x in lines))


def _bad(tmp_path, kind: str):
    """A Delta table of each kind the Parquet files alone cannot read."""
    table = tmp_path / f"bad_{kind}"
    if kind == "partitioned":
        dl.write_deltalake(str(table), _scores(0, 50), partition_by=["theme"])
    elif kind == "not delta":
        table.mkdir()
        shutil.copy(tmp_path / "reviews.parquet", table / "part-0.parquet")
    else:
        dl.write_deltalake(str(table), _scores(0, 50))
        lines = _log_lines(table, 0)
        for x in lines:
            if kind == "deletion vectors" and "add" in x:
                x["add"]["deletionVector"] = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
                                              "offset": 4, "sizeInBytes": 40, "cardinality": 6}
            if kind == "column mapping" and "metaData" in x:
                x["metaData"]["configuration"] = {"delta.columnMapping.mode": "name"}
            if kind == "reader features" and "protocol" in x:
                x["protocol"] = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["somethingNew"],
                                 "writerFeatures": []}
        if kind == "missing commit":
            dl.write_deltalake(str(table), _scores(50, 60), mode="append")
            dl.write_deltalake(str(table), _scores(60, 70), mode="append")
            (table / "_delta_log" / f"{1:020d}.json").unlink()
        else:
            _rewrite(table, 0, lines)
    return table.name


BAD = [("partitioned", "is partitioned by theme"), ("not delta", "is not a Delta table"),
       ("deletion vectors", "deletion vectors"), ("column mapping", "column mapping"),
       ("reader features", "somethingNew"), ("missing commit", "lacks the commit")]


@pytest.mark.parametrize("kind, reason", BAD, ids=[b[0] for b in BAD])
def test_tables_whose_files_are_not_their_rows_are_refused(store, tmp_path, capsys, kind, reason):
    name = _bad(tmp_path, kind)
    rc, out, err = cli(capsys, "sql", "--db", store, STATEMENT.format(scores=f"delta_scan('{name}')"),
                       "--out", tmp_path / "p.json")
    assert_one_line_error(rc, out, err, 2)
    assert reason in err, err
    assert not (tmp_path / "p.json").exists()
    con = dpspin_sql.store.connect(store)
    assert ledger.status(con).releases == []
    con.close()


@pytest.mark.spark
def test_the_delta_sketch_on_spark_equals_duckdbs(store, tmp_path, spark):
    from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine

    con = dpspin_sql.store.connect(store)
    try:
        with resolve(con) as s:
            audited = audit_statement(STATEMENT.format(scores="delta_scan('scores_delta')"), s,
                                      user_catalog=user_catalog(con))
            own = OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds)
            on_spark = SparkFilesEngine(audited.filters, source=audited.source, session=spark).sketch(
                s, audited.request.bounds)
    finally:
        con.close()
    assert own.mass.sum() > 0 and np.array_equal(own.mass, on_spark.mass)
