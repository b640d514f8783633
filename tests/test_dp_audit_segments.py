"""Empirical DP audit of segmented releases (docs/DP_AUDIT.md "Segmented releases";
docs/DESIGN.md §11), with the machinery of tests/test_dp_audit.py.

The neighbours are not designed: they are the *segmented sketch SQL's* own output on two
stores that differ in one hostile user — 600 records spread over all four segments (and
outside the domain), every record on the same atom at hostile weights (1e308, ∞, NaN, −1,
duplicates, unknown atoms), among 30 ordinary users — at user level with B = 2 (the
bound the release is charged for). D has the user, D′ has not; V = D − D′ is the user's
clipped vector, spread over the segments (L1 = ⌊B·2^24⌋: one clip for all segments). The
mechanism is built exactly as a segmented release builds it (`make_mechanism` of a
request with `Segments`), over S·m coordinates.

Checks (each a claim and an event fixed from public parameters, as in test_dp_audit.py):
- laplace `pure`: E = {noisy_j − D′_j ≥ V_j for every j in V's support}; for the discrete
  Laplace its likelihood ratio is exactly exp(‖V‖₁ / scale) = e^ε when ‖V‖₁ = d_in.
- gaussian `profile`: a threshold on the projection of noisy − D′ on V (a point (ε′, 0.05)
  of the profile OpenDP certifies at the part's d_in), placed as in test_dp_audit.py for
  a separation ‖V‖₂.
- private_topL per segment `select`: the S selections of one segmented release (each on
  its segment's two atoms, as `Mechanism.apply` runs them), on a base where atom 0 leads
  by V_s − 1 in every segment s, so that the user's per-segment masses flip every
  segment's winner; E = atom 1 admitted in every segment. The product of the segments'
  likelihood ratios is e^(ε_sel·Σ_s V_s / d_in) = e^ε_sel: the parallel argument of §11,
  audited at its tight point.

Power (each must reject, with the exact chance of a false pass computed and ≤ 4e-8): the
same mechanisms fed what a release with *one clip per segment* would compute — the
unsegmented enforced sketch run per segment (a DP SQL filter on the segment), so the
user moves each segment by up to B, 3B in all — where the parallel charge would be wrong.

False failures: 3 checks × 2 one-sided bounds × 1e-8 + 3 power tests × 4e-8 = 1.8e-7 < 1e-6.
"""
from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

import dpspin_sql.opendp_lite as dp
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.request import SCALE, Bounds, ReleaseRequest, fixed_bound
from dpspin_sql.segment_by import by_values
from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
from tests.helpers.core import install_atoms, new_store, put_assignments
from tests.test_dp_audit import (
    ALPHA,
    POWER_FAIL_EACH,
    PROFILE_DELTA,
    Check,
    Result,
    dgauss_sf,
    dlap_sf,
    exp_select_p1,
    false_pass_probability,
    gaussian_profile,
)

B = 2.0
LABELS = ("Mortgage", "Credit card", "Student loan", "Vehicle loan")
ATOMS = [0, 1]
EPSILON = {"laplace": 1.0, "gaussian": 2.0, "private_topL": 4.0}
N = {"laplace": 8_000, "gaussian": 16_000, "select": 8_000}   # select: 4 selections a sample
REPLICAS = 2_000              # copies of the S·m block per call of an additive measurement
DESIGN_NOISE_RATIO = 0.5
assert 3 * 2 * ALPHA + 3 * POWER_FAIL_EACH < 1e-6

SEGMENTS, PLACEMENT = by_values("product", LABELS)


def request(mechanism: str) -> ReleaseRequest:
    return ReleaseRequest(mechanism=mechanism, epsilon=EPSILON[mechanism], unit="user", B=B, L=1,
                          delta=None if mechanism == "laplace" else 1e-6, segments=SEGMENTS)


