"""The DP baselines of the comparison (experiment/baselines.py): their privacy cost is what
their OpenDP measurements' maps say at the sensitivity table's d_in, it is charged to the
ledger before any noise, the contribution bound holds whatever a record claims, and an
empirical audit (the style of tests/test_dp_audit.py) finds no violation through the whole
enforced pipeline while it catches a broken variant.

(a) maps: every step of every baseline is make_mechanism's measurement for the step's
    request, charged at d_in = docs/DESIGN.md §2's entry for (unit, adjacency, B); the
    ledger row's cost is the fsum of the steps' maps, ≤ the requested ε, and rebuilds.
(b) sensitivity under the enforced bound: hostile records (many keywords, huge, negative,
    NaN and duplicated weights, unknown coordinates) and hostile users (many records)
    move the step sketch by at most d_in in L1, L2 and L∞.
(c) audit: keyword histogram (Laplace, ε = 1) on neighbouring datasets that differ by one
    hostile record; Clopper–Pearson ε lower bound ≤ ε; the same mechanism with half the
    noise is rejected. False failure ≤ 4·1e-8 + power bound 1e-6 (computed, asserted).
"""
from __future__ import annotations

import json
import math

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from dpspin_sql import ledger, store
from dpspin_sql.experiment import baselines as BL
from dpspin_sql.experiment import grid as G
from dpspin_sql.experiment import runner
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.request import SCALE, fixed_bound
from dpspin_sql.sensitivity import fixed_point_d_in
from tests.test_experiment_runner import tiny, tiny_grid, write_cfpb  # noqa: F401

dp.enable_features("contrib")

ALPHA = 1e-8


def run_of(unit="record", adjacency="add_drop", B=1.0, mechanism="laplace", epsilon=1.0, delta=1e-6, method="urania",
           **over):
    run = dict(G.COMMON)
    run.update({"unit": unit, "adjacency": adjacency, "B": B if unit == "user" else 1.0, "mechanism": mechanism,
                "epsilon": epsilon, "delta": 0.0 if mechanism == "laplace" else delta, "method": method, "K": 3,
                "L": 10, "dataset": "t", "calibration": "zcdp"})
    run.update(over)
    return run


def bound_of(unit, B):
    return SCALE if unit == "record" else fixed_bound(B)


# ============================================================================ (a) maps = charged cost

@pytest.mark.parametrize("unit", ["record", "user"])
@pytest.mark.parametrize("adjacency", ["add_drop", "replace"])
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_every_step_is_charged_at_the_table_d_in(unit, adjacency, mechanism):
    run = run_of(unit, adjacency, 2.0, mechanism, epsilon=0.8)
    budget = BL.split_budget(run, int(run["urania_iterations"]))
    k, d, V = 10, 16, 100
    steps = [BL.make_step(run, f"lloyd{t}", k * (1 + d), 1 + d, 1, *budget["clustering"]) for t in range(3)]
    steps += [BL.make_step(run, "sizes", k, 1, 10, *budget["sizes"]),
              BL.make_step(run, "histograms", k * V, 3, 1, *budget["histograms"])]
    d_in = fixed_point_d_in(unit, adjacency, bound_of(unit, 2.0))
    want = d_in.l1 if mechanism == "laplace" else d_in.l2
    for s in steps:
        (part,) = s.mechanism.parts
        assert part.name == mechanism and part.d_in == want
        # the step's measurement is exactly make_mechanism's for the step's request
        again = make_mechanism(s.request, s.m).parts[0]
        assert again.noise_scale == part.noise_scale and again.d_in == part.d_in
        out = part.measurement.map(part.d_in)
        eps, dlt = out if isinstance(out, tuple) else (out, 0.0)
        assert (float(eps), float(dlt)) == (part.epsilon, part.delta)
    eps, delta = BL.total_cost(steps)
    assert eps <= 0.8 and eps == pytest.approx(0.8, rel=1e-9)
    assert (delta == 0.0) if mechanism == "laplace" else (delta <= 1e-6 and delta == pytest.approx(1e-6, rel=1e-9))


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_grid_runs_charge_the_ledger_and_it_verifies(tiny, tmp_path, mechanism):
    raw = tiny_grid(tiny, dataset={"n_records": [120]}, mechanism=[mechanism], seeds=[0],
                    method=["keyword_hist", "category_hist", "urania", "np_plan", "np_kmeans"],
                    keyword_vocab_size=20, urania_clusters=4, urania_dim=4, urania_iterations=2)
    g = G.expand(raw)
    res = runner.run_grid(g, tmp_path / "out", show_progress=False, post=False)
    assert (res.ok, res.failed) == (len(g.runs), 0), res.failures
    con = store.connect(next((tmp_path / "out" / "prep").glob("*.duckdb")), read_only=True)
    try:
        rows = con.execute("SELECT dataset, mechanism, epsilon, delta, params, measurements FROM ledger").fetchall()
        findings = ledger.verify(con)
    finally:
        con.close()
    assert findings == []
    # one row per DP baseline run; the references are never charged
    charged = {ds.split("#")[0]: (mech, e, d, json.loads(p), json.loads(m)) for ds, mech, e, d, p, m in rows}
    dp_runs = [r for r in g.runs if r["method"] in BL.DP_METHODS]
    assert set(charged) == {r["run_id"] for r in dp_runs}
    for r in g.runs:
        d = tmp_path / "out" / "runs" / r["run_id"]
        if r["method"] in BL.REFERENCES:
            assert not (d / "private_plan.json").exists()
            plan = json.loads((d / "reference_plan.json").read_text())
            assert plan["non_private"] is True and plan["mechanism"] == "non_private" and plan["privacy_cost"] == {}
            assert "differentially private" not in (d / "summary.txt").read_text()
            continue
        mech, e, dlt, _, records = charged[r["run_id"]]
        assert mech == f"{r['method']}:{mechanism}"
        assert ledger.recompute_cost(records) == (e, dlt)
        assert e <= r["epsilon"] and e == pytest.approx(r["epsilon"], rel=1e-9)
        steps = [x["step"] for x in records]
        if r["method"] == "urania":
            assert steps == ["lloyd1", "lloyd2", "sizes", "histograms"]
        else:
            assert steps == ["histogram"]
        plan = json.loads((d / "private_plan.json").read_text())
        assert plan["release_id"] and plan["privacy_cost"]["epsilon"] == e
        assert len(plan["atoms"]) <= r["L"]
        met = json.loads((d / "metrics.json").read_text())
        assert met["verifier_accepted"] == 1.0
        assert 0 <= met["np_theme_word_recall"] <= 1 and met["truth_theme_field"] is not None


