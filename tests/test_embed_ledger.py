"""The ledger on an `install()`ed connection (issue 21 item 6, docs/EMBEDDING.md): the
connection's holder can write the store's tables, the ledger's included, so every change is
detected instead — the next `run_sql` refuses an edited ledger, and with the witness that
`install(..., witness=W)` keeps, a rewind consistent in itself too."""
from __future__ import annotations

import duckdb
import pytest

import dpspin_sql
from dpspin_sql.errors import LedgerTampered
from tests.helpers.core import cli, synthetic_store

STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, privacy_unit_column = user_id, "
             "contribution_bound = 1, mechanism = 'laplace', top = 3) atom_id, DPSPIN_MASS(weight) "
             "FROM assignments JOIN records USING (record_id) WHERE split = 'target' GROUP BY atom_id")


@pytest.fixture
def installed(tmp_path):
    db = synthetic_store(tmp_path / "store.duckdb", epsilon_budget=3.0)
    con = duckdb.connect(str(tmp_path / "mine.duckdb"))
    witness = tmp_path / "elsewhere" / "witness.jsonl"
    witness.parent.mkdir()
    dpspin_sql.install(con, db, witness=witness)
    for i in range(2):
        dpspin_sql.run_sql(con, STATEMENT, str(tmp_path / f"p{i}.json"))
    yield con, db, witness, tmp_path
    from dpspin_sql import anchors

    anchors.unregister(db)
    con.close()


def test_the_holders_sql_reaches_the_ledger_and_the_next_release_refuses_it(installed):
    con, _, _, tmp_path = installed
    con.execute("UPDATE dpspin.budget SET epsilon_total = 100")
    with pytest.raises(LedgerTampered, match="changed outside dpspin"):
        dpspin_sql.run_sql(con, STATEMENT, str(tmp_path / "next.json"))
    assert not (tmp_path / "next.json").exists()


def test_dropping_the_ledger_on_the_connection_is_refused_not_recreated(installed):
    con, db, _, tmp_path = installed
    con.execute("DROP TABLE dpspin.ledger")
    with pytest.raises(LedgerTampered, match="table ledger is missing"):
        dpspin_sql.run_sql(con, STATEMENT, str(tmp_path / "next.json"))
    with pytest.raises(LedgerTampered):
        dpspin_sql.install(con, db)
    assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'dpspin' "
                           "AND table_name = 'ledger'").fetchall()[0][0]


def test_a_consistent_rewind_on_the_connection_is_refused_by_its_witness(installed, capsys):
    con, db, witness, tmp_path = installed
    last = con.execute("SELECT release_id, seq FROM dpspin.ledger ORDER BY seq DESC LIMIT 1").fetchall()[0]
    con.execute("DELETE FROM dpspin.release_plans WHERE release_id = ?", [last[0]])
    con.execute("DELETE FROM dpspin.ledger WHERE release_id = ?", [last[0]])
    con.execute("DELETE FROM dpspin.ledger_events WHERE seq > ?", [last[1] - 1])
    con.execute("UPDATE dpspin.ledger_head SET seq = ?, head_hash = (SELECT row_hash FROM dpspin.ledger_events "
                "WHERE seq = ?)", [last[1] - 1, last[1] - 1])
    with pytest.raises(LedgerTampered, match="witness"):
        dpspin_sql.run_sql(con, STATEMENT, str(tmp_path / "next.json"))
    con.execute("DETACH dpspin")   # let the CLI open the file
    rc, _, err = cli(capsys, "budget", "--db", db, "--verify", "--plan", tmp_path / "p1.json")
    assert rc == 1 and "not in the ledger" in err
    rc, _, err = cli(capsys, "budget", "--db", db, "--verify", "--witness", witness)
    assert rc == 1 and "ledger ends at row" in err
