"""The plan-release mechanisms: OpenDP measurements over the fixed-point sketch (docs/DESIGN.md §3).

Pure: a `Mechanism` is built from a `ReleaseRequest` and the dictionary size m only;
its cost is what the OpenDP privacy maps say at the request's fixed-point d_in
(docs/DESIGN.md §2); applying it to a sketch draws OpenDP noise and returns the admitted
atoms and their noisy masses. No I/O and no ledger here — `release.py` charges the
ledger before it applies a mechanism.

Noise is integer (discrete Laplace / discrete Gaussian) on the int64 sketch in units of
2^-S, so no floating-point arithmetic ever touches the protected values.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

import dpspin_sql.opendp_lite as dp
from dpspin_sql import mechanism_kinds
from dpspin_sql.errors import BadInput
from dpspin_sql.fixed_point import SCALE
from dpspin_sql.request import ReleaseRequest


@dataclass(frozen=True)
class MeasurementPart:
    """One OpenDP measurement of a release, with the d_in its cost is evaluated at."""

    name: str
    measurement: dp.Measurement
    d_in: int
    epsilon: float
    delta: float
    noise_scale: float  # the OpenDP `scale` argument, fixed-point units
    # > 0: the measurement is applied to each of this many segments' sub-vectors, charged
    # once by the parallel argument of docs/DESIGN.md §11 (private top-L per segment)
    per_segment: int = 0

    def audit_record(self) -> dict:
        record = {"name": self.name, "d_in": self.d_in, "epsilon": self.epsilon, "delta": self.delta,
                  "scale": self.noise_scale,
                  "input_metric": str(self.measurement.input_metric),
                  "output_measure": str(self.measurement.output_measure),
                  "measurement": dp.serialize(self.measurement)}
        if self.per_segment:
            record["per_segment"] = self.per_segment
        return record


@dataclass
class NoisyRelease:
    """What leaves the mechanism: admitted atom positions in rank order and their noisy masses."""

    admitted: list[int]
    noisy_mass: list[float]


@dataclass(frozen=True)
class Mechanism:
    """The calibrated OpenDP measurement(s) of one request over an m-atom sketch."""

    request: ReleaseRequest
    m: int
    parts: tuple[MeasurementPart, ...]
    noise_scale: float            # of the released values, in mass units
    noise_kind: str               # "laplace" | "gaussian"
    scale: int = SCALE
    extra: dict = field(default_factory=dict)

    @property
    def size(self) -> int:
        """The sketch's coordinates: m, or S·m for a segmented release (docs/DESIGN.md §11)."""
        return self.m * self.request.n_segments

    @property
    def admitted_values(self) -> int:
        """How many values a plan releases: L, or L per segment."""
        segments = self.request.segments
        return self.request.L * (segments.S if segments is not None and segments.admission == "per_segment" else 1)

    @property
    def cost(self) -> tuple[float, float]:
        """Basic sequential composition of the parts' OpenDP maps."""
        return math.fsum(p.epsilon for p in self.parts), math.fsum(p.delta for p in self.parts)

    def check(self, request: ReleaseRequest, m: int, scale: int = SCALE) -> None:
        """Refuse a mechanism that is not what `request` calls for over an m-atom sketch in
        units of 1/scale: a caller-supplied (cached) mechanism must carry the request, the
        fixed-point scale and the request's d_in (docs/DESIGN.md §2), and its charged cost
        must be what each measurement's own map says at that d_in."""
        if self.request != request or self.m != m or self.scale != scale or scale != SCALE:
            raise BadInput("the mechanism was built for another request or fixed-point scale")
        d_in = request.d_in
        expected = {"laplace": d_in.l1, "gaussian": d_in.l2, "noisy_top_k": d_in.linf}
        for p in self.parts:
            out = p.measurement.map(p.d_in)
            eps, delta = out if isinstance(out, tuple) else (out, 0.0)
            if p.d_in != int(expected[p.name]) or (float(eps), float(delta)) != (p.epsilon, p.delta):
                raise BadInput(f"the {p.name} measurement does not match its d_in or its charged cost")

    def audit_records(self) -> list[dict]:
        return [p.audit_record() for p in self.parts]

    def apply(self, mass: np.ndarray, observe: Callable[[np.ndarray], None] | None = None) -> NoisyRelease:
        """Draw the noise (OpenDP's CSPRNG) and admit L atoms. `mass` is the int64 sketch.

        `observe`, for experiments inside the curator, receives the full noisy vector of a
        full-sketch mechanism (in mass units) before the non-admitted values are dropped;
        it never reaches a plan.
        """
        mass = np.asarray(mass)
        if mass.dtype != np.int64 or mass.shape != (self.size,):
            raise ValueError(f"sketch must be int64 of length {self.size}")
        x = [int(v) for v in mass]
        L = self.request.L
        # segments whose coordinates are admitted apart: the top L of each (per_segment), or
        # one block of all S·m coordinates (an unsegmented release, or joint admission)
        segments = self.request.segments
        blocks = self.request.n_segments if segments is not None and segments.admission == "per_segment" else 1
        width = self.size // blocks
        if mechanism_kinds.selects_privately(self.request.mechanism):
            select, values = (p.measurement for p in self.parts)
            admitted = [b * width + int(i) for b in range(blocks) for i in select(x[b * width:(b + 1) * width])]
            noisy_all = values(x)  # independent per coordinate; only admitted ones leave this frame
        else:
            noisy_all = self.parts[0].measurement(x)
            noisy_vec = np.array(noisy_all, dtype=np.int64)
            admitted = [b * width + i for b in range(blocks) for i in top_l(noisy_vec[b * width:(b + 1) * width], L)]
            if observe is not None:
                observe(np.asarray(noisy_all, dtype=np.float64) / self.scale)
        noisy = {i: noisy_all[i] / self.scale for i in admitted}
        del noisy_all
        order = sorted(admitted, key=lambda i: (-noisy[i], i))
        return NoisyRelease(admitted=order, noisy_mass=[noisy[i] for i in order])


