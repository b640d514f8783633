"""The store's accountant (issue 26): basic or zcdp, chosen before the first release as an
event of the chain; zcdp admits a release while basic composition fits in (ε, δ/2) or the
releases' composed zCDP ρ converts within ε at δ/2 (docs/DESIGN.md §4).

What is checked: the issue's example (ε = 6, δ = 1e-5, Gaussian releases at ε = 1,
δ = 1e-6: basic admits exactly 6, zcdp at least 15 and refuses the one that would cross);
that the accountant never admits a history the formulas do not allow
(tests/helpers/composition.py computes it without OpenDP or the code under test); the
accountant as a chain event (refused after a release, tampering caught); `budget`,
`budget --verify` and the card; races across threads and processes."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from dpspin_sql import accountant, ledger, store
from dpspin_sql.errors import BudgetExceeded, LedgerTampered, Refusal
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.release import release
from dpspin_sql.request import ReleaseRequest
from tests.helpers import composition as indep
from tests.helpers.core import assert_one_line_error, cli, snapshot, synthetic_store
from tests.helpers.ledger_tamper import rehash

REPO = Path(__file__).resolve().parents[1]
M = 12   # synthetic_store's dictionary size
GAUSS = ReleaseRequest(mechanism="gaussian", epsilon=1.0, delta=1e-6, unit="user", B=1.0, L=3)
KINDS = {
    "gaussian-1": GAUSS,
    "gaussian-0.3": ReleaseRequest(mechanism="gaussian", epsilon=0.3, delta=1e-7, unit="user", B=1.0, L=3),
    "gaussian-2": ReleaseRequest(mechanism="gaussian", epsilon=2.0, delta=1e-6, unit="record", L=3),
    "laplace-1": ReleaseRequest(mechanism="laplace", epsilon=1.0, unit="user", B=1.0, L=3),
    "laplace-0.1": ReleaseRequest(mechanism="laplace", epsilon=0.1, unit="record", adjacency="replace", L=3),
    "topL-1": ReleaseRequest(mechanism="private_topL", epsilon=1.0, delta=1e-6, unit="user", B=1.0, L=3),
    "topL-0.4": ReleaseRequest(mechanism="private_topL", epsilon=0.4, delta=1e-6, unit="record", L=2,
                               selection_fraction=0.25),
}


@pytest.fixture(scope="module")
def mechs():
    return {k: make_mechanism(r, M) for k, r in KINDS.items()}


def gauss_args(db, out):
    return ["release", "--db", db, "--mechanism", "gaussian", "--epsilon", 1, "--delta", 1e-6, "--unit", "user",
            "-B", 1, "-L", 3, "--out", out, "--quiet"]


def charge_like(con, mech, params: dict | None = None):
    """What a release of `mech` charges (its cost and measurement records), without the
    sketch and plan."""
    eps, delta = mech.cost
    return ledger.charge(con, eps, delta, mechanism=mech.request.mechanism,
                         params=params if params is not None else mech.request.public_params() | {"m": M},
                         measurements=mech.audit_records(), plan_path=None)


def fill(con, mech, params=None, limit=200) -> int:
    """Charge releases like `mech` until one is refused; how many were admitted."""
    for n in range(limit):
        try:
            charge_like(con, mech, params)
        except BudgetExceeded:
            return n
    raise AssertionError("never refused")


# ------------------------------------------------------------------------------ the example

@pytest.mark.parametrize("name", ["basic", "zcdp"])
def test_gaussian_releases_against_a_budget_of_6_and_1e5(tmp_path, capsys, mechs, name):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=6.0, delta_budget=1e-5, accountant=name)
    rc, _, err = cli(capsys, *gauss_args(db, tmp_path / "first.json"))       # a real release, then its like
    assert rc == 0, err
    con = store.connect(db)
    row = ledger.status(con).releases[0]
    mech = mechs["gaussian-1"]
    assert ledger.measurements(con, row["release_id"])[0]["measurement"] == mech.audit_records()[0]["measurement"]
    admitted = 1 + fill(con, mech, row["params"])
    rows = indep.stored_rows(con)
    con.close()
    if name == "basic":
        assert admitted == 6
        assert indep.basic_admits(rows, 6.0, 1e-5) and not indep.basic_admits(rows + rows[:1], 6.0, 1e-5)
    else:
        assert admitted >= 15
        ok, eps = indep.zcdp_admits(rows, 6.0, 1e-5)
        assert ok and eps is not None and eps <= 6                       # within what the formulas allow
        crossing, eps_next = indep.zcdp_admits(rows + rows[:1], 6.0, 1e-5)
        assert not crossing and eps_next is not None and eps_next > 6     # the refused one would cross
    # the one that would cross, through the command: exit 1, nothing written or charged
    before = snapshot(db)
    rc, out, err = cli(capsys, *gauss_args(db, tmp_path / "next.json"))
    assert_one_line_error(rc, out, err, code=1)
    assert "refused" in err and (name == "basic" or "zcdp accountant" in err)
    assert not (tmp_path / "next.json").exists() and snapshot(db) == before
    # budget --verify rebuilds the composition and passes; budget and the card show the accountant
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert rc == 0 and f"{admitted} release(s)" in out and f"accountant {name}" in out, err
    rc, out, err = cli(capsys, "budget", "--db", db)
    assert rc == 0 and f"accountant {name}" in out and (name == "basic" or "ρ=" in out), err
    rc, out, err = cli(capsys, "budget", "--db", db, "--json")
    state = json.loads(out)["accountant"]
    assert state["name"] == name and state["releases"] == admitted
    if name == "zcdp":
        z = state["zcdp"]
        assert z["fits"] and z["rho"] <= z["rho_limit"] and z["epsilon"] <= 6 and z["delta"] == 5e-6
        assert state["path"] == "zcdp" and state["epsilon_spent"] == z["epsilon"]
    rc, _, err = cli(capsys, "card", tmp_path / "first.json", "--out", tmp_path / "card.html", "--db", db)
    assert rc == 0, err
    html = (tmp_path / "card.html").read_text(encoding="utf-8")
    assert f"Accountant: <strong>{name}</strong>" in html and f"{admitted} release(s)" in html
    # a tampered row fails budget --verify (exit 1)
    con = duckdb.connect(str(db))
    con.execute("UPDATE ledger SET epsilon = 0.5 WHERE seq = (SELECT max(seq) FROM ledger)")
    con.close()
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert_one_line_error(rc, out, err, code=1)
    assert "content does not match its hash" in err


def test_a_rehashed_rho_is_caught_by_the_maps(tmp_path, capsys, mechs):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=6.0)
    con = store.connect(db)
    for _ in range(3):
        charge_like(con, mechs["gaussian-1"])
    con.close()
    con = duckdb.connect(str(db))
    (text,) = con.execute("SELECT measurements FROM ledger ORDER BY seq LIMIT 1").fetchall()[0]
    records = json.loads(text)
    records[0][accountant.RHO_KEY] = records[0][accountant.RHO_KEY] / 10      # a cheaper release, consistently hashed
    con.execute("UPDATE ledger SET measurements = ? WHERE seq = (SELECT min(seq) FROM ledger)", [json.dumps(records)])
    rehash(con)
    con.close()
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert_one_line_error(rc, out, err, code=1)
    assert "zCDP" in err and "ρ=" in err
    con = store.connect(db)
    with pytest.raises(LedgerTampered):
        charge_like(con, mechs["gaussian-1"])
    con.close()


# ------------------------------------------------------------------------------ against the formulas

def test_the_accountant_never_admits_what_the_formulas_do_not_allow(mechs):
    """Random histories of every kind of release, against random budgets: what zcdp and
    basic admit, the independent computation allows; and (power) where the formulas
    allow, the accountant admits too unless the formulas' ε is within 1e-9 of the total."""
    rng = random.Random(26)
    kinds = list(mechs)
    rows = {k: (*mechs[k].cost, mechs[k].audit_records()) for k in kinds}
    releases = {k: accountant.release_of(*mechs[k].cost, mechs[k].audit_records()) for k in kinds}
    disagreements = agreements = 0
    for _ in range(60):
        E = rng.choice([0.5, 1.0, 3.0, 6.0, 12.0])
        D = rng.choice([0.0, 1e-7, 1e-6, 1e-5, 1e-3])
        history = [rng.choice(kinds) for _ in range(rng.randint(1, 40))]
        if rng.random() < 0.3:
            history = [history[0]] * len(history)
        z = accountant.compose("zcdp", E, D, [releases[k] for k in history])
        b = accountant.compose("basic", E, D, [releases[k] for k in history])
        ok_z, eps_z = indep.zcdp_admits([rows[k] for k in history], E, D)
        ok_b = indep.basic_admits([rows[k] for k in history], E, D)
        assert not (b.fits and not ok_b), (history, E, D)
        assert not (z.fits and not ok_z), (history, E, D, z, eps_z)
        if ok_z and not z.fits:
            assert eps_z is not None and abs(eps_z - Decimal(E)) < Decimal("1e-9") * Decimal(E), (history, E, D)
            disagreements += 1
        else:
            agreements += 1
        if z.rho is not None and eps_z is not None and D > 0:
            # OpenDP's ε of the composed ρ is never below what the formula gives
            assert Decimal(z.zcdp_epsilon) >= eps_z - Decimal("1e-12"), (z, eps_z)
        assert b.fits == ok_b
    assert agreements >= 57


