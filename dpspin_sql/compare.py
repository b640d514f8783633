"""Comparable plans: what changed between two releases over the same public dictionary.

    from dpspin_sql.compare import compare, read_side
    ab = compare(read_side("2016.json"), read_side("2017.json"))          # the comparison JSON
    ab = compare(read_side("seg.json", "before 2017-01-01"), read_side("seg.json", "from 2017-01-01"))

A side is a plan, or one segment of a segmented plan (docs/PLAN.md). Both sides must be
over the same dictionary (the `dictionary` hash), the same contribution bounds (unit, K,
B) and be independent draws (not one release's same values twice). The comparison is
post-processing of released fields only (noisy masses, ranks, noise scales, mechanisms,
m, L): it reads no store and charges nothing.

The difference is b − a ("from a to b"). Every interval of a comparison holds together
with probability ≥ `confidence` (family-wise, docs/PLAN.md "Comparisons"):

- **The family.** A plan made by `laplace` or `gaussian` admits its atoms by the very
  noisy values it releases, so which atoms are compared (admitted in both), and which
  appear in one plan only, depends on the noise. A statement that survives that choice
  must hold for every atom of the dictionary: the family is all m atoms. When both sides
  are `private_topL`, admission is independent of the released values and the family is
  the atoms a plan admits (F = the larger plan's count: every side interval stated, and
  every difference, is one of at most F events of each kind).
- **The events.** With α = (1 − confidence) / comparisons and F the family's size: when
  both sides carry Gaussian noise, each difference's noise N_b − N_a is Gaussian with
  σ² = σ_a² + σ_b², and the difference interval is OpenDP's Gaussian accuracy at that σ
  and level α/(2F) (plus two fixed-point units, one per discrete Gaussian); each side's
  own interval (for ratios and one-sided atoms) is its accuracy at α/(4F). Otherwise
  each side's interval is OpenDP's accuracy of its noise (discrete Laplace or Gaussian)
  at α/(2F), and the difference interval is their sum. The union bound over the F atoms
  gives the family-wise level.
- **One-sided atoms.** An atom admitted by a plan that admits by its values (laplace,
  gaussian) and not by the other is, in that other plan, at most its lowest admitted
  noisy value (`lowest_admitted`), so its true mass there is at most that plus the
  side's half-width — inside the same family-wise statement, because the family is all m
  atoms. Not being admitted by `private_topL` bounds nothing at this level.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dpspin_sql.opendp_lite as dp
from dpspin_sql import mechanism_kinds
from dpspin_sql.errors import BadInput, Refusal
from dpspin_sql.fixed_point import SCALE
from dpspin_sql.mechanisms import noise_accuracy

__all__ = ["COMPARISON_SCHEMA_VERSION", "ComparisonRequest", "Side", "side_of", "read_side", "compare",
           "validate_comparison"]

COMPARISON_SCHEMA_VERSION = "1"
MECHANISMS = mechanism_kinds.NAMES
DEFAULT_CONFIDENCE = 0.95
DEFAULT_EQUIVALENCE = 1.25
MAX_COMPARISONS = 10 ** 6

NOTES = {
    "difference": "difference is b's noisy mass minus a's: positive means the atom is more common in b "
                  "('rose' from a to b). ratio is b / a.",
    "intervals": "every interval of this comparison (each side's, each difference's, each ratio's) holds "
                 "together with probability at least `confidence`, over the family in `family`; they come from "
                 "the two releases' public noise scales and cost no budget.",
    "change": "change is 'rose' or 'fell' only when the difference interval excludes 0; otherwise "
              "'no_supported_change', which is not evidence that nothing changed. about_the_same is true "
              "when the ratio interval lies within [1/equivalence_ratio, equivalence_ratio].",
    "admission": "only_in_a / only_in_b: atoms admitted to one plan's top L and not the other's. Under top-L "
                 "admission this says the atom's released value in the other plan was not among its top L "
                 "(laplace, gaussian: below that plan's lowest admitted value; private_topL: not selected); it "
                 "does not say its mass there is zero, nor by itself that it fell.",
    "choosing": "the family-wise level holds for the pair of releases compared here, for any atom you pick "
                "after looking. If you look at several comparisons (pairs of periods, products, corpora) and "
                "report the striking ones, count them all in `comparisons` (each gets its share of 1 − "
                "confidence), or the level no longer holds.",
}


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class ComparisonRequest:
    """The comparison's public parameters, validated once: the family-wise confidence, how
    many comparisons share it (chosen pairs: docs/PLAN.md), and the ratio band of "about the same"."""

    confidence: float = DEFAULT_CONFIDENCE
    comparisons: int = 1
    equivalence: float = DEFAULT_EQUIVALENCE

    def __post_init__(self) -> None:
        if not (_finite(self.confidence) and 0.5 <= float(self.confidence) < 1):
            raise BadInput(f"--confidence {self.confidence!r}: must lie in [0.5, 1)")
        if isinstance(self.comparisons, bool) or not isinstance(self.comparisons, int) \
                or not 1 <= self.comparisons <= MAX_COMPARISONS:
            raise BadInput(f"--comparisons {self.comparisons!r}: must be an integer in 1..{MAX_COMPARISONS}")
        if not (_finite(self.equivalence) and float(self.equivalence) > 1):
            raise BadInput(f"--equivalence {self.equivalence!r}: must be a number above 1")

    @property
    def alpha(self) -> float:
        return (1.0 - float(self.confidence)) / self.comparisons


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a plan, or one segment of a segmented plan, read from its
    released fields. `lowest_admitted` is the smallest admitted noisy value of the
    admission that also ranked the non-admitted atoms (None when the plan's admission
    does not depend on its released values, or it admitted nothing)."""

    name: str
    plan: dict
    path: str | None = None
    segment: str | None = None
    lowest_admitted: float | None = None

    @property
    def mechanism(self) -> str:
        return str(self.plan["mechanism"])

    @property
    def noise(self) -> str:
        details = self.plan.get("mechanism_details") or {}
        kind = details.get("noise")
        return kind if kind in ("laplace", "gaussian") else ("laplace" if self.mechanism == "laplace" else "gaussian")

    @property
    def by_values(self) -> bool:
        """Whether admission ranked the atoms by the released noisy values themselves."""
        return self.mechanism in ("laplace", "gaussian")

    @property
    def scale(self) -> float:
        return float(self.plan["noise_scale"])

    @property
    def atoms(self) -> dict[int, dict]:
        return {int(a["atom_id"]): a for a in self.plan["atoms"]}


