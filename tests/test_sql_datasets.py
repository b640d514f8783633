"""Datasets of many files in a DP statement (dpspin_sql/sql/resolve.py `dataset_files`):
read_parquet / read_csv of a folder of part files (as Spark, DuckDB and Hive write them) or of a
glob, beside one file.

- the same rows as one table, one Parquet file, a DuckDB-written folder, a Hive folder (part
  files without a suffix), a Spark-style folder
  (part-*.snappy.parquet beside _SUCCESS and .crc files), a glob, and a folder of CSV parts
  (each with its header, CRLF): one sketch, integer for integer;
- the same files named two ways are one base relation (a join of them is read as a self-join
  of one dataset); two file sets that share files but differ are refused;
- an empty folder, a glob that matches nothing, a partitioned folder, files of different
  columns, a link out of the files root: one line, nothing charged, no plan.
"""
from __future__ import annotations

import csv
import os
import shutil

import numpy as np
import pytest

import dpspin_sql
from dpspin_sql import ledger
from dpspin_sql.embed import resolve, user_catalog
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql.audit import audit_statement
from tests.helpers.core import assert_one_line_error, cli, install_atoms, new_store

THEMES = ["refund delay", "app crash", "double charge", "password reset", "late delivery"]
USER = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author, "
        "contribution_bound = 1, max_atoms_per_record = 2, mechanism = 'gaussian', top = 3) theme AS atom, "
        "DPSPIN_MASS(score) FROM {scores} AS s JOIN {reviews} AS r USING (review_id) GROUP BY theme")


