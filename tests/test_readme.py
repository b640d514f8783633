"""The README's and docs' examples run as written (Typer's rule: docs examples are tested),
and .ci/run runs exactly the README's test command.

Shell blocks run in bash with this venv's `dpspin` first on PATH, one temporary directory
per document, in order (a later block uses the files an earlier one made: `demo.duckdb`,
`query.sql`). Blocks that need Spark (Java 17) or a PostgreSQL server skip with the reason
when those are absent; the PostgreSQL block gets a real server started by the tests
(`DPSPIN_PG_DSN`). docs/EMBEDDING.md runs in tests/test_embed.py.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dpspin_sql import cli
from tests.helpers.postgres import pg_bin, pg_dsn  # noqa: F401 - the real-server fixture

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
OPTIONAL = ("matplotlib", "openai", "pyspark", "psycopg", "llama_cpp")


def section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def blocks(text: str, lang: str = "bash") -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def bash_blocks(after_heading: str) -> list[str]:
    return blocks(section(README, after_heading))


def run_bash(block: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PATH": path, **(env or {})}, timeout=600)
    assert proc.returncode == 0, f"exited {proc.returncode}:\n{block}\n--- stderr:\n{proc.stderr[-3000:]}"
    return proc


def test_ci_runs_exactly_the_readme_test_command():
    test_command = bash_blocks("## Two commands")[1].strip()
    ci_lines = [ln for ln in (REPO / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith("#")]
    assert ci_lines[-1] == test_command
    assert "bash .ci/prereqs" in ci_lines   # Java, PostgreSQL, a compiler: CI provides what the tests need


def test_the_main_job_needs_the_core_install_only():
    """The first command installs the core (no extra), and its job imports no optional package."""
    assert bash_blocks("## Two commands")[0].strip() == \
        "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/dpspin demo"
    core = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=\[ ]", d, maxsplit=1)[0].lower() for d in core}
    assert not names & {"matplotlib", "openai", "pyspark", "psycopg", "llama-cpp-python", "pandas"}
    probe = ("import sys\nfrom dpspin_sql.cli import run\nrc = run(['demo'])\n"
             f"loaded = [m for m in {OPTIONAL!r} if m in sys.modules]\n"
             "assert rc == 0 and not loaded, (rc, loaded)\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


PIPELINE = bash_blocks("## The pipeline")[0]


def test_the_pipeline_example_runs_on_the_shipped_sample(tmp_path):
    """A fresh clone: no DPSPIN_DATA, the block run from a checkout's root (examples/ there)."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    env = {k: v for k, v in os.environ.items() if k != "DPSPIN_DATA"}
    path = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", PIPELINE], cwd=tmp_path, capture_output=True,
                          text=True, env={**env, "PATH": path}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "plan.json").exists() and (tmp_path / "summary.txt").exists()


def test_the_pipeline_example_runs_on_the_real_corpus(shared_data, tmp_path):
    run_bash(PIPELINE, tmp_path, {"DPSPIN_DATA": str(shared_data)})
    assert (tmp_path / "plan.json").exists() and (tmp_path / "summary.txt").exists()


from tests.helpers.data import CFPB_CSV_HEADER  # noqa: E402 - the CFPB download's columns


