"""The budget ledger: refuses overspend (exit 1, no plan left, an existing plan file
untouched), sums costs exactly (math.fsum over every charge, no tolerance), cannot be
set below what is spent, and `dpspin budget --json` lists every charge."""
from __future__ import annotations

import json
import math
import os

import pytest

from dpspin_sql import ledger, store
from dpspin_sql.errors import BadInput, BudgetExceeded
from dpspin_sql.release import release
from dpspin_sql.request import ReleaseRequest
from tests.helpers.core import assert_one_line_error, cli, snapshot, synthetic_store


def release_args(db, out, *, mechanism="laplace", epsilon=0.1, delta=None, unit="user", L=3):
    args = ["release", "--db", db, "--mechanism", mechanism, "--epsilon", epsilon, "--unit", unit,
            "-L", L, "--out", out, "--quiet"]
    if delta is not None:
        args += ["--delta", delta]
    return args


def charge(con, eps, delta=0.0):
    """A charge backed by a real OpenDP measurement whose own map gives its cost, as every
    release's is (the ledger refuses to spend next to a row whose charge its maps do not give)."""
    import opendp.prelude as dp

    measurements = []
    if isinstance(eps, float) and math.isfinite(eps) and eps > 0 and delta == 0:
        dp.enable_features("contrib")
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=dp.i64), size=1), dp.l1_distance(T=dp.i64),
                                 scale=1 / eps)
        eps = float(meas.map(1))
        measurements = [{"name": "laplace", "d_in": 1, "measurement": dp.serialize(meas)}]
    return ledger.charge(con, eps, delta, mechanism="laplace", params={}, measurements=measurements,
                         plan_path=None)


# ------------------------------------------------------------------------------ refusals via the CLI

def test_overspend_refused_exit_1_no_plan_existing_plan_untouched(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    first = tmp_path / "first.json"
    rc, out, err = cli(capsys, *release_args(db, first, epsilon=0.6))
    assert rc == 0, err
    before_plan = first.read_bytes()
    before_mtime = os.stat(first).st_mtime_ns
    before_store = snapshot(db)

    # a new path: nothing is written
    fresh = tmp_path / "second.json"
    rc, out, err = cli(capsys, *release_args(db, fresh, epsilon=0.6))
    assert_one_line_error(rc, out, err, code=1)
    assert "refused" in err
    assert not fresh.exists()
    assert not fresh.with_name("second.dictionary.json").exists()
    # an existing plan at --out: refused without --force (exit 2); refused over budget with
    # --force (exit 1); either way left exactly as it was
    rc, out, err = cli(capsys, *release_args(db, first, epsilon=0.1, mechanism="gaussian", delta=1e-6))
    assert_one_line_error(rc, out, err, code=2)
    assert "--force" in err
    rc, out, err = cli(capsys, *release_args(db, first, epsilon=0.6, mechanism="gaussian", delta=1e-6), "--force")
    assert_one_line_error(rc, out, err, code=1)
    assert first.read_bytes() == before_plan and os.stat(first).st_mtime_ns == before_mtime
    assert snapshot(db) == before_store                 # nothing charged
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]   # no temporary file left


def test_delta_budget_enforced(tmp_path, capsys):
    # basic composition spends each release's δ (the zcdp accountant converts at the store's δ
    # instead: tests/test_accountant.py)
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=10.0, delta_budget=1e-5, accountant="basic")
    rc, _, err = cli(capsys, *release_args(db, tmp_path / "a.json", mechanism="gaussian", epsilon=0.5, delta=6e-6))
    assert rc == 0, err
    rc, out, err = cli(capsys, *release_args(db, tmp_path / "b.json", mechanism="gaussian", epsilon=0.5,
                                             delta=6e-6))
    assert_one_line_error(rc, out, err, code=1)
    assert not (tmp_path / "b.json").exists()
    # a pure-DP release still fits the ε that is left
    rc, _, err = cli(capsys, *release_args(db, tmp_path / "c.json", mechanism="laplace", epsilon=0.5))
    assert rc == 0, err


