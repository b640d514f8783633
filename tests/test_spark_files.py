"""A DP statement over the user's own files on Spark (dpspin_sql/sketch/engines/spark_files.py).

- the exact sketch Spark computes over Parquet files (user and record level) and over CSV
  files (a header, CRLF line endings as Excel writes them, quoted fields) equals, integer for
  integer, the sketch DuckDB computes for the same statement (sketch/engines/own.py `OwnEngine`), with
  hostile rows: weights NaN / ±inf / negative / > 1 / not a number, more than K atoms a record,
  a user with many records, atoms not in the dictionary, a record id repeated, users with
  auxiliary records in the store (left out on both engines);
- `dpspin sql --engine spark` over files writes a plan, charges the ledger once and copies no
  row into the store;
- the same user-level sketch on a standalone Spark cluster on 127.0.0.1 (`--spark-master`);
- a statement over tables of the user's DuckDB database is refused on Spark, one line.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.embed import resolve, user_catalog
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql.audit import audit_statement
from tests.helpers.core import assert_one_line_error, cli, install_atoms, put_records
from tests.helpers.spark_cluster import free_port, wait_for

pytestmark = pytest.mark.spark

ATOMS = [0, 1, 2, 5, 7, 11, 40]
LABELS = [f"theme {a}" for a in ATOMS]
WEIGHTS = [0.8, 0.5, 0.25, 1.0, 0.3, float("nan"), float("inf"), -float("inf"), -0.5, 2.0, 1e300, 5e-324, 0.0,
           1 / 3, None]
CSV_WEIGHTS = ["0.8", "0.5", "nan", "inf", "-inf", "-0.5", "2", "1e300", "", "not a number", "0.25", "1e-320", "1/3"]
AUX_USERS = ["u3", "u7"]   # they have auxiliary records in the store: left out of a user-level sketch

PQ_USER = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author, "
           "contribution_bound = 2, max_atoms_per_record = 3, mechanism = 'gaussian', top = 3) theme, "
           "DPSPIN_MASS(score) FROM read_parquet('scores.parquet') AS s JOIN read_parquet('reviews.parquet') AS r "
           "USING (review_id) GROUP BY theme")
PQ_RECORD = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25, max_atoms_per_record = 2, "
             "mechanism = 'laplace', top = 3) s.theme, DPSPIN_MASS(s.score) FROM read_parquet('scores.parquet') AS s "
             "JOIN read_parquet('reviews.parquet') AS r ON s.review_id = r.review_id "
             "WHERE r.body LIKE '%refund%' AND s.score > 0.1 AND r.review_id >= 3 GROUP BY s.theme")
PQ_ONE = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25, record_id_column = review_id, "
          "max_atoms_per_record = 3, mechanism = 'laplace', top = 3) theme, DPSPIN_MASS(score) "
          "FROM read_parquet('scores.parquet') GROUP BY theme")
CSV_USER = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author, "
            "contribution_bound = 1.5, max_atoms_per_record = 2, mechanism = 'gaussian', top = 3) s.theme, "
            "DPSPIN_MASS(s.score) FROM read_csv('scores.csv') AS s JOIN read_csv('reviews.csv') AS r "
            "USING (review_id) WHERE r.body NOT LIKE 'nothing%' GROUP BY s.theme")


def _reviews(rng) -> list[tuple]:
    bodies = ["my refund is late", "the app crashes", 'charged twice, "again"', "reset\r\nemail missing"]
    rows = [(i, f"u{rng.integers(0, 12)}", bodies[i % 4]) for i in range(120)]
    rows += [(200 + i, "heavy", bodies[i % 4]) for i in range(40)]        # a user with many records
    rows += [(5, "u1", "the same id again"), (6, None, "no author")]      # a repeated record id, no user
    return rows


def _scores(rng, reviews) -> list[tuple]:
    rows = []
    for rid, _, _ in reviews:
        for _ in range(int(rng.integers(0, 7))):                          # up to 6 atoms a record (K is 2 or 3)
            atom = int(rng.choice([*ATOMS, 999, -1, 3]))                   # 999, -1, 3: not in the dictionary
            rows += [(rid, atom, WEIGHTS[rng.integers(0, len(WEIGHTS))])] * int(rng.integers(1, 3))   # duplicates
    rows += [(9999, 1, 1.0), (None, 2, 1.0), (7, None, 1.0), (8, 2147483648, 1.0)]
    return rows


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """reviews / scores as Parquet and as CSV (CRLF, quoted fields), and a store with the
    dictionary, a budget and auxiliary records of two users."""
    tmp = tmp_path_factory.mktemp("spark_files")
    rng = np.random.default_rng(28)
    reviews = _reviews(rng)
    scores = _scores(rng, reviews)
    con = duckdb.connect()
    con.execute("CREATE TABLE reviews (review_id BIGINT, author VARCHAR, body VARCHAR)")
    con.executemany("INSERT INTO reviews VALUES (?, ?, ?)", reviews)
    con.execute("CREATE TABLE scores (review_id BIGINT, theme BIGINT, score DOUBLE)")
    con.executemany("INSERT INTO scores VALUES (?, ?, ?)", scores)
    for name in ("reviews", "scores"):
        con.execute(f"COPY {name} TO '{tmp / name}.parquet' (FORMAT parquet)")
    con.close()
    label = dict(zip(ATOMS, LABELS))
    with open(tmp / "reviews.csv", "w", newline="", encoding="utf-8") as fh:   # the csv module: CRLF, as Excel
        w = csv.writer(fh)
        w.writerow(["review_id", "author", "body"])
        w.writerows(reviews)
    with open(tmp / "scores.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["review_id", "score", "theme"])                         # the label last: CRLF ends it
        for i, (rid, atom, _) in enumerate(scores):
            w.writerow([rid, CSV_WEIGHTS[i % len(CSV_WEIGHTS)], label.get(atom, f"theme {atom}")])
        w.writerow([7, "0.5", "theme 1 "])                                  # not a label (a trailing space)
    assert b"\r\n" in (tmp / "scores.csv").read_bytes()
    path = tmp / "store.duckdb"
    s = store.connect(path, create=True)
    ledger.set_budget(s, 20.0, 1e-4)
    install_atoms(s, ATOMS, LABELS)
    put_records(s, [(f"aux{i}", AUX_USERS[i % 2], "aux") for i in range(6)])
    s.close()
    return tmp, path


def sketches(path: Path, statement: str, spark):
    """(DuckDB's sketch, Spark's sketch, or None without `spark`) of one statement over the files."""
    from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine

    con = store.connect(path)
    on_spark = None
    try:
        user_db = user_catalog(con)
        with resolve(con) as s:
            audited = audit_statement(statement, s, user_catalog=user_db)
            bounds = audited.request.bounds
            own = OwnEngine(audited.filters, source=audited.source).sketch(s, bounds)
            if spark is None:
                return own, None
            engine = SparkFilesEngine(audited.filters, source=audited.source, session=spark)
            started = time.perf_counter()
            on_spark = engine.sketch(s, bounds)
            print(f"spark sketch over files: {time.perf_counter() - started:.2f} s")
    finally:
        con.close()
    return own, on_spark


@pytest.mark.parametrize("statement", [PQ_USER, PQ_RECORD, PQ_ONE, CSV_USER], ids=["parquet-user", "parquet-record",
                                                                                    "parquet-one-relation", "csv-user"])
def test_the_spark_sketch_over_files_equals_duckdbs(files, spark, monkeypatch, statement):
    tmp, path = files
    monkeypatch.chdir(tmp)
    own, on_spark = sketches(path, statement, spark)
    assert on_spark is not None and on_spark.mass.dtype == np.int64 and on_spark.bounds == own.bounds
    assert np.array_equal(on_spark.atom_ids, own.atom_ids) and list(own.atom_ids) == ATOMS
    assert np.array_equal(on_spark.mass, own.mass), (on_spark.mass, own.mass)
    assert own.mass.sum() > 0 and np.count_nonzero(own.mass) >= 3   # not an empty sketch that would match anything


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_folders_spark_wrote_itself_equal_duckdbs_sketch_on_both_engines(files, spark, monkeypatch, fmt):
    """What a cluster's data looks like: folders Spark wrote (part files, _SUCCESS, .crc), read
    by their folder on Spark and on DuckDB: one sketch, equal to the single files'."""
    tmp, path = files
    monkeypatch.chdir(tmp)
    for name in ("scores", "reviews"):   # the CSV's themes are labels, as in scores.csv
        df = (spark.read.parquet(str(tmp / f"{name}.parquet")) if fmt == "parquet" else spark.read.csv(
            str(tmp / f"{name}.csv"), header=True, multiLine=True, escape='"')).repartition(3)
        out = str(tmp / f"{name}_by_spark_{fmt}")
        (df.write.mode("overwrite").parquet(out) if fmt == "parquet"
         else df.write.mode("overwrite").option("header", True).option("escape", '"').csv(out))
    folder = tmp / f"scores_by_spark_{fmt}"
    names = sorted(p.name for p in folder.iterdir())
    assert "_SUCCESS" in names and any(n.endswith(".crc") for n in names) and sum(n.startswith("part-") for n in names) > 1
    reader = f"read_{fmt}"
    statement = (PQ_USER.replace("read_parquet('scores.parquet')", f"{reader}('scores_by_spark_{fmt}')")
                 .replace("read_parquet('reviews.parquet')", f"{reader}('reviews_by_spark_{fmt}/')"))
    own, on_spark = sketches(path, statement, spark)
    if fmt == "parquet":   # the same rows as the single files
        single, _ = sketches(path, PQ_USER, None)
        assert np.array_equal(own.mass, single.mass)
    assert on_spark is not None and np.array_equal(on_spark.mass, own.mass) and own.mass.sum() > 0


