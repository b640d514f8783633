"""The two-phase warehouse release over the warehouse's own tables (dpspin_sql/sql/catalog.py):
the statement file declares the tables (CREATE TABLE), `dpspin sql --emit-sketch` writes the
enforced sketch over their own names, the warehouse — a separate plain DuckDB database, or
the real PostgreSQL server — runs it, and `dpspin release --from-sketch` re-audits against
the same declarations and releases the returned vector. The vector equals, integer for
integer, the sketch `run_sql` computes over the same tables (`OwnEngine`); a tampered or
oversized vector is refused before any charge; shapes that PostgreSQL cannot run totally
are refused with one line."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import numpy as np
import pytest

import dpspin_sql
from dpspin_sql import cli, ledger, store
from dpspin_sql.embed import user_catalog
from dpspin_sql.errors import AuditRefusal, BadInput
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql import emit_sketch
from dpspin_sql.sql.audit import audit_statement
from dpspin_sql.sql.catalog import audit_for_warehouse
from dpspin_sql.warehouse import check_vector, read_result, statement_hash
from tests.helpers.core import assert_one_line_error, install_atoms, put_records
from tests.helpers.postgres import pg_dsn  # noqa: F401  (the fixture)

THEMES = ["refund delay", "app crash", "double charge", "password reset", "late delivery"]
DECLARE = ("CREATE TABLE reviews (review_id BIGINT, author VARCHAR, body VARCHAR);\n"
           "CREATE TABLE theme_scores (review_id BIGINT, theme VARCHAR, score DOUBLE);\n")
USER = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author, "
        "contribution_bound = 1, mechanism = 'gaussian', top = 3) theme AS atom, DPSPIN_MASS(score) "
        "FROM theme_scores JOIN reviews USING (review_id) WHERE review_id >= 7 GROUP BY theme")
RECORD = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25, mechanism = 'laplace', top = 3) "
          "s.theme, DPSPIN_MASS(s.score) FROM theme_scores AS s JOIN reviews AS r ON s.review_id = r.review_id "
          "WHERE s.score > 0.1 AND r.review_id >= 3 GROUP BY s.theme")
LIKE = USER.replace("WHERE review_id >= 7", "WHERE body LIKE '%refund%'")
STATEMENTS = {"user": USER, "record": RECORD, "like": LIKE}
UNITS = {"user": 60, "record": 400, "like": 60}   # the public bound on protected units


def fill(con) -> None:
    """The user's rows: 400 reviews by 60 authors; scores with labels the dictionary lacks."""
    con.execute("""
        CREATE TABLE reviews AS
        SELECT i AS review_id, 'author-' || (i % 60) AS author,
               ['my refund is late', 'the app crashes', 'charged twice', 'reset email missing'][1 + i % 4] AS body
        FROM range(400) AS t(i);
        CREATE TABLE theme_scores AS
        SELECT i AS review_id, ['refund delay', 'app crash', 'double charge', 'password reset'][1 + i % 4] AS theme,
               0.8 AS score FROM range(400) AS t(i)
        UNION ALL SELECT i, 'late delivery', 0.4 FROM range(0, 400, 3) AS t(i)
        UNION ALL SELECT i, 'not an atom', 1.0 FROM range(0, 400, 5) AS t(i)
        UNION ALL SELECT i, 'app crash', 'nan'::DOUBLE FROM range(0, 400, 7) AS t(i);
    """)


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """(store path, the reference sketch per statement): a user database with the tables and a
    store installed on it (the dictionary, and two auxiliary records whose authors are left out
    at user level); the reference is the sketch run_sql computes there (OwnEngine)."""
    monkeypatch.chdir(tmp_path)
    con = duckdb.connect(str(tmp_path / "analytics.duckdb"))
    fill(con)
    path = tmp_path / "store.duckdb"
    dpspin_sql.install(con, path, epsilon_budget=5.0, delta_budget=1e-5)
    reference = {}
    with dpspin_sql.session(con) as s:
        install_atoms(s, list(range(len(THEMES))), THEMES)
        put_records(s, [("aux-1", "author-3", "aux"), ("aux-2", "author-8", "aux")])
        for name, statement in STATEMENTS.items():
            audited = audit_statement(statement, s, user_catalog=user_catalog(con))
            sketch = OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds)
            reference[name] = sketch.mass
    con.close()
    return path, reference


