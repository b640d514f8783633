"""`dpspin release --assignments FILE [--records FILE]`: a release straight from files, with
the store's dictionary and ledger and the same enforcement as a release from the store."""
from __future__ import annotations

import json

import duckdb
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import compute_sketch
from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
from dpspin_sql.source import files
from tests.helpers.core import cli, synthetic_store


@pytest.fixture
def db(tmp_path):
    return synthetic_store(tmp_path / "s.duckdb", m=12, epsilon_budget=20.0)


def export(db, tmp_path, hostile: bool = True):
    """The store's logical rows as Parquet files (records with user_id and split; assignment
    rows), plus hostile rows that the enforcement must drop or bound."""
    con = duckdb.connect(str(db), read_only=True)
    rec, asg = tmp_path / "records.parquet", tmp_path / "assignments.parquet"
    con.execute(f"COPY (SELECT record_id, user_id, split FROM records) TO '{rec}'")
    extra = ("UNION ALL SELECT record_id, 5, 'NaN'::DOUBLE FROM records WHERE split = 'target' "
             "UNION ALL SELECT record_id, 3, 7.5 FROM records WHERE split = 'target' "
             "UNION ALL SELECT record_id, 999, 0.9 FROM records WHERE split = 'target'") if hostile else ""
    con.execute(f"COPY (SELECT record_id, atom_id, weight FROM assignment_rows {extra}) TO '{asg}'")
    con.close()
    return asg, rec


@pytest.mark.parametrize("unit", ["record", "user"])
def test_files_give_the_store_sketch_of_the_same_rows(db, tmp_path, unit):
    asg, rec = export(db, tmp_path)
    con = store.connect(db)
    bounds = Bounds(unit, 3, 1.0 if unit == "user" else None)
    got = DuckDBEngine(source=files(con, asg, rec)).sketch(con, bounds)
    # the same hostile rows put into the store as given: the store query's answer
    con.execute(f"INSERT INTO assignments SELECT record_id, atom_id, weight FROM read_parquet('{asg}') "
                "WHERE (atom_id, weight) NOT IN (SELECT atom_id, weight FROM assignment_rows)")
    want = compute_sketch(con, unit, 3, 1.0 if unit == "user" else None)
    con.close()
    assert got.mass.tolist() == want.mass.tolist() and got.mass.sum() > 0


def test_cli_releases_from_files_and_charges_the_store(db, tmp_path, capsys):
    asg, rec = export(db, tmp_path)
    out = tmp_path / "plan.json"
    rc = cli_rc(capsys, "release", "--db", db, "--unit", "user", "--mechanism", "laplace", "--epsilon", "0.5",
                "--assignments", asg, "--records", rec, "--memory-limit", "1GB", "--progress", "--out", out)
    assert rc == 0
    plan = json.loads(out.read_text())
    assert plan["unit"] == "user"
    con = store.connect(db, read_only=True)
    params = ledger.status(con).releases[-1]["params"]
    assert params["source_assignments"] == f"parquet:{asg.resolve()}"
    assert params["source_records"] == f"parquet:{rec.resolve()}" and params["memory_limit"] == "1GB"
    assert ledger.verify(con) == []
    con.close()


@pytest.mark.parametrize("argv, message", [
    (["--records", "R"], "--records goes with --assignments"),
    (["--assignments", "missing.parquet"], "assignments file not found"),
    (["--memory-limit", "lots"], "--memory-limit must be a size"),
])
def test_cli_refuses_bad_file_options_in_one_line(db, tmp_path, capsys, argv, message):
    rc, _out, err = cli(capsys, "release", "--db", db, "--unit", "user", "--mechanism", "laplace", "--epsilon", "0.5",
                       "--out", tmp_path / "p.json", *[str(tmp_path / a) if a in ("R",) else a for a in argv])
    assert rc != 0 and message in err and len(err.strip().splitlines()) == 1
    con = store.connect(db, read_only=True)
    assert ledger.status(con).releases == []          # nothing charged
    con.close()


def cli_rc(capsys, *argv) -> int:
    rc, _, err = cli(capsys, *argv)
    assert rc == 0, err
    return rc


@pytest.mark.parametrize("unit", ["record", "user"])
@pytest.mark.parametrize("record_type, assignment_ids", [
    ("DOUBLE", "(4611686018427387904::BIGINT + i)"),          # 2^62 + i: 1,000 BIGINT ids equal one DOUBLE
    ("REAL", "(1099511627776::BIGINT + i)"),                   # 2^40 + i against a REAL id
    ("BIGINT", "(['1', '01', '+1', ' 1', '001', '1.0'])[1 + i % 6]"),   # text ids equal to 1 under a cast
])
def test_one_target_record_stays_one_record_whatever_the_id_types(db, tmp_path, unit, record_type, assignment_ids):
    """Many assignment ids that equal one target id after DuckDB's implicit cast are rows of that
    one record: dropping the record moves the exact sketch by at most 1 (in weight units)."""
    con = store.connect(db)
    atom = con.execute("SELECT min(atom_id) FROM atoms").fetchone()[0]
    base = {"DOUBLE": "4611686018427387904", "REAL": "1099511627776", "BIGINT": "1"}[record_type]
    asg, rec, other = tmp_path / "a.parquet", tmp_path / "r.parquet", tmp_path / "r0.parquet"
    raw = duckdb.connect()
    raw.execute(f"COPY (SELECT {assignment_ids} AS record_id, {atom} AS atom_id, 1.0 AS weight, 'u' AS user_id "
                f"FROM range(1000) t(i)) TO '{asg}'")
    raw.execute(f"COPY (SELECT {base}::{record_type} AS record_id, 'u' AS user_id) TO '{rec}'")
    raw.execute(f"COPY (SELECT 7::{record_type} AS record_id, 'u' AS user_id) TO '{other}'")   # no matching rows
    raw.close()
    bounds = Bounds(unit, 3, 1.0 if unit == "user" else None)
    with_it = DuckDBEngine(source=files(con, asg, rec)).sketch(con, bounds).mass
    without = DuckDBEngine(source=files(con, asg, other)).sketch(con, bounds).mass
    con.close()
    assert 0 < abs(int(with_it.sum()) - int(without.sum())) <= 1 << 24