def side_of(plan: dict, segment: str | None = None, *, name: str | None = None, path: str | None = None) -> Side:
    """A side from a plan dict already read (and validated); `segment` picks a segmented plan's part."""
    from dpspin_sql.plan import segment_part, validate_plan

    validate_plan(plan)
    segmented = isinstance(plan.get("segments"), list)
    if segmented and segment is None:
        labels = (plan.get("segmentation") or {}).get("labels") or []
        raise BadInput(f"{path or 'the plan'} is segmented: choose a segment ({', '.join(map(repr, labels))})")
    if not segmented and segment is not None:
        raise BadInput(f"{path or 'the plan'} is not segmented: it has no segment {segment!r}")
    for key in ("mechanism", "noise_scale", "m", "dictionary", "unit", "K", "L"):
        if plan.get(key) is None:
            raise BadInput(f"{path or 'the plan'} has no {key}: it cannot be compared (a plan written by an "
                           "older version, or not a DP release)")
    if plan["mechanism"] not in MECHANISMS or plan.get("epsilon") is None:
        raise BadInput(f"{path or 'the plan'} is not a DP release of {', '.join(MECHANISMS)}")
    if not (_finite(plan["noise_scale"]) and plan["noise_scale"] > 0):
        raise BadInput(f"{path or 'the plan'} has no positive noise_scale")
    part = segment_part(plan, segment) if segment is not None else plan
    lowest = None
    if plan["mechanism"] in ("laplace", "gaussian"):
        if segmented and (plan.get("segmentation") or {}).get("admission") == "joint":
            ranked = [a for p in plan["segments"] for a in p["atoms"]]   # one top L over all segments
        else:
            ranked = part["atoms"]
        lowest = min((float(a["noisy_mass"]) for a in ranked), default=None)
    if name is None:
        name = segment if segment is not None else (Path(path).stem if path else "plan")
    return Side(name=name, plan=part, path=path, segment=segment, lowest_admitted=lowest)