@functools.cache
def neighbours(tmp: str) -> dict[str, np.ndarray]:
    """D and D′ from the segmented SQL, and the per-segment-clip D of the broken variant."""
    from dpspin_sql.sql.audit import audit_statement

    con = new_store(f"{tmp}/audit.duckdb")
    install_atoms(con, ATOMS)
    weights = [1e308, 1.0, 0.75, float("inf"), float("nan"), -1.0, 0.5, 1.0]
    values = [{"product": label} for label in LABELS] + [{"product": "Auto loan"}, None]
    records, rows = [], []
    for i in range(600):
        rid = f"h{i}"
        records.append((rid, "heavy", values[i % len(values)]))
        rows += [(rid, 1, weights[i % 8]), (rid, 1, weights[(i + 3) % 8]), (rid, 0, float("nan")),
                 (rid, 0, -1.0), (rid, 99, 1.0)]
    for i in range(120):
        rid = f"o{i}"
        records.append((rid, f"o{i % 30}", values[i % len(LABELS)]))
        rows += [(rid, i % 2, 0.6), (rid, 1 - i % 2, 0.3)]

    def load(heavy: bool) -> None:
        kept = [r for r in records if heavy or r[1] != "heavy"]
        con.execute("DELETE FROM records")
        con.execute("INSERT INTO records (record_id, user_id, text, split, metadata) SELECT r, u, 't', 'target', "
                    "CAST(j AS JSON) FROM (SELECT unnest($r::VARCHAR[]) AS r, unnest($u::VARCHAR[]) AS u, "
                    "unnest($j::VARCHAR[]) AS j)",
                    {"r": [r[0] for r in kept], "u": [r[1] for r in kept],
                     "j": [None if r[2] is None else json.dumps(r[2]) for r in kept]})
        put_assignments(con, rows)

    bounds = Bounds("user", 3, B)
    out = {}
    for heavy in (True, False):
        load(heavy)
        out["D" if heavy else "D'"] = DuckDBEngine(segments=PLACEMENT).sketch(con, bounds).mass.astype(np.int64)
        per_segment = []
        for term in PLACEMENT.terms:   # one clip per segment: the unsegmented sketch filtered to the segment
            audited = audit_statement("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace',"
                                      " privacy_unit_column = user_id, contribution_bound = 2) atom_id, "
                                      "DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) WHERE "
                                      f"{term.sql(dialect='duckdb')} GROUP BY atom_id")
            per_segment.append(DuckDBEngine(audited.filters).sketch(con, bounds).mass)
        out[("broken D" if heavy else "broken D'")] = np.concatenate(per_segment).astype(np.int64)
    con.close()
    return out


@pytest.fixture(scope="module")
def sketches(tmp_path_factory):
    return neighbours(str(tmp_path_factory.mktemp("audit_segments")))


def test_the_neighbours_are_the_sql_s_and_realise_the_bound(sketches):
    """V = D − D′ is non-negative with L1 = ⌊B·2^24⌋ up to one unit per coordinate, spread
    over every segment, within the d_in each measurement is charged at; a clip per
    segment would have moved the sketch by about 3B."""
    V = sketches["D"] - sketches["D'"]
    bound = fixed_bound(B)
    m = len(ATOMS)
    assert (V >= 0).all() and bound - len(V) < V.sum() <= bound
    assert all(V[s * m + 1] > 0 for s in range(len(LABELS)))       # the user is in every segment
    d_in = request("gaussian").d_in
    assert V.sum() <= d_in.l1 and math.sqrt(float((V.astype(float) ** 2).sum())) <= d_in.l2 and V.max() <= d_in.linf
    broken = sketches["broken D"] - sketches["broken D'"]
    assert broken.sum() > 3.9 * bound                             # 4 segments × B


def _replicated(part, m_total: int, kind: str):
    domain = dp.vector_domain(dp.atom_domain(T=dp.i64), size=m_total * REPLICAS)
    if kind == "laplace":
        return dp.m.make_laplace(domain, dp.l1_distance(T=dp.i64), scale=part.noise_scale)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(
        dp.m.make_gaussian(domain, dp.l2_distance(T=dp.i64), scale=part.noise_scale)), part.delta)


def additive_check(kind: str, part, V: np.ndarray) -> tuple[Check, int]:
    """The check for a laplace / gaussian part on the difference vector V (module docstring)."""
    support = np.flatnonzero(V)
    if kind == "laplace":
        a = math.exp(-1.0 / part.noise_scale)
        p_d = (1 / (1 + a)) ** len(support)
        p_d2 = float(np.prod([dlap_sf(int(V[j]), part.noise_scale) for j in support]))
        event = lambda z: np.all(z[:, support] >= V[support], axis=1)
        return Check("pure", part.epsilon, 0.0, event, p_d, p_d2), N["laplace"]
    sep = math.sqrt(float((V.astype(float) ** 2).sum()))
    unit = V.astype(float) / sep
    eps = float(gaussian_profile(part, len(V)).epsilon(PROFILE_DELTA))
    kappa = part.d_in / part.noise_scale
    tau_alt = DESIGN_NOISE_RATIO * sep / kappa
    t = sep / 2 + tau_alt ** 2 * eps / sep
    event = lambda z: z @ unit >= t
    return Check("profile", eps, PROFILE_DELTA, event, dgauss_sf(t, sep, part.noise_scale),
                 dgauss_sf(t, 0.0, part.noise_scale)), N["gaussian"]