def test_zcdp_admits_what_basic_admits_for_pure_releases_and_more_when_they_are_small(mechs):
    lap = accountant.release_of(*mechs["laplace-0.1"].cost, mechs["laplace-0.1"].audit_records())
    big = accountant.release_of(*mechs["laplace-1"].cost, mechs["laplace-1"].audit_records())

    def count(name, rel, E, D):
        n = 0
        while accountant.compose(name, E, D, [rel] * (n + 1)).fits:
            n += 1
        return n

    assert count("basic", big, 6.0, 1e-5) == count("zcdp", big, 6.0, 1e-5) == 6      # pure ε sums (δ 0)
    assert count("zcdp", big, 6.0, 0.0) == 6                                             # even at δ = 0
    small_basic, small_zcdp = count("basic", lap, 3.0, 1e-5), count("zcdp", lap, 3.0, 1e-5)
    assert small_basic == 30 and small_zcdp > small_basic                               # ρ = ε²/2 where tighter
    rows = [(*mechs["laplace-0.1"].cost, mechs["laplace-0.1"].audit_records())]
    assert indep.zcdp_admits(rows * small_zcdp, 3.0, 1e-5)[0]
    assert not indep.zcdp_admits(rows * (small_zcdp + 1), 3.0, 1e-5)[0]


