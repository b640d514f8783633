"""The accountant: how a store composes what its releases spent (docs/DESIGN.md §4, "Accountants").

Pure: no I/O and no DuckDB. `ledger.py` reads the chain, asks this module whether the
releases of a dataset, with the one being charged, fit the dataset's (ε, δ) budget, and
records the answer's inputs in the chain.

Every measurement a release stored is mapped to its costs through OpenDP (`part_of`):
its own privacy map at its d_in gives (ε, δ); its zCDP form gives ρ — a pure ε-DP
measurement through `make_pureDP_to_zCDP` (ρ = ε²/2, Bun & Steinke 2016 Prop. 1.4), a
Gaussian through the zCDP measurement it was built from (`make_fix_delta(
make_zCDP_to_approxDP(make_gaussian(...)), δ)`: ρ is the inner measurement's map). A
measurement with neither form has no ρ.

Two accountants (`compose`):

- **basic**: the releases' charged (ε, δ) summed with `math.fsum` (basic sequential
  composition): admitted while Σε ≤ ε_total and Σδ ≤ δ_total.
- **zcdp**: admitted while *either* the releases' (ε, δ) sum within (ε_total, δ_total/2)
  (basic composition on half the δ), *or* every part has a zCDP form and their ρ, composed
  by OpenDP's `make_composition`, is at most ρ_limit: the largest ρ whose OpenDP
  conversion `make_fix_delta(make_zCDP_to_approxDP(·), δ_total/2)` is within ε_total. Each
  of the two is a privacy filter valid for adaptively chosen releases (basic composition:
  Rogers et al. 2016; zCDP: Whitehouse et al. 2023, whose fully adaptive composition
  OpenDP's odometers implement) at (ε_total, δ_total/2); admitting what either admits is
  then (ε_total, δ_total)-DP (the union argument of docs/DESIGN.md §4). The zCDP path needs
  no δ per release: a Gaussian's own δ is only how it was calibrated.

The zCDP composition runs through OpenDP: each part's ρ is carried by a measurement whose
map is that ρ (a user-defined measurement, never invoked: it only carries the number),
`make_composition` adds them (rounding up) and `make_zCDP_to_approxDP` + `make_fix_delta`
convert the composed measurement at δ (Canonne, Kamath & Steinke 2020: ε = min over α of
αρ + (ln(1/δ) + (α − 1)·ln(1 − 1/α) − ln α)/(α − 1)).
"""
from __future__ import annotations

import functools
import json
import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dpspin_sql.opendp_lite as dp  # OpenDP is loaded on first use, with "contrib" enabled
from dpspin_sql.errors import BadInput

BASIC = "basic"
ZCDP = "zcdp"
ACCOUNTANTS = (BASIC, ZCDP)
DEFAULT = ZCDP        # new stores (docs/DESIGN.md §4 argues the choice)
LEGACY = BASIC        # a store created before accountants existed: it composed by basic composition
ZCDP_BASIC_SHARE = 0.5   # zcdp: the share of δ_total for the basic path; the zCDP path converts at the rest
RHO_KEY = "zcdp_rho"     # each stored measurement record's ρ (None: no zCDP form), written at the charge

_FEATURES = threading.Lock()


def check_name(name: str) -> str:
    if name not in ACCOUNTANTS:
        raise BadInput(f"--accountant must be one of {', '.join(ACCOUNTANTS)}, not {name!r}")
    return name


@dataclass(frozen=True)
class Part:
    """One measurement of a release in both currencies: its (ε, δ) and its zCDP ρ (None
    when it has no zCDP form). `pure`: its output measure is pure ε-DP."""

    name: str
    epsilon: float
    delta: float
    rho: float | None
    pure: bool


