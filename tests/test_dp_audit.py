"""Empirical DP audit of the release mechanisms (security item 11; docs/DP_AUDIT.md).

A falsification test: for each mechanism (laplace, gaussian, private_topL) × unit (record,
user with B = 2) × adjacency (add_drop, replace), the mechanism is built exactly as a
release builds it, fed two *worst-case neighbouring* integer sketches D, D' (derived from
the per-unit contribution bound the sketch enforces, not from the mechanism's d_in), and
a distinguishing event E is counted over OpenDP's own noise. With Clopper–Pearson bounds
p_lo(D) ≤ P[E|D] and p_hi(D') ≥ P[E|D'] (each holding with probability ≥ 1 − ALPHA) the
audit computes

    ε_lb = ln((p_lo(D) − δ) / p_hi(D'))

and rejects ("violation") when ε_lb > ε, i.e. when P[E|D] ≤ e^ε P[E|D'] + δ is refuted.

What is checked per cell (each check: one claim (ε, δ), one event):
- laplace: the part's (ε, 0). Event: noisy value ≥ the larger sketch's value (add_drop),
  or that and the other coordinate ≤ its smaller value (replace). For the discrete
  Laplace the likelihood ratio of these events is exactly e^ε.
- gaussian: (a) `profile` — a point (ε', δ_E = 0.05) of the privacy profile OpenDP
  certifies for the measurement at its d_in (the zCDP→(ε,δ) curve whose δ = 1e-6 point is
  the charged cost; the test first checks the measurement is that chain at that scale);
  (b) `claim` — the charged (ε, δ) itself. Events: a threshold on the noisy value
  (add_drop) or on the difference of the two moved coordinates (replace), placed where
  the likelihood ratio of a mechanism with half the noise would be e^ε' (resp. e^ε).
- private_topL (L = 1): `select` — the selection part's (ε_sel, 0), event "atom 1 admitted" on
  two-atom sketches where the neighbour flips the non-private winner (gap Δ − 1 under
  add_drop, 2Δ − 1 under replace: the pairs that make the exponential-noise selection's
  ratio e^ε_sel up to 1e-7); `values-profile` / `values-claim` — the value part, as gaussian.
  Each part is audited against its own charged cost; the release's cost is their sum.

Sampling. The selection is sampled literally (one call of the selection measurement on
the 2-atom sketch per sample: `Mechanism.apply` admits exactly what it returns). The
additive measurements are sampled with replicas: one call on an m-atom sketch built of
R = m/block copies of the neighbouring block gives R samples, because OpenDP draws i.i.d.
noise per coordinate, independent of the input, so coordinate block r of that call has
the law the block has under the neighbouring pair that differs in block r only. (The
bench cross-checks this against literal m = 2 sampling.)

Error budget (the test can fail on a correct mechanism only if a confidence bound fails):
24 checks in the 12 audit cells × 2 one-sided bounds × ALPHA = 1e-8 → ≤ 4.8e-7 (union
bound; the bounds need no independence). Power tests (below) each assert a computed
probability of a false pass ≤ POWER_FAIL_EACH = 4e-8; 12 of them → ≤ 4.8e-7. The whole
file fails falsely with probability ≤ 9.6e-7 < 1e-6.

Power. Two broken variants of every mechanism (4 power cells each), audited by the same code: the same
mechanism with half its noise scale (claiming the original cost), and a mechanism
calibrated at record level (d_in for B = 1) fed user-level neighbours with B = 2. The
audit must reject them; the chance it does not is computed exactly from binomial
distributions at the variants' true event probabilities (closed forms for the discrete
Laplace and the exponential-noise selection; the normal approximation of the discrete
Gaussian, exact to ~1/σ² ≈ 1e-15 at these σ) and asserted ≤ 4e-8.

What it can and cannot detect (exact power, bench section 4): at CI sizes it rejects with
probability ≈ 1 a Laplace mechanism whose true ε is ≥ 1.2× the claim and a selection whose
true ε_sel is ≥ 1.5× the claim; the gaussian profile check rejects noise ≤ 0.55× the
calibrated σ (0.6× at the bench's sizes); the `claim` check at the charged (ε, 1e-6) point
only catches gross failures (noise ≤ ~1/3 of σ): δ-scale violations need ~10^6+ samples,
hence the profile check. Smaller violations, violations visible only in other events
(other sketches, L > 1 selection rounds, the joint output of selection and values) and
failures of OpenDP's sampler that leave these events' probabilities unchanged are out of
its reach. ε per mechanism: laplace 1, gaussian 2, private_topL 4 (ε_sel = ε_val = 2).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

# ============================================================================ adapter
# The only lines that touch project objects.
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.request import SCALE, ReleaseRequest, fixed_bound

dp.enable_features("contrib")


def build(mechanism: str, unit: str, adjacency: str, B: float, epsilon: float, delta: float, L: int, m: int):
    """The Mechanism a release with these public parameters uses over an m-atom sketch.
    Must expose `.parts[i].measurement / .d_in / .epsilon / .delta / .noise_scale` with
    parts (noise,) for laplace/gaussian and (selection, values) for private_topL."""
    request = ReleaseRequest(mechanism=mechanism, epsilon=epsilon, delta=delta if mechanism != "laplace" else None,
                             unit=unit, adjacency=adjacency, B=B if unit == "user" else None, L=L,
                             selection_fraction=0.5 if mechanism == "private_topL" else None)
    return make_mechanism(request, m=m)


def unit_bound(unit: str, B: float) -> int:
    """The per-unit L1 bound the sketch enforces, in fixed point (docs/DESIGN.md §1: 2^24 per record,
    floor(B·2^24) per user): the largest move of one coordinate by one unit."""
    bound = SCALE if unit == "record" else fixed_bound(B)
    assert bound == (1 << 24 if unit == "record" else math.floor(B * (1 << 24)))
    return bound
# ============================================================================ end of adapter

MECHANISMS = ("laplace", "gaussian", "private_topL")
UNITS = ("record", "user")
ADJACENCIES = ("add_drop", "replace")
USER_B = 2.0
# Gaussian noise at ε = 1 needs ~3× the samples of ε = 2 for the same power (σ/Δ2 = 4.5 vs
# 2.4); the calibration code is the same at every ε. private_topL: ε_sel = ε_val = 2.
EPSILON = {"laplace": 1.0, "gaussian": 2.0, "private_topL": 4.0}
DELTA = 1e-6

ALPHA = 1e-8                # each one-sided Clopper–Pearson bound
N_AUDIT_CHECKS = 24         # 4 laplace + 4×2 gaussian + 4×3 private_topL
POWER_FAIL_EACH = 4e-8      # each power test: P(the broken variant passes) ≤ this
N_POWER_TESTS = 12
assert N_AUDIT_CHECKS * 2 * ALPHA + N_POWER_TESTS * POWER_FAIL_EACH < 1e-6

PROFILE_DELTA = 0.05        # δ_E of the gaussian profile check
DESIGN_NOISE_RATIO = 0.5    # events placed for a mechanism with this fraction of the noise
CLAIM_DESIGN_RATIO = 1 / 3  # ... and for the charged-(ε, δ) check

# CI sample sizes (samples per sketch); the bench runs larger ones
N_CI = {"laplace": 20_000, "gaussian": 16_000, "select": 3_000}
REPLICA_BLOCKS = 10_000     # neighbouring blocks per call of an additive measurement


# ============================================================================ statistics

def cp_lower(k: int, n: int, alpha: float = ALPHA) -> float:
    """Clopper–Pearson: P(p_lo > p) ≤ alpha."""
    return 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))


def cp_upper(k: int, n: int, alpha: float = ALPHA) -> float:
    """Clopper–Pearson: P(p_hi < p) ≤ alpha."""
    return 1.0 if k == n else float(stats.beta.isf(alpha, k + 1, n - k))


def epsilon_lower_bound(k_d: int, k_d2: int, n: int, delta: float, alpha: float = ALPHA) -> float:
    """ln((p_lo(D) − δ) / p_hi(D')): any mechanism with P[E|D] ≤ e^ε P[E|D'] + δ has ε ≥ this
    unless one of the two bounds failed (probability ≤ 2·alpha)."""
    num = cp_lower(k_d, n, alpha) - delta
    return math.log(num / cp_upper(k_d2, n, alpha)) if num > 0 else -math.inf


@dataclass(frozen=True)
class Check:
    """One claim (ε, δ) tested with one event, and — for power computations and the bench —
    the event's exact probabilities under the mechanism actually sampled (None if unknown)."""

    name: str
    epsilon: float
    delta: float
    event: Callable              # additive: z (R × block, noisy − base) → bool[R]; selection: output → bool
    p_d: float | None = None
    p_d2: float | None = None


@dataclass
class Result:
    cell: str
    check: str
    n: int
    k_d: int
    k_d2: int
    epsilon: float
    delta: float
    p_d: float | None = None
    p_d2: float | None = None

    @property
    def eps_lb(self) -> float:
        return epsilon_lower_bound(self.k_d, self.k_d2, self.n, self.delta)

    @property
    def rejected(self) -> bool:
        return self.eps_lb > self.epsilon

    @property
    def verdict(self) -> str:
        return "VIOLATION" if self.rejected else "ok"

    def __str__(self) -> str:
        return (f"{self.cell} [{self.check}] n={self.n} p̂(D)={self.k_d / self.n:.4f} p̂(D')={self.k_d2 / self.n:.4f} "
                f"ε_lb={self.eps_lb:.3f} vs ε={self.epsilon:.4f} (δ={self.delta:g}) → {self.verdict}")


def false_pass_probability(check: Check, n: int, alpha: float = ALPHA) -> float:
    """P(the audit does not reject), for a mechanism whose true event probabilities are
    check.p_d > check.p_d2: with k_lo = the β-quantile of Bin(n, p_d) and k_hi the
    (1−β)-quantile of Bin(n, p_d2), the audit rejects whenever k_D ≥ k_lo and k_D' ≤ k_hi
    (both CP bounds are monotone in the counts) if it rejects at (k_lo, k_hi); so
    P(pass) ≤ P(K_D < k_lo) + P(K_D' > k_hi). Returns 1.0 if it does not reject there."""
    beta = POWER_FAIL_EACH / 8     # ≤ 2 required checks per power test × 2 tails, each ≤ 2β
    k_lo = int(stats.binom.ppf(beta, n, check.p_d))
    k_hi = int(stats.binom.isf(beta, n, check.p_d2))
    if epsilon_lower_bound(k_lo, k_hi, n, check.delta, alpha) <= check.epsilon:
        return 1.0
    return float(stats.binom.cdf(k_lo - 1, n, check.p_d) + stats.binom.sf(k_hi, n, check.p_d2))


def reject_probability(epsilon: float, delta: float, p_d: float, p_d2: float, n: int, alpha: float = ALPHA) -> float:
    """The exact probability that the audit rejects (ε, δ) when the event's true probabilities
    are p_d, p_d2 (n samples each; counts outside ±12 sd, mass < 1e-30, are ignored)."""
    def window(p):
        sd = math.sqrt(n * p * (1 - p)) + 1
        return np.arange(max(0, int(n * p - 12 * sd)), min(n, int(n * p + 12 * sd)) + 1)

    a, b = window(p_d), window(p_d2)
    lo = np.where(a > 0, stats.beta.ppf(alpha, np.maximum(a, 1), n - a + 1), 0.0) - delta
    hi = np.where(b < n, stats.beta.isf(alpha, b + 1, np.maximum(n - b, 1)), 1.0)
    # for each count a under D: the largest count b under D' that still rejects (hi is increasing)
    idx = np.searchsorted(math.exp(epsilon) * hi, np.maximum(lo, 0.0), side="left") - 1
    cdf_b = stats.binom.cdf(b, n, p_d2)
    p_b = np.where(idx >= 0, cdf_b[np.clip(idx, 0, None)], 0.0)
    p_b = np.where(lo > 0, p_b, 0.0)
    return float(np.sum(stats.binom.pmf(a, n, p_d) * p_b))


# ============================================================================ exact event probabilities

def dlap_sf(k: int, b: float) -> float:
    """P[N ≥ k] for OpenDP's discrete Laplace, P(x) ∝ exp(−|x|/b): α^k/(1+α) for k ≥ 0."""
    a = math.exp(-1.0 / b)
    return a ** k / (1 + a) if k >= 0 else 1.0 - a ** (1 - k) / (1 + a)


def dgauss_sf(k: int, mean: float, tau: float) -> float:
    """P[mean + N ≥ k] for an integer N of variance τ² close to a discrete Gaussian
    (continuity-corrected normal; error ~1/τ² at τ ≥ 10^7)."""
    return float(stats.norm.sf((k - 0.5 - mean) / tau))


def exp_select_p1(a: int, b: int, s: float) -> float:
    """P[atom 1 wins] of report-noisy-max with Exp(s) noise (permute-and-flip) on scores (a, b)."""
    return 0.5 * math.exp(-(a - b) / s) if b <= a else 1.0 - 0.5 * math.exp(-(b - a) / s)


# ============================================================================ cells

@dataclass(frozen=True)
class Cell:
    mechanism: str
    unit: str
    adjacency: str
    B: float = USER_B
    build_unit: str | None = None    # broken variant: calibrate for another unit ...
    build_B: float | None = None     # ... and B
    noise_factor: float = 1.0        # broken variant: sample with this fraction of the noise

    @property
    def name(self) -> str:
        s = f"{self.mechanism}/{self.unit}" + (f"(B={self.B:g})" if self.unit == "user" else "") + f"/{self.adjacency}"
        if self.noise_factor != 1.0:
            s += f" BROKEN noise×{self.noise_factor:g}"
        if self.build_unit is not None:
            s += f" BROKEN calibrated {self.build_unit}"
            if self.build_unit == "user":
                s += f"(B={self.build_B:g})"
        return s

    @property
    def shift(self) -> int:
        """Δ: how far one unit moves one coordinate (the sketch's own bound, docs/DESIGN.md §1/§2)."""
        return unit_bound(self.unit, self.B)

    def mechanism_for(self, m: int):
        unit = self.build_unit or self.unit
        B = self.build_B if self.build_B is not None else self.B
        return _build_cached(self.mechanism, unit, self.adjacency, B, EPSILON[self.mechanism], DELTA, 1, m)


@functools.lru_cache(maxsize=None)
def _build_cached(*args):
    return build(*args)


def _base(m: int) -> np.ndarray:
    """A non-trivial base sketch (the other units' mass); additive noise makes it irrelevant."""
    j = np.arange(m, dtype=np.int64)
    return (3 + j % 5) * SCALE + 17 * j


def _half_noise(kind: str, part, m: int, factor: float, k: int = 1):
    """The same OpenDP constructor as the part, at factor × its scale (a broken variant)."""
    domain = dp.vector_domain(dp.atom_domain(T=dp.i64), size=m)
    scale = part.noise_scale * factor
    if kind == "laplace":
        return dp.m.make_laplace(domain, dp.l1_distance(T=dp.i64), scale=scale)
    if kind == "gaussian":
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(
            dp.m.make_gaussian(domain, dp.l2_distance(T=dp.i64), scale=scale)), part.delta)
    metric = part.measurement.input_metric
    return dp.m.make_noisy_top_k(domain, metric, dp.max_divergence(), k=k, scale=scale)


