"""Running DP statements on a DuckDB store: sketch parity with the core, plans, ledger, CLI."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.errors import AuditRefusal, BadInput, BudgetExceeded
from dpspin_sql.sketch import compute_sketch
from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
from dpspin_sql.sql import audit_statement, emit_sketch, run_sql
from tests.helpers.core import open_copy
from tests.helpers.sql import EXAMPLE, EXAMPLE_RECORD, OPTS, build_store, stmt  # noqa: F401


def duckdb_sketch(con, audited):
    return DuckDBEngine(audited.filters).sketch(con, audited.request.bounds)

@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("sqlrun") / "template.duckdb")


@pytest.fixture()
def con(template, tmp_path):
    yield from open_copy(template, tmp_path)


@pytest.mark.parametrize("unit, K, B", [
    ("record", 3, 1.0), ("record", 1, 1.0), ("record", 5, 1.0),
    ("user", 3, 1.0), ("user", 3, 2.0), ("user", 2, 0.3), ("user", 5, 5.0), ("user", 1, 1e-6),
])
def test_sketch_equals_the_core_sketch_exactly(con, unit, K, B):
    ours = duckdb_sketch(con, audit_statement(stmt(unit=unit, K=K, B=B)))
    core = compute_sketch(con, unit, K, B)
    assert ours.mass.dtype == np.int64 and ours.mass.sum() > 0
    np.testing.assert_array_equal(ours.mass, core.mass)
    np.testing.assert_array_equal(ours.atom_ids, core.atom_ids)
    assert (ours.unit, ours.K, ours.B, ours.n_records, ours.n_users) == \
           (core.unit, core.K, core.B, core.n_records, core.n_users)


@pytest.mark.parametrize("unit", ["record", "user"])
@pytest.mark.parametrize("where, exclude", [
    ("text ILIKE '%refund%'", "NOT (text ILIKE '%refund%')"),
    ("user_id < 'u0100' AND length(text) > 60", "NOT (user_id < 'u0100' AND length(text) > 60)"),
])
def test_a_records_filter_equals_excluding_the_other_records(con, template, tmp_path, unit, where, exclude):
    filtered = duckdb_sketch(con, audit_statement(stmt(unit=unit, B=2.0, where=where)))
    other = store.connect(shutil.copy(template, tmp_path / "excluded.duckdb"))
    other.execute(f"UPDATE records SET split = 'excluded' WHERE split = 'target' AND {exclude}")
    expected = compute_sketch(other, unit, 3, 2.0)
    np.testing.assert_array_equal(filtered.mass, expected.mass)
    assert 0 < filtered.mass.sum() < compute_sketch(con, unit, 3, 2.0).mass.sum()
    # the public shape is the whole target split's, never the filtered count
    assert filtered.n_records == compute_sketch(con, unit, 3, 2.0).n_records


def test_an_assignments_filter_selects_rows_before_the_clip(con):
    full = duckdb_sketch(con, audit_statement(stmt(unit="record")))
    only = duckdb_sketch(con, audit_statement(stmt(unit="record", where="atom_id IN (0, 1, 2)")))
    assert np.all(only.mass[3:] == 0) and np.all(only.mass[:3] >= full.mass[:3])


PLAN_KEYS = ("schema_version", "mechanism", "epsilon", "delta", "unit", "adjacency", "B", "K", "L", "m",
             "calibration", "noise_scale", "comparison_margin", "dictionary")


@pytest.mark.parametrize("sql, config", [
    (EXAMPLE, dict(mechanism="gaussian", epsilon=1.0, delta=1e-6, unit="user", B=1.0, K=3, L=10)),
    (EXAMPLE_RECORD, dict(mechanism="gaussian", epsilon=1.0, delta=1e-6, unit="record", K=3, L=10)),
])
def test_plan_matches_dpspin_release_and_charges_the_ledger(con, tmp_path, sql, config):
    from dpspin_sql.release import release
    from dpspin_sql.request import ReleaseRequest

    assert audit_statement(sql).request == ReleaseRequest(**config)
    ours = run_sql(con, sql, tmp_path / "sql_plan.json").to_dict()
    theirs = release(con, ReleaseRequest(**config), out=tmp_path / "plan.json").to_dict()
    assert set(ours) == set(theirs)
    assert {k: ours[k] for k in PLAN_KEYS} == {k: theirs[k] for k in PLAN_KEYS}
    assert [set(a) for a in ours["atoms"]] == [set(a) for a in theirs["atoms"]]
    assert len(ours["atoms"]) == 10
    assert json.loads((tmp_path / "sql_plan.json").read_text())["unit"] == config["unit"]
    st = ledger.status(con)
    assert len(st.releases) == 2 and st.epsilon_charged == pytest.approx(2.0)


@pytest.mark.parametrize("sql, error", [
    (EXAMPLE + " LIMIT 1", AuditRefusal),
    (EXAMPLE.replace("top = 10", "top = 500"), AuditRefusal),   # L > m
    ("SELECT WITH DIFFERENTIAL_PRIVACY", BadInput),
    (EXAMPLE.replace("epsilon = 1.0", "epsilon = 1000"), BudgetExceeded),
])
def test_refusals_write_no_plan_and_charge_nothing(con, tmp_path, sql, error):
    before = ledger.status(con).epsilon_spent
    with pytest.raises(error):
        run_sql(con, sql, tmp_path / "plan.json")
    assert not (tmp_path / "plan.json").exists()
    assert ledger.status(con).epsilon_spent == before


def test_cast_in_a_filter_is_refused(con, tmp_path):
    # CAST can fail on one record's text and print it: the audit wants TRY_CAST
    with pytest.raises(AuditRefusal, match="TRY_CAST"):
        run_sql(con, stmt(where="CAST(text AS INTEGER) > 3"), tmp_path / "plan.json")
    assert not (tmp_path / "plan.json").exists() and ledger.status(con).epsilon_spent == 0


@pytest.mark.parametrize("where", [
    "regexp_matches(text, text)",                   # a pattern read from the data
    "regexp_matches(text, lower(text))",
    "'abc' LIKE text",                              # fails when a record's text ends with the escape
    "'' LIKE substring(text, 1, 1) ESCAPE '!'",     # the review's one-bit oracle shape
    "'x' ILIKE upper(text)",
])
def test_data_dependent_patterns_are_refused(con, tmp_path, where):
    with pytest.raises(AuditRefusal, match="literal"):
        run_sql(con, stmt(where=where), tmp_path / "plan.json")


@pytest.mark.parametrize("where", [
    "atom_id / (atom_id - atom_id) > 0",             # division by zero on every row
    "TRY_CAST(text AS INTEGER) > 0 AND 1 % (length(text) - length(text)) = 0",   # division by zero
    "atom_id * 2147483647 * 2147483647 > 0",         # integer overflow
    "abs(-2147483647 - atom_id) > 0",                # abs(INT_MIN) overflows in INTEGER
])
def test_a_filter_that_would_raise_never_fails_the_query(con, tmp_path, where):
    """A query that fails or succeeds with one record's value would be an error oracle
    answering any per-record question for free: the audit admits only total filters and
    the rewrite computes in DOUBLE and divides by NULLIF(d, 0), so none of these raises."""
    plan = run_sql(con, stmt(where=where), tmp_path / "plan.json")
    assert (tmp_path / "plan.json").exists() and plan.mechanism == "gaussian"


def test_an_implicit_per_row_conversion_is_refused(con, tmp_path):
    # `text > 5` made DuckDB cast every text to a number: it failed on this store but would
    # succeed on one whose texts are all numeric (an oracle); it was run and failed, now it is refused
    with pytest.raises(AuditRefusal, match="> compares INTEGER with VARCHAR"):
        run_sql(con, stmt(where="text > 5"), tmp_path / "plan.json")
    assert not (tmp_path / "plan.json").exists() and ledger.status(con).epsilon_spent == 0


def test_engine_messages_never_reach_the_user(con, tmp_path):
    # a store the sketch query cannot run on: the engine's text is never passed on
    con.execute("ALTER TABLE assignments RENAME COLUMN weight TO w")
    with pytest.raises(BadInput) as info:
        run_sql(con, stmt(), tmp_path / "plan.json")
    assert str(info.value) == "the sketch query failed on this store"


def test_emit_sketch_runs_in_duckdb_and_equals_the_core(con):
    """The emitted query runs on tables in the store's logical shape (records, assignments,
    atoms: what `postgres.copy_store` exports, the canonical vectors as rows) in a DuckDB
    that has none of the package's macros."""
    import duckdb

    sql = emit_sketch(EXAMPLE, "duckdb")
    assert "$" not in sql and "dpspin_fix" not in sql.lower()
    other = duckdb.connect()
    for table, columns in (("records", "record_id, user_id, text, split, metadata"),
                           ("assignments", "record_id, atom_id, weight"), ("atoms", "atom_id, label, description")):
        rows = con.sql(f"SELECT {columns} FROM {'assignment_rows' if table == 'assignments' else table}").to_arrow_table()
        other.register("t", rows)
        other.execute(f"CREATE TABLE {table} AS SELECT * FROM t")
        other.unregister("t")
    assert other.execute("SELECT count(*) FROM assignments").fetchall() != con.execute(
        "SELECT count(*) FROM assignments").fetchall()          # the store keeps most rows as vectors
    rows = other.execute(sql).fetchall()
    core = compute_sketch(con, "user", 3, 1.0)
    # the whole m-vector, in atom order, zeros included (what a warehouse hands back)
    assert [(int(a), int(m)) for a, m in rows] == [(int(a), int(m)) for a, m in zip(core.atom_ids, core.mass)]
    assert 0 in core.mass