def test_the_datasets_block_turns_the_cfpb_csv_into_what_the_commands_expect(tmp_path):
    """The CFPB's CSV download (its field reference's 18 columns, quoted newlines, CRLF) through
    the README's block, then loaded by the cfpb preset, as the CSV itself is."""
    import csv

    (block,) = bash_blocks("## Datasets")
    with open(tmp_path / "complaints.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(CFPB_CSV_HEADER)
        for i in range(6):
            narrative = "" if i == 5 else f"I was charged twice,\nand XXXX did not answer ({i})."
            out.writerow(["2023-01-0" + str(i + 1), "Debt collection", "I do not know", "Written notification",
                          "" if i % 2 else "Didn't receive enough information", narrative, "", "Bank", "CA", "",
                          "", "Consent provided", "Web", "2023-01-05", "Closed with explanation", "Yes", "N/A",
                          str(7000000 + i)])
    run_bash(block, tmp_path)
    assert (tmp_path / "data" / "cfpb_complaints" / "complaints.jsonl.gz").exists()
    for source in ("data/cfpb_complaints/complaints.jsonl.gz", "complaints.csv"):
        db = f"s{len(source)}.duckdb"
        proc = run_bash(f"dpspin init --db {db} && dpspin load --db {db} --input {source} --preset cfpb", tmp_path)
        assert "loaded 5 records" in proc.stdout, proc.stdout


@pytest.mark.slow
def test_the_reviews_example_runs_and_its_masses_count_mentions(shared_data, tmp_path, monkeypatch, capsys):
    """The reviews block as written: a dictionary of themes (fewer than -m asks for, said in
    one line), the default scorer counting mentions, a plan that says so."""
    import json

    monkeypatch.chdir(tmp_path)
    for line in bash_blocks("## The pipeline")[1].strip().splitlines():
        argv = shlex.split(line.replace("../shared/data", str(shared_data)))
        rc = cli.run(argv[1:])
        err = capsys.readouterr().err
        assert rc == 0, f"{line!r} exited {rc}: {err}"
        if argv[1:3] == ["atoms", "build"]:
            assert "not the 50 asked for (-m 50)" in err
    plan = json.loads((tmp_path / "yelp_plan.json").read_text())
    assert plan["mass_unit"].startswith("records that mention the theme") and plan["assignment"]["scorer"] == "keyword"
    assert all(a["measure"] == f'records that mention "{a["label"]}"' for a in plan["atoms"])
    labels = {a["label"] for a in plan["atoms"]}
    assert not labels & {"strip mall", "old town", "mashed potatoes", "great food"}


# -- "DP from SQL": core, Spark, PostgreSQL + two-phase, in one directory ------------------------

SQL_BLOCKS = bash_blocks("## DP from SQL")


@pytest.fixture(scope="module")
def sql_dir(tmp_path_factory) -> Path:
    """The section's first block run: the demo store and query.sql exist afterwards."""
    where = tmp_path_factory.mktemp("readme-sql")
    run_bash(SQL_BLOCKS[0], where)
    return where


def test_sql_section_has_the_three_blocks():
    assert len(SQL_BLOCKS) == 3
    assert "dpspin demo --db demo.duckdb" in SQL_BLOCKS[0] and "cat > query.sql" in SQL_BLOCKS[0]
    assert "--engine spark" in SQL_BLOCKS[1] and "--from-sketch" in SQL_BLOCKS[2]


def test_sql_core_block(sql_dir):
    """The example releases a plan with signal. The demo store's exact user-level masses
    (seeded corpus) are 40.8, 30.4, 25.8, ... against a noise scale of 5.58 and a half-width
    of 17.6 at ε = 0.8: no atom is 'high' only if every noisy mass is under 17.6, probability
    ≤ Φ(−4.16)·Φ(−2.29)·Φ(−1.47) ≈ 1.3e-8 (the top three alone). At the ε = 0.2 the README had
    (half-width 64.6) that happens in most runs."""
    plan = json.loads((sql_dir / "plan_sql.json").read_text())
    assert plan["epsilon"] == 0.8 and any(a["bin"] == "high" for a in plan["atoms"]), plan["atoms"]
    assert "BIGNUMERIC" in (sql_dir / "sketch.bigquery.sql").read_text()


def test_sql_spark_block(sql_dir):
    pytest.importorskip("pyspark", reason="pyspark is not installed (install the spark extra: pip install -e '.[spark]')")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Java 17 is not installed (java on PATH or JAVA_HOME); the Spark block needs it")
    run_bash(SQL_BLOCKS[1], sql_dir)
    assert (sql_dir / "plan_spark.json").exists()


@pytest.mark.postgres
def test_sql_postgres_and_two_phase_block(sql_dir, pg_dsn):  # the imported fixture
    if not pg_bin("psql"):
        pytest.skip("psql (the PostgreSQL client) is not installed; the README block runs it")
    run_bash(SQL_BLOCKS[2], sql_dir, {"DPSPIN_PG_DSN": pg_dsn})
    assert (sql_dir / "plan_pg.json").exists() and (sql_dir / "plan_warehouse.json").exists()
    proc = run_bash("dpspin budget --db demo.duckdb --json", sql_dir)
    engines = [r["params"].get("engine") for r in __import__("json").loads(proc.stdout)["releases"]]
    assert "warehouse:postgres" in engines and "postgres" in engines


# -- docs/SQL.md ---------------------------------------------------------------------------------

def test_sql_doc_examples_run_as_written(tmp_path, monkeypatch, capsys):
    doc = (REPO / "docs" / "SQL.md").read_text(encoding="utf-8")
    (example,) = blocks(section(doc, "## Example"), "sql")
    python = blocks(doc, "python")
    assert len(python) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(python[0], "docs/SQL.md", "exec"), {"__name__": "__sqldoc__"})
    assert "BIGNUMERIC" in capsys.readouterr().out and (tmp_path / "sql_plan.json").exists()
    # the "Example" section's statement (ε = 1) runs on that store too, through the CLI; the
    # demo's budget (2) is spent to 0.5 by now, so the test raises it first (dpspin init)
    assert cli.run(["init", "--db", "corpus.duckdb", "--epsilon-budget", "4"]) == 0
    (tmp_path / "example.sql").write_text(example)
    rc = cli.run(["sql", "--db", "corpus.duckdb", "-f", "example.sql", "--out", "example_plan.json", "-q"])
    assert rc == 0, capsys.readouterr().err


def test_the_install_size_is_measured_not_typed():
    """README's install size is bench/install_size.py's sentence for its last measurement
    (docs/install_size.json), and no size or build time is typed beside it."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import install_size
    finally:
        sys.path.remove(str(REPO / "bench"))
    record = json.loads((REPO / "docs" / "install_size.json").read_text())
    assert record["site_packages_mb"] > 100 and len(record["largest"]) == 5
    assert install_size.readme_sentence(record) in README
    assert not re.search(r"about \d+ MB|\d+[–-]\d+ minutes", README)


def test_the_python_example_releases_and_verifies(sql_dir):
    """The pipeline section's Python block, run on the README's demo store: one release
    through the library's release path, and the verifier accepts the plan's top theme."""
    (code,) = blocks(section(README, "## The pipeline"), "python")
    proc = subprocess.run([sys.executable, "-c", code], cwd=sql_dir, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "True" and (sql_dir / "plan_py.json").exists()
