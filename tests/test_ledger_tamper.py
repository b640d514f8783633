"""Ledger edits by someone who can write the store file (or run SQL on an `install()`ed
connection), one class per case: each is named by `dpspin budget --verify` (exit 1, the row
or the missing part), with the published plans and the witness when it is consistent in
itself, and refuses the next charge; no edit makes a command crash (exit 3) or hang.

Cases are built from one base store (two releases, a witness kept beside it) copied per
case. The table at the end of docs/THREAT_MODEL.md ("An edited ledger is detected") lists
the same classes and the check that catches each.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from dpspin_sql import anchors, ledger, store
from dpspin_sql.release import release
from dpspin_sql.request import ReleaseRequest
from tests.helpers.core import assert_one_line_error, cli, synthetic_store
from tests.helpers.ledger_tamper import rehash

REQUEST = ReleaseRequest(mechanism="laplace", epsilon=0.5, unit="user", L=3)
CHAIN = ("ledger", "ledger_head", "ledger_events", "release_plans", "budget")


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A store with a budget of 3 and two releases of 0.5 (rows: 1 creation, 2 budget, 3 and
    5 releases, 4 and 6 their plan events), its plans in plans/, and a witness of every
    change beside it; plus a second, unrelated store (for swapping ledgers)."""
    d = tmp_path_factory.mktemp("base")
    db = synthetic_store(d / "s.duckdb", epsilon_budget=3.0)
    witness = d / "witness.jsonl"
    (d / "plans").mkdir()
    con = store.connect(db)
    head = ledger.head(con)
    anchors.append_witness(witness, db, head.chain_id, head.seq, head.row_hash)
    anchors.register(db, witness)
    try:
        for i in range(2):
            release(con, REQUEST, out=d / "plans" / f"p{i}.json")
    finally:
        anchors.unregister(db)
        con.close()
    other = synthetic_store(d / "other.duckdb", epsilon_budget=3.0, own_genesis=True)   # another store's own chain
    c2 = store.connect(other)
    release(c2, REQUEST, out=d / "other_plan.json")
    c2.close()
    return d


@pytest.fixture
def case(base, tmp_path, monkeypatch):
    """A copy of the base store at a path of its own, its witness re-pointed at it."""
    d = tmp_path / "case"
    shutil.copytree(base, d)
    db = d / "s.duckdb"
    lines = [json.loads(x) for x in (d / "witness.jsonl").read_text().splitlines()]
    (d / "witness.jsonl").write_text("".join(json.dumps(x | {"store": str(db.resolve())}) + "\n" for x in lines))
    monkeypatch.delenv(anchors.ENV, raising=False)
    return d


def edit(db: Path, *statements: str, then=None) -> None:
    con = duckdb.connect(str(db))
    for q in statements:
        con.execute(q)
    if then is not None:
        then(con)
    con.close()


def chain_state(db: Path) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    have = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    state = {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) if t in have else None
             for t in CHAIN}
    con.close()
    return state


def verify_cli(capsys, db: Path, *anchor_args) -> tuple[int, str, str]:
    return cli(capsys, "budget", "--db", db, "--verify", *anchor_args)


def anchored(d: Path) -> tuple[str, ...]:
    return ("--witness", str(d / "witness.jsonl"), "--plan", str(d / "plans"))


def next_charge_refused(capsys, d: Path, *, with_witness: bool = False, monkeypatch=None) -> str:
    """The next release is refused (exit 1, one line) and changes nothing; returns its line."""
    if with_witness:
        monkeypatch.setenv(anchors.ENV, str(d / "witness.jsonl"))
    db, out = d / "s.duckdb", d / "next.json"
    before = chain_state(db)
    rc, so, err = cli(capsys, "release", "--db", db, "--mechanism", "laplace", "--epsilon", "0.5", "--unit", "user",
                      "-L", "3", "--out", out, "--quiet")
    assert_one_line_error(rc, so, err, code=1)
    assert "store busy" not in err
    assert chain_state(db) == before and not out.exists()
    return err