def test_a_ledger_of_mixed_releases_admits_what_the_formulas_allow_and_refuses_the_crossing(tmp_path, mechs):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=3.0, delta_budget=1e-5)
    con = store.connect(db)
    rng = random.Random(7)
    kinds = ["gaussian-1", "gaussian-0.3", "laplace-0.1", "topL-0.4", "gaussian-2"]
    refused = 0
    while refused < 3:
        kind = rng.choice(kinds)
        rows = indep.stored_rows(con)
        mech = mechs[kind]
        allowed, _ = indep.zcdp_admits(rows + [(*mech.cost, mech.audit_records())], 3.0, 1e-5)
        try:
            charge_like(con, mech)
            assert allowed, (kind, len(rows))
        except BudgetExceeded:
            refused += 1
            assert indep.zcdp_admits(rows, 3.0, 1e-5)[0]
    assert len(indep.stored_rows(con)) > 3 and ledger.verify(con) == []
    con.close()


def test_a_store_with_no_delta_admits_no_gaussian_and_sums_pure_releases(tmp_path, mechs):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=2.0, delta_budget=0.0)
    con = store.connect(db)
    g = mechs["gaussian-0.3"]
    with pytest.raises(BudgetExceeded, match="zcdp accountant"):
        ledger.check(con, *g.cost, measurements=g.audit_records())
    assert fill(con, mechs["laplace-1"]) == 2
    st = ledger.status(con)
    assert (st.epsilon_spent, st.delta_spent) == (2.0, 0.0) and st.composition.path == "basic"
    con.close()


def test_the_budget_cannot_go_below_what_the_accountant_counts(tmp_path, capsys, mechs):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=6.0)
    con = store.connect(db)
    for _ in range(10):
        charge_like(con, mechs["gaussian-1"])
    spent = ledger.status(con).epsilon_spent
    con.close()
    assert 3 < spent < 4                       # ten releases of ε = 1 count as ε ≈ 3.4 at δ = 5e-6
    rc, out, err = cli(capsys, "init", "--db", db, "--epsilon-budget", 4)
    assert rc == 0 and "accountant zcdp" in out, err
    before = snapshot(db)
    rc, out, err = cli(capsys, "init", "--db", db, "--epsilon-budget", 3)
    assert_one_line_error(rc, out, err, code=2)
    assert "below what is already spent" in err and snapshot(db) == before