def test_users_with_auxiliary_records_are_left_out_on_spark(files, spark, monkeypatch):
    tmp, path = files
    monkeypatch.chdir(tmp)
    only_aux = PQ_USER.replace("GROUP BY", "WHERE r.author IN ('u3', 'u7') GROUP BY")
    own, on_spark = sketches(path, only_aux, spark)
    assert on_spark is not None and on_spark.mass.sum() == own.mass.sum() == 0


def _store_counts(path: Path) -> dict[str, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                           "current_database() AND schema_name = 'main' ORDER BY 1").fetchall()]
        return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchall()[0][0] for n in names}
    finally:
        con.close()


def test_dpspin_sql_engine_spark_over_files_writes_a_plan_and_copies_no_row(files, spark, monkeypatch, capsys):
    tmp, path = files
    monkeypatch.chdir(tmp)
    before = _store_counts(path)
    plan_path = tmp / "plan.json"
    started = time.perf_counter()
    rc, _, err = cli(capsys, "sql", "--db", path, "--engine", "spark", PQ_USER, "--out", plan_path, "-q")
    print(f"dpspin sql --engine spark over files: {time.perf_counter() - started:.2f} s")
    assert rc == 0, err
    after = _store_counts(path)
    assert after.pop("ledger") == before.pop("ledger") + 1
    for bookkeeping in ("ledger_events", "release_plans"):   # the release's own record, not data
        after.pop(bookkeeping), before.pop(bookkeeping)
    assert {"records", "assignments", "atoms"} <= set(before)
    assert after == before   # no table of the store gained (or lost) a row: nothing was copied in
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    assert plan["atoms"] and {a["atom_id"] for a in plan["atoms"]} <= set(ATOMS)
    con = store.connect(path)
    try:
        row = ledger.status(con).releases[-1]
    finally:
        con.close()
    params = row["params"]
    assert params["engine"] == "spark" and params["source_assignments"] == f"parquet:{tmp / 'scores.parquet'}"
    assert params["source_records"] == f"parquet:{tmp / 'reviews.parquet'}"