def warehouse(store_path: Path, path: Path) -> Path:
    """A plain DuckDB database: the warehouse's own tables plus the store's atoms and records."""
    wh = duckdb.connect(str(path))
    fill(wh)
    wh.execute(f"ATTACH '{store_path}' AS s (READ_ONLY)")
    wh.execute("CREATE TABLE atoms AS SELECT * FROM s.atoms")
    wh.execute("CREATE TABLE records AS SELECT * FROM s.records")
    wh.execute("DETACH s")
    wh.close()
    return path


def emit(tmp_path: Path, statement: str, capsys, dialect: str = "duckdb") -> tuple[Path, str]:
    query = tmp_path / "query.sql"
    query.write_text(DECLARE + statement + ";\n")
    capsys.readouterr()
    assert cli.run(["sql", "--emit-sketch", "--dialect", dialect, "-f", str(query)]) == 0
    return query, capsys.readouterr().out


def run_duckdb(wh: Path, sql: str, result: Path) -> Path:
    con = duckdb.connect(str(wh))
    assert not con.execute("SELECT * FROM duckdb_functions() WHERE function_name LIKE 'dpspin%'").fetchall()
    con.execute(f"COPY ({sql.strip().rstrip(';')}) TO '{result}' (FORMAT csv, HEADER)")
    con.close()
    return result


def ledger_rows(path: Path):
    con = store.connect(path, read_only=True)
    try:
        return ledger.status(con).releases
    finally:
        con.close()


def release(capsys, store_path, query, result, tmp_path, dialect="duckdb", *extra):
    capsys.readouterr()
    rc = cli.run(["release", "--from-sketch", str(result), "--statement", str(query), "--dialect", dialect,
                  "--db", str(store_path), "--out", str(tmp_path / "plan.json"), "-q", *extra])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.parametrize("name", ["user", "record", "like"])
def test_two_phase_over_own_tables_equals_run_sql_and_charges(setup, tmp_path, capsys, name):
    store_path, reference = setup
    query, sql = emit(tmp_path, STATEMENTS[name], capsys)
    assert "reviews" in sql and "theme_scores" in sql and "memory" not in sql
    result = run_duckdb(warehouse(store_path, tmp_path / "wh.duckdb"), sql, tmp_path / "result.csv")
    audited, _ = audit_for_warehouse(query.read_text(), "duckdb")
    got = check_vector(read_result(result), list(range(len(THEMES))), audited.request.bound_fix)
    np.testing.assert_array_equal(got, reference[name])     # the integer sketch run_sql computes
    assert got.sum() > 0 and got[THEMES.index("late delivery")] > 0
    rc, _, err = release(capsys, store_path, query, result, tmp_path, "duckdb", "--max-units", str(UNITS[name]))
    assert rc == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["unit"] == ("record" if name == "record" else "user")
    (row,) = ledger_rows(store_path)
    params = row["params"]
    assert params["engine"] == "warehouse:duckdb" and params["max_units"] == UNITS[name]
    assert params["statement_sha256"] == statement_hash(query.read_text())
    assert params["sketch_sql_sha256"] == "sha256:" + hashlib.sha256(sql.encode()).hexdigest()


def test_the_aux_authors_are_left_out_at_user_level(setup, tmp_path, capsys):
    store_path, reference = setup
    _, sql = emit(tmp_path, USER, capsys)
    wh = warehouse(store_path, tmp_path / "wh.duckdb")
    con = duckdb.connect(str(wh))
    con.execute("DELETE FROM records")     # without the store's aux records the two authors count
    con.close()
    got = check_vector(read_result(run_duckdb(wh, sql, tmp_path / "r.csv")), list(range(len(THEMES))), 1 << 24)
    assert got.sum() > reference["user"].sum()