def test_ten_releases_of_a_tenth_fit_one_the_eleventh_refuses(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    for i in range(10):
        rc, _, err = cli(capsys, *release_args(db, tmp_path / f"p{i}.json", epsilon=0.1))
        assert rc == 0, (i, err)
    rc, out, err = cli(capsys, *release_args(db, tmp_path / "p10.json", epsilon=0.1))
    assert_one_line_error(rc, out, err, code=1)
    assert not (tmp_path / "p10.json").exists()
    rc, out, _ = cli(capsys, "budget", "--db", db, "--json")
    st = json.loads(out)
    assert len(st["releases"]) == 10
    assert st["epsilon_spent"] == math.fsum(r["epsilon"] for r in st["releases"]) <= 1.0


def test_library_release_over_budget_raises_and_writes_nothing(tmp_path):
    con = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=0.5, close=False)
    out = tmp_path / "plan.json"
    with pytest.raises(BudgetExceeded):
        release(con, ReleaseRequest(mechanism="laplace", epsilon=0.6, unit="record", L=3), out=out)
    assert not out.exists()
    assert ledger.status(con).releases == []


# ------------------------------------------------------------------------------ exact sums

def test_fsum_ten_tenths_exactly(tmp_path):
    con = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0, close=False)
    for _ in range(10):
        charge(con, 0.1)
    st = ledger.status(con)
    assert st.epsilon_spent == 1.0 and st.epsilon_remaining == 0.0
    with pytest.raises(BudgetExceeded):
        charge(con, 0.1)
    with pytest.raises(BudgetExceeded):
        charge(con, 1e-12)
    # the comparison is on the correctly rounded sum (that is what lets ten 0.1s fit 1.0,
    # whose exact sum is 1 + 5.6e-17): a charge below half an ulp of the total rounds away
    assert math.fsum([0.1] * 10 + [5e-324]) == 1.0
    ledger.check(con, 0.0, 0.0)     # a free release still fits
    assert len(ledger.status(con).releases) == 10


def test_fsum_no_rounding_drift(tmp_path):
    """0.1 + 0.2 + 0.3 naively sums to 0.6000000000000001 > 0.6; fsum gives 0.6 and it fits.
    And 0.1 + 0.4 + 0.1, whose fsum is 0.6000000000000001, must not fit 0.6 (summing the
    spent total first and the new charge second rounds twice and would let it through)."""
    assert 0.1 + 0.2 + 0.3 > 0.6 and math.fsum([0.1, 0.2, 0.3]) == 0.6
    con = synthetic_store(tmp_path / "a.duckdb", epsilon_budget=0.6, close=False)
    for e in (0.1, 0.2, 0.3):
        charge(con, e)
    assert ledger.status(con).epsilon_spent == 0.6

    assert math.fsum([0.1, 0.4, 0.1]) > 0.6 and math.fsum([math.fsum([0.1, 0.4]), 0.1]) == 0.6
    con = synthetic_store(tmp_path / "b.duckdb", epsilon_budget=0.6, close=False)
    charge(con, 0.1)
    charge(con, 0.4)
    with pytest.raises(BudgetExceeded):
        ledger.check(con, 0.1, 0.0)
    with pytest.raises(BudgetExceeded):
        charge(con, 0.1)


@pytest.mark.parametrize("eps,delta", [(float("nan"), 0.0), (-0.1, 0.0), (0.1, -1e-9), (float("inf"), 0.0),
                                       (0.1, float("nan"))])
def test_invalid_cost_refused(tmp_path, eps, delta):
    con = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0, close=False)
    with pytest.raises(BadInput):
        charge(con, eps, delta)
    assert ledger.status(con).releases == []


# ------------------------------------------------------------------------------ the total