def test_a_baseline_over_budget_is_refused_before_noise(tiny, tmp_path):
    """The whole composed cost is charged in one row before any step draws noise, and the
    ledger refuses a charge that does not fit: a second release on the run's dataset
    (whose budget is one release's cost) is refused and leaves the spent total unchanged."""
    import dataclasses

    from dpspin_sql import release
    from dpspin_sql.atoms import Atom, dictionary_hash
    from dpspin_sql.errors import BudgetExceeded
    from dpspin_sql.plan import make_plan

    g = G.expand(tiny_grid(tiny, dataset={"n_records": [120]}, mechanism=["laplace"], seeds=[0], method=["urania"],
                           urania_clusters=4, urania_dim=4, urania_iterations=2))
    run = g.runs[0]
    (tmp_path / "prep").mkdir()
    prep = runner.Prep.open(tmp_path / "prep", run)
    try:
        steps = [BL.make_step(run, "histogram", 10, 3, 3, 0.6, 0.0), BL.make_step(run, "sizes", 4, 1, 3, 0.4, 0.0)]
        atoms = [Atom(i, f"theme {i}", "a theme", None) for i in range(10)]
        draws: list[str] = []

        def draw(charged):   # the steps' noise, drawn inside the charging transaction
            draws.append(charged.release_id)
            noisy = steps[0].mechanism.apply(np.zeros(10, dtype=np.int64))
            plan = make_plan(noisy, steps[0].mechanism, atoms, dictionary_hash(atoms), charged.release_id,
                             charged.row_hash)
            plan = dataclasses.replace(plan, privacy_cost={"epsilon": composite.epsilon, "delta": composite.delta})
            return BL.publication(plan, atoms, {"method": "test"})

        out = tmp_path / "plan.json"
        composite = BL.composite_of(prep.con, run, steps, "run-x")
        first = BL.release_steps(prep.con, composite, draw, out, "run-x")
        spent = ledger.status(prep.con, "run-x").epsilon_spent
        assert spent == pytest.approx(1.0) and draws == [first.plan.release_id]
        assert out.read_text().rstrip("\n") == first.text         # the file is the text the ledger stored
        release.recover(prep.con, tmp_path / "again.json", first.plan.release_id)
        assert (tmp_path / "again.json").read_text() == out.read_text()   # a paid-for plan is never lost
        with pytest.raises(BudgetExceeded):
            BL.release_steps(prep.con, BL.composite_of(prep.con, run, steps, "run-x"), draw, out, "run-x")
        assert len(draws) == 1                                     # refused before any noise
        assert ledger.status(prep.con, "run-x").epsilon_spent == spent
        assert ledger.verify(prep.con) == []
    finally:
        prep.close()


# ============================================================================ (b) the enforced bound

def _units(n, users=None):
    return [(f"r{i:03d}", users[i] if users else None) for i in range(n)]


