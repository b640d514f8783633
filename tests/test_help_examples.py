"""Help that teaches: every command's and group's --help ends with an "Example:" of one to
three runnable lines, and every example runs.

The examples run here, each in a fresh copy of one prepared directory (made once for the
module) that holds the files they name: tickets.duckdb (the demo store, with a plan already
released from it and its budget raised), private_plan.json (with its dictionary sidecar),
summary.txt, later.json (a second release), tickets.csv, taxonomy.csv, scores.csv,
query.sql and runs/smoke (an experiment directory). An example exits 0 unless NOT_HERE says
why it cannot run in a test (a server or the paper's data).
"""
from __future__ import annotations

import io
import shlex
import shutil
from pathlib import Path

import pytest
import typer.main

from dpspin_sql.cli import app
from tests.helpers.core import cli

ROOT = typer.main.get_command(app)

# examples that need what a test does not have; every other example must exit 0
NOT_HERE = {
    "warehouse push": "needs a PostgreSQL server",
    "experiment run": "needs the CFPB sample (../shared/data) and about a minute",
}

QUERY = """SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = user_id,
                                         contribution_bound = 1, mechanism = 'gaussian', top = 10)
       atom_id, DPSPIN_MASS(weight)
FROM assignments JOIN records USING (record_id)
WHERE split = 'target'
GROUP BY atom_id
"""


def commands(group, path=()):
    """Every command and group of the app, with its path ('' for dpspin itself)."""
    yield path, group
    for name, sub in (getattr(group, "commands", None) or {}).items():
        yield from commands(sub, path + (name,))


ALL = list(commands(ROOT))
IDS = [" ".join(p) or "dpspin" for p, _ in ALL]


def example_lines(command) -> list[str]:
    """The command lines of a command's "Example:" epilog."""
    epilog = command.epilog or ""
    _, sep, body = epilog.partition("Example:")
    assert sep, "no Example: in the epilog"
    return [line.strip() for line in body.splitlines() if line.strip()]


@pytest.mark.parametrize("path, command", ALL, ids=IDS)
def test_every_command_ends_its_help_with_an_example(capsys, path, command):
    lines = example_lines(command)
    assert 1 <= len(lines) <= 3
    assert all(line.startswith("dpspin ") for line in lines), lines
    rc, out, _ = cli(capsys, *path, "--help")
    assert rc == 0
    tail = out.rstrip().splitlines()[-len(lines) - 1:]
    assert tail[0].strip() == "Example:" and [t.strip() for t in tail[1:]] == lines, out


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """The directory every example runs in (a copy of it each)."""
    from rich.console import Console

    from dpspin_sql import demo, ledger, store
    from dpspin_sql.atoms import current_atoms
    from dpspin_sql.release import release
    from dpspin_sql.request import ReleaseRequest

    base = tmp_path_factory.mktemp("examples")
    db = base / "tickets.duckdb"
    demo.run(db, console=Console(file=io.StringIO()))   # the store, private_plan.json, summary.txt
    (base / "release_card.html").unlink()
    con = store.connect(db)
    ledger.set_budget(con, 20.0, 1e-3)
    request = ReleaseRequest(mechanism="gaussian", epsilon=1.0, delta=1e-6, unit="user", B=1.0, K=3, L=10)
    release(con, request, out=base / "later.json")
    target = [r for (r,) in con.execute("SELECT record_id FROM records WHERE split = 'target' "
                                        "ORDER BY record_id LIMIT 20").fetchall()]
    m = len(current_atoms(con))
    con.close()
    (base / "scores.csv").write_text("record_id,atom_id,weight\n" + "".join(
        f"{r},{i % m},0.8\n{r},{(i * 7 + 1) % m},0.2\n" for i, r in enumerate(target)), encoding="utf-8")
    (base / "tickets.csv").write_text("id,author,body\n" + "".join(
        f"n{i:03d},a{i % 4},my invoice is wrong again ({i})\n" for i in range(12)), encoding="utf-8")
    (base / "taxonomy.csv").write_text("label,description\n" + "".join(
        f"{label},{desc.replace(',', ';')}\n" for label, desc in demo.TAXONOMY[:12]), encoding="utf-8")
    (base / "query.sql").write_text(QUERY, encoding="utf-8")
    (base / "runs" / "smoke" / "runs").mkdir(parents=True)
    return base


RUNNABLE = [(p, c) for p, c in ALL if " ".join(p) not in NOT_HERE]


@pytest.mark.parametrize("path, command", RUNNABLE, ids=[" ".join(p) or "dpspin" for p, _ in RUNNABLE])
def test_every_example_runs(capsys, monkeypatch, tmp_path, prepared, path, command):
    where = tmp_path / "here"
    shutil.copytree(prepared, where)
    monkeypatch.chdir(where)
    for line in example_lines(command):
        rc, out, err = cli(capsys, *shlex.split(line)[1:])
        assert rc == 0, f"{line}\nexit {rc}\n{out}\n{err}"


def test_the_examples_not_run_here_are_still_commands():
    names = {" ".join(p) for p, _ in ALL}
    assert set(NOT_HERE) <= names