@dataclass(frozen=True)
class Release:
    """A release as the accountant sees it: its charged (ε, δ) (what basic composition
    sums, as the ledger row holds it) and its parts."""

    epsilon: float
    delta: float
    parts: tuple[Part, ...] = ()

    @property
    def rho(self) -> float | None:
        if not self.parts or any(p.rho is None for p in self.parts):
            return None
        return math.fsum(p.rho for p in self.parts if p.rho is not None)


def part_of(record: dict) -> Part:
    """The costs of one stored measurement record (`MeasurementPart.audit_record`): rebuilt
    from its serialised OpenDP measurement and evaluated at its d_in."""
    return _part(record["measurement"], int(record["d_in"]), str(record.get("name", "")))


def release_of(epsilon: float, delta: float, records: Sequence[dict]) -> Release:
    """A release of charged cost (ε, δ) with these measurement records; a release without
    records (a charge that gave none) is one opaque part of its charged cost: pure ε-DP
    when δ = 0 (so ε²/2-zCDP), else without a zCDP form."""
    if records:
        return Release(float(epsilon), float(delta), tuple(part_of(r) for r in records))
    return Release(float(epsilon), float(delta), (opaque_part(float(epsilon), float(delta)),))


def opaque_part(epsilon: float, delta: float) -> Part:
    if delta == 0.0:
        return Part("charged", epsilon, 0.0, _pure_rho(epsilon), True)
    return Part("charged", epsilon, delta, None, False)


def annotate(records: Iterable[dict]) -> list[dict]:
    """The records with each one's ρ (RHO_KEY) added, as the ledger stores them."""
    return [dict(r, **{RHO_KEY: part_of(r).rho}) for r in records]


@functools.lru_cache(maxsize=4096)
def _part(text: str, d_in: int, name: str) -> Part:
    tree = json.loads(text)
    inner = _zcdp_inner(tree)
    if inner is not None:
        zcdp = dp.deserialize(json.dumps(inner))
        # the stored measurement is exactly this chain over the inner one (what deserialize builds)
        meas = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), float(tree["__kwargs__"]["delta"]))
    else:
        meas = dp.deserialize(text)
        zcdp = None
    out = meas.map(d_in)
    eps, delta = (out if isinstance(out, tuple) else (out, 0.0))
    measure = str(meas.output_measure)
    pure = measure.startswith("MaxDivergence")
    if pure:
        zcdp = dp.c.make_pureDP_to_zCDP(meas)
    rho = float(zcdp.map(d_in)) if zcdp is not None else None
    if zcdp is not None and not str(zcdp.output_measure).startswith("ZeroConcentratedDivergence"):
        rho = None
    return Part(name, float(eps), float(delta), rho, pure)


def _zcdp_inner(tree: Any) -> dict | None:
    """The zCDP measurement a stored (ε, δ) measurement was converted from, when its tree is
    make_fix_delta(make_zCDP_to_approxDP(M), δ)."""
    if not (isinstance(tree, dict) and tree.get("__function__") == "make_fix_delta"):
        return None
    kwargs = tree.get("__kwargs__") or {}
    mid = kwargs.get("measurement")
    if not (isinstance(mid, dict) and mid.get("__function__") == "make_zCDP_to_approxDP"
            and isinstance(kwargs.get("delta"), (int, float))):
        return None
    inner = (mid.get("__kwargs__") or {}).get("measurement")
    return inner if isinstance(inner, dict) else None


# -- OpenDP's composition and conversion of ρ ----------------------------------------------

def _user_measurement(measure, value: float):
    """A measurement of the accountant's only: its map is `value` at d_in ≤ 1 (one
    neighbouring step of the store's relation, at which every part's own map was
    evaluated); its function is never invoked."""

    def privacy_map(d_in):
        if d_in > 1:
            raise ValueError("an accounting carrier is evaluated at one neighbouring step only")
        return value

    def function(_):
        raise RuntimeError("an accounting carrier is never invoked")

    with _FEATURES:   # user-defined OpenDP objects, here only: the flag is restored after
        import opendp.mod  # the live flag set (dp.enable_features below loads the rest, contrib on)

        had = "honest-but-curious" in opendp.mod.GLOBAL_FEATURES
        dp.enable_features("honest-but-curious")
        try:
            return dp.m.make_user_measurement(dp.vector_domain(dp.atom_domain(T=bool)), dp.symmetric_distance(),
                                              measure, function, privacy_map)
        finally:
            if not had:
                dp.disable_features("honest-but-curious")