def test_own_tables_on_spark_are_one_line_refusals(files, spark, monkeypatch, capsys):
    tmp, path = files
    monkeypatch.chdir(tmp)
    con = store.connect(path)
    con.execute("CREATE SCHEMA IF NOT EXISTS mine")
    con.execute(f"CREATE OR REPLACE TABLE mine.scores AS SELECT * FROM read_parquet('{tmp / 'scores.parquet'}')")
    con.close()
    before = _store_counts(path)["ledger"]
    statement = PQ_USER.replace("read_parquet('scores.parquet')", "mine.scores")
    rc, out, err = cli(capsys, "sql", "--db", path, "--engine", "spark", statement, "--out", tmp / "no.json")
    assert_one_line_error(rc, out, err, code=2)
    assert "cannot be read by Spark" in err and "read_parquet('FILE')" in err, err
    cte = ("WITH x AS (SELECT * FROM read_parquet('scores.parquet')) " +
           PQ_USER.replace("read_parquet('scores.parquet')", "x"))
    rc, out, err = cli(capsys, "sql", "--db", path, "--engine", "spark", cte, "--out", tmp / "no.json")
    assert_one_line_error(rc, out, err, code=2)
    assert "duckdb engine only" in err and "read the files themselves" in err, err
    rc, out, err = cli(capsys, "sql", "--db", path, "--spark-master", "spark://127.0.0.1:1", PQ_USER, "--out",
                       tmp / "no.json")
    assert_one_line_error(rc, out, err, code=2)
    assert _store_counts(path)["ledger"] == before and not (tmp / "no.json").exists()