# ------------------------------------------------------------------------------ the accountant as a chain event

def test_the_accountant_is_chosen_before_the_first_release(tmp_path, capsys, mechs):
    db = tmp_path / "s.duckdb"
    rc, out, err = cli(capsys, "init", "--db", db, "--epsilon-budget", 6)
    assert rc == 0 and "accountant zcdp" in out, err                   # new stores: zcdp
    rc, out, err = cli(capsys, "init", "--db", db, "--accountant", "basic")
    assert rc == 0 and "accountant basic" in out, err
    rc, out, err = cli(capsys, "init", "--db", db, "--accountant", "pld")
    assert_one_line_error(rc, out, err, code=2)
    con = store.connect(db)
    events = con.execute("SELECT kind, details FROM ledger_events ORDER BY seq").fetchall()
    assert events[0] == ("created", json.dumps({"accountant": "zcdp"}))
    assert ("accountant", json.dumps({"accountant": "basic", "previous": "zcdp"}, sort_keys=True)) in events
    assert ledger.accountant_of(con) == "basic"
    charge_like(con, mechs["laplace-1"])
    with pytest.raises(Refusal, match="chosen before the first release"):
        ledger.set_accountant(con, "zcdp")
    assert ledger.set_accountant(con, "basic") is False                 # the same one: nothing to change
    con.close()
    before = snapshot(db)
    rc, out, err = cli(capsys, "init", "--db", db, "--accountant", "zcdp", "--epsilon-budget", 8)
    assert_one_line_error(rc, out, err, code=1)
    assert snapshot(db) == before                                       # not the budget either
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert rc == 0, err


def test_an_accountant_forged_into_the_chain_is_caught(tmp_path, capsys, mechs):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=6.0, accountant="basic")
    con = store.connect(db)
    for _ in range(6):
        charge_like(con, mechs["gaussian-1"])
    con.close()
    # after six releases at (1, 1e-6) basic is full; a forged switch to zcdp would re-admit budget
    con = duckdb.connect(str(db))
    con.execute("UPDATE ledger_events SET details = ? WHERE kind = 'accountant'",
                [json.dumps({"accountant": "zcdp", "previous": "zcdp"}, sort_keys=True)])
    rehash(con)
    con.close()
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert rc == 0, err   # a switch before the first release is the curator's (and recorded): still consistent
    con = duckdb.connect(str(db))
    seq = con.execute("SELECT max(seq) FROM ledger").fetchall()[0][0]
    con.execute("UPDATE ledger_events SET seq = seq + 1 WHERE seq > ?", [seq])
    con.execute("UPDATE ledger SET seq = seq + 1 WHERE seq > ?", [seq])
    con.execute("INSERT INTO ledger_events VALUES ('forged', 'accountant', NULL, now()::TIMESTAMP, NULL, NULL, ?, "
                "?, '', '')", [json.dumps({"accountant": "basic", "previous": "zcdp"}), seq + 1])
    rehash(con)
    con.close()
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert_one_line_error(rc, out, err, code=1)
    assert "changes the accountant after releases" in err
    con = duckdb.connect(str(db))
    con.execute("UPDATE ledger_events SET details = ? WHERE event_id = 'forged'",
                [json.dumps({"accountant": "generous"})])
    rehash(con)
    con.close()
    rc, out, err = cli(capsys, "budget", "--db", db, "--verify")
    assert_one_line_error(rc, out, err, code=1)
    assert "does not know" in err
    con = store.connect(db)
    with pytest.raises(LedgerTampered):
        charge_like(con, mechs["laplace-1"])
    con.close()


def test_a_store_of_an_earlier_version_keeps_basic_composition(tmp_path, capsys, mechs):
    path = tmp_path / "old.duckdb"
    con = synthetic_store(path, epsilon_budget=6.0, close=False)
    release(con, GAUSS, mechanism=mechs["gaussian-1"])
    con.close()
    con = duckdb.connect(str(path))   # as the version before ledger events wrote it
    r = con.execute("SELECT release_id, dataset, created_at, mechanism, epsilon, delta, params, measurements, "
                    "plan_path FROM ledger").fetchall()[0]
    old_hash = ledger._Row(1, ledger.GENESIS, *r[:6], r[6] or "", r[7] or "", r[8]).digest()
    con.execute("UPDATE ledger SET seq = 1, prev_hash = ?, row_hash = ?", [ledger.GENESIS, old_hash])
    con.execute("ALTER TABLE ledger DROP COLUMN plan_stored")
    con.execute("DROP TABLE ledger_events")
    con.execute("DROP TABLE release_plans")
    con.execute("UPDATE ledger_head SET seq = 1, head_hash = ?", [old_hash])
    con.close()
    con = store.connect(path)
    assert ledger.accountant_of(con) == "basic" and ledger.status(con).accountant == "basic"
    assert 1 + fill(con, mechs["gaussian-1"]) == 6
    con.close()


