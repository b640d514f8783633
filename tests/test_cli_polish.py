"""CLI polish: every boolean is a --flag/--no-flag pair in every command's help; the
assign progress display covers the fit (in a real terminal); privacy-relevant defaults
(δ, the selection fraction) are said with the release from both `release` and `sql`;
loading assignments over existing ones needs --replace and says what it replaced; the
plan table explains its columns."""
from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import typer
import typer.main

from dpspin_sql.cli import app
from tests.helpers.core import assert_one_line_error, cli, snapshot, synthetic_store

REPO = Path(__file__).resolve().parents[1]


def commands(group, path=()):
    """Every (sub)command of the Typer app (typer 0.29 vendors click as typer._click)."""
    yield path, group
    for name, sub in (getattr(group, "commands", None) or {}).items():
        yield from commands(sub, path + (name,))


def is_boolean(param) -> bool:
    return bool(getattr(param, "is_flag", False) or getattr(param, "is_bool_flag", False)
                or isinstance(getattr(param, "default", None), bool))


ROOT = typer.main.get_command(app)
ALL = [(p, c) for p, c in commands(ROOT)]


def test_every_command_is_reachable():
    names = {" ".join(p) for p, _ in ALL}
    for expected in ("init", "load", "split", "atoms load", "atoms build", "assign", "assignments load", "release",
                     "budget", "sql", "summarize", "verify", "card", "experiment run", "experiment report", "demo"):
        assert expected in names


@pytest.mark.parametrize("path, command", ALL, ids=[" ".join(p) or "dpspin" for p, _ in ALL])
def test_booleans_are_flag_pairs(capsys, path, command):
    rc, out, _ = cli(capsys, *path, "--help")
    assert rc == 0
    assert "<bool>" not in out and "BOOLEAN" not in out
    for param in command.params:
        if "Option" not in type(param).__name__ or param.name in ("help", "version"):
            continue
        if is_boolean(param):
            assert param.secondary_opts, f"{' '.join(path)} {param.opts}: a boolean without its --no- form"
            long = next(o for o in param.opts if o.startswith("--"))
            assert re.search(re.escape(long) + r" / " + re.escape(param.secondary_opts[0]), out), (long, out)


# ------------------------------------------------------------------------ assign progress

@pytest.fixture(scope="module")
def aux_store(tmp_path_factory):
    """A store with auxiliary and target records and the demo taxonomy (no assignments yet)."""
    from dpspin_sql import atoms, split, store
    from dpspin_sql.demo import TAXONOMY, corpus_relation

    path = tmp_path_factory.mktemp("assign") / "s.duckdb"
    con = store.connect(path, create=True)
    rel = corpus_relation(con, 3, n_users=80)
    store.load_records(con, "synthetic", id_col="record_id", user_col="user_id", text_col="text", relation=rel)
    split.split(con, unit="user", aux_fraction=0.4, seed=3)
    atoms.install(con, [atoms.Atom(i, lab, desc) for i, (lab, desc) in enumerate(TAXONOMY)], builder="file",
                  manifest={"source": "tests"})
    con.close()
    return path


SLOW_FIT = """
import sys, time
import dpspin_sql.assign as A
fit = A.fit_scorer
def slow_fit(*args, **kwargs):       # a real fit takes ~15 s on the paper's corpora
    time.sleep(1.5)
    return fit(*args, **kwargs)
A.fit_scorer = slow_fit
from dpspin_sql.cli import main
sys.argv = ["dpspin"] + sys.argv[1:]
main()
"""