# --------------------------------------------------------------------------- caught in the store itself

IN_STORE = [
    # (class, edit statements, what --verify names)
    ("delete the last release row and set the head back (the issue's rewind)",
     ["DELETE FROM ledger WHERE seq = 5", "DELETE FROM ledger_events WHERE seq = 6",
      "UPDATE ledger_head SET seq = 4, head_hash = (SELECT row_hash FROM ledger_events WHERE seq = 4)"],
     "stored plan"),
    ("drop the ledger and its head (the issue's DROP TABLE)",
     ["DROP TABLE ledger", "DROP TABLE ledger_head"], "ledger, ledger_head are missing"),
    ("drop the chain's events", ["DROP TABLE ledger_events"], "ledger_events is missing"),
    ("drop the stored plans", ["DROP TABLE release_plans"], "release_plans is missing"),
    ("drop the budget table", ["DROP TABLE budget"], "budget is missing"),
    ("raise the total with UPDATE budget (the issue's edit)", ["UPDATE budget SET epsilon_total = 100"],
     "changed outside dpspin"),
    ("delete the budget row", ["DELETE FROM budget"], "was deleted"),
    ("empty the ledger, head row gone (the issue's 60 s hang)",
     ["DELETE FROM ledger", "DELETE FROM ledger_events", "DELETE FROM release_plans", "DELETE FROM ledger_head"],
     "head row is missing"),
    ("empty every chain table, head reset to the genesis",
     ["DELETE FROM ledger", "DELETE FROM ledger_events", "DELETE FROM release_plans",
      "UPDATE ledger_head SET seq = 0, head_hash = 'sha256:' || repeat('0', 64)"], "it is empty"),
    ("set a release's cost to 0", ["UPDATE ledger SET epsilon = 0 WHERE seq = 3"], "row 3"),
    ("edit a release's serialised measurement",
     ["UPDATE ledger SET measurements = replace(measurements, '\"d_in\": ', '\"d_in\": 1') WHERE seq = 5"],
     "row 5"),
    ("edit a release's plan path", ["UPDATE ledger SET plan_path = 'elsewhere.json' WHERE seq = 3"], "row 3"),
    ("re-order two releases", ["UPDATE ledger SET seq = 8 - seq"], "row"),
    ("delete the first release row", ["DELETE FROM ledger WHERE seq = 3"], "row 4"),
    ("re-insert a deleted row with another time",
     ["CREATE TEMP TABLE keep AS SELECT * FROM ledger WHERE seq = 3", "DELETE FROM ledger WHERE seq = 3",
      "INSERT INTO ledger SELECT * REPLACE (created_at + INTERVAL 1 HOUR AS created_at) FROM keep"], "row 3"),
    ("re-insert a deleted row twice (duplicate row number)",
     ["CREATE TEMP TABLE keep AS SELECT * FROM ledger WHERE seq = 3",
      "INSERT INTO ledger SELECT * REPLACE (release_id || 'x' AS release_id) FROM keep"], "row 3"),
    ("edit a budget event and the budget to match",
     ["UPDATE ledger_events SET epsilon_total = 100 WHERE kind = 'budget'", "UPDATE budget SET epsilon_total = 100"],
     "row 2"),
    ("delete a stored plan", ["DELETE FROM release_plans WHERE release_id = (SELECT release_id FROM ledger "
                              "WHERE seq = 3)"], "stored plan is gone"),
    ("edit a stored plan's masses",
     ["UPDATE release_plans SET plan = replace(plan, '\"noisy_mass\": ', '\"noisy_mass\": 9') "
      "WHERE release_id = (SELECT release_id FROM ledger WHERE seq = 5)"], "stored plan"),
    ("edit a stored plan's masses, keeping it valid JSON",
     ["UPDATE release_plans SET plan = replace(plan, '\"rank\": 1', '\"rank\": 1, \"extra\": 1') "
      "WHERE release_id = (SELECT release_id FROM ledger WHERE seq = 5)"], "stored plan was edited"),
    ("drop the column that says a plan was stored", ["ALTER TABLE ledger DROP COLUMN plan_stored"],
     "column ledger.plan_stored is missing"),
    ("change a ledger column's type", ["ALTER TABLE ledger ALTER epsilon TYPE VARCHAR"],
     "column ledger.epsilon is VARCHAR"),
]