@functools.lru_cache(maxsize=65536)
def _carrier(rho: float):
    return _user_measurement(dp.zero_concentrated_divergence(), rho)


@functools.lru_cache(maxsize=4096)
def _pure_rho(epsilon: float) -> float:
    """ρ of a pure ε-DP release that stored no measurement, through OpenDP's conversion."""
    return float(dp.c.make_pureDP_to_zCDP(_user_measurement(dp.max_divergence(), epsilon)).map(1))


def composed(rhos: Sequence[float]):
    """OpenDP's composition of measurements of these ρ (None when there are none)."""
    if not rhos:
        return None
    return dp.c.make_composition([_carrier(float(r)) for r in rhos])


def composed_rho(rhos: Sequence[float]) -> float:
    """Σρ as OpenDP's `make_composition` maps it (rounded up)."""
    meas = composed(rhos)
    return 0.0 if meas is None else float(meas.map(1))


def epsilon_of_rho(rho: float, at: float, meas=None) -> float:
    """ε of a ρ-zCDP measurement at δ, by OpenDP's `make_zCDP_to_approxDP` and
    `make_fix_delta` (on `meas`, a composed measurement, when given); inf when δ = 0."""
    if rho <= 0.0:
        return 0.0
    if at <= 0.0:
        return math.inf
    meas = meas if meas is not None else _carrier(float(rho))
    try:
        eps, _ = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(meas), float(at)).map(1)
    except dp.OpenDPException:   # beyond what OpenDP's arithmetic bounds (an enormous ρ): no finite ε
        return math.inf
    return float(eps)


@functools.lru_cache(maxsize=256)
def rho_limit(epsilon_total: float, at: float) -> float:
    """The largest double ρ whose ε at δ (OpenDP's conversion) is at most ε_total: the zCDP
    path admits while the composed ρ stays at or below it (a bound on a sum that only grows,
    so every earlier state of an admitted history was admitted too). Only `fits(ρ)` — OpenDP's
    ε at δ within ε_total — decides; the closed forms below only make the search short."""
    if not (0.0 < at < 1.0) or epsilon_total <= 0.0 or not math.isfinite(epsilon_total):
        return 0.0

    def fits(r: float) -> bool:
        return epsilon_of_rho(r, at) <= epsilon_total

    def excess(r: float) -> float:
        return epsilon_of_rho(r, at) - epsilon_total

    # ε ≤ ρ + 2·sqrt(ρ·ln(1/δ)) (Bun & Steinke 2016), so this ρ is a first point that fits
    log_inv = math.log(1.0 / at)
    lo = (math.sqrt(log_inv + epsilon_total) - math.sqrt(log_inv)) ** 2
    while lo > 0.0 and not fits(lo):
        lo /= 2.0
    if lo == 0.0:
        return 0.0
    hi = 2.0 * lo
    while fits(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 4.0 * epsilon_total + 1.0:
            return lo
    # Illinois regula falsi on OpenDP's ε, then a bisection on the doubles themselves
    f_lo, f_hi, side = excess(lo), excess(hi), 0
    for _ in range(60):
        if _bits(hi) - _bits(lo) <= 4:
            break
        mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo) if f_hi != f_lo else (lo + hi) / 2
        if not (lo < mid < hi):
            mid = (lo + hi) / 2
        f_mid = excess(mid)
        if f_mid <= 0:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = mid, f_mid
            if side == 1:
                f_lo /= 2
            side = 1
    lo_bits, hi_bits = _bits(lo), _bits(hi)
    while hi_bits - lo_bits > 1:
        mid_bits = (lo_bits + hi_bits) // 2
        if fits(_from_bits(mid_bits)):
            lo_bits = mid_bits
        else:
            hi_bits = mid_bits
    return _from_bits(lo_bits)