def run_in_terminal(argv: list[str], timeout: float = 120) -> tuple[int, str]:
    """Run `python -c SLOW_FIT ARGV` with stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="40")
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_FIT, *argv], stdin=slave, stdout=slave, stderr=slave,
                            env=env, cwd=REPO, close_fds=True)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:          # the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        rc = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    text = b"".join(chunks).decode("utf-8", "replace")
    return rc, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def test_assign_progress_shows_the_fit_in_a_terminal(aux_store):
    rc, screen = run_in_terminal(["assign", "--db", str(aux_store), "--scorer", "similarity"])
    assert rc == 0, screen
    # the fit phase is on screen while it runs: a spinner and the time elapsed, no "0/?" count
    fitting = [ln for ln in screen.split("\r") if "fitting the similarity scorer on the auxiliary split" in ln]
    assert len(fitting) >= 5, screen                                  # redrawn through the 1.5 s fit
    assert all("0/?" not in ln for ln in fitting) and re.search(r"0:00:0[1-9]", " ".join(fitting))
    assert re.search(r"assigning .* (\d+)/\1", screen)                  # then the counted phase
    assert re.search(r"assigned \d+ of \d+ records with similarity", screen)


def test_assign_without_a_terminal_prints_no_progress(aux_store, capsys):
    rc, out, err = cli(capsys, "assign", "--db", aux_store, "--scorer", "keyword")
    assert rc == 0, err
    assert err == "" and "fitting" not in out and "assigned" in out


# ------------------------------------------------------------------------ defaults said out loud

@pytest.fixture
def db(tmp_path):
    return synthetic_store(tmp_path / "s.duckdb", m=12, epsilon_budget=20.0)


def release(capsys, db, out, *extra):
    return cli(capsys, "release", "--db", db, "--unit", "user", "-L", "3", "--epsilon", "0.5", "--out", out, *extra)


def test_release_says_its_defaults(db, tmp_path, capsys):
    rc, out, err = release(capsys, db, tmp_path / "g.json", "--mechanism", "gaussian")
    assert rc == 0, err
    assert "using δ = 1e-06 (default; set --delta)" in err and "selection" not in err
    rc, out, err = release(capsys, db, tmp_path / "t.json", "--mechanism", "private_topL")
    assert rc == 0, err
    assert "δ = 1e-06 (default; set --delta)" in err
    assert "selection fraction 0.5 of ε for admission (default; set --selection-fraction)" in err
    # said even with --quiet (stdout keeps only the path)
    rc, out, err = release(capsys, db, tmp_path / "q.json", "--mechanism", "gaussian", "-q")
    assert rc == 0 and out.strip() == str(tmp_path / "q.json") and "δ = 1e-06 (default" in err
    # nothing to say when everything was given, or for pure-ε Laplace
    for name, extra in (("given", ["--mechanism", "private_topL", "--delta", "1e-7", "--selection-fraction", "0.3"]),
                        ("laplace", ["--mechanism", "laplace"])):
        rc, out, err = release(capsys, db, tmp_path / f"{name}.json", *extra)
        assert rc == 0 and err == "", err


SQL = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, {extra}privacy_unit_column = user_id, "
       "contribution_bound = 1, mechanism = '{mechanism}', top = 3) atom_id, DPSPIN_MASS(weight) "
       "FROM assignments JOIN records USING (record_id) WHERE split = 'target' GROUP BY atom_id")


def test_sql_says_its_defaults(db, tmp_path, capsys):
    rc, _, err = cli(capsys, "sql", "--db", db, "--out", tmp_path / "g.json", SQL.format(extra="", mechanism="gaussian"))
    assert rc == 0, err
    assert "using δ = 1e-06 (default; set OPTIONS (delta = …))" in err
    rc, _, err = cli(capsys, "sql", "--db", db, "--out", tmp_path / "t.json", "-q",
                     SQL.format(extra="", mechanism="private_topL"))
    assert rc == 0, err
    assert "selection fraction 0.5 of ε for admission (default; set OPTIONS (selection_fraction = …))" in err
    rc, _, err = cli(capsys, "sql", "--db", db, "--out", tmp_path / "d.json",
                     SQL.format(extra="delta = 1e-7, ", mechanism="gaussian"))
    assert rc == 0 and err == "", err


def test_release_table_explains_its_columns(db, tmp_path, capsys):
    rc, out, err = release(capsys, db, tmp_path / "g.json", "--mechanism", "gaussian", "--delta", "1e-6")
    assert rc == 0, err
    assert "95% interval" in out and "rank ≤ 3 → high" in out and "comparison margin" in out
    assert "mass: the atom's total weight" in out and "each user at most B=1 in all" in out


# ------------------------------------------------------------------------ assignments load --replace

def test_assignments_load_needs_replace(db, tmp_path, capsys):
    first = tmp_path / "a.csv"
    first.write_text("record_id,atom_id,weight\nr000-0,1,1.0\nr000-1,2,0.5\n")
    before = snapshot(db)
    n_before = len(before["assignments"])
    assert n_before > 0
    for extra in ([], ["--no-replace"]):
        rc, out, err = cli(capsys, "assignments", "load", "--db", db, "--input", first, *extra)
        assert_one_line_error(rc, out, err)
        assert f"already holds {n_before} assignment rows; pass --replace" in err
        assert snapshot(db) == before
    rc, out, err = cli(capsys, "assignments", "load", "--db", db, "--input", first, "--replace")
    assert rc == 0, err
    assert f"replaced {n_before} assignment rows with 2 from {first}" in out
    con = duckdb.connect(str(db), read_only=True)
    try:   # the logical rows: raw rows plus the canonical vectors the load wrote
        assert con.execute("SELECT count(*) FROM assignment_rows").fetchone()[0] == 2
    finally:
        con.close()
