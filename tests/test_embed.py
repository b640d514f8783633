"""dpspin_sql.install(con, STORE) on a user's own DuckDB connection: it attaches the store
as the catalog `dpspin` and adds nothing to the user's database; idempotent; safe from
many threads; run_sql works on the connection, and fails with one clear line without it.
docs/EMBEDDING.md runs as written."""
from __future__ import annotations

import re
import threading
from pathlib import Path

import duckdb
import pytest

import dpspin_sql
from dpspin_sql import ledger, store
from dpspin_sql.errors import BadInput

REPO = Path(__file__).resolve().parents[1]
STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25, privacy_unit_column = user_id, "
             "mechanism = 'laplace', top = 3) atom_id, DPSPIN_MASS(weight) "
             "FROM assignments JOIN records USING (record_id) GROUP BY atom_id")


def user_catalog(con) -> dict[str, list]:
    """Everything in the connection's own database: tables, views, macros, schemas."""
    db = con.execute("SELECT current_database()").fetchall()[0][0]
    q = {"tables": "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? ORDER BY ALL",
         "views": "SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = ? AND NOT internal "
                  "ORDER BY ALL",
         "functions": "SELECT schema_name, function_name FROM duckdb_functions() WHERE database_name = ? "
                      "AND NOT internal ORDER BY ALL",
         "schemas": "SELECT schema_name FROM duckdb_schemas() WHERE database_name = ? ORDER BY ALL"}
    return {k: con.execute(v, [db]).fetchall() for k, v in q.items()}


def populate(con) -> None:
    """The demo corpus, loaded into the installed store through a session."""
    from dpspin_sql import assign, atoms, split
    from dpspin_sql.demo import TAXONOMY

    with dpspin_sql.session(con) as s:
        store.load_records(s, "tickets", relation=s.table("tickets"), id_col="ticket_id", user_col="customer",
                           text_col="body")
        split.split(s, unit="user", aux_fraction=0.3, seed=3)
        atoms.install(s, [atoms.Atom(i, lab, d) for i, (lab, d) in enumerate(TAXONOMY)], builder="file")
        assign.assign(s, scorer="keyword", K=3)


@pytest.fixture()
def user_db(tmp_path):
    """A user's own database with a `tickets` table, and a table named like a store table."""
    from dpspin_sql.demo import corpus_relation

    con = duckdb.connect(str(tmp_path / "analytics.duckdb"))
    corpus_relation(con, 3, n_users=120, name="corpus").create("raw")
    con.unregister("corpus")
    con.execute("CREATE TABLE tickets AS SELECT record_id AS ticket_id, user_id AS customer, text AS body FROM raw")
    con.execute("DROP TABLE raw")
    con.execute("CREATE TABLE records AS SELECT 'not yours' AS record_id")   # the user's own `records`
    yield con
    con.close()


def test_run_sql_on_a_plain_connection_is_one_clear_line():
    con = duckdb.connect()
    with pytest.raises(BadInput, match=r"install\(con") as info:
        dpspin_sql.run_sql(con, STATEMENT)
    assert "\n" not in str(info.value) and "Catalog Error" not in str(info.value)


def test_install_adds_nothing_to_the_users_database(user_db, tmp_path):
    before = user_catalog(user_db)
    setting = user_db.execute("SELECT current_database(), current_setting('search_path')").fetchall()
    dpspin_sql.install(user_db, tmp_path / "store.duckdb", epsilon_budget=2.0)
    populate(user_db)
    plan = dpspin_sql.run_sql(user_db, STATEMENT, tmp_path / "plan.json")
    assert len(plan.to_dict()["atoms"]) == 3 and (tmp_path / "plan.json").exists()
    assert user_catalog(user_db) == before
    assert user_db.execute("SELECT current_database(), current_setting('search_path')").fetchall() == setting
    assert user_db.execute("SELECT * FROM records").fetchall() == [("not yours",)]   # never read, never written
    user_db.close()
    again = duckdb.connect(str(tmp_path / "analytics.duckdb"))   # the file itself holds only the user's tables
    assert [r[0] for r in again.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()] == \
        ["records", "tickets"]
    again.close()
    st = store.connect(tmp_path / "store.duckdb")   # and the store is an ordinary store for the CLI
    assert ledger.status(st).epsilon_spent == pytest.approx(0.25) and ledger.verify(st) == []
    st.close()


def test_install_is_idempotent_and_refuses_another_store(user_db, tmp_path):
    path = tmp_path / "store.duckdb"
    dpspin_sql.install(user_db, path)
    dpspin_sql.install(user_db, path)
    dpspin_sql.install(user_db, str(path))
    assert dpspin_sql.embed.installed(user_db)
    assert user_db.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = 'dpspin'").fetchall() == [(1,)]
    with pytest.raises(BadInput, match="already has a catalog named 'dpspin'"):
        dpspin_sql.install(user_db, tmp_path / "other.duckdb")
    with dpspin_sql.session(user_db) as s:
        assert ledger.status(s).epsilon_total == ledger.DEFAULT_EPSILON_BUDGET
    dpspin_sql.install(user_db, path, epsilon_budget=3.0)   # like dpspin init: changes the total
    with dpspin_sql.session(user_db) as s:
        assert ledger.status(s).epsilon_total == 3.0


def test_install_refuses_a_file_that_is_not_a_store(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    con = duckdb.connect()
    with pytest.raises(BadInput, match="not a DuckDB database"):
        dpspin_sql.install(con, tmp_path / "data.csv")
    with pytest.raises(BadInput, match="directory does not exist"):
        dpspin_sql.install(con, tmp_path / "missing" / "store.duckdb")
    assert not dpspin_sql.embed.installed(con)


def test_installs_and_releases_from_many_threads(user_db, tmp_path):
    path = tmp_path / "store.duckdb"
    errors: list[BaseException] = []

    def run(fn):
        def go():
            try:
                fn()
            except BaseException as exc:   # reported below
                errors.append(exc)
        threads = [threading.Thread(target=go) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run(lambda: dpspin_sql.install(user_db, path, epsilon_budget=1.0))
    assert not errors, errors
    populate(user_db)
    run(lambda: dpspin_sql.run_sql(user_db, STATEMENT))   # 8 × 0.25 against a budget of 1.0
    charged = [e for e in errors if type(e).__name__ == "BudgetExceeded"]
    assert len(charged) == len(errors) == 4, errors
    with dpspin_sql.session(user_db) as s:
        st = ledger.status(s)
        assert len(st.releases) == 4 and st.epsilon_spent == pytest.approx(1.0)
        assert ledger.verify(s) == []


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def test_embedding_doc_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = python_blocks(REPO / "docs" / "EMBEDDING.md")
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__embedding__"}
    for block in blocks:
        exec(compile(block, "docs/EMBEDDING.md", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "charged: 1.5, spent (zcdp): 1.05, ε left: 0.951" in printed and "[('tickets',)]" in printed
    assert (tmp_path / "plan_own.json").exists()
    assert (tmp_path / "plan.json").exists() and (tmp_path / "dpspin_store.duckdb").exists()