def _bits(x: float) -> int:
    import struct

    return struct.unpack("<q", struct.pack("<d", x))[0]


def _from_bits(b: int) -> float:
    import struct

    return struct.unpack("<d", struct.pack("<q", b))[0]


# -- the composition of a dataset's releases ----------------------------------------------

@dataclass(frozen=True)
class Composition:
    """What an accountant makes of a dataset's releases against its (ε, δ) budget."""

    accountant: str
    epsilon_total: float
    delta_total: float
    releases: int
    basic_epsilon: float                 # Σε of the releases (fsum)
    basic_delta: float                   # Σδ
    basic_delta_limit: float             # δ the basic path may spend (δ_total; zcdp: its share)
    rho: float | None = None             # zcdp: OpenDP's composition of every part's ρ (None: a part has none)
    rho_limit: float | None = None       # zcdp: the largest ρ that fits
    zcdp_delta: float | None = None      # zcdp: the δ its conversion is at
    zcdp_epsilon: float | None = None    # zcdp: ε of the composed ρ at zcdp_delta (OpenDP)
    notes: tuple[str, ...] = field(default=())

    @property
    def fits_basic(self) -> bool:
        return self.basic_epsilon <= self.epsilon_total and self.basic_delta <= self.basic_delta_limit

    @property
    def fits_zcdp(self) -> bool:
        return (self.accountant == ZCDP and self.rho is not None and self.rho_limit is not None
                and self.rho <= self.rho_limit)

    @property
    def fits(self) -> bool:
        return self.fits_basic or self.fits_zcdp

    @property
    def path(self) -> str:
        """The bound that states what is spent: of those that fit, the one with the lower ε
        (ties: basic); when none fits, the lower ε."""
        if self.accountant == BASIC or self.zcdp_epsilon is None:
            return BASIC
        candidates = [(p, e) for p, e, ok in ((BASIC, self.basic_epsilon, self.fits_basic),
                                               (ZCDP, self.zcdp_epsilon, self.fits_zcdp)) if ok]
        if not candidates:
            candidates = [(BASIC, self.basic_epsilon), (ZCDP, self.zcdp_epsilon)]
        return min(candidates, key=lambda c: (c[1], c[0] != BASIC))[0]

    @property
    def epsilon_spent(self) -> float:
        return self.basic_epsilon if self.path == BASIC else float(self.zcdp_epsilon or 0.0)

    @property
    def delta_spent(self) -> float:
        if self.path == BASIC:
            return self.basic_delta
        return float(self.zcdp_delta or 0.0) if (self.rho or 0.0) > 0 else 0.0

    @property
    def rho_remaining(self) -> float | None:
        if self.rho is None or self.rho_limit is None:
            return None
        return max(self.rho_limit - self.rho, 0.0)

    def to_dict(self) -> dict:
        d = {"name": self.accountant, "releases": self.releases, "path": self.path,
             "epsilon_spent": self.epsilon_spent, "delta_spent": self.delta_spent,
             "basic": {"epsilon": self.basic_epsilon, "delta": self.basic_delta,
                       "delta_limit": self.basic_delta_limit, "fits": self.fits_basic}}
        if self.accountant == ZCDP:
            d["zcdp"] = {"rho": self.rho, "rho_limit": self.rho_limit, "rho_remaining": self.rho_remaining,
                         "delta": self.zcdp_delta, "epsilon": self.zcdp_epsilon, "fits": self.fits_zcdp}
        return d

    def summary(self) -> str:
        """One line: the accountant and its state."""
        if self.accountant == BASIC:
            return (f"accountant basic: Σε={self.basic_epsilon:.6g}, Σδ={self.basic_delta:.3g} of "
                    f"(ε={self.epsilon_total:g}, δ={self.delta_total:g})")
        z = (f"ρ={self.rho:.6g} of {self.rho_limit:.6g} (ε={self.zcdp_epsilon:.6g} at δ={self.zcdp_delta:.3g})"
             if self.rho is not None and self.rho_limit is not None and self.zcdp_epsilon is not None
             else "no zCDP form for every release")
        return (f"accountant zcdp: {z}; basic composition Σε={self.basic_epsilon:.6g}, "
                f"Σδ={self.basic_delta:.3g} of δ={self.basic_delta_limit:.3g}; spent counted by "
                f"{'zCDP' if self.path == ZCDP else 'basic composition'}")