def read_side(path: str | Path, segment: str | None = None, *, name: str | None = None) -> Side:
    """A side from a plan file, validated against its dictionary sidecar when there is one."""
    from dpspin_sql.outputs import dictionary_sidecar
    from dpspin_sql.plan import read_json, validate_plan

    path = Path(path)
    plan = read_json(path, "plan")
    side = dictionary_sidecar(path)
    if side.is_file():
        validate_plan(plan, read_json(side, "dictionary"))
    return side_of(plan, segment, name=name, path=str(path))


def _refuse_incomparable(a: Side, b: Side) -> None:
    if a.plan["dictionary"] != b.plan["dictionary"]:
        raise Refusal(f"cannot compare: the plans use different dictionaries ({str(a.plan['dictionary'])[:19]}… vs "
                      f"{str(b.plan['dictionary'])[:19]}…); a comparison needs the same public atoms on both sides")
    for key in ("m", "unit", "K", "B"):
        if a.plan.get(key) != b.plan.get(key):
            raise Refusal(f"cannot compare: {key} is {a.plan.get(key)!r} in {a.name!r} and {b.plan.get(key)!r} in "
                          f"{b.name!r}; masses under other contribution bounds measure different things")
    same_release = a.plan.get("release_id") is not None and a.plan.get("release_id") == b.plan.get("release_id")
    if same_release and a.segment == b.segment:
        raise Refusal("cannot compare a release with itself: both sides are the same released values")
    if a.name == b.name:
        raise BadInput(f"both sides are named {a.name!r}; name them apart (--name-a, --name-b)")