# -- a standalone cluster on 127.0.0.1 --------------------------------------------------------------

CLUSTER_SKETCH = """
import json, sys
from dpspin_sql import store
from dpspin_sql.embed import resolve, user_catalog
from dpspin_sql.sketch.engines.spark import get_session
from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine
from dpspin_sql.sql.audit import audit_statement

path, statement, master = sys.argv[1:4]
spark = get_session(master)
con = store.connect(path)
with resolve(con) as s:
    audited = audit_statement(statement, s, user_catalog=user_catalog(con))
    sketch = SparkFilesEngine(audited.filters, source=audited.source, master=master).sketch(s, audited.request.bounds)
con.close()
print(json.dumps({"master": spark.sparkContext.master, "mass": [int(x) for x in sketch.mass]}))
spark.stop()
"""


def _start(spark_home: Path, script: str, klass: str, args: list[str], log: Path, env: dict) -> subprocess.Popen:
    """One daemon in the foreground (`SPARK_NO_DAEMONIZE`, so it is ours to stop): sbin/start-*.sh
    where pyspark ships them, else the class they start, through bin/spark-class."""
    sbin = spark_home / "sbin" / script
    argv = [str(sbin), *args] if sbin.exists() else [str(spark_home / "bin" / "spark-class"), klass, *args]
    return subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def test_the_user_level_sketch_on_a_standalone_cluster(files, spark, monkeypatch, tmp_path):
    import pyspark

    tmp, path = files
    monkeypatch.chdir(tmp)
    spark_home = Path(pyspark.__file__).parent
    if not (spark_home / "bin" / "spark-class").exists():
        pytest.skip(f"pyspark ships no bin/spark-class under {spark_home}: no standalone master or worker to start")
    port, ui, worker_ui = free_port(), free_port(), free_port()
    props = tmp_path / "cluster.conf"
    props.write_text("spark.master.rest.enabled false\n", encoding="utf-8")
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_NO_DAEMONIZE="1", SPARK_LOCAL_IP="127.0.0.1",
               SPARK_LOG_DIR=str(tmp_path), SPARK_PID_DIR=str(tmp_path), PYSPARK_PYTHON=sys.executable)
    url = f"spark://127.0.0.1:{port}"
    master = worker = None
    try:
        master = _start(spark_home, "start-master.sh", "org.apache.spark.deploy.master.Master",
                        ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui), "--properties-file",
                         str(props)], tmp_path / "master.log", env)
        if not wait_for(tmp_path / "master.log", "I have been elected leader", master, 60):
            pytest.skip("the standalone master did not start within 60 s here: "
                        + (tmp_path / "master.log").read_text(errors="replace")[-300:].replace("\n", " "))
        worker = _start(spark_home, "start-worker.sh", "org.apache.spark.deploy.worker.Worker",
                        ["--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(worker_ui),
                         url], tmp_path / "worker.log", env)
        if not wait_for(tmp_path / "worker.log", "Successfully registered with master", worker, 60):
            pytest.skip("the standalone worker did not register within 60 s here: "
                        + (tmp_path / "worker.log").read_text(errors="replace")[-300:].replace("\n", " "))
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CLUSTER_SKETCH, str(path), PQ_USER, url], cwd=tmp, env=dict(
            env, DPSPIN_SPARK_EXECUTOR_MEMORY="512m", DPSPIN_SPARK_DRIVER_MEMORY="1g",
            PYTHONPATH=os.pathsep.join(sys.path)), capture_output=True, text=True, timeout=300)
        print(f"the sketch on the standalone cluster (a new driver included): {time.perf_counter() - started:.2f} s")
        assert done.returncode == 0, done.stderr[-2000:]
        got = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        _stop(worker)
        _stop(master)
    own, _ = sketches(path, PQ_USER, None)
    assert got["master"] == url
    assert got["mass"] == [int(x) for x in own.mass] and sum(got["mass"]) > 0


# -- Spark Connect ------------------------------------------------------------------------------------

