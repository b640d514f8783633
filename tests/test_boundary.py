"""The privacy boundary around the mechanisms, attacked as a careless user and a hostile
analyst would (docs/THREAT_MODEL.md): the ledger holds across threads, connections and
processes and shows any edit; output paths cannot destroy a store or another plan; --db
must be a store; plans are validated before use; loading is strict; a release with
nothing to release is refused before charging."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.errors import BudgetExceeded, LedgerTampered
from dpspin_sql.release import release
from dpspin_sql.request import ReleaseRequest
from tests.helpers.core import (
    assert_one_line_error,
    cli,
    install_atoms,
    new_store,
    put_records,
    read_plan,
    snapshot,
    synthetic_store,
)

REPO = Path(__file__).resolve().parents[1]
EPS = 0.3                       # three of these fit a budget of 1.0, a fourth does not
REQUEST = ReleaseRequest(mechanism="laplace", epsilon=EPS, unit="user", L=3)


def rel_args(db, out, *extra):
    return ["release", "--db", db, "--mechanism", "laplace", "--epsilon", EPS, "--unit", "user", "-L", 3,
            "--out", out, "--quiet", *extra]


# ============================================================================ the ledger across threads and processes

def test_sixteen_threads_on_separate_connections_spend_exactly_the_budget(tmp_path):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def worker(i: int) -> None:
        con = store.connect(db)
        try:
            start.wait()
            release(con, REQUEST, out=tmp_path / f"p{i}.json")
            result = "ok"
        except BudgetExceeded:
            result = "refused"
        except Exception as exc:  # anything else is a failure of the test
            result = f"error {type(exc).__name__}: {exc}"
        finally:
            con.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] * 3 + ["refused"] * 13, outcomes
    con = store.connect(db, read_only=True)
    st = ledger.status(con)
    plans = sorted(p.name for p in tmp_path.glob("p*.json") if not p.name.endswith(".dictionary.json"))
    assert len(st.releases) == 3 == len(plans)
    assert sorted(Path(r["plan_path"]).name for r in st.releases) == plans
    assert st.epsilon_spent <= 1.0 and ledger.verify(con) == []
    con.close()


@pytest.mark.slow
def test_sixteen_processes_spend_exactly_the_budget_and_losers_wait(tmp_path):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    env = dict(os.environ, DPSPIN_LOCK_TIMEOUT="300")
    code = "import sys; from dpspin_sql.cli import run; sys.exit(run(sys.argv[1:]))"
    procs = [subprocess.Popen([sys.executable, "-c", code, *map(str, rel_args(db, tmp_path / f"p{i}.json"))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
             for i in range(16)]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    codes = sorted(rc for rc, _ in results)
    assert codes == [0] * 3 + [1] * 13, results          # never exit 2 ("bad input") for a busy store
    assert all("refused" in err for rc, err in results if rc == 1)
    con = store.connect(db, read_only=True)
    st = ledger.status(con)
    plans = [p for p in tmp_path.glob("p*.json") if not p.name.endswith(".dictionary.json")]
    assert len(st.releases) == 3 == len(plans) and ledger.verify(con) == []
    con.close()


def test_a_store_held_by_another_process_is_busy_after_the_timeout(tmp_path):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(60)", str(db)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        env = dict(os.environ, DPSPIN_LOCK_TIMEOUT="1")
        code = "import sys; from dpspin_sql.cli import run; sys.exit(run(sys.argv[1:]))"
        done = subprocess.run([sys.executable, "-c", code, *map(str, rel_args(db, tmp_path / "p.json"))],
                              capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 1 and "store busy" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p.json").exists()


def test_connect_is_safe_from_many_threads_at_once(tmp_path):
    path = tmp_path / "fresh.duckdb"
    store.connect(path, create=True).close()
    errors: list[str] = []
    start = threading.Barrier(8)

    def worker() -> None:
        try:
            start.wait()
            store.connect(path).close()
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# ============================================================================ a tamper-evident ledger

def _two_releases(tmp_path):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    con = store.connect(db)
    plans = [release(con, REQUEST, out=tmp_path / f"p{i}.json") for i in range(2)]
    con.close()
    return db, plans


def test_plans_carry_their_release_id_and_chain_hash(tmp_path, capsys):
    db, plans = _two_releases(tmp_path)
    con = store.connect(db, read_only=True)
    rows = dict(con.execute("SELECT release_id, row_hash FROM ledger").fetchall())
    con.close()
    for i, plan in enumerate(plans):
        on_disk = read_plan(tmp_path / f"p{i}.json")
        assert on_disk["release_id"] == plan.release_id and on_disk["ledger_chain"] == rows[plan.release_id]
    rc, out, _ = cli(capsys, "budget", "--db", db, "--verify")
    assert rc == 0 and "verified: 2 release(s)" in out


# the chain's rows 1 and 2 are the store's creation and its budget; the releases are rows 3
# and 5, each followed by the event that pins its stored plan (rows 4 and 6)
@pytest.mark.parametrize("tamper, named", [
    ("UPDATE ledger SET epsilon = 0 WHERE seq = 3", "row 3"),
    ("UPDATE ledger SET params = '{}' WHERE seq = 5", "row 5"),
    ("DELETE FROM ledger WHERE seq = 3", "row 4"),
    ("DELETE FROM ledger WHERE seq = 5", "row 6"),
    ("UPDATE ledger SET seq = 8 - seq", "row"),
])
def test_an_edited_ledger_is_caught_by_verify_and_refuses_the_next_charge(tmp_path, capsys, tamper, named):
    db, _ = _two_releases(tmp_path)
    con = duckdb.connect(str(db))
    con.execute(tamper)
    con.close()
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert_one_line_error(rc, out, err, code=1)
    assert "ledger check failed" in err and named in err
    before = snapshot(db)
    rc, out, err = cli(capsys, *rel_args(db, tmp_path / "next.json"))
    assert_one_line_error(rc, out, err, code=1)
    assert "ledger does not check" in err or "measurements say otherwise" in err
    assert snapshot(db) == before and not (tmp_path / "next.json").exists()


def _rehash(con) -> None:
    """What an attacker with write access does after editing a row: rebuild a consistent chain."""
    from tests.helpers.ledger_tamper import rehash

    rehash(con)


def test_a_consistently_rehashed_cost_edit_is_still_caught_by_the_maps(tmp_path, capsys):
    db, _ = _two_releases(tmp_path)
    con = duckdb.connect(str(db))
    con.execute("UPDATE ledger SET epsilon = 0 WHERE seq = 3")
    _rehash(con)
    con.close()
    rc, _, err = cli(capsys, "budget", "--db", db, "--verify")
    assert rc == 1 and "row 3" in err and "maps give" in err
    c = store.connect(db)
    with pytest.raises(LedgerTampered):
        release(c, REQUEST, out=tmp_path / "next.json")
    c.close()


def test_a_rehashed_d_in_below_the_sensitivity_is_caught(tmp_path, capsys):
    """Charging a measurement at a smaller d_in would under-charge: verify rebuilds d_in
    from the row's unit, adjacency and B (docs/DESIGN.md §2) and names the row."""
    import opendp.prelude as dp

    db, _ = _two_releases(tmp_path)
    con = duckdb.connect(str(db))
    (text,) = con.execute("SELECT measurements FROM ledger WHERE seq = 5").fetchall()[0]
    records = json.loads(text)
    dp.enable_features("contrib")
    meas = dp.deserialize(records[0]["measurement"])
    records[0]["d_in"] = records[0]["d_in"] // 2
    cost = float(meas.map(records[0]["d_in"]))
    con.execute("UPDATE ledger SET measurements = ?, epsilon = ? WHERE seq = 5", [json.dumps(records), cost])
    _rehash(con)
    con.close()
    rc, _, err = cli(capsys, "budget", "--db", db, "--verify")
    assert rc == 1 and "row 5" in err   # the first problem found; the d_in's is among them
    rc, out, _ = cli(capsys, "budget", "--db", db, "--verify", "--json")
    assert rc == 1 and any("sensitivity table" in f["problem"] for f in json.loads(out)["findings"]), out