def test_a_store_whose_creation_names_no_accountant_composes_by_basic(tmp_path, mechs):
    """A store of the version before accountants: its creation event has no details."""
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=6.0)
    con = duckdb.connect(str(db))
    con.execute("UPDATE ledger_events SET details = NULL WHERE kind = 'created'")
    rehash(con)
    con.close()
    con = store.connect(db)
    assert ledger.accountant_of(con) == "basic" and ledger.verify(con) == []
    assert fill(con, mechs["gaussian-1"]) == 6
    con.close()


def test_install_chooses_the_accountant_of_a_new_store(tmp_path):
    import dpspin_sql

    con = duckdb.connect()
    dpspin_sql.install(con, tmp_path / "s.duckdb", epsilon_budget=2.0, accountant="basic")
    con.close()
    con = store.connect(tmp_path / "s.duckdb")
    assert ledger.status(con).accountant == "basic"
    con.close()


def test_an_experiment_runs_own_budget_composes_by_basic(tmp_path, mechs):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    con = store.connect(db)
    mech = mechs["topL-1"]
    ledger.set_budget(con, *mech.cost, "run-1#x", experiment_run=True)   # exactly one release's cost
    eps, delta = mech.cost
    # zcdp could not fit one release in a budget of exactly its own cost (its basic path has δ/2)
    assert not accountant.compose("zcdp", eps, delta, [accountant.release_of(eps, delta, mech.audit_records())]).fits
    ledger.charge(con, eps, delta, mechanism="private_topL", params=mech.request.public_params() | {"m": M},
                  measurements=mech.audit_records(), plan_path=None, dataset="run-1#x")
    assert ledger.status(con, "run-1#x").accountant == "basic" and ledger.status(con).accountant == "zcdp"
    assert ledger.verify(con) == []
    con.close()


# ------------------------------------------------------------------------------ races

def test_threads_on_separate_connections_spend_exactly_what_zcdp_admits(tmp_path, mechs):
    mech = mechs["gaussian-1"]
    one = (*mech.cost, mech.audit_records())
    E = 1.5
    expected = max(n for n in range(1, 12) if indep.zcdp_admits([one] * n, E, 1e-5)[0])
    assert expected > 1 == max(n for n in range(1, 12) if indep.basic_admits([one] * n, E, 1e-5))
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=E)
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker(i: int) -> None:
        con = store.connect(db)
        try:
            start.wait()
            release(con, GAUSS, out=tmp_path / f"p{i}.json", mechanism=mech)
            result = "ok"
        except BudgetExceeded:
            result = "refused"
        except Exception as exc:  # anything else fails the test
            result = f"error {type(exc).__name__}: {exc}"
        finally:
            con.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ok"] * expected + ["refused"] * (8 - expected), outcomes
    con = store.connect(db, read_only=True)
    plans = [p for p in tmp_path.glob("p*.json") if not p.name.endswith(".dictionary.json")]
    assert len(ledger.status(con).releases) == expected == len(plans) and ledger.verify(con) == []
    con.close()