def compose(accountant: str, epsilon_total: float, delta_total: float, releases: Sequence[Release]) -> Composition:
    """The composition of `releases` under `accountant` against (ε_total, δ_total)."""
    eps_b = math.fsum(r.epsilon for r in releases)
    delta_b = math.fsum(r.delta for r in releases)
    if accountant == BASIC:
        return Composition(BASIC, epsilon_total, delta_total, len(releases), eps_b, delta_b, delta_total)
    if accountant != ZCDP:
        raise BadInput(f"unknown accountant {accountant!r}")
    share_basic = delta_total * ZCDP_BASIC_SHARE
    delta_z = delta_total - share_basic
    rhos: list[float] = []
    complete = True
    for r in releases:
        for p in r.parts:
            if p.rho is None:
                complete = False
            else:
                rhos.append(p.rho)
    if not complete:
        return Composition(ZCDP, epsilon_total, delta_total, len(releases), eps_b, delta_b, share_basic,
                           None, rho_limit(epsilon_total, delta_z), delta_z, None,
                           ("a release has a part with no zCDP form: only basic composition counts it",))
    meas = composed(rhos)
    rho = 0.0 if meas is None else float(meas.map(1))
    return Composition(ZCDP, epsilon_total, delta_total, len(releases), eps_b, delta_b, share_basic, rho,
                       rho_limit(epsilon_total, delta_z), delta_z, epsilon_of_rho(rho, delta_z, meas))


def refusal(before: Composition, after: Composition, candidate: Release, dataset: str) -> str:
    """The one line that refuses `candidate` (`after` is the composition with it)."""
    if after.accountant == BASIC:
        return (f"refused: this release costs (ε={candidate.epsilon:.6g}, δ={candidate.delta:.3g}) but dataset "
                f"{dataset!r} has only (ε={max(before.epsilon_total - before.basic_epsilon, 0):.6g}, "
                f"δ={max(before.delta_total - before.basic_delta, 0):.3g}) left of "
                f"(ε={before.epsilon_total:g}, δ={before.delta_total:g}); no plan was written{WAY_OUT}")
    rho = candidate.rho
    z = (f"zCDP would reach ρ={after.rho:.6g} of {after.rho_limit:.6g} (ε={after.zcdp_epsilon:.6g} at "
         f"δ={after.zcdp_delta:.3g})" if after.rho is not None and after.zcdp_epsilon is not None
         else "zCDP cannot count it (a part has no zCDP form)")
    return (f"refused: this release (ε={candidate.epsilon:.6g}, δ={candidate.delta:.3g}"
            + (f", ρ={rho:.6g}" if rho is not None else "") + f") does not fit dataset {dataset!r}'s budget "
            f"(ε={after.epsilon_total:g}, δ={after.delta_total:g}) under the zcdp accountant: {z}, and basic "
            f"composition Σε={after.basic_epsilon:.6g}, Σδ={after.basic_delta:.3g} of (ε={after.epsilon_total:g}, "
            f"δ={after.basic_delta_limit:.3g}); no plan was written{WAY_OUT}")


WAY_OUT = ", nothing was charged: ask for a smaller epsilon (dpspin budget shows what is left)"