def test_budget_cannot_go_below_spent(tmp_path, capsys):
    # what is spent as basic composition counts it (the zcdp accountant's: tests/test_accountant.py)
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=2.0, delta_budget=1e-5, accountant="basic")
    rc, _, err = cli(capsys, *release_args(db, tmp_path / "a.json", mechanism="gaussian", epsilon=1.0,
                                           delta=4e-6))
    assert rc == 0, err
    before = snapshot(db)
    for args in (["--epsilon-budget", "0.5"], ["--epsilon-budget", "0.999"],
                 ["--epsilon-budget", "5", "--delta-budget", "1e-6"]):
        rc, out, err = cli(capsys, "init", "--db", db, *args)
        assert_one_line_error(rc, out, err)
        assert "below what is already spent" in err
        assert snapshot(db) == before
    # raising it, or lowering it to exactly what is spent, is allowed
    rc, _, err = cli(capsys, "init", "--db", db, "--epsilon-budget", "1.0", "--delta-budget", "4e-6")
    assert rc == 0, err
    con = store.connect(db)
    st = ledger.status(con)
    assert st.epsilon_total == 1.0 and st.epsilon_remaining == 0.0
    con.close()
    rc, out, err = cli(capsys, *release_args(db, tmp_path / "b.json", epsilon=0.01))
    assert_one_line_error(rc, out, err, code=1)


@pytest.mark.parametrize("args", [["--epsilon-budget", "0"], ["--epsilon-budget", "-1"],
                                  ["--epsilon-budget", "nan"], ["--delta-budget", "1"],
                                  ["--delta-budget", "-0.1"]])
def test_bad_budget_values(tmp_path, capsys, args):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=1.0)
    before = snapshot(db)
    rc, out, err = cli(capsys, "init", "--db", db, *args)
    assert_one_line_error(rc, out, err)
    assert snapshot(db) == before


def test_budget_json_lists_each_charge(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", epsilon_budget=5.0, delta_budget=1e-4)
    done = []
    for i, (mech, eps, delta) in enumerate([("laplace", 0.25, None), ("gaussian", 0.5, 1e-6),
                                            ("private_topL", 1.0, 2e-6)]):
        out_path = tmp_path / f"p{i}.json"
        rc, _, err = cli(capsys, *release_args(db, out_path, mechanism=mech, epsilon=eps, delta=delta))
        assert rc == 0, err
        plan = json.loads(out_path.read_text())
        done.append((mech, eps, 0.0 if delta is None else delta, plan["release_id"], str(out_path)))
    rc, out, err = cli(capsys, "budget", "--db", db, "--json")
    assert rc == 0, err
    st = json.loads(out)
    assert st["epsilon_total"] == 5.0 and st["delta_total"] == 1e-4
    got = {r["release_id"]: r for r in st["releases"]}
    assert len(got) == 3
    for mech, eps, delta, rid, path in done:
        r = got[rid]
        assert r["mechanism"] == mech and r["plan_path"] == path
        assert r["epsilon"] <= eps and r["epsilon"] == pytest.approx(eps, rel=1e-9)
        assert r["delta"] == delta
        assert r["params"]["unit"] == "user" and r["params"]["L"] == 3
    # each charge is listed; what they spend together is the store's accountant's count
    assert st["epsilon_charged"] == math.fsum(r["epsilon"] for r in st["releases"])
    assert st["accountant"]["name"] in ("basic", "zcdp")
    assert 0 < st["epsilon_spent"] <= st["epsilon_charged"]
    assert st["epsilon_remaining"] == pytest.approx(5.0 - st["epsilon_spent"])
    # the human table names every release too
    rc, out, err = cli(capsys, "budget", "--db", db)
    assert rc == 0, err
    for *_, rid, _ in done:
        assert rid[:6] in out           # rich shortens columns to the 80-column width under capture
    assert out.count("laplace") == 1 and out.count("gaussian") == 1 and out.count("private") == 1, out


def test_a_store_has_one_budget(tmp_path):
    """A second budget name would release the same target records under a budget of its own."""
    con = store.connect(synthetic_store(tmp_path / "s.duckdb", epsilon_budget=2.0))
    with pytest.raises(BadInput, match="already has the budget 'default'"):
        ledger.set_budget(con, 5.0, 1e-5, dataset="second")
    ledger.set_budget(con, 3.0, 1e-5)                           # the store's own budget may change
    ledger.set_budget(con, 1.0, 0.0, dataset="run-1", experiment_run=True)   # a grid run's own
    assert sorted(con.execute("SELECT dataset FROM budget").fetchall()) == [("default",), ("run-1",)]
    con.close()
