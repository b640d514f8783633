"""The PostgreSQL engine against a real server started here (initdb + pg_ctl on
127.0.0.1, stopped at the end): the sketch computed by PostgreSQL equals DuckDB's
exactly, hostile assignment rows included; releases charge the ledger; filters that
could raise on PostgreSQL (no TRY) are refused."""
from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.errors import AuditRefusal
from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
from dpspin_sql.sketch.engines.postgres import PostgresEngine
from dpspin_sql.sql import audit_statement, run_sql
from tests.helpers.core import open_copy
from tests.helpers.postgres import as_postgres_user, pg_bin, pg_dsn  # noqa: F401 - the real-server fixture
from tests.helpers.sql import build_store, stmt

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def template(tmp_path_factory, pg_dsn) -> Path:
    from dpspin_sql.sketch.engines import postgres

    path = build_store(tmp_path_factory.mktemp("pg") / "template.duckdb")
    con = store.connect(path)
    with contextlib.closing(postgres.connect(pg_dsn)) as pg:
        counts = postgres.copy_store(con, pg)
    con.close()
    assert counts["assignments"] > counts["records"] > 0
    return path


@pytest.fixture()
def con(template, tmp_path):
    yield from open_copy(template, tmp_path)


@pytest.fixture()
def pg(pg_dsn):
    from dpspin_sql.sketch.engines import postgres

    with contextlib.closing(postgres.connect(pg_dsn)) as c:
        yield c


@pytest.mark.parametrize("unit, K, B, where", [
    ("record", 3, 1.0, ""),
    ("record", 1, 1.0, "split = 'target'"),
    ("user", 3, 1.0, "split = 'target'"),
    ("user", 2, 2.5, "user_id <> 'u0001' AND weight >= 0.2"),
    ("user", 5, 0.3, ""),
])
def test_postgres_sketch_equals_duckdb_exactly(con, pg, unit, K, B, where):

    audited = audit_statement(stmt(unit=unit, K=K, B=B, where=where))
    bounds = audited.request.bounds
    ours = PostgresEngine(audited.filters, pg=pg).sketch(con, bounds)
    theirs = DuckDBEngine(audited.filters).sketch(con, bounds)
    assert ours.mass.sum() > 0
    np.testing.assert_array_equal(ours.mass, theirs.mass)
    assert (ours.n_records, ours.n_users) == (theirs.n_records, theirs.n_users)


def test_run_sql_on_postgres_releases_and_charges(con, pg, tmp_path):
    plan = run_sql(con, stmt(unit="user"), tmp_path / "plan.json", engine="postgres", pg=pg)
    assert (tmp_path / "plan.json").exists() and plan.unit == "user"
    assert ledger.status(con).epsilon_charged == pytest.approx(0.5)
    assert ledger.status(con).releases[-1]["params"]["engine"] == "postgres"


@pytest.mark.parametrize("where", [
    "lower(text) LIKE '%refund%'",                   # a function
    "TRY_CAST(user_id AS INTEGER) > 3",              # a cast
    "weight * 2 > 1",                                # arithmetic
    "metadata->>'$.product' = 'Mortgage'",           # JSON parsing of a record's value
])
def test_filters_that_could_raise_on_postgres_are_refused(con, pg, tmp_path, where):
    with pytest.raises(AuditRefusal, match="postgres engine"):
        run_sql(con, stmt(unit="user", where=where), tmp_path / "plan.json", engine="postgres", pg=pg)
    assert not (tmp_path / "plan.json").exists() and ledger.status(con).epsilon_spent == 0


def test_cli_postgres_engine(con, pg_dsn, tmp_path, capsys):
    from dpspin_sql import cli

    db = Path(con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()")
              .fetchall()[0][0])
    con.close()
    rc = cli.run(["sql", "--db", str(db), "--engine", "postgres", "--pg-dsn", pg_dsn, "-q",
                  "--out", str(tmp_path / "p.json"), stmt(unit="record")])
    assert rc == 0, capsys.readouterr().err
    assert (tmp_path / "p.json").exists()


# -- the two-phase warehouse release with the server as the warehouse ----------------------------

def _server_csv(pg_dsn: str, sketch_sql: str, path: Path) -> Path:
    """Run the emitted query on the server and write its rows as psql --csv would (psql when
    installed, else the server's own COPY ... TO STDOUT)."""
    psql = pg_bin("psql")
    query = sketch_sql.strip()
    if psql:
        subprocess.run([psql, "-X", "-q", "--csv", "-v", "ON_ERROR_STOP=1", "-d", pg_dsn, "-o", str(path),
                        "-c", query], check=True, capture_output=True)
        return path
    import psycopg

    with (psycopg.connect(pg_dsn) as pg, pg.cursor() as cur, open(path, "wb") as fh,
          cur.copy(f"COPY ({query.rstrip(';')}) TO STDOUT WITH (FORMAT csv, HEADER)") as copy):
        for chunk in copy:
            fh.write(chunk)
    return path


@pytest.mark.parametrize("unit", ["record", "user"])
def test_two_phase_release_over_the_servers_own_tables(template, pg_dsn, tmp_path, capsys, unit):
    from dpspin_sql import cli

    db = tmp_path / "store.duckdb"
    shutil.copy(template, db)
    assert cli.run(["warehouse", "push", "--db", str(db), "--pg-dsn", pg_dsn]) == 0   # no Python copy step
    assert "pushed" in capsys.readouterr().out
    query = tmp_path / "query.sql"
    query.write_text(stmt(unit=unit, where="user_id <> 'u0001'") + "\n")
    assert cli.run(["sql", "--emit-sketch", "--dialect", "postgres", "-f", str(query)]) == 0
    result = _server_csv(pg_dsn, capsys.readouterr().out, tmp_path / "result.csv")

    con = store.connect(db)
    audited = audit_statement(query.read_text())
    theirs = DuckDBEngine(audited.filters).sketch(con, audited.request.bounds)
    con.close()
    from dpspin_sql.warehouse import check_vector, read_result

    got = check_vector(read_result(result), [int(a) for a in theirs.atom_ids], audited.request.bound_fix)
    np.testing.assert_array_equal(got, theirs.mass)

    argv = ["release", "--from-sketch", str(result), "--statement", str(query), "--dialect", "postgres",
            "--db", str(db), "--out", str(tmp_path / "plan.json"), "-q"]
    bad = tmp_path / "tampered.csv"
    lines = result.read_text().splitlines()
    bad.write_text("\n".join(lines[:1] + lines[2:]) + "\n")   # one atom's row dropped
    assert cli.run([*argv[:2], str(bad), *argv[3:]]) == 2
    assert not (tmp_path / "plan.json").exists()
    assert cli.run(argv) == 0, capsys.readouterr().err
    con = store.connect(db, read_only=True)
    st = ledger.status(con)
    assert len(st.releases) == 1 and st.epsilon_charged == pytest.approx(0.5)
    assert st.releases[0]["params"]["engine"] == "warehouse:postgres"
    con.close()


def test_push_needs_a_dsn_and_a_reachable_server(template, tmp_path, capsys, monkeypatch):
    from dpspin_sql import cli

    monkeypatch.delenv("DPSPIN_PG_DSN", raising=False)
    assert cli.run(["warehouse", "push", "--db", str(template)]) == 2
    assert "--pg-dsn" in capsys.readouterr().err
    assert cli.run(["warehouse", "push", "--db", str(template), "--pg-dsn",
                    "host=127.0.0.1 port=1 user=postgres dbname=postgres connect_timeout=2"]) == 2
    assert "cannot connect to PostgreSQL" in capsys.readouterr().err