@pytest.mark.parametrize("name, statements, named", IN_STORE, ids=[c[0] for c in IN_STORE])
def test_an_edit_is_named_by_verify_and_refuses_the_next_charge(case, capsys, name, statements, named):
    db = case / "s.duckdb"
    edit(db, *statements)
    rc, out, err = verify_cli(capsys, db)
    assert_one_line_error(rc, out, err, code=1)
    assert named in err, err
    rc, out, err = verify_cli(capsys, db, *anchored(case))
    assert_one_line_error(rc, out, err, code=1)
    next_charge_refused(capsys, case)
    # no other command crashes or hangs on it: each refuses in one line, or (reading) works
    for argv in (["budget", "--db", db], ["budget", "--db", db, "--json"],
                 ["recover", "--db", db, "--out", case / "r.json"],
                 ["init", "--db", db, "--epsilon-budget", "4"]):
        rc, out, err = cli(capsys, *argv)
        assert rc in (0, 1, 2) and "internal error" not in err and len(err.strip().splitlines()) <= 1, (argv, err)
        if argv[0] == "init":
            assert rc == 1, err   # a budget change on a tampered ledger is refused like a charge


def test_a_dropped_ledger_is_never_recreated_by_any_command(case, capsys):
    """The issue: after DROP TABLE ledger, the next command silently recreated an empty
    ledger. Every command that opens the store for writing refuses (exit 1, naming what is
    missing and what the store holds) and the tables stay missing."""
    db = case / "s.duckdb"
    edit(db, "DROP TABLE ledger", "DROP TABLE ledger_head")
    for argv in (["init", "--db", db, "--epsilon-budget", "5"],
                 ["split", "--db", db, "--unit", "user"],
                 ["budget", "--db", db],
                 ["recover", "--db", db, "--out", case / "r.json"],
                 ["card", case / "plans" / "p0.json", "--db", db, "--out", case / "card.html"]):
        rc, out, err = cli(capsys, *argv)
        assert_one_line_error(rc, out, err, code=1)
        assert "ledger" in err and "120 records" in err, err
    assert chain_state(db)["ledger"] is None and chain_state(db)["ledger_head"] is None


# --------------------------------------------------------------------------- consistent in itself: the anchors catch it

def _rewind_thoroughly(con) -> None:
    """Delete the last release with its stored plan and plan event, set the head back."""
    rid = con.execute("SELECT release_id FROM ledger WHERE seq = 5").fetchall()[0][0]
    con.execute("DELETE FROM release_plans WHERE release_id = ?", [rid])
    con.execute("DELETE FROM ledger WHERE seq = 5")
    con.execute("DELETE FROM ledger_events WHERE seq = 6")
    con.execute("UPDATE ledger_head SET seq = 4, head_hash = (SELECT row_hash FROM ledger_events WHERE seq = 4)")


def _rewrite_plan_path_and_plans(con) -> None:
    con.execute("UPDATE ledger SET plan_path = 'elsewhere.json' WHERE seq = 3")
    rehash(con, plans=True)


def _swap_ledgers(other: Path):
    def swap(con) -> None:
        con.execute(f"ATTACH '{other}' AS o (READ_ONLY)")
        for t in CHAIN:
            con.execute(f"DELETE FROM {t}")
            con.execute(f"INSERT INTO {t} SELECT * FROM o.{t}")
        con.execute("DETACH o")
    return swap


def _rehashed_budget_raise(con) -> None:
    con.execute("UPDATE ledger_events SET epsilon_total = 100 WHERE kind = 'budget'")
    con.execute("UPDATE budget SET epsilon_total = 100")
    rehash(con, plans=True)


