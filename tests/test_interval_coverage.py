"""The plan's accuracy intervals cover the true masses at their stated rate.

For each mechanism, the real OpenDP mechanism (`make_mechanism`) is applied N times to
one fixed sketch and every release is turned into a plan by `make_plan`, the code that
writes the intervals people read. A release *covers* when every interval of its plan
(all admitted atoms at once: the family-wise statement the plan makes) contains the
atom's true mass.

The test. H0: the family-wise coverage p is at least the stated confidence c = 0.95.
With X covering releases out of N, the test fails when P(Binom(N, c) ≤ X) ≤ 2.5e-7, i.e.
X ≤ k_crit. If the intervals are valid (p ≥ c) it fails with probability
P(Binom(N, p) ≤ k_crit) ≤ P(Binom(N, c) ≤ k_crit) ≤ 2.5e-7 per mechanism. N = 3000:
k_crit = 2786 (coverage 0.9287); the test catches a true coverage of 0.93 with probability
0.40 and of 0.92 with probability 0.96.

Power check on the same draws: intervals of half the width must fail the same test. Its
chance of passing them is computed before the draws: for private_topL, whose values carry
noise independent of the selection, the plan's L half-width intervals all cover with
probability exactly P(|Z| ≤ h/2)^L; for laplace and gaussian, whose admitted set depends on
the same noise, the check is on all m coordinates of the noisy vector (what the Bonferroni
half-width speaks of), which all cover with probability P(|X| ≤ h/2)^m (independent
coordinates). With q an upper bound of that probability (one fixed-point unit added to h/2),
the check fails falsely with probability ≤ P(Binom(N, q) > k_crit), asserted ≤ 8e-8.

Error budget: 3 × 2.5e-7 + 3 × 8e-8 = 9.9e-7 ≤ 1e-6 for the module.

Measured (N = 3000 each): family-wise coverage laplace 0.981, gaussian 0.986, private_topL
0.952; at half the width (the power check's family) 0.287, 0.022 and 0.168.
Laplace and Gaussian are conservative by design: their
half-width is a Bonferroni statement over all m coordinates (the admitted set is chosen
by the same noisy values), while a plan shows only L of them.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from dpspin_sql.atoms import Atom
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.plan import make_plan
from dpspin_sql.request import SCALE, ReleaseRequest

N = 3000
CONFIDENCE = 0.95
FALSE_FAILURE = 2.5e-7      # each mechanism's coverage test
POWER_FAIL = 8e-8           # each power check: P(the half-width intervals pass) ≤ this
assert 3 * FALSE_FAILURE + 3 * POWER_FAIL <= 1e-6
M = 30
# a fixed sketch: a clear head, near-ties, a long tail and empty atoms (mass units)
TRUE_MASS = [120.0, 118.5, 96.0, 80.25, 80.0, 64.0, 50.5, 49.75, 41.0, 40.0, 39.5, 30.0, 22.0, 18.5, 15.0,
             12.0, 9.5, 7.0, 5.0, 4.0, 3.0, 2.5, 2.0, 1.0, 0.5, 0.25, 0.0, 0.0, 0.0, 0.0]
SKETCH = np.array([int(round(x * SCALE)) for x in TRUE_MASS], dtype=np.int64)
ATOMS = [Atom(i, f"atom {i}", "") for i in range(M)]

REQUESTS = {
    "laplace": ReleaseRequest(mechanism="laplace", epsilon=1.0, unit="record", L=10,
                              interval_confidence=CONFIDENCE),
    "gaussian": ReleaseRequest(mechanism="gaussian", epsilon=1.0, delta=1e-6, unit="user", B=1.0, L=10,
                               interval_confidence=CONFIDENCE),
    "private_topL": ReleaseRequest(mechanism="private_topL", epsilon=1.0, delta=1e-6, unit="record", L=10,
                                   selection_fraction=0.5, interval_confidence=CONFIDENCE),
}


def critical_count(n: int, c: float, alpha: float) -> int:
    """The largest k with P(Binom(n, c) ≤ k) ≤ alpha: X ≤ k rejects 'coverage ≥ c'."""
    k = int(binom.ppf(alpha, n, c))
    while binom.cdf(k, n, c) > alpha:
        k -= 1
    return k


def test_the_test_is_calibrated_and_has_power():
    k = critical_count(N, CONFIDENCE, FALSE_FAILURE)
    assert k == 2786
    assert binom.cdf(k, N, CONFIDENCE) <= FALSE_FAILURE             # stated false-failure probability
    assert binom.cdf(k, N, 0.93) > 0.39 and binom.cdf(k, N, 0.92) > 0.96   # power against slightly short intervals


def half_width_coverage_bound(mech, half: float) -> float:
    """An upper bound on the chance that one release's half-width intervals all cover (the
    power check's family: the L admitted values of private_topL, all m coordinates otherwise)."""
    import math

    from scipy.stats import norm

    a = half / 2 * mech.scale + 1.0                  # fixed-point units, one unit of slack
    t = mech.noise_scale * mech.scale
    if mech.noise_kind == "laplace":                 # P(|X| ≤ a) = 1 − 2α^(⌊a⌋+1)/(1+α), α = e^(−1/t)
        alpha = math.exp(-1.0 / t)
        p1 = 1.0 - 2.0 * alpha ** (math.floor(a) + 1) / (1.0 + alpha)
    else:
        p1 = float(2 * norm.cdf(a / t) - 1)
    family = mech.request.L if mech.request.mechanism == "private_topL" else mech.m
    return p1 ** family


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", list(REQUESTS))
def test_family_wise_coverage(mechanism):
    request = REQUESTS[mechanism]
    mech = make_mechanism(request, M)
    k = critical_count(N, CONFIDENCE, FALSE_FAILURE)
    half = make_plan(mech.apply(SKETCH), mech, ATOMS, "sha256:test").interval_half_width
    q = half_width_coverage_bound(mech, half)
    assert binom.sf(k, N, q) <= POWER_FAIL, (q, binom.sf(k, N, q))   # the power check's false failure
    covered = covered_half = 0
    truth_all = np.array(TRUE_MASS)
    for _ in range(N):
        seen: list = []
        plan = make_plan(mech.apply(SKETCH, observe=seen.append), mech, ATOMS, "sha256:test")
        assert plan.interval_half_width == half
        assert plan.interval_confidence == CONFIDENCE and len(plan.atoms) == request.L
        truth = [TRUE_MASS[a.atom_id] for a in plan.atoms]
        assert all(a.interval[0] == a.noisy_mass - half and a.interval[1] == a.noisy_mass + half for a in plan.atoms)
        covered += all(a.interval[0] <= t <= a.interval[1] for a, t in zip(plan.atoms, truth))
        if mechanism == "private_topL":
            covered_half += all(abs(a.noisy_mass - t) <= half / 2 for a, t in zip(plan.atoms, truth))
        else:
            (noisy,) = seen
            covered_half += bool(np.all(np.abs(noisy - truth_all) <= half / 2))
    report = (f"{mechanism}: half-width {half:.3f} (noise scale {mech.noise_scale:.3f}); family-wise coverage "
              f"{covered}/{N} = {covered / N:.4f} (critical count {k}); half-width intervals {covered_half}/{N} = "
              f"{covered_half / N:.4f}")
    print(report)
    assert covered > k, report                       # fails with probability ≤ 1e-6 when coverage ≥ 0.95
    assert covered_half <= k, report                 # the same test rejects intervals of half the width
    #                                                  (fails falsely with probability ≤ POWER_FAIL)