def top_l(values: np.ndarray, L: int) -> list[int]:
    """Top_L with the plan's tie-break: higher value first, then lower index (exact on int64)."""
    return sorted(range(len(values)), key=lambda i: (-int(values[i]), i))[:L]


def make_mechanism(request: ReleaseRequest, m: int, scale: int = SCALE) -> Mechanism:
    """Build and calibrate the OpenDP measurement(s) for `request` over an m-atom sketch.

    Domain: int64 vectors of length m (the fixed-point sketch). Sensitivity assumption:
    the sketch SQL bounds each unit's vector to non-negative L1 ≤ `request.ReleaseRequest.bound_fix`, so
    the d_in of each metric is the request's entry of the sensitivity table in
    fixed-point units (`request.ReleaseRequest.d_in`, docs/DESIGN.md §2).

    - laplace: discrete Laplace, L1 metric; map ε = d_in/scale.
    - gaussian: discrete Gaussian, L2 metric, ρ = d_in²/(2·scale²), then OpenDP's
      zCDP → (ε, δ) conversion at the requested δ.
    - private_topL: noisy top-k (pure DP, permute-and-flip peeling) on the L∞ metric —
      monotonic under add/drop, where a unit's vector is non-negative — at ε_sel, then the
      gaussian above at (ε − ε_sel, δ). The values are drawn for every coordinate and
      only the admitted ones are kept: with independent noise this is the same
      distribution as noising the admitted coordinates alone, it keeps the two
      measurements non-adaptive, and the restricted Δ2 equals the full one. Cost:
      the sum of the two maps (sequential composition).
    """
    request.check_m(m)
    try:
        return _make_mechanism(request, m, scale)
    except BadInput:
        raise
    except Exception as exc:  # OpenDP overflow, a search bracket that holds no solution, ...
        raise BadInput(f"cannot calibrate {request.mechanism} for ε={request.epsilon:g}, δ={request.delta:g} "
                       f"(parameters outside what the mechanism supports: {type(exc).__name__})") from None