ANCHORED = [
    ("rewind: delete the last release, its stored plan and plan event, set the head back", _rewind_thoroughly,
     "plan"),
    ("rewrite a row and re-hash everything after it, stored plans included", _rewrite_plan_path_and_plans,
     "plan"),
    ("raise the total in the budget event and re-hash everything after it", _rehashed_budget_raise, "witness"),
]


@pytest.mark.parametrize("name, how, named", ANCHORED, ids=[c[0] for c in ANCHORED])
def test_a_consistent_forgery_is_caught_by_the_plans_and_the_witness(case, capsys, monkeypatch, name, how, named):
    db = case / "s.duckdb"
    edit(db, then=how)
    rc, out, _ = verify_cli(capsys, db)
    assert rc == 0, "a forgery consistent in itself passes the in-store checks: that is what anchors are for"
    rc, out, err = verify_cli(capsys, db, "--plan", case / "plans")
    assert_one_line_error(rc, out, err, code=1)
    assert "plan" in err
    rc, out, err = verify_cli(capsys, db, "--witness", case / "witness.jsonl")
    assert_one_line_error(rc, out, err, code=1)
    assert "witness" in err
    err = next_charge_refused(capsys, case, with_witness=True, monkeypatch=monkeypatch)
    assert "witness" in err


def test_a_swapped_ledger_is_caught_by_the_witness_and_the_plans(case, capsys, monkeypatch):
    db = case / "s.duckdb"
    edit(db, then=_swap_ledgers(case / "other.duckdb"))
    rc, _, _ = verify_cli(capsys, db)
    assert rc == 0   # another store's ledger is a genuine ledger
    rc, out, err = verify_cli(capsys, db, "--witness", case / "witness.jsonl")
    assert_one_line_error(rc, out, err, code=1)
    assert "another ledger" in err
    rc, out, err = verify_cli(capsys, db, "--plan", case / "plans" / "p0.json")
    assert_one_line_error(rc, out, err, code=1)
    assert "not in the ledger" in err
    next_charge_refused(capsys, case, with_witness=True, monkeypatch=monkeypatch)


def test_a_store_file_rolled_back_to_an_older_copy_is_caught_by_the_witness(base, tmp_path, capsys, monkeypatch):
    """Copy the store after its first release, release again, put the old copy back."""
    d = tmp_path / "roll"
    d.mkdir()
    db = synthetic_store(d / "s.duckdb", epsilon_budget=3.0)
    monkeypatch.setenv(anchors.ENV, str(d / "w.jsonl"))
    rc, _, err = cli(capsys, "budget", "--db", db, "--witness", d / "w.jsonl")
    assert rc == 0, err
    con = store.connect(db)
    release(con, REQUEST, out=d / "a.json")
    con.close()
    shutil.copy(db, d / "old.duckdb")
    con = store.connect(db)
    release(con, REQUEST, out=d / "b.json")
    con.close()
    shutil.copy(d / "old.duckdb", db)
    rc, out, err = verify_cli(capsys, db)
    assert_one_line_error(rc, out, err, code=1)   # $DPSPIN_WITNESS is this store's witness
    assert "ledger ends at row" in err
    rc, out, err = verify_cli(capsys, db, "--plan", d / "b.json")
    assert rc == 1 and "not in the ledger" in err


def test_a_forged_plan_file_is_caught_against_the_pinned_text(case, capsys):
    plan = case / "plans" / "p0.json"
    d = json.loads(plan.read_text())
    d["atoms"][0]["noisy_mass"] += 100.0
    plan.write_text(json.dumps(d, indent=2, ensure_ascii=False) + "\n")
    rc, out, err = verify_cli(capsys, case / "s.duckdb", "--plan", plan)
    assert_one_line_error(rc, out, err, code=1)
    assert "plan file was edited" in err