def compare(a: Side, b: Side, request: ComparisonRequest | None = None) -> dict:
    """The comparison of b with a (docs/PLAN.md "Comparisons"), as the JSON-ready dict."""
    request = request or ComparisonRequest()
    _refuse_incomparable(a, b)
    atoms_a, atoms_b = a.atoms, b.atoms
    both = [j for j in atoms_a if j in atoms_b]
    m = int(a.plan["m"])
    by_values = a.by_values or b.by_values
    family = m if by_values else max(len(atoms_a), len(atoms_b), 1)
    alpha = request.alpha
    gaussian_pair = a.noise == "gaussian" and b.noise == "gaussian"
    if gaussian_pair:
        sigma = math.hypot(a.scale, b.scale) * SCALE
        h_diff = (float(dp.gaussian_scale_to_accuracy(sigma, alpha / (2 * family))) + 2.0) / SCALE
        box_a = noise_accuracy(a.noise, a.scale, alpha / (4 * family))
        box_b = noise_accuracy(b.noise, b.scale, alpha / (4 * family))
        how = (f"both sides carry Gaussian noise: each difference's noise is Gaussian with σ = √(σ_a² + σ_b²) = "
               f"{sigma / SCALE:.4g}; difference intervals at level α/(2F), each side's at α/(4F)")
    else:
        box_a = noise_accuracy(a.noise, a.scale, alpha / (2 * family))
        box_b = noise_accuracy(b.noise, b.scale, alpha / (2 * family))
        h_diff = box_a + box_b
        how = "each side's interval at level α/(2F) (OpenDP's accuracy of its noise); a difference's is their sum"
    eq = float(request.equivalence)

    def side_value(side: Side, atom: dict, box: float) -> dict:
        x = float(atom["noisy_mass"])
        return {"noisy_mass": x, "rank": int(atom["rank"]), "interval": [x - box, x + box]}

    rows = []
    for j in sorted(both, key=lambda j: (int(atoms_b[j]["rank"]), int(atoms_a[j]["rank"]))):
        va, vb = side_value(a, atoms_a[j], box_a), side_value(b, atoms_b[j], box_b)
        d = vb["noisy_mass"] - va["noisy_mass"]
        lo, hi = d - h_diff, d + h_diff
        ratio, ratio_iv = _ratio(va, vb)
        rows.append(_entry(atoms_a[j]) | {
            "a": va, "b": vb, "difference": d, "difference_interval": [lo, hi],
            "change": "rose" if lo > 0 else "fell" if hi < 0 else "no_supported_change",
            "supported": lo > 0 or hi < 0,
            "ratio": ratio, "ratio_interval": ratio_iv,
            "about_the_same": bool(ratio_iv is not None and ratio_iv[1] is not None
                                   and ratio_iv[0] >= 1 / eq and ratio_iv[1] <= eq),
            "rank_change": int(atoms_a[j]["rank"]) - int(atoms_b[j]["rank"])})
    only_a = [_one_sided(atoms_a[j], a, box_a, b, box_b, "a") for j in sorted(
        (j for j in atoms_a if j not in atoms_b), key=lambda j: int(atoms_a[j]["rank"]))]
    only_b = [_one_sided(atoms_b[j], b, box_b, a, box_a, "b") for j in sorted(
        (j for j in atoms_b if j not in atoms_a), key=lambda j: int(atoms_b[j]["rank"]))]
    swaps = []
    for x in rows:
        for y in rows:
            if x["a"]["rank"] > y["a"]["rank"] and x["b"]["rank"] < y["b"]["rank"]:
                swaps.append({"atom_id": x["atom_id"], "label": x["label"], "overtook": y["atom_id"],
                              "overtook_label": y["label"],
                              "supported": bool(y["a"]["interval"][0] > x["a"]["interval"][1]
                                                and x["b"]["interval"][0] > y["b"]["interval"][1])})
    return {
        "kind": "comparison", "schema_version": COMPARISON_SCHEMA_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "direction": "b − a", "dictionary": a.plan["dictionary"], "m": m,
        "a": _side_meta(a, box_a), "b": _side_meta(b, box_b),
        "confidence": float(request.confidence), "comparisons": request.comparisons,
        "family": {"size": family, "over": "all m atoms of the dictionary" if by_values
                   else "the atoms each plan admits (the larger count)",
                   "why": ("a side admitted its atoms by its own noisy values (laplace or gaussian), so which atoms "
                           "are compared depends on the noise; only a statement about every atom survives that"
                           if by_values else "both sides admit by private top-L, whose selection is independent of "
                                             "the released values"),
                   "how": how},
        "difference_half_width": h_diff, "equivalence_ratio": eq,
        "atoms": rows, "only_in_a": only_a, "only_in_b": only_b, "rank_swaps": swaps,
        "noise_source": "opendp" if all(s.plan.get("noise_source", "opendp") == "opendp" for s in (a, b)) else "mixed",
        "notes": dict(NOTES),
    }


def _entry(atom: dict) -> dict:
    return {"atom_id": int(atom["atom_id"]), "label": atom["label"], "description": atom.get("description", "")}


def _ratio(va: dict, vb: dict) -> tuple[float | None, list | None]:
    """b / a of the released values, and the ratio of the true masses on the intervals'
    event (true masses are ≥ 0): [max(lo_b, 0) / hi_a, hi_b / lo_a], the upper end None
    (unbounded) when a's interval reaches 0."""
    xa, xb = va["noisy_mass"], vb["noisy_mass"]
    (lo_a, hi_a), (lo_b, hi_b) = va["interval"], vb["interval"]
    ratio = xb / xa if xa > 0 else None
    if hi_a <= 0 or hi_b < 0:
        return ratio, None
    return ratio, [max(lo_b, 0.0) / hi_a, hi_b / lo_a if lo_a > 0 else None]