def _make_mechanism(request: ReleaseRequest, m: int, scale: int) -> Mechanism:
    d_in = request.d_in
    # a segmented release is a release over its S·m (segment, atom) coordinates, at the same
    # d_in: a unit's whole vector, across segments, is clipped to L1 ≤ b (docs/DESIGN.md §11)
    size = m * request.n_segments
    domain = dp.vector_domain(dp.atom_domain(T=dp.i64), size=size)
    eps, delta = request.epsilon, request.delta
    segmented = {"segments": request.n_segments, "admission": request.segments.admission,
                 "coordinates": size} if request.segments is not None else {}

    if request.mechanism == "laplace":
        part = _laplace(domain, int(d_in.l1), eps)
        return Mechanism(request, m, (part,), part.noise_scale / scale, "laplace", scale, extra=segmented)
    # ReleaseRequest fills δ and the calibration in for both Gaussian mechanisms
    assert delta is not None and request.calibration is not None
    if request.mechanism == "gaussian":
        part = _gaussian(domain, int(d_in.l2), eps, delta, request.calibration, sensitivity_l2=d_in.l2)
        return Mechanism(request, m, (part,), part.noise_scale / scale, "gaussian", scale, extra=segmented)
    assert request.selection_fraction is not None  # filled in for private_topL
    eps_sel = eps * request.selection_fraction
    eps_val = eps - eps_sel
    monotonic = request.adjacency == "add_drop"
    if request.segments is not None and request.segments.admission == "per_segment":
        # one noisy top-L per segment, each over that segment's m coordinates, all charged
        # once: under add_drop one unit moves segment s by a non-negative vector whose L∞
        # norm d_s satisfies Σ_s d_s ≤ Σ_s ‖Δ_s‖₁ ≤ b = Δ∞, and the pure-DP top-k map is
        # linear in d, so the S selections together cost the map at Δ∞ (docs/DESIGN.md §11;
        # the request refuses this under replace)
        per = dp.vector_domain(dp.atom_domain(T=dp.i64), size=m)
        select = replace(_top_k(per, int(d_in.linf), eps_sel, request.L, monotonic), per_segment=request.n_segments)
    else:
        select = _top_k(domain, int(d_in.linf), eps_sel, request.L, monotonic)
    values = _gaussian(domain, int(d_in.l2), eps_val, delta, request.calibration, sensitivity_l2=d_in.l2)
    return Mechanism(request, m, (select, values), values.noise_scale / scale, "gaussian", scale,
                     extra={"selection_epsilon": select.epsilon, "value_epsilon": values.epsilon,
                            "selection_scale": select.noise_scale / scale, "monotonic": monotonic} | segmented)


def _laplace(domain, d_in: int, eps: float) -> MeasurementPart:
    metric = dp.l1_distance(T=dp.i64)
    scale = dp.binary_search_param(lambda s: dp.m.make_laplace(domain, metric, scale=s), d_in=d_in, d_out=eps,
                                   bounds=_bounds(d_in / eps), T=float)
    meas = dp.m.make_laplace(domain, metric, scale=scale)
    return MeasurementPart("laplace", meas, d_in, float(meas.map(d_in)), 0.0, scale)


def _gaussian_approx(domain, metric, scale: float, delta: float):
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(domain, metric, scale=scale)), delta)


def _gaussian(domain, d_in: int, eps: float, delta: float, calibration: str, *, sensitivity_l2: float) -> MeasurementPart:
    """(ε, δ) Gaussian. `zcdp`: the smallest scale whose OpenDP zCDP→(ε, δ) map certifies ε;
    `classical`: σ = Δ2·sqrt(2 ln(1.25/δ))/ε (valid only for ε < 1), charged at its map."""
    metric = dp.l2_distance(T=dp.i64)
    if calibration == "classical":
        scale = sensitivity_l2 * math.sqrt(2 * math.log(1.25 / delta)) / eps
    else:
        classical = sensitivity_l2 * math.sqrt(2 * math.log(1.25 / delta)) / eps
        scale = dp.binary_search_param(lambda s: _gaussian_approx(domain, metric, s, delta),
                                       d_in=d_in, d_out=(eps, delta), T=float,
                                       # ρ ≤ ε for any δ, so σ ≥ Δ2/sqrt(2ε): the bracket's floor
                                       bounds=(d_in / math.sqrt(2 * eps) / 2, 10 * classical + d_in))
    meas = _gaussian_approx(domain, metric, scale, delta)
    cost_eps, cost_delta = meas.map(d_in)
    return MeasurementPart("gaussian", meas, d_in, float(cost_eps), float(cost_delta), scale)