@pytest.mark.slow
def test_processes_spend_exactly_what_zcdp_admits(tmp_path, mechs):
    mech = mechs["gaussian-1"]
    one = (*mech.cost, mech.audit_records())
    E = 1.5
    expected = max(n for n in range(1, 12) if indep.zcdp_admits([one] * n, E, 1e-5)[0])
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=E)
    env = dict(os.environ, DPSPIN_LOCK_TIMEOUT="300")
    code = "import sys; from dpspin_sql.cli import run; sys.exit(run(sys.argv[1:]))"
    n = expected + 2
    procs = [subprocess.Popen([sys.executable, "-c", code, *map(str, gauss_args(db, tmp_path / f"p{i}.json"))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
             for i in range(n)]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    assert sorted(rc for rc, _ in results) == [0] * expected + [1] * 2, results
    assert all("zcdp accountant" in err for rc, err in results if rc == 1)
    con = store.connect(db, read_only=True)
    assert len(ledger.status(con).releases) == expected and ledger.verify(con) == []
    con.close()


# ------------------------------------------------------------------------------ the two paths' shares of δ (guards)

@pytest.mark.guard
def test_the_basic_path_of_zcdp_spends_half_the_delta():
    """Releases with no zCDP form (opaque (ε, δ) charges) are counted by basic composition
    alone, and under zcdp it holds δ/2: two of 0.4·δ each fit basic, not zcdp."""
    E, D = 6.0, 1e-5
    opaque = accountant.Release(0.1, 0.4 * D, (accountant.opaque_part(0.1, 0.4 * D),))
    assert accountant.compose("zcdp", E, D, [opaque]).fits
    assert accountant.compose("basic", E, D, [opaque, opaque]).fits
    assert not accountant.compose("zcdp", E, D, [opaque, opaque]).fits


@pytest.mark.guard
def test_a_part_with_no_zcdp_form_leaves_only_basic_composition():
    """A release of one opaque (ε, δ) part and a small Gaussian: Σε = 1.2 exceeds ε = 1, and
    the Gaussian's ρ alone must not admit the pair (the opaque part has no ρ to add)."""
    big = accountant.Release(0.9, 1e-7, (accountant.opaque_part(0.9, 1e-7),))
    small = accountant.Release(0.3, 1e-7, (accountant.Part("gaussian", 0.3, 1e-7, 0.005, False),))
    assert accountant.compose("zcdp", 1.0, 1e-5, [small]).fits
    assert not accountant.compose("zcdp", 1.0, 1e-5, [big, small]).fits


@pytest.mark.guard
def test_the_zcdp_path_converts_at_half_the_delta():
    """The largest ρ the zcdp accountant admits (searched through compose, basic out of reach)
    converts within ε at δ/2 by the independent formula (tests/helpers/composition.py), and
    is not far below it (1e-3)."""
    from fractions import Fraction

    E, D = 3.0, 1e-5

    def fits(rho: float) -> bool:
        part = accountant.Part("gaussian", 100.0, 0.0, rho, False)
        return accountant.compose("zcdp", E, D, [accountant.Release(100.0, 0.0, (part,))]).fits

    lo, hi = 0.0, E
    assert fits(1e-6) and not fits(hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    assert indep.epsilon_cks(Fraction(lo), Fraction(D) / 2) <= Decimal(E) + Decimal("1e-9")
    assert indep.epsilon_cks(Fraction(lo * 1.001), Fraction(D) / 2) > Decimal(E)


# ------------------------------------------------------------------ guards (the fast loop)

def _gaussian(rho: float, epsilon: float = 0.5, delta: float = 1e-7) -> accountant.Release:
    return accountant.Release(epsilon, delta, (accountant.Part("gaussian", epsilon, delta, rho, False),))


@pytest.mark.guard
def test_zcdp_composes_the_sum_of_the_parts_rho():
    """Three releases of ρ = 0.01, 0.02, 0.03: the composed ρ is their sum (OpenDP rounds up),
    and a history whose largest ρ fits but whose sum does not is refused."""
    comp = accountant.compose(accountant.ZCDP, 2.0, 1e-5, [_gaussian(0.01), _gaussian(0.02), _gaussian(0.03)])
    assert 0.06 <= comp.rho <= 0.06 * (1 + 1e-9)
    limit = accountant.rho_limit(2.0, 1e-5 * (1 - accountant.ZCDP_BASIC_SHARE))
    over = accountant.compose(accountant.ZCDP, 2.0, 1e-5, [_gaussian(0.6 * limit), _gaussian(0.6 * limit)])
    assert not over.fits_zcdp and over.rho > limit


@pytest.mark.guard
def test_a_store_of_delta_zero_admits_no_gaussian():
    """At δ = 0 no ρ converts to a finite ε: the ρ limit is 0 and a Gaussian release (which is
    not pure ε-DP) fits neither path."""
    assert accountant.rho_limit(1.0, 0.0) == 0.0
    comp = accountant.compose(accountant.ZCDP, 1.0, 0.0, [_gaussian(1e-4, epsilon=0.1)])
    assert comp.rho_limit == 0.0 and not comp.fits_zcdp and not comp.fits_basic and not comp.fits