@pytest.mark.parametrize("kind", ["oversized", "extra_row", "fraction", "negative"])
def test_a_tampered_or_oversized_vector_is_refused_before_any_charge(setup, tmp_path, capsys, kind):
    store_path, _ = setup
    query, sql = emit(tmp_path, USER, capsys)
    result = run_duckdb(warehouse(store_path, tmp_path / "wh.duckdb"), sql, tmp_path / "result.csv")
    lines = result.read_text().splitlines()
    atom, mass = lines[1].split(",")
    if kind == "oversized":      # more than 60 authors × 2^24 could give
        lines[1] = f"{atom},{61 << 24}"
    elif kind == "extra_row":
        lines.append("99,0")
    elif kind == "fraction":
        lines[1] = f"{atom},{mass}.5"
    else:
        lines[1] = f"{atom},-{mass}"
    result.write_text("\n".join(lines) + "\n")
    rc, out, err = release(capsys, store_path, query, result, tmp_path, "duckdb", "--max-units", "60")
    assert_one_line_error(rc, out, err, 2)
    assert not (tmp_path / "plan.json").exists() and ledger_rows(store_path) == []


def test_phase_two_audits_against_the_same_declarations(setup, tmp_path, capsys):
    """Another declaration of the tables gives another audit: a score declared as text cannot be
    read by PostgreSQL totally, and a statement over undeclared tables is refused."""
    store_path, _ = setup
    query, sql = emit(tmp_path, USER, capsys)
    result = run_duckdb(warehouse(store_path, tmp_path / "wh.duckdb"), sql, tmp_path / "result.csv")
    query.write_text("CREATE TABLE reviews (review_id BIGINT, author VARCHAR, body VARCHAR);\n" + USER)
    rc, out, err = release(capsys, store_path, query, result, tmp_path)
    assert_one_line_error(rc, out, err, 1)
    assert "theme_scores" in err and ledger_rows(store_path) == []


@pytest.mark.parametrize("text, error, match", [
    (DECLARE.replace("score DOUBLE", "score VARCHAR") + USER, BadInput, "weight column is text"),
    (DECLARE + LIKE, AuditRefusal, "in postgres a WHERE filter may only compare columns with literals"),
    (DECLARE + USER.replace("review_id >= 7", "TRY_CAST(body AS INTEGER) > 3"), AuditRefusal, "in postgres"),
])
def test_shapes_postgres_cannot_run_totally_are_refused(text, error, match):
    with pytest.raises(error, match=match):
        emit_sketch(text, "postgres")
    emit_sketch(text, "trino")    # the same statement is total in a dialect with TRY_CAST


def test_snowflake_and_spark_keep_try_cast():
    text = DECLARE.replace("score DOUBLE", "score VARCHAR") + USER
    assert "TRY_CAST(CAST(s.score AS VARCHAR) AS DOUBLE)" in emit_sketch(text, "snowflake")
    assert "TRY_CAST(s.score AS DOUBLE)" in emit_sketch(text, "spark")
    assert "SAFE_CAST(s.score AS FLOAT64)" in emit_sketch(text, "bigquery")


@pytest.mark.parametrize("text, match", [
    ("CREATE TABLE t AS SELECT 1 AS x;\n" + USER, "CREATE TABLE name"),
    ("CREATE VIEW reviews AS SELECT 1;\n" + USER, "CREATE TABLE name"),
    (DECLARE + USER + ";\n" + USER, "exactly one DP statement"),
    (DECLARE + DECLARE + USER, "declared twice"),
    (DECLARE + "CREATE TABLE atoms (atom_id BIGINT, label VARCHAR);\n"
     + USER.replace("FROM theme_scores", "FROM atoms"), "not allowed"),
    (DECLARE + USER.replace("FROM theme_scores", "FROM read_parquet('x.parquet')"), "file or table function"),
    (DECLARE + "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace') atom_id, "
     "DPSPIN_MASS(weight) FROM assignments GROUP BY atom_id", "declares tables but the statement reads the store"),
])
def test_declarations_that_are_not_table_shapes_are_refused(text, match, capsys, tmp_path):
    query = tmp_path / "q.sql"
    query.write_text(text)
    rc = cli.run(["sql", "--emit-sketch", "--dialect", "bigquery", "-f", str(query)])
    captured = capsys.readouterr()
    assert rc in (1, 2) and match in captured.err, captured.err
    assert_one_line_error(rc, captured.out, captured.err, rc)


