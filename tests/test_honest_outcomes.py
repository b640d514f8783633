"""Commands are atomic and say what happened (issue 23, items 2 and 6).

- `init` on a DuckDB database that is not a store refuses (exit 2, one line naming
  `dpspin_sql.install`) and adds nothing; on an empty DuckDB database whose budget is bad it
  leaves the database empty; the schema is set up in one transaction.
- Every other command refuses a path that `init` did not make (no silent ε = 1 store).
- `atoms build` with an output it cannot write changes nothing.
- `experiment run` exits 1 with the counts when a run failed.
- An option without effect (δ for laplace) and input that can never count (unknown atoms or
  records, weights below 2^-24) are said in one line; the error line starts a line of its own.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from dpspin_sql import store
from tests.helpers.core import assert_one_line_error, cli, snapshot, synthetic_store

REPO = Path(__file__).resolve().parents[1]


def objects(path: Path) -> list[tuple]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary ORDER BY 1").fetchall()
        views = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1").fetchall()
        macros = con.execute("SELECT function_name FROM duckdb_functions() WHERE function_name LIKE 'dpspin%'")
        return [*tables, *views, *macros.fetchall()]
    finally:
        con.close()


def test_init_on_someone_elses_database_refuses_and_adds_nothing(tmp_path, capsys):
    theirs = tmp_path / "theirs.duckdb"
    con = duckdb.connect(str(theirs))
    con.execute("CREATE TABLE records (id INTEGER, body VARCHAR)")
    con.execute("INSERT INTO records VALUES (1, 'mine')")
    con.close()
    before = objects(theirs)
    rc, out, err = cli(capsys, "init", "--db", theirs)
    assert_one_line_error(rc, out, err)
    assert "dpspin_sql.install" in err and "not a dpspin store" in err
    assert objects(theirs) == before == [("records",)]
    for argv in (["load", "--db", theirs, "--input", theirs], ["budget", "--db", theirs],
                 ["split", "--db", theirs, "--unit", "record"]):
        rc, out, err = cli(capsys, *argv)
        assert_one_line_error(rc, out, err)
    assert objects(theirs) == before


def test_init_on_an_empty_database_that_fails_leaves_it_empty(tmp_path, capsys):
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    rc, out, err = cli(capsys, "init", "--db", empty, "--epsilon-budget", "-1")
    assert_one_line_error(rc, out, err)
    assert objects(empty) == []
    assert cli(capsys, "init", "--db", empty)[0] == 0      # and a good init makes it a store
    assert ("ledger",) in objects(empty)


def test_commands_other_than_init_refuse_a_path_init_did_not_make(tmp_path, capsys):
    src = tmp_path / "r.csv"
    src.write_text("record_id,text\r\nr1,hello\r\n")
    never = tmp_path / "never.duckdb"
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    for db in (never, empty):
        for argv in (["load", "--db", db, "--input", src], ["atoms", "load", "--db", db, "--input", src],
                     ["assignments", "load", "--db", db, "--input", src], ["budget", "--db", db]):
            rc, out, err = cli(capsys, *argv)
            assert_one_line_error(rc, out, err)
            assert "dpspin init" in err
    assert not never.exists() and objects(empty) == []


def test_the_schema_is_set_up_in_one_transaction(tmp_path, monkeypatch):
    from dpspin_sql import udfs

    def broken(con):
        raise duckdb.IOException("simulated failure while creating the macros")

    monkeypatch.setattr(udfs, "register", broken)
    path = tmp_path / "s.duckdb"
    with pytest.raises(duckdb.IOException):
        store.connect(path, create=True)
    store.close_all()
    assert objects(path) == []      # no table of the schema was left behind


def test_atoms_build_with_an_unwritable_manifest_changes_nothing(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", m=12)
    con = duckdb.connect(str(db))
    con.execute("UPDATE records SET split = 'aux', text = 'login failed and the refund was late' "
                "WHERE record_id LIKE 'r00%'")
    con.close()
    before = snapshot(db)
    for target in (tmp_path / "missing" / "m.json", tmp_path):
        rc, out, err = cli(capsys, "atoms", "build", "--db", db, "--builder", "phrases", "--manifest-out", target)
        assert_one_line_error(rc, out, err)
    assert snapshot(db) == before


def test_experiment_run_exits_1_with_the_counts_when_runs_fail(tmp_path, capsys):
    grid = tmp_path / "g.yaml"
    grid.write_text(f"name: failing\ndata_dir: {tmp_path / 'nothing'}\ndatasets:\n  cfpb: {{n_records: [20], m: [5]}}\n"
                    "defaults: {seeds: 2, mechanism: [laplace], epsilon: [1]}\n")
    rc, out, err = cli(capsys, "experiment", "run", grid, "--out", tmp_path / "runs", "--no-plots", "--no-progress")
    assert rc == 1, err
    assert "0 run(s) done now, 0 already done, 2 failed" in out
    assert_one_line_error(rc, out, err, code=1)
    assert "2 of 2 run(s) failed" in err


def test_the_error_line_starts_a_line_of_its_own(tmp_path):
    """stdout and stderr into one pipe: what was printed ends with a newline before the error."""
    grid = tmp_path / "g.yaml"
    grid.write_text(f"name: failing\ndata_dir: {tmp_path / 'nothing'}\ndatasets:\n  cfpb: {{n_records: [20], m: [5]}}\n"
                    "defaults: {seeds: 1, mechanism: [laplace], epsilon: [1]}\n")
    proc = subprocess.run([str(Path(sys.executable).parent / "dpspin"), "experiment", "run", str(grid), "--out",
                           str(tmp_path / "runs"), "--no-plots", "--no-progress"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"})
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    errors = [ln for ln in lines if "error:" in ln]
    assert errors and all(ln.startswith("error:") for ln in errors), proc.stdout[-2000:]
    assert proc.stdout.endswith("\n")


@pytest.mark.parametrize("mechanism, said", [("laplace", True), ("gaussian", False)])
def test_delta_for_laplace_is_said_to_be_ignored(tmp_path, capsys, mechanism, said):
    db = synthetic_store(tmp_path / "s.duckdb", m=12, epsilon_budget=5.0)
    rc, _out, err = cli(capsys, "release", "--db", db, "--mechanism", mechanism, "--epsilon", "0.5", "--delta", "1e-6",
                       "--unit", "user", "-L", "3", "--out", tmp_path / "p.json", "-q")
    assert rc == 0, err
    assert ("--delta is ignored: laplace is pure ε-DP (δ = 0)" in err) is said
    assert len(err.strip().splitlines()) <= 1


def test_delta_for_laplace_in_sql_is_said_to_be_ignored(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", m=12, epsilon_budget=5.0)
    q = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.2, delta = 1e-6, mechanism = 'laplace', top = 3) "
         "atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) WHERE split = 'target' "
         "GROUP BY atom_id")
    rc, _out, err = cli(capsys, "sql", "--db", db, q, "--out", tmp_path / "p.json", "-q")
    assert rc == 0, err
    assert "OPTIONS (delta = …) is ignored" in err


def test_assignments_that_can_never_count_are_said(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", m=12)
    src = tmp_path / "a.csv"
    src.write_text("record_id,atom_id,weight,score_model\r\n"
                   "r000-0,1,0.5,x\r\nr000-0,2,1e-9,x\r\nr000-1,999,0.5,x\r\nnobody,1,0.5,x\r\n"
                   "r000-2,3,-1,x\r\nr000-2,4,NA,x\r\nr001-0,5,nan,x\r\n")
    rc, out, err = cli(capsys, "assignments", "load", "--db", db, "--input", src, "--replace")
    assert rc == 0, err
    line = next(ln for ln in out.splitlines() if "can never count" in ln)
    assert line.startswith("6 of 7 row(s) can never count")
    for part in ("1 name an atom not in the dictionary", "1 name a record not in the store",
                 "3 have a weight that is not a positive finite number",
                 "1 have a weight below the fixed-point resolution 2^-24"):
        assert part in line, line
    assert "ignored column(s) an assignment row does not have: score_model" in out