def run_additive(kind: str, V: np.ndarray, base: np.ndarray) -> Result:
    mech = make_mechanism(request(kind), len(ATOMS))
    (part,) = mech.parts
    assert mech.size == len(V) and part.d_in == (request(kind).d_in.l1 if kind == "laplace" else request(kind).d_in.l2)
    check, n = additive_check(kind, part, V)
    meas = _replicated(part, len(V), kind)
    counts = []
    for x in (base + V, base):
        xs = [int(v) for v in np.tile(x, REPLICAS)]
        k, left = 0, n
        while left > 0:
            z = (np.asarray(meas(xs), dtype=np.int64).reshape(REPLICAS, len(V)) - base)[:left]
            k += int(np.count_nonzero(check.event(z)))
            left -= len(z)
        counts.append(k)
    return Result(f"{kind}/segmented user(B=2)/add_drop", check.name, n, counts[0], counts[1], check.epsilon,
                  check.delta, check.p_d, check.p_d2)


def selection_setup(V: np.ndarray):
    """The per-segment selection part, and two-atom bases per segment where the user's mass
    on atom 1 flips the winner: D′_s = (c + V_s − 1, c), D_s = (c + V_s − 1, c + V_s)."""
    mech = make_mechanism(request("private_topL"), len(ATOMS))
    select = mech.parts[0]
    assert select.per_segment == len(LABELS) and select.measurement.input_domain.size == len(ATOMS)
    c = 3 * SCALE
    m = len(ATOMS)
    d, d2 = [], []
    for s in range(len(LABELS)):
        v = int(V[s * m + 1])
        assert V[s * m] == 0
        d2 += [c + v - 1, c]
        d += [c + v - 1, c + v]
    scale = select.noise_scale
    p_d = math.prod(exp_select_p1(d[2 * s], d[2 * s + 1], scale) for s in range(len(LABELS)))
    p_d2 = math.prod(exp_select_p1(d2[2 * s], d2[2 * s + 1], scale) for s in range(len(LABELS)))
    return select, Check("select", select.epsilon, 0.0, None, p_d, p_d2), d, d2


def run_selection(V: np.ndarray) -> Result:
    select, check, d, d2 = selection_setup(V)
    m = len(ATOMS)

    def every_segment_admits_atom_1(x: list[int]) -> bool:   # what Mechanism.apply runs, segment by segment
        return all(1 in select.measurement(x[s * m:(s + 1) * m]) for s in range(len(LABELS)))

    k_d = sum(every_segment_admits_atom_1(d) for _ in range(N["select"]))
    k_d2 = sum(every_segment_admits_atom_1(d2) for _ in range(N["select"]))
    return Result("private_topL/segmented per segment/add_drop", "select", N["select"], k_d, k_d2, check.epsilon, 0.0,
                  check.p_d, check.p_d2)


@pytest.mark.parametrize("kind", ["laplace", "gaussian", "private_topL"])
def test_audit_does_not_refute_the_segmented_release(sketches, kind):
    V = sketches["D"] - sketches["D'"]
    result = run_selection(V) if kind == "private_topL" else run_additive(kind, V, sketches["D'"])
    print(result)
    assert not result.rejected, f"empirical DP violation: {result}"
    if kind == "private_topL":   # the designed pair is the tight one: its exact ratio is e^ε_sel
        assert math.log(result.p_d / result.p_d2) == pytest.approx(result.epsilon, rel=1e-6)


@pytest.mark.parametrize("kind", ["laplace", "gaussian", "private_topL"])
def test_audit_rejects_one_clip_per_segment(sketches, kind):
    """A clip per segment (what separate per-segment sketches compute) charged as one release:
    the user moves the sketch by ~4B (2B in L2), and the audit must say so."""
    V = sketches["broken D"] - sketches["broken D'"]
    if kind == "private_topL":
        _, check, _, _ = selection_setup(V)
        n = N["select"]
    else:
        (part,) = make_mechanism(request(kind), len(ATOMS)).parts
        check, n = additive_check(kind, part, V)
    p_pass = false_pass_probability(check, n)
    assert p_pass <= POWER_FAIL_EACH, f"the audit is too weak against a per-segment clip: P(pass) ≤ {p_pass}"
    result = run_selection(V) if kind == "private_topL" else run_additive(kind, V, sketches["broken D'"])
    print(result)
    assert result.rejected, f"a per-segment clip passed: {result} (P(pass) ≤ {p_pass:.1e})"