def test_postgres_runs_the_emitted_query_over_its_own_tables(setup, tmp_path, capsys, pg_dsn):
    import psycopg

    from dpspin_sql.warehouse import push_postgres

    store_path, reference = setup
    pg_declare = ("CREATE TABLE reviews (review_id BIGINT, author TEXT, body TEXT);\n"
                  "CREATE TABLE theme_scores (review_id BIGINT, theme TEXT, score DOUBLE PRECISION);\n")
    query = tmp_path / "query.sql"
    query.write_text(pg_declare + USER + ";\n")
    capsys.readouterr()
    assert cli.run(["sql", "--emit-sketch", "--dialect", "postgres", "-f", str(query)]) == 0
    sql = capsys.readouterr().out
    src = duckdb.connect()
    fill(src)
    with psycopg.connect(pg_dsn, autocommit=True) as pg:
        con = store.connect(store_path, read_only=True)
        push_postgres(con, pg=pg)          # the store's atoms and records (aux authors) on the server
        con.close()
        pg.execute("DROP TABLE IF EXISTS reviews; DROP TABLE IF EXISTS theme_scores")
        pg.execute(pg_declare)
        with pg.cursor() as cur:
            cur.executemany("INSERT INTO reviews VALUES (%s, %s, %s)", src.execute("SELECT * FROM reviews").fetchall())
            cur.executemany("INSERT INTO theme_scores VALUES (%s, %s, %s)",
                            src.execute("SELECT * FROM theme_scores").fetchall())
        rows = pg.execute(sql.strip().rstrip(";")).fetchall()
    result = tmp_path / "result.csv"
    result.write_text("atom_id,mass\n" + "".join(f"{a},{m}\n" for a, m in rows))
    got = check_vector(read_result(result), list(range(len(THEMES))), 1 << 24)
    np.testing.assert_array_equal(got, reference["user"])
    rc, _, err = release(capsys, store_path, query, result, tmp_path, "postgres", "--max-units", "60")
    assert rc == 0, err
    (row,) = ledger_rows(store_path)
    assert row["params"]["engine"] == "warehouse:postgres"


def test_the_warehouse_doc_example_runs(setup, tmp_path):
    import re

    from tests.test_readme import run_bash

    store_path, reference = setup
    doc = (Path(__file__).resolve().parents[1] / "docs" / "WAREHOUSE.md").read_text(encoding="utf-8")
    section = doc.split("## The warehouse's own tables", 1)[1].split("\n## ", 1)[0]
    (query,) = re.findall(r"```sql\n(.*?)```", section, flags=re.S)
    (script,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    (tmp_path / "query.sql").write_text(query)
    warehouse(store_path, tmp_path / "warehouse.duckdb")
    run_bash(script, tmp_path)
    got = check_vector(read_result(tmp_path / "result.csv"), list(range(len(THEMES))), 1 << 24)
    np.testing.assert_array_equal(got, reference["like"])    # the same statement as LIKE, run here
    assert json.loads((tmp_path / "plan.json").read_text())["unit"] == "user"
    (row,) = ledger_rows(store_path)
    assert row["params"]["engine"] == "warehouse:duckdb"


def test_a_store_statement_with_try_cast_is_total_in_every_dialect_or_refused():
    statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace') atom_id, "
                 "DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) "
                 "WHERE TRY_CAST(text AS DOUBLE) > 1 GROUP BY atom_id")
    with pytest.raises(BadInput, match="cannot be written totally in postgres"):   # sqlglot wrote a CAST
        emit_sketch(statement, "postgres")
    assert "TRY_CAST(CAST(text AS VARCHAR) AS DOUBLE)" in emit_sketch(statement, "snowflake")
    assert "TRY_CAST(text AS DOUBLE)" in emit_sketch(statement, "spark")
    assert "TRY_CAST(text AS DOUBLE)" in emit_sketch(statement, "trino")
    assert "SAFE_CAST(text AS FLOAT64)" in emit_sketch(statement, "bigquery")