def test_an_untouched_store_verifies_with_every_anchor(case, capsys):
    rc, out, err = verify_cli(capsys, case / "s.duckdb", *anchored(case))
    assert rc == 0 and "ledger verified: 2 release(s)" in out and "witness" in out, err


def test_a_budget_change_is_an_event_of_the_chain(case, capsys):
    db = case / "s.duckdb"
    rc, _, err = cli(capsys, "init", "--db", db, "--epsilon-budget", "4")
    assert rc == 0, err
    rc, out, _ = cli(capsys, "budget", "--db", db, "--json")
    events = json.loads(out)["budget_events"]
    assert [(e["kind"], e["epsilon_total"]) for e in events] == [("budget", 3.0), ("budget", 4.0)]
    rc, _, _ = cli(capsys, "init", "--db", db, "--epsilon-budget", "4")   # the same total: no event
    assert len(json.loads(cli(capsys, "budget", "--db", db, "--json")[1])["budget_events"]) == 2
    # no witness was configured for the change: the witness is behind, never wrong
    rc, out, err = verify_cli(capsys, db, *anchored(case))
    assert rc == 0, err


def test_the_witness_follows_every_charge_and_budget_change(case, capsys, monkeypatch):
    db, w = case / "s.duckdb", case / "witness.jsonl"
    before = len(w.read_text().splitlines())
    monkeypatch.setenv(anchors.ENV, str(w))
    assert cli(capsys, "init", "--db", db, "--epsilon-budget", "4")[0] == 0
    rc, _, err = cli(capsys, "release", "--db", db, "--mechanism", "laplace", "--epsilon", "0.5", "--unit", "user",
                     "-L", "3", "--out", case / "n.json", "--quiet")
    assert rc == 0, err
    lines = [json.loads(x) for x in w.read_text().splitlines()]
    assert len(lines) == before + 2
    con = store.connect(db, read_only=True)
    assert lines[-1]["seq"] == ledger.head(con).seq and lines[-1]["hash"] == ledger.head(con).row_hash
    con.close()


@pytest.mark.parametrize("content", ["not json\n", '{"store": "x"}\n'])
def test_a_damaged_witness_is_bad_input_not_a_crash(case, capsys, content):
    w = case / "witness.jsonl"
    w.write_text(content + w.read_text())
    rc, out, err = verify_cli(capsys, case / "s.duckdb", "--witness", w)
    assert_one_line_error(rc, out, err, code=2)
    assert "line 1" in err


def test_a_witness_cut_short_mid_line_is_read_without_its_last_line(case, capsys):
    w = case / "witness.jsonl"
    w.write_text(w.read_text() + '{"store": "/x", "cha')
    rc, _, err = verify_cli(capsys, case / "s.duckdb", "--witness", w)
    assert rc == 0, err


def test_verify_json_lists_every_finding(case, capsys):
    db = case / "s.duckdb"
    edit(db, "UPDATE budget SET epsilon_total = 100", "UPDATE ledger SET epsilon = 0 WHERE seq = 3")
    rc, out, _ = cli(capsys, "budget", "--db", db, "--verify", "--json")
    report = json.loads(out)
    assert rc == 1 and not report["ok"] and len(report["findings"]) >= 2


# --------------------------------------------------------------------------- stores of earlier versions