@pytest.fixture
def data(tmp_path, monkeypatch):
    """The curator's tables in the store file, and the same rows as files in every layout."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "store.duckdb"
    con = new_store(path, epsilon_budget=10.0)
    install_atoms(con, list(range(len(THEMES))), THEMES)
    con.execute("CREATE SCHEMA mine")
    con.execute("""
        CREATE TABLE mine.reviews AS SELECT i AS review_id, 'author-' || (i % 37) AS author, 'body ' || i AS body
        FROM range(3000) t(i);
        CREATE TABLE mine.scores AS
        SELECT i AS review_id, ['refund delay', 'app crash', 'double charge', 'password reset'][1 + i % 4] AS theme,
               0.2 + (i % 7) / 10 AS score FROM range(3000) t(i)
        UNION ALL SELECT i, 'late delivery', 0.4 FROM range(0, 3000, 3) t(i)
        UNION ALL SELECT i, 'app crash', 0.9 FROM range(0, 3000, 5) t(i)
        UNION ALL SELECT i, 'not an atom', 1.0 FROM range(0, 3000, 11) t(i)""")
    con.execute("COPY (FROM mine.scores ORDER BY review_id) TO 'scores.parquet' (FORMAT parquet)")
    con.execute("COPY (FROM mine.reviews ORDER BY review_id) TO 'reviews.parquet' (FORMAT parquet)")
    # DuckDB's folder: several data_*.parquet files
    con.execute("COPY (FROM mine.scores ORDER BY review_id) TO 'scores_duck' "
                "(FORMAT parquet, ROW_GROUP_SIZE 2048, ROW_GROUPS_PER_FILE 1)")
    # a Spark-style folder: part files, a _SUCCESS marker and .crc checksums (hidden to every reader)
    spark = tmp_path / "scores_spark"
    spark.mkdir()
    for k in range(4):
        con.execute(f"COPY (FROM mine.scores WHERE review_id % 4 = {k}) TO "
                    f"'{spark}/part-0000{k}-6c1e-c000.snappy.parquet' (FORMAT parquet, COMPRESSION snappy)")
        (spark / f".part-0000{k}-6c1e-c000.snappy.parquet.crc").write_bytes(b"crc\x00")
    (spark / "_SUCCESS").write_bytes(b"")
    hive = tmp_path / "scores_hive"   # Hive's part files have no suffix
    hive.mkdir()
    for k in range(2):
        con.execute(f"COPY (FROM mine.scores WHERE review_id % 2 = {k}) TO '{hive}/00000{k}_0' (FORMAT parquet)")
    # CSV parts, each with its header, CRLF as the csv module writes them
    csv_dir = tmp_path / "reviews_csv"
    csv_dir.mkdir()
    for k in range(3):
        rows = con.execute(f"SELECT * FROM mine.reviews WHERE review_id % 3 = {k} ORDER BY 1").fetchall()
        with open(csv_dir / f"part-0000{k}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["review_id", "author", "body"])
            w.writerows(rows)
    con.close()
    return path


def sketch_of(path, statement):
    con = dpspin_sql.store.connect(path)
    try:
        with resolve(con) as s:
            audited = audit_statement(statement, s, user_catalog=user_catalog(con))
            return audited, OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds).mass
    finally:
        con.close()


LAYOUTS = {
    "one file": ("read_parquet('scores.parquet')", "read_parquet('reviews.parquet')"),
    "duckdb folder": ("read_parquet('scores_duck')", "read_parquet('reviews.parquet')"),
    "spark folder": ("read_parquet('scores_spark/')", "read_parquet('reviews.parquet')"),
    "glob": ("read_parquet('scores_spark/part-*.parquet')", "read_parquet('reviews.parquet')"),
    "hive folder": ("read_parquet('scores_hive')", "read_parquet('reviews.parquet')"),
    "csv parts": ("read_parquet('scores_duck/*.parquet')", "read_csv('reviews_csv')"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_layout_of_the_same_rows_gives_the_tables_sketch(data, layout):
    _, tables = sketch_of(data, USER.format(scores="mine.scores", reviews="mine.reviews"))
    scores, reviews = LAYOUTS[layout]
    audited, files = sketch_of(data, USER.format(scores=scores, reviews=reviews))
    assert tables.sum() > 0 and np.array_equal(tables, files)
    scan = audited.source.assignments.select.sql("duckdb")
    n_files = {"one file": 1, "duckdb folder": len(os.listdir(data.parent / "scores_duck")), "spark folder": 4,
               "glob": 4, "hive folder": 2, "csv parts": len(os.listdir(data.parent / "scores_duck"))}[layout]
    named = scan.count(".parquet'") + scan.count("_0'")
    assert named == n_files and "_SUCCESS" not in scan and ".crc" not in scan
    assert n_files > 1 or layout == "one file"


def test_a_dataset_releases_and_the_ledger_names_it(data, tmp_path, capsys):
    rc, _, err = cli(capsys, "sql", "--db", data, USER.format(scores="read_parquet('scores_spark')",
                                                              reviews="read_csv('reviews_csv/*.csv')"),
                     "--out", tmp_path / "p.json", "-q")
    assert rc == 0, err
    con = dpspin_sql.store.connect(data)
    (row,) = ledger.status(con).releases
    con.close()
    assert row["params"]["source_assignments"] == f"parquet:{tmp_path / 'scores_spark'}"
    assert row["params"]["source_records"] == f"csv:{tmp_path / 'reviews_csv'}/*.csv"


def test_the_same_files_named_two_ways_are_one_relation(data):
    """A join of a dataset with itself under another spelling is audited as the same base
    relation, exactly as a join of one file with itself."""
    one = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, mechanism = 'laplace', top = 3) a.theme, "
           "DPSPIN_MASS(a.score) FROM {a} AS a JOIN {b} AS b USING (review_id) GROUP BY a.theme")
    outcomes = []
    for a, b in (("read_parquet('scores_spark')", "read_parquet('scores_spark')"),
                 ("read_parquet('scores_spark')", "read_parquet('scores_spark/*.parquet')")):
        try:
            outcomes.append(("ok", sketch_of(data, one.format(a=a, b=b))[1].tolist()))
        except Exception as exc:
            outcomes.append((type(exc).__name__, str(exc).split(":")[0]))
    assert outcomes[0] == outcomes[1]


BAD = [
    ("read_parquet('empty_dir')", 2, "holds no parquet file"),
    ("read_parquet('not_parquet')", 2, "cannot read the parquet file"),
    ("read_parquet('scores_spark/nothing-*.parquet')", 2, "no parquet file matches"),
    ("read_parquet('partitioned')", 2, "subfolders"),
    ("read_parquet('mixed')", 2, "differ in their columns"),
    ("read_parquet('linked')", 1, "outside the files root"),
    ("read_parquet('/tmp/*.parquet')", 1, "outside the files root"),
]


@pytest.mark.parametrize("scores, code, reason", BAD, ids=[b[2] for b in BAD])
def test_bad_datasets_are_one_line_and_charge_nothing(data, tmp_path, tmp_path_factory, capsys, scores, code, reason):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "empty_dir" / "_SUCCESS").write_bytes(b"")
    (tmp_path / "not_parquet").mkdir()
    shutil.copy(tmp_path / "scores.parquet", tmp_path / "not_parquet" / "part-0.parquet")
    (tmp_path / "not_parquet" / "README.txt").write_text("notes\n", encoding="utf-8")
    part = tmp_path / "partitioned" / "theme=app crash"
    part.mkdir(parents=True)
    shutil.copy(tmp_path / "scores.parquet", part / "part-0.parquet")
    (tmp_path / "mixed").mkdir()
    shutil.copy(tmp_path / "scores.parquet", tmp_path / "mixed" / "a.parquet")
    shutil.copy(tmp_path / "reviews.parquet", tmp_path / "mixed" / "b.parquet")
    outside = tmp_path_factory.mktemp("outside")
    shutil.copy(tmp_path / "scores.parquet", outside / "x.parquet")
    (tmp_path / "linked").mkdir()
    shutil.copy(tmp_path / "scores.parquet", tmp_path / "linked" / "a.parquet")
    os.symlink(outside / "x.parquet", tmp_path / "linked" / "b.parquet")
    rc, out, err = cli(capsys, "sql", "--db", data, USER.format(scores=scores, reviews="read_parquet('reviews.parquet')"),
                       "--out", tmp_path / "p.json")
    assert_one_line_error(rc, out, err, code)
    assert reason in err, err
    assert not (tmp_path / "p.json").exists()
    con = dpspin_sql.store.connect(data)
    assert ledger.status(con).releases == []
    con.close()


def test_file_sets_that_overlap_but_differ_are_refused(data, tmp_path, capsys):
    statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, mechanism = 'laplace', top = 3) a.theme, "
                 "DPSPIN_MASS(a.score) FROM read_parquet('scores_spark/part-0000[01]*.parquet') AS a "
                 "JOIN read_parquet('scores_spark') AS b USING (review_id) GROUP BY a.theme")
    rc, out, err = cli(capsys, "sql", "--db", data, statement, "--out", tmp_path / "p.json")
    assert_one_line_error(rc, out, err, 1)
    assert "share files but are not the same files" in err
    assert not (tmp_path / "p.json").exists()