def _vec(sk):
    return np.asarray(sk.mass, dtype=np.int64)


@pytest.mark.parametrize("K", [1, 3])
def test_hostile_record_claiming_many_keywords_is_bounded(K):
    """A record that claims 60 keywords (and other malformed rows) contributes ≤ K coordinates
    and ≤ one unit (2^24) in all; adding it moves the sketch by ≤ d_in in every norm."""
    m = 40
    base_units = _units(30)
    base = [(f"r{i:03d}", (i * 7 + j) % m, 1 / K) for i in range(30) for j in range(K)]
    hostile = [("evil", j, 1e9) for j in range(60)]                      # many keywords, huge weights
    hostile += [("evil", 3, float("nan")), ("evil", 4, -5.0), ("evil", 5, float("inf")), ("evil", 999, 1.0),
                ("evil", 7, 1.0), ("evil", 7, 1.0)]                        # bad, unknown, duplicated
    st = BL.StepStore(base_units)
    st2 = BL.StepStore(base_units + [("evil", None)])
    try:
        a = _vec(st.sketch(m, base, "record", K, 1.0))
        b = _vec(st2.sketch(m, base + hostile, "record", K, 1.0))
    finally:
        st.close()
        st2.close()
    diff = b - a
    assert (diff >= 0).all() and np.count_nonzero(diff) <= K
    d_in = fixed_point_d_in("record", "add_drop", SCALE)
    assert diff.sum() <= d_in.l1 and math.sqrt(float((diff.astype(float) ** 2).sum())) <= d_in.l2
    assert diff.max() <= d_in.linf


@pytest.mark.parametrize("B", [1.0, 2.0])
def test_hostile_user_with_many_records_is_clipped_to_B(B):
    m, K = 30, 3
    users = [f"u{i % 10}" for i in range(30)]
    units = _units(30, users)
    rows = [(f"r{i:03d}", (i * 5 + j) % m, 1 / K) for i in range(30) for j in range(K)]
    evil_units = [(f"e{i}", "evil") for i in range(25)]
    evil_rows = [(f"e{i}", (i + j) % m, 1.0) for i in range(25) for j in range(20)]
    st, st2 = BL.StepStore(units), BL.StepStore(units + evil_units)
    try:
        a = _vec(st.sketch(m, rows, "user", K, B))
        b = _vec(st2.sketch(m, rows + evil_rows, "user", K, B))
    finally:
        st.close()
        st2.close()
    diff = b - a
    d_in = fixed_point_d_in("user", "add_drop", fixed_bound(B))
    assert (diff >= 0).all() and diff.sum() <= d_in.l1 == fixed_bound(B)
    assert math.sqrt(float((diff.astype(float) ** 2).sum())) <= d_in.l2 and diff.max() <= d_in.linf
    assert diff.sum() > 0.99 * fixed_bound(B)     # the clip is what binds: the evil user had 25 units


def test_replacing_a_record_moves_the_histogram_by_at_most_the_replace_d_in():
    m, K = 20, 3
    units = _units(10)
    rows = [(f"r{i:03d}", i % m, 1.0) for i in range(10)]
    swapped = [r for r in rows if r[0] != "r000"] + [("r000", j, 1e6) for j in range(10, 20)]
    st = BL.StepStore(units)
    try:
        a, b = _vec(st.sketch(m, rows, "record", K, 1.0)), _vec(st.sketch(m, swapped, "record", K, 1.0))
    finally:
        st.close()
    diff = (b - a).astype(float)
    d_in = fixed_point_d_in("record", "replace", SCALE)
    assert np.abs(diff).sum() <= d_in.l1 and math.sqrt((diff ** 2).sum()) <= d_in.l2 and np.abs(diff).max() <= d_in.linf


def test_urania_step_rows_of_one_record_have_one_unit():
    """A record's DP-Lloyd rows: ½ on its cluster's count, ½·h on its cluster's d sums (h on
    the simplex), so the enforced sketch of one record is one unit on ≤ 1 + d coordinates."""
    rng = np.random.default_rng(0)
    k, d = 4, 6
    H = BL._simplex_rows(rng.random((5, d)))
    cent = BL._simplex_rows(rng.random((k, d)))
    assign = BL._nearest(H, cent)
    for i in range(5):
        j = int(assign[i])
        rows = [("r000", j * (1 + d), 0.5)] + [("r000", j * (1 + d) + 1 + c, 0.5 * H[i, c]) for c in range(d)]
        st = BL.StepStore(_units(1))
        try:
            v = _vec(st.sketch(k * (1 + d), rows, "record", 1 + d, 1.0))
        finally:
            st.close()
        assert v.sum() <= SCALE and v.sum() >= SCALE - (1 + d) and np.count_nonzero(v) <= 1 + d
        assert set(np.flatnonzero(v)) <= set(range(j * (1 + d), (j + 1) * (1 + d)))