def _earlier_store(tmp_path: Path, version: str, plan: Path | None = None) -> Path:
    """A store as an earlier version wrote it, with one charge of genuine measurements:
    'unevented' (a hash chain, no ledger events or stored plans) or 'unchained' (no chain).
    With `plan` ('unevented' only), that charge's plan file, as that version wrote it: its
    `ledger_chain` is the row's hash of that version (hashed without plan_stored)."""
    db = tmp_path / f"{version}.duckdb"
    con = synthetic_store(db, epsilon_budget=2.0, close=False)
    release(con, REQUEST, out=plan)
    con.close()
    con = duckdb.connect(str(db))
    r = con.execute("SELECT release_id, dataset, created_at, mechanism, epsilon, delta, params, measurements, "
                    "plan_path FROM ledger").fetchall()[0]
    old_hash = ledger._Row(1, ledger.GENESIS, *r[:6], r[6] or "", r[7] or "", r[8]).digest()
    con.execute("UPDATE ledger SET seq = 1, prev_hash = ?, row_hash = ?", [ledger.GENESIS, old_hash])
    con.execute("ALTER TABLE ledger DROP COLUMN plan_stored")
    con.execute("DROP TABLE ledger_events")
    con.execute("DROP TABLE release_plans")
    con.execute("UPDATE ledger_head SET seq = 1, head_hash = ?", [old_hash])
    if plan is not None:
        d = json.loads(plan.read_text())
        plan.write_text(json.dumps(d | {"ledger_chain": old_hash}, indent=2, ensure_ascii=False) + "\n")
    if version == "unchained":
        con.execute("DROP TABLE ledger_head")
        for c in ("seq", "prev_hash", "row_hash"):
            con.execute(f"ALTER TABLE ledger DROP COLUMN {c}")
    con.close()
    return db


@pytest.mark.parametrize("version", ["unevented", "unchained"])
def test_a_store_of_an_earlier_version_is_brought_up_to_date_once(tmp_path, capsys, version):
    db = _earlier_store(tmp_path, version)
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")   # read-only command: migrates once
    assert rc == 0 and "1 release(s)" in out, err
    con = store.connect(db)
    kinds = [k for (k,) in con.execute("SELECT kind FROM ledger_events ORDER BY seq").fetchall()]
    assert kinds == ["migrated"] and ledger.verify(con) == []
    release(con, REQUEST, out=tmp_path / "p.json")
    assert ledger.verify(con) == []
    con.close()


def test_an_earlier_versions_plan_is_anchored_by_its_chain_hash_alone(tmp_path, capsys):
    """A release charged before the chain pinned plan texts has no plan event: the only
    anchor its published plan gives is its `ledger_chain`. Rewrite that release's row and
    re-hash everything after it (consistent in the store, no pin to contradict): the plan's
    chain hash is what names the forgery."""
    plan = tmp_path / "p.json"
    db = _earlier_store(tmp_path, "unevented", plan=plan)
    rc, out, err = verify_cli(capsys, db, "--plan", plan)          # migrates once; the plan is the row's
    assert rc == 0 and "1 release(s)" in out, err
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM ledger_events WHERE kind = 'plan'").fetchall() == [(0,)]
    con.close()
    edit(db, "UPDATE ledger SET plan_path = 'elsewhere.json'", then=rehash)
    rc, out, err = verify_cli(capsys, db)
    assert rc == 0, "the forgery is consistent in the store: only an anchor can catch it"
    rc, out, err = verify_cli(capsys, db, "--plan", plan)
    assert_one_line_error(rc, out, err, code=1)
    assert "does not have the plan's chain hash" in err and str(plan) in err


# ------------------------------------------------------------------ guards (the fast loop)

def _line(seq: int, hash_: str, chain: str = "sha256:chain", n: int = 1) -> anchors.WitnessLine:
    return anchors.WitnessLine(n, "/s.duckdb", chain, seq, hash_)


@pytest.mark.guard
def test_the_witness_names_a_rewritten_row_and_a_rewound_end():
    """A witness line whose row now has another hash (the ledger rewritten and re-hashed), and
    one past the ledger's end (its last releases deleted), are findings; the lines a ledger
    holds are not."""
    hashes = {1: "h1", 2: "h2", 3: "h3"}
    check = lambda *lines: anchors.check_witness(lines, "/s.duckdb", "sha256:chain", hashes, "w.jsonl")
    assert check(_line(1, "h1"), _line(3, "h3", n=2)) == []
    rewritten = check(_line(2, "forged"))
    assert len(rewritten) == 1 and "rewritten" in rewritten[0][1]
    rewound = check(_line(3, "h3"), _line(5, "h5", n=2))
    assert len(rewound) == 1 and "ends at row 3" in rewound[0][1]