# -- the CLI (dpspin sql) ---------------------------------------------------------------------------
def cli(*args: str) -> int:
    from dpspin_sql.cli import run

    return run(list(args))


def test_cli_runs_a_statement_and_a_file(con, tmp_path, capsys):
    db = con.execute("PRAGMA database_list").fetchall()[0][2]
    con.close()
    assert cli("sql", "--db", db, EXAMPLE, "--out", str(tmp_path / "a.json")) == 0
    (tmp_path / "q.sql").write_text(EXAMPLE_RECORD + ";\n")
    assert cli("sql", "--db", db, "-f", str(tmp_path / "q.sql"), "--out", str(tmp_path / "b.json")) == 0
    assert json.loads((tmp_path / "a.json").read_text())["unit"] == "user"
    assert json.loads((tmp_path / "b.json").read_text())["unit"] == "record"
    other = store.connect(db)
    assert len(ledger.status(other).releases) == 2
    other.close()


@pytest.mark.parametrize("args, code, message", [
    (["--out", "{out}", EXAMPLE + " ORDER BY 1"], 1, "SQL audit refused: ORDER BY"),
    (["--out", "{out}", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon) x"], 2, "cannot parse"),
    (["--out", "{out}"], 2, "give the statement"),
    (["--out", "{out}", "-f", "{missing}"], 2, "not found"),
    (["--out", "{out}", "--engine", "hive", EXAMPLE], 2, "--engine"),
    (["--emit-sketch", "--dialect", "oracle", EXAMPLE], 2, "--dialect"),
    (["--dialect", "spark", EXAMPLE], 2, "--dialect goes with --emit-sketch"),
])
def test_cli_errors_are_one_line_with_exit_codes(con, tmp_path, capsys, args, code, message):
    db = con.execute("PRAGMA database_list").fetchall()[0][2]
    con.close()
    args = [a.format(out=tmp_path / "p.json", missing=tmp_path / "missing.sql") for a in args]
    assert cli("sql", "--db", db, *args) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("dialect, marker", [
    ("duckdb", "INT128"), ("spark", "DIV"), ("bigquery", "BIGNUMERIC"), ("snowflake", "% total"),
    ("trino", "DECIMAL(38, 0)"), ("postgres", "DIV("),
])
def test_cli_emit_sketch_prints_the_enforced_query(capsys, dialect, marker):
    assert cli("sql", "--emit-sketch", "--dialect", dialect, EXAMPLE) == 0
    out = capsys.readouterr().out
    assert out.startswith("WITH target AS") and marker in out and out.rstrip().endswith(";")


def test_a_mechanism_for_another_scale_is_refused(con, tmp_path):
    """A caller-supplied mechanism must match the config, the fixed-point scale and its
    charged cost; one calibrated for scale 1 would add almost no noise to 2^24 units."""
    from dpspin_sql.mechanisms import make_mechanism
    from dpspin_sql.release import release
    from dpspin_sql.request import ReleaseRequest
    from dpspin_sql.sketch.engines.given import GivenSketch

    cfg = ReleaseRequest(mechanism="laplace", epsilon=1.0, unit="user", L=3)
    sketch = compute_sketch(con, "user", K=3, B=1.0)
    with pytest.raises(BadInput, match="fixed-point scale"):
        release(con, cfg, GivenSketch(sketch), mechanism=make_mechanism(cfg, sketch.m, scale=1))
    assert ledger.status(con).epsilon_spent == 0


def test_user_level_refuses_aux_records_without_a_user(con, tmp_path):
    con.execute("UPDATE records SET user_id = NULL WHERE record_id IN "
                "(SELECT record_id FROM records WHERE split = 'aux' LIMIT 2)")
    with pytest.raises(BadInput, match="2 auxiliary record"):
        run_sql(con, EXAMPLE, tmp_path / "plan.json")
    assert run_sql(con, EXAMPLE_RECORD, tmp_path / "plan.json").unit == "record"