def gaussian_profile(part, m: int):
    """The privacy profile OpenDP certifies for a gaussian part at its d_in: the part must be
    make_fix_delta(make_zCDP_to_approxDP(make_gaussian(scale)), δ) — checked through the maps
    at three distances — and the profile is the inner measurement's map at the part's d_in."""
    domain = dp.vector_domain(dp.atom_domain(T=dp.i64), size=m)
    inner = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(domain, dp.l2_distance(T=dp.i64), scale=part.noise_scale))
    outer = dp.c.make_fix_delta(inner, part.delta)
    for d in (part.d_in, 2 * part.d_in, max(1, part.d_in // 3)):
        assert tuple(map(float, outer.map(d))) == tuple(map(float, part.measurement.map(d))), \
            "the gaussian part is not the zCDP→(ε,δ) chain at its noise scale: update gaussian_profile"
    return inner.map(part.d_in)


def additive_checks(cell: Cell, kind: str, part, m: int, sampled_scale: float, which: str = "") -> list[Check]:
    """Checks and events for a laplace / gaussian part. z = noisy − base per block; D's block
    is (Δ,) or (Δ, 0), D′'s (0,) or (0, Δ)."""
    d = cell.shift
    replace = cell.adjacency == "replace"
    if kind == "laplace":
        if replace:
            ev = lambda z: (z[:, 0] >= d) & (z[:, 1] <= 0)  # noqa: E731
            p_d, p_d2 = dlap_sf(0, sampled_scale) ** 2, dlap_sf(d, sampled_scale) ** 2
        else:
            ev = lambda z: z[:, 0] >= d  # noqa: E731
            p_d, p_d2 = dlap_sf(0, sampled_scale), dlap_sf(d, sampled_scale)
        return [Check("pure", part.epsilon, 0.0, ev, p_d, p_d2)]

    # gaussian: project the block on the direction D − D'; means mu_d, mu_d2, std tau
    sep = 2 * d if replace else d
    mu_d, mu_d2 = (d, -d) if replace else (d, 0)
    kappa = part.d_in / part.noise_scale      # the distinguishability Δ2/σ the calibration allows
    tau_true = sampled_scale * (math.sqrt(2) if replace else 1.0)
    proj = (lambda z: z[:, 0] - z[:, 1]) if replace else (lambda z: z[:, 0])
    profile = gaussian_profile(part, m)
    eps_profile = float(profile.epsilon(PROFILE_DELTA))
    checks = []
    for name, eps, delta, ratio in ((f"{which}profile", eps_profile, PROFILE_DELTA, DESIGN_NOISE_RATIO),
                                    (f"{which}claim", part.epsilon, part.delta, CLAIM_DESIGN_RATIO)):
        # where the likelihood ratio is e^eps for a mechanism with `ratio` × the noise the
        # claim allows at this separation (projected std ratio·sep/κ)
        tau_alt = ratio * sep / kappa
        t = math.ceil((mu_d + mu_d2) / 2 + tau_alt ** 2 * eps / sep)
        checks.append(Check(name, eps, delta, (lambda z, t=t: proj(z) >= t),
                            dgauss_sf(t, mu_d, tau_true), dgauss_sf(t, mu_d2, tau_true)))
    return checks


def selection_check(cell: Cell, select, sampled_scale: float) -> tuple[Check, list[int], list[int]]:
    """The selection check on two atoms: D and D' flip the non-private winner (atom 1 in D,
    atom 0 in D'), at the gap where the exponential-noise selection's ratio is e^ε_sel."""
    d, c0 = cell.shift, 3 * SCALE
    if cell.adjacency == "add_drop":   # D = D' + the unit's mass on atom 1; atom 0 leads D' by Δ − 1
        g = d - 1
        x_d2, x_d = [c0 + g, c0], [c0 + g, c0 + d]
    else:                               # the unit moves Δ from atom 0 to atom 1; atom 0 leads D' by 2Δ − 1
        g = 2 * d - 1
        x_d2, x_d = [c0 + g, c0], [c0 + g - d, c0 + d]
    check = Check("select", select.epsilon, 0.0, lambda out: 1 in out,
                  exp_select_p1(*x_d, sampled_scale), exp_select_p1(*x_d2, sampled_scale))
    return check, x_d, x_d2


def sample_additive(meas, block_d: np.ndarray, block_d2: np.ndarray, events, n: int) -> tuple[list[int], list[int]]:
    """Counts of each event in n samples under D and under D' (replicated blocks)."""
    block = len(block_d)
    m = block * REPLICA_BLOCKS
    base = _base(m)
    counts = []
    for blk in (block_d, block_d2):
        x = base + np.tile(blk, REPLICA_BLOCKS)
        xs = [int(v) for v in x]
        k = np.zeros(len(events), dtype=np.int64)
        left = n
        while left > 0:
            z = (np.asarray(meas(xs), dtype=np.int64) - base).reshape(REPLICA_BLOCKS, block)[:left]
            k += [int(np.count_nonzero(e(z))) for e in events]
            left -= len(z)
        counts.append([int(v) for v in k])
    return counts[0], counts[1]


def run_cell(cell: Cell, n_add: int = N_CI["gaussian"], n_lap: int = N_CI["laplace"],
             n_sel: int = N_CI["select"], values: bool = True) -> list[Result]:
    """Build the cell's mechanism as a release does, sample it on D and D', return one Result
    per check (`values=False`: private_topL's selection part only)."""
    d = cell.shift
    block = 2 if cell.adjacency == "replace" else 1
    block_d = np.array([d, 0] if block == 2 else [d], dtype=np.int64)
    block_d2 = np.array([0, d] if block == 2 else [0], dtype=np.int64)
    results: list[Result] = []

    def record(checks, n, k_d, k_d2):
        for c, a, b in zip(checks, k_d, k_d2):
            results.append(Result(cell.name, c.name, n, a, b, c.epsilon, c.delta, c.p_d, c.p_d2))

    m_add = block * REPLICA_BLOCKS
    if cell.mechanism in ("laplace", "gaussian"):
        mech = cell.mechanism_for(m_add)
        (part,) = mech.parts
        meas = part.measurement if cell.noise_factor == 1 else _half_noise(cell.mechanism, part, m_add,
                                                                           cell.noise_factor)
        checks = additive_checks(cell, cell.mechanism, part, m_add, part.noise_scale * cell.noise_factor)
        n = n_lap if cell.mechanism == "laplace" else n_add
        record(checks, n, *sample_additive(meas, block_d, block_d2, [c.event for c in checks], n))
        return results

    # private_topL: the selection part on two atoms (literal), the value part with replicas
    select = cell.mechanism_for(2).parts[0]
    meas = select.measurement if cell.noise_factor == 1 else _half_noise("top_k", select, 2, cell.noise_factor)
    sel, x_d, x_d2 = selection_check(cell, select, select.noise_scale * cell.noise_factor)
    k_d = sum(1 for _ in range(n_sel) if sel.event(meas(x_d)))
    k_d2 = sum(1 for _ in range(n_sel) if sel.event(meas(x_d2)))
    record([sel], n_sel, [k_d], [k_d2])
    if not values:
        return results

    part = cell.mechanism_for(m_add).parts[1]
    meas_v = part.measurement if cell.noise_factor == 1 else _half_noise("gaussian", part, m_add, cell.noise_factor)
    checks = additive_checks(cell, "gaussian", part, m_add, part.noise_scale * cell.noise_factor, "values-")
    record(checks, n_add, *sample_additive(meas_v, block_d, block_d2, [c.event for c in checks], n_add))
    return results


def cell_checks_for_power(cell: Cell, n_add: int = N_CI["gaussian"], n_lap: int = N_CI["laplace"],
                          n_sel: int = N_CI["select"]) -> list[tuple[Check, int]]:
    """The checks a power test requires to reject, with their exact probabilities under the
    broken variant and their sample sizes (no sampling)."""
    m = 2 * REPLICA_BLOCKS if cell.adjacency == "replace" else REPLICA_BLOCKS
    if cell.mechanism in ("laplace", "gaussian"):
        (part,) = cell.mechanism_for(m).parts
        checks = additive_checks(cell, cell.mechanism, part, m, part.noise_scale * cell.noise_factor)
        n = n_lap if cell.mechanism == "laplace" else n_add
        return [(c, n) for c in checks if c.name in ("pure", "profile")]
    select = cell.mechanism_for(2).parts[0]
    sel, _, _ = selection_check(cell, select, select.noise_scale * cell.noise_factor)
    part = cell.mechanism_for(m).parts[1]
    checks = additive_checks(cell, "gaussian", part, m, part.noise_scale * cell.noise_factor, "values-")
    return [(sel, n_sel)] + [(c, n_add) for c in checks if c.name == "values-profile"]


AUDIT_CELLS = [Cell(mech, unit, adj) for mech in MECHANISMS for unit in UNITS for adj in ADJACENCIES]
POWER_CELLS = [c for mech in MECHANISMS for c in (
    Cell(mech, "record", "add_drop", noise_factor=0.5),
    Cell(mech, "user", "replace", noise_factor=0.5),
    Cell(mech, "user", "add_drop", build_unit="record"),
    Cell(mech, "user", "replace", build_unit="record"),
)]
# private_topL: the selection must reject in all four; the value part (the gaussian audit
# again, in the same normalised units) in two of them, to keep CI short.
POWER_VALUES = {POWER_CELLS[8].name, POWER_CELLS[11].name}
assert len(POWER_CELLS) == N_POWER_TESTS
assert sum({"laplace": 1, "gaussian": 2, "private_topL": 3}[c.mechanism] for c in AUDIT_CELLS) == N_AUDIT_CHECKS


# ============================================================================ tests

@pytest.mark.parametrize("cell", AUDIT_CELLS, ids=lambda c: c.name)
def test_audit_does_not_refute_the_mechanism(cell):
    """The release's mechanism passes every check. False failure ≤ 2·ALPHA per check."""
    results = run_cell(cell)
    assert len(results) == {"laplace": 1, "gaussian": 2, "private_topL": 3}[cell.mechanism]
    for r in results:
        print(r)
    bad = [str(r) for r in results if r.rejected]
    assert not bad, "empirical DP violation:\n" + "\n".join(bad)


@pytest.mark.parametrize("cell", POWER_CELLS, ids=lambda c: c.name)
def test_audit_rejects_a_broken_mechanism(cell):
    """Half the noise, or record-level calibration for a B = 2 user-level release: the same
    audit must reject. P(this test fails falsely) ≤ the computed sum asserted ≤ 4e-8."""
    values = cell.mechanism != "private_topL" or cell.name in POWER_VALUES
    required = [(c, n) for c, n in cell_checks_for_power(cell) if values or c.name == "select"]
    p_pass = [false_pass_probability(c, n) for c, n in required]
    assert sum(p_pass) <= POWER_FAIL_EACH, f"the audit is too weak for {cell.name}: P(pass) ≤ {p_pass}"
    results = {r.check: r for r in run_cell(cell, values=values)}
    for r in results.values():
        print(r)
    for c, _ in required:
        assert results[c.name].rejected, f"broken variant passed: {results[c.name]} (P(pass) ≤ {sum(p_pass):.1e})"


def test_neighbours_realise_the_sensitivity():
    """The neighbouring sketches move the coordinates by exactly what the calibration must
    cover (docs/DESIGN.md §2), and the broken 'record calibration' variant really is calibrated at
    half the user-level distance."""
    for cell in AUDIT_CELLS:
        d = cell.shift
        mech = cell.mechanism_for(4)
        if cell.mechanism == "private_topL":
            assert mech.parts[0].d_in == d                                   # Δcoord
            l2 = mech.parts[1].d_in
        else:
            l2 = mech.parts[0].d_in
        if cell.mechanism == "laplace":
            assert l2 == (2 * d if cell.adjacency == "replace" else d)      # Δ1 of (Δ,0)→(0,Δ)
        else:
            assert l2 == (math.isqrt(2 * d * d - 1) + 1 if cell.adjacency == "replace" else d)
    broken = Cell("laplace", "user", "add_drop", build_unit="record")
    assert broken.mechanism_for(4).parts[0].d_in * 2 == broken.shift


def test_exact_probabilities_are_consistent_with_the_claims():
    """The designed events are (near-)tight for the correct mechanisms: the exact ratio of
    the pure events is e^ε (laplace) / within 1e-6 of it (selection), and each (ε, δ)
    check's exact margin is non-negative — a design sanity check, no sampling."""
    for cell in AUDIT_CELLS:
        for check, _ in cell_checks_for_power(cell):
            if check.delta == 0:
                assert math.log(check.p_d / check.p_d2) == pytest.approx(check.epsilon, abs=1e-6)
            else:
                assert check.p_d <= math.exp(check.epsilon) * check.p_d2 + check.delta


def test_clopper_pearson_bounds():
    assert cp_lower(0, 10) == 0.0 and cp_upper(10, 10) == 1.0
    # exact coverage: P(Bin(n, p) ≥ k) at p = cp_lower(k) is alpha
    n, k = 1000, 400
    assert stats.binom.sf(k - 1, n, cp_lower(k, n)) == pytest.approx(ALPHA, rel=1e-6)
    assert stats.binom.cdf(k, n, cp_upper(k, n)) == pytest.approx(ALPHA, rel=1e-6)
    assert epsilon_lower_bound(5, 5, 10, 0.9) == -math.inf


def test_exact_reject_probability_matches_brute_force():
    """reject_probability (the bench's power curves) against the full double sum at small n."""
    n = 200
    k = np.arange(n + 1)
    lo = np.array([cp_lower(a, n) for a in k])
    hi = np.array([cp_upper(b, n) for b in k])
    for eps, delta, p_d, p_d2 in ((1.0, 0.0, 0.5, 0.5 * math.exp(-1.6)), (0.3, 0.05, 0.4, 0.1)):
        rejects = (lo[:, None] - delta > math.exp(eps) * hi[None, :]) & (lo[:, None] > delta)
        for a in (60, 100, 140):   # the matrix is the audit's own decision
            assert list(rejects[a]) == [epsilon_lower_bound(a, b, n, delta) > eps for b in k]
        brute = float(stats.binom.pmf(k, n, p_d) @ rejects @ stats.binom.pmf(k, n, p_d2))
        assert reject_probability(eps, delta, p_d, p_d2, n) == pytest.approx(brute, rel=1e-9, abs=1e-300)