def _top_k(domain, d_in: int, eps: float, k: int, monotonic: bool) -> MeasurementPart:
    """Private top-k admission: OpenDP's noisy top-k (permute-and-flip peeling under pure DP).
    Under add/drop the sketch is monotone, so the monotonic L∞ metric halves the noise."""
    metric = dp.linf_distance(T=dp.i64, monotonic=monotonic)

    def make(s):
        return dp.m.make_noisy_top_k(domain, metric, dp.max_divergence(), k=int(k), scale=s)

    scale = dp.binary_search_param(make, d_in=d_in, d_out=eps, bounds=_bounds(2 * k * d_in / eps), T=float)
    meas = make(scale)
    return MeasurementPart("noisy_top_k", meas, d_in, float(meas.map(d_in)), 0.0, scale)


def _bounds(guess: float) -> tuple[float, float]:
    """A search bracket around a textbook scale; OpenDP's search then finds the tightest
    scale whose own privacy map certifies the target."""
    return (guess / 1000.0, guess * 100.0)


def comparison_margin(noise_kind: str, noise_scale: float, confidence: float = 0.99) -> float:
    """The `confidence` quantile of the difference of two independent noise draws: a
    comparison whose noisy gap clears it is wrong for the true sketch with probability
    at most 1 − confidence (one-sided)."""
    # Pure Python (the standard library's normal quantile, a bisection for the Laplace
    # difference): importing scipy.stats / scipy.optimize for two numbers was ~1 s of every
    # release's start-up (docs/PERFORMANCE.md).
    from statistics import NormalDist

    if noise_scale <= 0:
        return 0.0
    if noise_kind == "gaussian":
        return float(NormalDist().inv_cdf(confidence) * noise_scale * math.sqrt(2))
    tail = 1 - confidence  # P(X − Y > t) = (2 + t/b) e^{−t/b} / 4 for X, Y ~ Lap(b)
    f = lambda u: (2 + u) * math.exp(-u) / 4 - tail  # decreasing in u ≥ 0
    return float(_root_decreasing(f, 0.0, 100.0) * noise_scale)


def _root_decreasing(f, lo: float, hi: float) -> float:
    """The root of a decreasing f on [lo, hi] (f(lo) ≥ 0 ≥ f(hi)) to the last bit: bisection
    until the bracket stops shrinking."""
    if f(lo) <= 0:
        return lo
    if f(hi) >= 0:
        return hi
    while True:
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            return lo if abs(f(lo)) <= abs(f(hi)) else hi
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid


def interval_half_width(mechanism: Mechanism, confidence: float) -> float:
    """Half-width h (mass units) of the plan's accuracy intervals noisy_mass ± h.

    Post-processing of the public noise scale: with probability ≥ `confidence` the
    intervals of every released value cover the true masses at once. Laplace and Gaussian
    admit their atoms by the same noisy values they release, so only a statement over all
    m coordinates survives that selection (Bonferroni: each at level (1 − confidence)/m);
    private_topL's values carry noise independent of its selection, so the L admitted
    values need (1 − confidence)/L each. Laplace: OpenDP's exact discrete-Laplace
    accuracy. Gaussian: OpenDP's continuous-Gaussian accuracy plus one fixed-point unit
    (the discrete Gaussian at these scales, σ ≥ 2^20 units, has the same tails to within
    far less than one unit; OpenDP's exact discrete-Gaussian helper sums the pmf and is
    too slow at such σ).
    """
    request = mechanism.request
    # a segmented release: every one of its S·m coordinates (laplace, gaussian), or the L
    # per segment / L in all it admits (private_topL)
    family = mechanism.admitted_values if mechanism_kinds.selects_privately(request.mechanism) else mechanism.size
    alpha = (1.0 - confidence) / max(family, 1)
    return noise_accuracy(mechanism.noise_kind, mechanism.noise_scale, alpha, mechanism.scale)


def noise_accuracy(noise_kind: str, noise_scale: float, alpha: float, scale: int = SCALE) -> float:
    """a (mass units) with P(|noise| ≥ a) ≤ alpha for one released value whose noise is
    `noise_kind` ("laplace" | "gaussian") at `noise_scale` (mass units) in fixed point:
    OpenDP's discrete-Laplace accuracy, or OpenDP's Gaussian accuracy plus one fixed-point
    unit (see `interval_half_width`)."""
    scale_fix = noise_scale * scale
    if noise_kind == "laplace":
        accuracy = dp.discrete_laplacian_scale_to_accuracy(scale_fix, alpha)
    else:
        accuracy = dp.gaussian_scale_to_accuracy(scale_fix, alpha) + 1.0
    return float(accuracy) / scale
