"""The two-phase warehouse release with DuckDB as the warehouse: the emitted query runs on
a separate, plain DuckDB database (no dpspin macros, only the three tables), its m rows
come back as CSV / JSON / JSON Lines, and `dpspin release --from-sketch` checks and
releases them. A tampered or oversized vector is refused before any charge (exit 2,
ledger unchanged, no plan). The PostgreSQL path is in tests/test_postgres.py."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest

from dpspin_sql import cli, ledger, store
from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
from dpspin_sql.sql import audit_statement
from dpspin_sql.warehouse import check_vector, read_result
from tests.helpers.sql import build_store, stmt


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("warehouse") / "template.duckdb")


@pytest.fixture()
def db(template, tmp_path) -> Path:
    path = tmp_path / "store.duckdb"
    shutil.copy(template, path)
    return path


def make_warehouse(db: Path, path: Path) -> Path:
    """A plain DuckDB database holding copies of the store's records, assignments, atoms: the
    store's logical rows (its canonical vectors as assignment rows, the assignment_rows view),
    as a curator exports them to a warehouse."""
    wh = duckdb.connect(str(path))
    wh.execute(f"ATTACH '{db}' AS s (READ_ONLY)")
    for table, source in (("records", "records"), ("assignments", "assignment_rows"), ("atoms", "atoms")):
        wh.execute(f"CREATE TABLE {table} AS SELECT * FROM s.{source}")
    wh.execute("DETACH s")
    wh.close()
    return path


def run_in_warehouse(warehouse: Path, sketch_sql: str, result: Path, fmt: str = "csv") -> Path:
    options = {"csv": "FORMAT csv, HEADER", "json": "FORMAT json, ARRAY true", "jsonl": "FORMAT json"}[fmt]
    wh = duckdb.connect(str(warehouse))
    assert not wh.execute("SELECT * FROM duckdb_functions() WHERE function_name LIKE 'dpspin%'").fetchall()
    wh.execute(f"COPY ({sketch_sql.strip().rstrip(';')}) TO '{result}' ({options})")
    wh.close()
    return result


def emitted(tmp_path: Path, statement: str, capsys, dialect: str = "duckdb") -> tuple[Path, str]:
    query = tmp_path / "query.sql"
    query.write_text(statement + "\n")
    assert cli.run(["sql", "--emit-sketch", "--dialect", dialect, "-f", str(query)]) == 0
    return query, capsys.readouterr().out


def ledger_state(db: Path):
    con = store.connect(db, read_only=True)
    try:
        return con.execute("SELECT release_id, row_hash FROM ledger ORDER BY seq").fetchall(), \
            ledger.status(con).epsilon_charged
    finally:
        con.close()


@pytest.fixture()
def phase_one(db, tmp_path, capsys):
    """Phase one done: the statement, the emitted query run in the warehouse, result.csv."""
    query, sql = emitted(tmp_path, stmt(unit="user"), capsys)
    result = run_in_warehouse(make_warehouse(db, tmp_path / "warehouse.duckdb"), sql, tmp_path / "result.csv")
    return query, result


def release_args(db, query, result, tmp_path, *extra):
    return ["release", "--from-sketch", str(result), "--statement", str(query), "--dialect", "duckdb",
            "--db", str(db), "--out", str(tmp_path / "plan.json"), "-q", *extra]


@pytest.mark.parametrize("unit", ["record", "user"])
def test_two_phase_release_equals_the_store_sketch_and_charges(db, tmp_path, capsys, unit):
    query, sql = emitted(tmp_path, stmt(unit=unit, K=2), capsys)
    result = run_in_warehouse(make_warehouse(db, tmp_path / "warehouse.duckdb"), sql, tmp_path / "result.csv")
    con = store.connect(db)
    audited = audit_statement(query.read_text())
    ours = DuckDBEngine().sketch(con, audited.request.bounds)
    got = check_vector(read_result(result), [int(a) for a in ours.atom_ids], audited.request.bound_fix)
    np.testing.assert_array_equal(got, ours.mass)   # exactly the in-store sketch, zeros included
    assert 0 in got and got.sum() > 0
    counts = store.counts(con)
    units = counts["users_target"] if unit == "user" else counts["target"]   # what the curator knows
    con.close()
    rc = cli.run(release_args(db, query, result, tmp_path, "--max-units", str(units)))
    assert rc == 0, capsys.readouterr().err
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["unit"] == unit and (tmp_path / "plan.dictionary.json").exists()
    rows, spent = ledger_state(db)
    assert len(rows) == 1 and spent == pytest.approx(0.5)
    con = store.connect(db, read_only=True)
    params = ledger.status(con).releases[-1]["params"]
    assert params["engine"] == "warehouse:duckdb" and params["max_units"] == units
    assert params["statement_sha256"].startswith("sha256:") and params["sketch_sql_sha256"].startswith("sha256:")
    assert ledger.verify(con) == []
    con.close()


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_json_and_json_lines_results(db, tmp_path, capsys, fmt):
    query, sql = emitted(tmp_path, stmt(unit="user"), capsys)
    result = run_in_warehouse(make_warehouse(db, tmp_path / "warehouse.duckdb"), sql,
                              tmp_path / f"result.{fmt}", fmt)
    assert cli.run(release_args(db, query, result, tmp_path)) == 0, capsys.readouterr().err
    assert ledger_state(db)[1] == pytest.approx(0.5)


def test_bigquery_style_strings_and_snowflake_style_upper_case_columns_are_read(db, tmp_path, phase_one):
    _, result = phase_one
    rows = [line.split(",") for line in result.read_text().splitlines()[1:]]
    as_bq = tmp_path / "bq.json"
    as_bq.write_text(json.dumps([{"atom_id": a, "mass": m} for a, m in rows]))    # INT64 as strings
    as_sf = tmp_path / "sf.csv"
    as_sf.write_text("ATOM_ID,MASS\n" + "\n".join(f"{a},{m}" for a, m in rows) + "\n")
    assert read_result(as_bq) == read_result(as_sf) == read_result(result)


def tamper(kind: str, text: str) -> str:
    header, *rows = text.splitlines()
    pairs = [r.split(",") for r in rows]
    if kind == "wrong length (a row dropped)":
        pairs = pairs[:-1]
    elif kind == "wrong length (a row added)":
        pairs.append([str(int(pairs[-1][0]) + 1), "0"])
    elif kind == "negative":
        pairs[0][1] = "-16777216"
    elif kind == "float":
        pairs[0][1] = "12.5"
    elif kind == "exponent":
        pairs[0][1] = "1e6"
    elif kind == "huge (above int64)":
        pairs[0][1] = str(1 << 63)
    elif kind == "wrong atom ids":
        pairs[0][0] = "9999"
    elif kind == "duplicate atom ids":
        pairs[1][0] = pairs[0][0]
    elif kind == "not a number":
        pairs[0][1] = "NaN"
    elif kind == "empty value":
        pairs[0][1] = ""
    elif kind == "an extra column":
        header += ",note"
        pairs = [p + ["x"] for p in pairs]
    elif kind == "no header":
        header = None
    elif kind == "above what max-units allows":
        pairs[0][1] = str(251 * (1 << 24))
    return "\n".join(([header] if header else []) + [",".join(p) for p in pairs]) + "\n"


TAMPERINGS = ["wrong length (a row dropped)", "wrong length (a row added)", "negative", "float", "exponent",
              "huge (above int64)", "wrong atom ids", "duplicate atom ids", "not a number", "empty value",
              "an extra column", "no header", "above what max-units allows"]


@pytest.mark.parametrize("kind", TAMPERINGS)
def test_a_tampered_vector_is_refused_before_any_charge(db, tmp_path, capsys, phase_one, kind):
    query, result = phase_one
    result.write_text(tamper(kind, result.read_text()))
    before = ledger_state(db)
    rc = cli.run(release_args(db, query, result, tmp_path, "--max-units", "250"))
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert ledger_state(db) == before and before[0] == []
    assert not (tmp_path / "plan.json").exists() and not (tmp_path / "plan.dictionary.json").exists()


@pytest.mark.parametrize("body", [
    [{"atom_id": 0, "mass": 5.0}],                     # a JSON float, even a whole one
    [{"atom_id": 0, "mass": True}],
    [{"atom_id": 0, "mass": None}],
    {"atom_id": [0], "mass": [1]},
    "NaN",
])
def test_json_values_that_are_not_integers_are_refused(db, tmp_path, capsys, phase_one, body):
    query, result = phase_one
    rows = [line.split(",") for line in result.read_text().splitlines()[1:]]
    objects = [{"atom_id": int(a), "mass": int(m)} for a, m in rows]
    if isinstance(body, list):
        objects[0] = body[0]
        text = json.dumps(objects)
    else:
        text = body if isinstance(body, str) else json.dumps(body)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    assert cli.run(release_args(db, query, bad, tmp_path)) == 2
    assert ledger_state(db)[0] == [] and not (tmp_path / "plan.json").exists()


@pytest.mark.parametrize("args, code, message", [
    (["--epsilon", "1"], 2, "parameters come from --statement; drop --epsilon"),
    (["--dialect", "oracle"], 2, "--dialect must name the warehouse"),
    (["--max-units", "0"], 2, "--max-units must be a positive integer"),
    (["--format", "xml"], 2, "--format must be one of"),
])
def test_cli_usage_errors(db, tmp_path, capsys, phase_one, args, code, message):
    query, result = phase_one
    argv = release_args(db, query, result, tmp_path)
    if args[0] == "--dialect":
        argv[argv.index("--dialect") + 1] = args[1]
        args = []
    assert cli.run(argv + args) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert ledger_state(db)[0] == []


def test_two_phase_flags_without_from_sketch_and_missing_statement(db, tmp_path, capsys, phase_one):
    query, result = phase_one
    assert cli.run(["release", "--db", str(db), "--out", str(tmp_path / "p.json"), "--mechanism", "laplace",
                    "--epsilon", "1", "--unit", "record", "--statement", str(query)]) == 2
    assert "--statement goes with --from-sketch" in capsys.readouterr().err
    assert cli.run(["release", "--db", str(db), "--out", str(tmp_path / "p.json"), "--from-sketch", str(result),
                    "--dialect", "duckdb"]) == 2
    assert "needs --statement" in capsys.readouterr().err
    assert cli.run(["release", "--db", str(db), "--out", str(tmp_path / "p.json"), "--epsilon", "1",
                    "--unit", "record"]) == 2
    assert "missing option --mechanism" in capsys.readouterr().err


def test_an_unsafe_statement_is_refused_by_the_audit(db, tmp_path, capsys, phase_one):
    _, result = phase_one
    bad = tmp_path / "bad.sql"
    bad.write_text(stmt(unit="user") + " ORDER BY 1")
    argv = release_args(db, bad, result, tmp_path)
    assert cli.run(argv) == 1
    assert "SQL audit refused" in capsys.readouterr().err
    assert ledger_state(db)[0] == [] and not (tmp_path / "plan.json").exists()


def test_a_vector_for_other_bounds_still_must_fit_the_statements_bounds(db, tmp_path, capsys, phase_one):
    """The request comes from the statement: a vector computed with B = 5 does not fit a
    statement with B = 1 and --max-units (the per-unit bound is the statement's)."""
    query, _ = phase_one
    narrow = tmp_path / "narrow.sql"
    narrow.write_text(query.read_text())
    wide_dir = tmp_path / "wide"
    wide_dir.mkdir()
    _, sql = emitted(wide_dir, stmt(unit="user", B=5.0), capsys)
    result = run_in_warehouse(make_warehouse(db, tmp_path / "wh5.duckdb"), sql, tmp_path / "r5.csv")
    total = sum(int(line.split(",")[1]) for line in result.read_text().splitlines()[1:])
    units = total // (1 << 24)   # enough units for B = 1 ... only if the total fits units × 2^24
    assert units > 1
    assert cli.run(release_args(db, narrow, result, tmp_path, "--max-units", str(units - 1))) == 2
    assert "more than" in capsys.readouterr().err and ledger_state(db)[0] == []