# ============================================================================ outputs that must not destroy anything

def test_out_equal_to_the_store_or_its_wal_is_refused(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    before = snapshot(db)
    for target in (db, Path(f"{db}.wal")):
        for command in (rel_args(db, target),
                        ["sql", "--db", db, "--out", target, "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.3, "
                         "mechanism = 'laplace', top = 3) atom_id, DPSPIN_MASS(weight) FROM assignments GROUP BY atom_id"]):
            rc, out, err = cli(capsys, *command)
            assert_one_line_error(rc, out, err)
            assert "store" in err
    assert snapshot(db) == before
    rc, out, err = cli(capsys, "budget", "--db", db, "--json")
    assert json.loads(out)["epsilon_spent"] == 0


def test_out_equal_to_another_store_or_a_link_to_this_one_is_refused(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    other = synthetic_store(tmp_path / "other.duckdb", epsilon_budget=1.0)
    link = tmp_path / "innocent.json"
    link.symlink_to(db)
    for target in (other, link):
        before = snapshot(db), snapshot(other)
        rc, out, err = cli(capsys, *rel_args(db, target))
        assert_one_line_error(rc, out, err)
        assert (snapshot(db), snapshot(other)) == before


def test_a_plan_never_overwrites_another_plans_dictionary_or_an_existing_plan(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    first = tmp_path / "first.json"
    assert cli(capsys, *rel_args(db, first))[0] == 0
    sidecar = tmp_path / "first.dictionary.json"
    saved = first.read_bytes(), sidecar.read_bytes()
    rc, out, err = cli(capsys, *rel_args(db, sidecar))
    assert_one_line_error(rc, out, err)
    assert "reserved" in err
    rc, out, err = cli(capsys, *rel_args(db, first))
    assert_one_line_error(rc, out, err)
    assert "--force" in err
    assert (first.read_bytes(), sidecar.read_bytes()) == saved
    assert cli(capsys, *rel_args(db, first, "--force"))[0] == 0      # a plan may replace a plan
    assert first.read_bytes() != saved[0]
    rc, _, _ = cli(capsys, "verify", first, _write(tmp_path / "s.txt", "Nothing here."))
    assert rc in (0, 1)                                             # the new plan and its dictionary agree


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_summarize_outputs_cannot_overwrite_the_plan_or_each_other(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    plan = tmp_path / "plan.json"
    assert cli(capsys, *rel_args(db, plan))[0] == 0
    saved = plan.read_bytes()
    for extra in (["--out", plan], ["--attempts-out", plan], ["--out", tmp_path / "x.txt", "--attempts-out",
                                                              tmp_path / "x.txt"],
                  ["--out", tmp_path / "plan.dictionary.json"], ["--out", db]):
        rc, out, err = cli(capsys, "summarize", plan, *extra)
        assert_one_line_error(rc, out, err)
    assert plan.read_bytes() == saved
    assert not (tmp_path / "x.txt").exists()


def test_sql_out_cannot_overwrite_its_own_statement_file(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    query = _write(tmp_path / "q.sql", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.3, mechanism = 'laplace', "
                                       "top = 3) atom_id, DPSPIN_MASS(weight) FROM assignments GROUP BY atom_id")
    saved = query.read_text()
    rc, out, err = cli(capsys, "sql", "--db", db, "-f", query, "--out", query)
    assert_one_line_error(rc, out, err)
    assert query.read_text() == saved


def test_stale_temporaries_of_a_killed_write_are_removed(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    stale = tmp_path / ".plan.json.abcd1234"
    stale.write_text("half a plan")
    assert cli(capsys, *rel_args(db, tmp_path / "plan.json"))[0] == 0
    assert not stale.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".plan")]


# ============================================================================ --db must be a store

@pytest.mark.parametrize("content", ["record_id,text\n1,hello\n", '{"record_id": 1, "text": "x"}\n', ""])
def test_db_pointing_at_another_file_is_refused_and_left_alone(tmp_path, capsys, content):
    fake = _write(tmp_path / "data.csv", content)
    src = _write(tmp_path / "in.csv", "record_id,text\n1,hello\n")
    for command in (["init", "--db", fake], ["load", "--db", fake, "--input", src],
                    ["budget", "--db", fake], rel_args(fake, tmp_path / "p.json")):
        rc, out, err = cli(capsys, *command)
        assert_one_line_error(rc, out, err)
        assert "not a DuckDB database" in err or "empty file" in err
    assert fake.read_text() == content


def test_demo_refuses_an_existing_store(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    before = snapshot(db)
    rc, out, err = cli(capsys, "demo", "--db", db)
    assert_one_line_error(rc, out, err)
    assert snapshot(db) == before


# ============================================================================ plans are validated before use

def _released(tmp_path, capsys) -> Path:
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    plan = tmp_path / "plan.json"
    assert cli(capsys, *rel_args(db, plan))[0] == 0
    return plan


def _tamper(plan: Path, change) -> None:
    d = json.loads(plan.read_text())
    change(d)
    plan.write_text(json.dumps(d, allow_nan=True))


def _extra_atom(d):
    d["L"] = len(d["atoms"]) - 1


def _unknown_atom(d):
    d["atoms"][0]["atom_id"] = 999
    d["atoms"][0]["label"] = "a theme nobody released"


TAMPERINGS = {
    "more atoms than L": _extra_atom,
    "an atom not in the dictionary": _unknown_atom,
    "a NaN mass": lambda d: d["atoms"][0].__setitem__("noisy_mass", math.nan),
    "an infinite display mass": lambda d: d["atoms"][1].__setitem__("display_mass", math.inf),
    "ranks not 1..n": lambda d: d["atoms"][0].__setitem__("rank", 2),
    "a duplicated atom": lambda d: d["atoms"].append(dict(d["atoms"][0], rank=len(d["atoms"]) + 1)),
    "another dictionary hash": lambda d: d.__setitem__("dictionary", "sha256:" + "1" * 64),
    "a relabelled atom": lambda d: d["atoms"][0].__setitem__("label", "a label of my choice"),
    "a broken interval": lambda d: d["atoms"][0].__setitem__("interval", [5.0, 1.0]),
}


@pytest.mark.parametrize("how", list(TAMPERINGS))
def test_a_tampered_plan_is_refused_by_summarize_and_verify(tmp_path, capsys, how):
    plan = _released(tmp_path, capsys)
    _tamper(plan, TAMPERINGS[how])
    summary = _write(tmp_path / "s.txt", "The plan lists three themes.")
    rc, out, err = cli(capsys, "summarize", plan, "--out", tmp_path / "out.txt")
    assert_one_line_error(rc, out, err)
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "verifier_attempts.json").exists()
    rc, out, err = cli(capsys, "verify", plan, summary)
    assert_one_line_error(rc, out, err)


def test_a_tampered_dictionary_beside_the_plan_is_refused(tmp_path, capsys):
    plan = _released(tmp_path, capsys)
    sidecar = tmp_path / "plan.dictionary.json"
    d = json.loads(sidecar.read_text())
    d["atoms"] = d["atoms"][1:]
    sidecar.write_text(json.dumps(d))
    rc, out, err = cli(capsys, "verify", plan, _write(tmp_path / "s.txt", "x"))
    assert_one_line_error(rc, out, err)


# ============================================================================ strict loading

@pytest.mark.parametrize("body, line", [
    ('record_id,text\n1,"hello\n2,world\n3,ok\n', None),
    ("record_id,text\n1,hello,extra\n2,world\n", 2),
    ("record_id,text\n" + "".join(f"{i},text {i}\n" for i in range(30000)) + '30000,"unterminated\n', None),
])
def test_a_malformed_csv_is_an_error_with_its_line(tmp_path, capsys, body, line):
    db = tmp_path / "s.duckdb"
    new_store(db, epsilon_budget=1.0).close()
    before = snapshot(db)
    src = _write(tmp_path / "in.csv", body)
    rc, out, err = cli(capsys, "load", "--db", db, "--input", src)
    assert_one_line_error(rc, out, err)
    assert "line" in err
    if line is not None:
        assert f"line {line}" in err
    assert snapshot(db) == before
    assert "hello" not in err and "30000" not in err      # never the row's content


@pytest.mark.parametrize("column, values, pa_type", [
    ("record_id", [[1, 2], [3]], pa.list_(pa.int64())),
    ("record_id", [{"a": 1}, {"a": 2}], pa.struct([("a", pa.int64())])),
    ("text", [1, 2], pa.int64()),
    ("text", [1.5, 2.5], pa.float64()),
    ("text", [b"\x00\x01", b"\x02"], pa.binary()),
])
def test_parquet_ids_and_text_must_be_scalar_text(tmp_path, capsys, column, values, pa_type):
    db = tmp_path / "s.duckdb"
    new_store(db, epsilon_budget=1.0).close()
    cols = {"record_id": pa.array(["r1", "r2"]), "text": pa.array(["a", "b"])}
    cols[column] = pa.array(values, type=pa_type)
    pq.write_table(pa.table(cols), tmp_path / "in.parquet")
    before = snapshot(db)
    rc, out, err = cli(capsys, "load", "--db", db, "--input", tmp_path / "in.parquet")
    assert_one_line_error(rc, out, err)
    assert column in err
    assert snapshot(db) == before


def test_the_load_line_reports_loaded_and_rejected(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    assert cli(capsys, "init", "--db", db)[0] == 0   # load never creates a store (issue 23)
    src = _write(tmp_path / "in.csv", 'record_id,text\n1,"a, quoted text"\n2,"say ""hi"""\n')
    rc, out, err = cli(capsys, "load", "--db", db, "--input", src)
    assert rc == 0, err
    assert "loaded 2 records" in out and "0 rejected" in out


# ============================================================================ nothing to release

def test_release_before_assign_is_refused_before_charging(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    con = new_store(db, epsilon_budget=1.0)
    install_atoms(con, range(5))
    put_records(con, [(f"r{i}", f"u{i}", "target") for i in range(10)])
    con.close()
    before = snapshot(db)
    rc, out, err = cli(capsys, *rel_args(db, tmp_path / "p.json"))
    assert_one_line_error(rc, out, err)
    assert "dpspin assign" in err
    assert snapshot(db) == before and not (tmp_path / "p.json").exists()


def test_release_without_a_dictionary_names_the_atoms_step(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    con = new_store(db, epsilon_budget=1.0)
    put_records(con, [(f"r{i}", f"u{i}", "target") for i in range(10)])
    con.close()
    rc, out, err = cli(capsys, *rel_args(db, tmp_path / "p.json"))
    assert_one_line_error(rc, out, err)
    assert "dpspin atoms" in err