def test_keyword_rows_keep_K_equal_weights_and_category_of_a_record():
    pub = BL.Public(["fees", "loan", "card", "debt"], [10, 9, 8, 7], {"fees": 1.0, "loan": 1.5, "card": 2.0,
                                                                      "debt": 2.5})
    rows = BL.keyword_rows([("a", "loan fees fees card debt"), ("b", "nothing here")], pub, 2)
    assert rows == [("a", 3, 0.5), ("a", 2, 0.5)]          # the highest TF-IDF: debt, card (ties: vocabulary order)
    run = {"category_field": "categories", "category_exclude": ["Restaurants"]}
    vocab = {"Mexican": 0, "Bars": 1}
    assert BL.record_category({"categories": "Bars; Restaurants; Mexican"}, run, vocab) == "Mexican"
    assert BL.record_category({"categories": "Restaurants"}, run, vocab) is None
    assert BL.record_category({"rating": 4.0}, {"category_field": "rating"}, None) == "4 stars"
    assert BL.record_category({"issue": "X"}, {"category_field": "issue"}, {"Y": 0}) is None


# ============================================================================ (c) audit through the pipeline

def cp_lower(k, n, alpha=ALPHA):
    return 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))


def cp_upper(k, n, alpha=ALPHA):
    return 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))


def _audit_counts(meas, x_d, x_d2, j, threshold, n):
    """(hits under D', hits under D) of the event X_j ≥ threshold over n draws each."""
    hits_d2 = sum(1 for _ in range(n) if meas([int(v) for v in x_d2])[j] >= threshold)
    hits_d = sum(1 for _ in range(n) if meas([int(v) for v in x_d])[j] >= threshold)
    return hits_d2, hits_d


def test_keyword_histogram_audit_through_the_enforced_pipeline():
    """D' = D + one hostile record (60 claimed keywords, one of them at weight 10^9). The
    enforced sketch moves coordinate j by at most 2^24; for the discrete Laplace the event
    X_j ≥ c_j(D') has likelihood ratio exactly e^ε between D' and D, so the CP lower
    bound on ε must stay ≤ ε = 1 (false failure ≤ 2·1e-8). The same pipeline with half
    the noise (true ε = 2) must be rejected; its chance to pass is computed exactly."""
    run = run_of("record", "add_drop", 1.0, "laplace", epsilon=1.0, method="keyword_hist")
    m, K, n = 6, 3, 4000
    units = _units(20)
    rows = [(f"r{i:03d}", i % m, 1.0) for i in range(20)]
    hostile = [("evil", 2, 1e9)] + [("evil", j, 1e-9) for j in range(60)]
    st, st2 = BL.StepStore(units), BL.StepStore(units + [("evil", None)])
    try:
        a = _vec(st.sketch(m, rows, "record", K, 1.0))
        b = _vec(st2.sketch(m, rows + hostile, "record", K, 1.0))
    finally:
        st.close()
        st2.close()
    j = int(np.argmax(b - a))
    assert 0 < (b - a)[j] <= SCALE
    step = BL.make_step(run, "histogram", m, K, 3, 1.0, 0.0)
    (part,) = step.mechanism.parts
    threshold = int(b[j])
    k_d2, k_d = _audit_counts(part.measurement, a, b, j, threshold, n)   # counts under D', D
    eps_lb = math.log(cp_lower(k_d2, n) / cp_upper(k_d, n))
    assert eps_lb <= part.epsilon, (k_d2, k_d, eps_lb)
    # power: the same enforced sketches through a Laplace at half the calibrated scale
    broken = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=dp.i64), size=m), dp.l1_distance(T=dp.i64),
                               scale=part.noise_scale / 2)
    k_d2w, k_dw = _audit_counts(broken, a, b, j, threshold, n)
    eps_lb_w = math.log(cp_lower(k_d2w, n) / cp_upper(k_dw, n))
    # exact event probabilities of the broken variant (discrete Laplace, scale t): P(X ≥ 0) and P(X ≥ Δ)
    t, delta_j = part.noise_scale / 2, int((b - a)[j])
    alpha = math.exp(-1 / t)
    p_ge = lambda k: (alpha ** k) / (1 + alpha) if k > 0 else 1 - alpha / (1 + alpha)
    p_hi, p_lo = p_ge(0), p_ge(delta_j)
    k_lo, k_hi = int(stats.binom.ppf(1e-7, n, p_hi)), int(stats.binom.isf(1e-7, n, p_lo))
    assert math.log(cp_lower(k_lo, n) / cp_upper(k_hi, n)) > part.epsilon   # so P(pass) ≤ 2e-7
    assert eps_lb_w > part.epsilon, (k_d2w, k_dw, eps_lb_w)