CONNECT_SKETCH = """
import json, sys
from dpspin_sql import store
from dpspin_sql.embed import resolve, user_catalog
from dpspin_sql.sketch.engines.spark import get_session, is_connect_session
from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine
from dpspin_sql.sql.audit import audit_statement

path, master = sys.argv[1:3]
spark = get_session(master)
out = {"connect": is_connect_session(spark), "mass": {}}
con = store.connect(path)
with resolve(con) as s:
    for name, statement in json.loads(sys.argv[3]).items():
        audited = audit_statement(statement, s, user_catalog=user_catalog(con))
        sketch = SparkFilesEngine(audited.filters, source=audited.source, master=master).sketch(s, audited.request.bounds)
        out["mass"][name] = [int(x) for x in sketch.mass]
con.close()
print(json.dumps(out))
"""


def test_statements_over_files_on_a_spark_connect_server(files, spark, monkeypatch, tmp_path, capsys):
    """A Spark Connect server on 127.0.0.1 (pyspark ships it): the sketch over files, with
    filters, equals DuckDB's; `dpspin sql --spark-master sc://…` releases; a statement over
    the store's tables is refused there in one line (it would ship the store's rows)."""
    import pyspark

    pytest.importorskip("grpc", reason="Spark Connect's client needs pyspark[connect] (grpcio)")
    tmp, path = files
    monkeypatch.chdir(tmp)
    spark_home = Path(pyspark.__file__).parent
    if not list((spark_home / "jars").glob("spark-connect_*.jar")):
        pytest.skip(f"pyspark ships no Spark Connect server jar under {spark_home}/jars")
    port = free_port()
    env = dict(os.environ, SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    log = tmp_path / "connect.log"
    server = subprocess.Popen(
        [str(spark_home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
         "--master", "local[1]", "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.driver.memory=1g", "--conf", "spark.sql.shuffle.partitions=4"],
        stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"sc://127.0.0.1:{port}"
    try:
        if not wait_for(log, "Spark Connect server started", server, 90):
            pytest.skip("the Spark Connect server did not start within 90 s here: "
                        + log.read_text(errors="replace")[-300:].replace("\n", " "))
        statements = {"user": PQ_USER, "record": PQ_RECORD, "csv": CSV_USER}
        done = subprocess.run([sys.executable, "-c", CONNECT_SKETCH, str(path), url, json.dumps(statements)], cwd=tmp,
                              env=dict(env, PYTHONPATH=os.pathsep.join(sys.path)), capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        got = json.loads(done.stdout.strip().splitlines()[-1])
        # the CLI in a process of its own: this one runs the classic session of the other tests, and a
        # process cannot hold both (the one-line refusal says so)
        dpspin = [str(Path(sys.executable).with_name("dpspin")), "sql", "--db", str(path), "--engine", "spark",
                  "--spark-master", url]
        cli_env = dict(env, PYTHONPATH=os.pathsep.join(sys.path))
        released = subprocess.run([*dpspin, PQ_RECORD, "--out", str(tmp_path / "connect.json"), "-q"], cwd=tmp,
                                  env=cli_env, capture_output=True, text=True, timeout=300)
        assert released.returncode == 0, released.stderr[-2000:]
        store_statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, mechanism = 'laplace', top = 3) atom_id, "
                           "DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) GROUP BY atom_id")
        refused = subprocess.run([*dpspin, store_statement, "--out", str(tmp_path / "store.json")], cwd=tmp,
                                 env=cli_env, capture_output=True, text=True, timeout=300)
        rc2, out2, err2 = refused.returncode, refused.stdout, refused.stderr
        rc3, out3, err3 = cli(capsys, "sql", "--db", path, "--engine", "spark", "--spark-master", url, PQ_RECORD,
                              "--out", tmp_path / "in_process.json")
    finally:
        _stop(server)
    assert got["connect"] is True
    for name, statement in statements.items():
        own, _ = sketches(path, statement, None)
        assert got["mass"][name] == [int(x) for x in own.mass] and sum(got["mass"][name]) > 0, name
    assert json.loads((tmp_path / "connect.json").read_text(encoding="utf-8"))["atoms"]
    assert_one_line_error(rc2, out2, err2, 2)
    assert "Spark Connect" in err2 and not (tmp_path / "store.json").exists()
    assert_one_line_error(rc3, out3, err3, 2)
    assert "a process of its own" in err3 and not (tmp_path / "in_process.json").exists()