def _one_sided(atom: dict, here: Side, box_here: float, other: Side, box_other: float, which: str) -> dict:
    """An atom admitted on one side only: its value there, and what the other side's
    admission bounds (module docstring)."""
    x = float(atom["noisy_mass"])
    lo, hi = x - box_here, x + box_here
    entry = _entry(atom) | {which: {"noisy_mass": x, "rank": int(atom["rank"]), "interval": [lo, hi]}}
    other_key = "b" if which == "a" else "a"
    if other.by_values and other.lowest_admitted is not None:
        upper = other.lowest_admitted + box_other
        entry[other_key] = {"admitted": False, "upper_bound": upper,
                            "why": f"not in {other.name!r}'s top {other.plan.get('L')}: its noisy value there was at "
                                   f"most the lowest admitted one ({other.lowest_admitted:.4g})"}
        if which == "a":   # difference b − a ∈ [0 − hi, upper − max(lo, 0)]
            interval = [-hi, upper - max(lo, 0.0)]
        else:              # b − a ∈ [max(lo, 0) − upper, hi − 0]
            interval = [max(lo, 0.0) - upper, hi]
        entry["difference_interval"] = interval
        change = "rose" if interval[0] > 0 else "fell" if interval[1] < 0 else "no_supported_change"
    else:
        entry[other_key] = {"admitted": False, "upper_bound": None,
                            "why": f"not selected by {other.name!r}'s private top-L, which bounds nothing about its "
                                   "mass there at this level"}
        entry["difference_interval"] = [-hi, None] if which == "a" else [None, hi]
        change = "no_supported_change"
    entry["change"] = change
    entry["supported"] = change != "no_supported_change"
    return entry


def _side_meta(side: Side, box: float) -> dict:
    p = side.plan
    meta = {"name": side.name, "plan": Path(side.path).name if side.path else None, "segment": side.segment,
            "release_id": p.get("release_id"), "ledger_chain": p.get("ledger_chain"), "created_at": p.get("created_at"),
            "mechanism": side.mechanism, "noise": side.noise, "noise_scale": side.scale,
            "epsilon": p.get("epsilon"), "delta": p.get("delta"), "unit": p.get("unit"),
            "adjacency": p.get("adjacency"), "B": p.get("B"), "K": p.get("K"), "L": p.get("L"), "m": p.get("m"),
            "admission": "by its noisy values" if side.by_values else "private top-L (independent of the values)",
            "admitted": len(p["atoms"]), "lowest_admitted": side.lowest_admitted,
            "half_width": box, "plan_interval_half_width": p.get("interval_half_width"),
            "plan_interval_confidence": p.get("interval_confidence")}
    if side.segment is not None:
        meta["segmentation"] = {k: v for k, v in (p.get("segmentation") or {}).items()
                                if k in ("name", "kind", "definition", "admission", "boundaries")}
    return meta


def validate_comparison(d: Any) -> None:
    """Refuse (BadInput) what is not a comparison this module writes (the shape a reader relies on)."""
    if not isinstance(d, dict) or d.get("kind") != "comparison":
        raise BadInput("not a dpspin comparison: it needs \"kind\": \"comparison\"")
    for key in ("a", "b", "atoms", "only_in_a", "only_in_b"):
        if key not in d:
            raise BadInput(f"not a dpspin comparison: it has no {key!r}")
    if not all(isinstance(d[k], list) for k in ("atoms", "only_in_a", "only_in_b")) \
            or not all(isinstance(d[k], dict) for k in ("a", "b")):
        raise BadInput("not a dpspin comparison: malformed sides or atom lists")
    for row in d["atoms"]:
        iv = row.get("difference_interval") if isinstance(row, dict) else None
        if not (isinstance(row, dict) and isinstance(row.get("label"), str) and isinstance(iv, list) and len(iv) == 2
                and all(_finite(v) for v in iv) and iv[0] <= iv[1] and _finite(row.get("difference"))):
            raise BadInput("tampered comparison: every compared atom needs a label, a difference and its interval")
