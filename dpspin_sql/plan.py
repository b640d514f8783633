"""The released plan (docs/PLAN.md): the only object a decoder ever sees.

It holds the admitted atoms in rank order and public metadata. It never holds
non-private masses, per-unit values, text, seeds or atoms outside the admitted set;
`make_plan` is the single place a plan is made, from a `NoisyRelease` and public
parameters only. Support, bins, the comparison margin and the accuracy intervals are
post-processing of the noisy masses and the public noise scale: they cost no budget.

`validate_plan` is the structural check every reader of a plan file runs first, so a
tampered plan (more atoms than L, an atom outside its dictionary, a NaN mass, a
dictionary whose hash is not the plan's) is refused before it is summarised or verified.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpspin_sql import mechanism_kinds
from dpspin_sql.atoms import hash_entries
from dpspin_sql.errors import BadInput
from dpspin_sql.mechanisms import Mechanism, NoisyRelease, comparison_margin, interval_half_width
from dpspin_sql.outputs import dictionary_sidecar, write_text_atomic

__all__ = ["SCHEMA_VERSION", "SEGMENTED_SCHEMA_VERSION", "Plan", "PlanAtom", "PlanSegment", "make_plan",
           "load_plan", "assign_bin", "validate_plan", "segment_part", "dictionary_sidecar", "dictionary_body"]

SCHEMA_VERSION = "2"
# A segmented plan (docs/PLAN.md, "Segmented plans") holds its atoms per segment in
# `segments`, and no top-level `atoms`: a reader that knows only version 2 refuses it
# rather than read it as a plan that admitted nothing.
SEGMENTED_SCHEMA_VERSION = "3"

NOTES = {
    "noisy_mass": "noisy_mass is the released total weight of the atom in the unit mass_unit states: each record "
            "gives at most one unit of mass, to at most K atoms it expresses (a user at most B units in all), "
            "plus noise; it may be negative. display_mass = max(noisy_mass, 0).",
    "assignment": "assignment says how records were mapped to atoms (public: the scorer, its calibration on the "
                  "auxiliary split and its fidelity there: precision = share of an atom's mass from auxiliary "
                  "records that express it, recall = share of those records given mass); it costs no budget.",
    "interval": "interval is the public accuracy interval around noisy_mass: with probability at least "
                "interval_confidence every released interval of this plan covers the true (non-private) mass "
                "at once. It comes from the public noise scale alone and costs no privacy budget.",
    "bins": "bins are public thresholds: on support (display_mass / public_denominator) when bin_basis is "
            "'support', on rank cut-offs when it is 'rank' (not counts of atoms); an atom whose interval "
            "reaches zero is 'low' whatever its rank.",
    "comparison_margin": "a claim 'a is more common than b' is supported only when their noisy masses differ "
                         "by at least comparison_margin.",
}

SEGMENT_NOTES = {
    "segments": "a segmented plan is one release over (segment, atom): each record is in at most one segment "
                "(records in none are left out), and at user level each user's whole vector, across all "
                "segments, is clipped to B. segments[].atoms are each segment's admitted atoms, ranked within "
                "the segment; segmentation.admission says whether the top L were taken per segment or over all "
                "(segment, atom) pairs. The intervals hold together for every segment at once.",
}


@dataclass(frozen=True)
class PlanAtom:
    atom_id: int
    label: str
    description: str
    noisy_mass: float
    display_mass: float
    bin: str
    rank: int
    support: float | None = None
    interval: list[float] | None = None
    support_interval: list[float] | None = None
    measure: str | None = None           # what the atom's mass counts, e.g. 'records that mention "x"'
    fidelity: dict | None = None         # {precision, recall} of the assignment on held-out aux records

    def to_dict(self) -> dict:
        d = asdict(self)
        for optional in ("support", "interval", "support_interval", "measure", "fidelity"):
            if d[optional] is None:
                del d[optional]
        return d


@dataclass(frozen=True)
class PlanSegment:
    """One segment of a segmented plan: its public label and its admitted atoms (ranks 1..n
    within the segment)."""

    segment: str
    atoms: list[PlanAtom]

    def to_dict(self) -> dict:
        return {"segment": self.segment, "atoms": [a.to_dict() for a in self.atoms]}


@dataclass(frozen=True)
class Plan:
    mechanism: str
    epsilon: float | None   # None only on a non-private reference plan (experiments)
    delta: float | None
    unit: str
    adjacency: str
    B: float
    K: int
    L: int
    m: int
    calibration: str
    noise_scale: float
    comparison_margin: float
    public_denominator: int | None
    bins: dict
    bin_basis: str
    dictionary: str
    atoms: list[PlanAtom]
    privacy_cost: dict = field(default_factory=dict)
    mechanism_details: dict = field(default_factory=dict)
    noise_source: str = "opendp"
    release_id: str | None = None
    ledger_chain: str | None = None
    interval_confidence: float | None = None
    interval_half_width: float | None = None
    bin_rule: str | None = None
    mass_unit: str | None = None         # one unit of mass, in words (the assignment's scorer decides it)
    assignment: dict = field(default_factory=dict)
    notes: dict = field(default_factory=dict)
    schema_version: str = SCHEMA_VERSION
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    # a segmented plan (docs/DESIGN.md §11): the public segment domain, and the atoms per
    # segment (then `atoms` is empty and not written)
    segmentation: dict | None = None
    segments: list[PlanSegment] | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["atoms"] = [a.to_dict() for a in self.atoms]
        first = ["schema_version", "mechanism", "epsilon", "delta", "unit", "adjacency", "B", "K", "L", "m",
                 "calibration", "noise_scale", "comparison_margin", "public_denominator", "bins", "bin_basis",
                 "dictionary", "created_at"]
        if self.segments is None:
            d.pop("segmentation")
            d.pop("segments")
        else:
            d.pop("atoms")
            d["segments"] = [part.to_dict() for part in self.segments]
            first += ["segmentation", "segments"]
        return {k: d[k] for k in first} | {k: v for k, v in d.items() if k not in first}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        def atom_list(items: list) -> list[PlanAtom]:
            return [PlanAtom(**{k: a.get(k) for k in PlanAtom.__dataclass_fields__}) for a in items]

        try:
            segments = None
            if "segments" in d:
                segments = [PlanSegment(str(part["segment"]), atom_list(part["atoms"])) for part in d["segments"]]
                atoms: list[PlanAtom] = []
            else:
                atoms = atom_list(d["atoms"])
            fields = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k not in ("atoms", "segments")}
            return cls(atoms=atoms, segments=segments, **fields)
        except (KeyError, TypeError, AttributeError) as exc:
            raise BadInput(f"not a dpspin plan: missing or malformed {exc}") from None

    def all_atoms(self) -> list[tuple[str | None, PlanAtom]]:
        """(segment label or None, atom) for every admitted atom, in plan order."""
        if self.segments is None:
            return [(None, a) for a in self.atoms]
        return [(part.segment, a) for part in self.segments for a in part.atoms]

    def write(self, path: str | Path, *, overwrite: bool = True) -> Path:
        return write_text_atomic(path, self.to_json(), overwrite=overwrite)


def read_json(path: str | Path, what: str = "plan") -> Any:
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"{what} file not found: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise BadInput(f"{path} is not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None


def load_plan(path: str | Path) -> Plan:
    return Plan.from_dict(read_json(path))


def make_plan(noisy: NoisyRelease, mechanism: Mechanism, atoms: list, dictionary_id: str,
              release_id: str | None = None, ledger_chain: str | None = None,
              assignment: dict | None = None) -> Plan:
    """Assemble the plan from the noisy release and public inputs only.

    `atoms` is the public dictionary in sketch order (position i ↔ sketch coordinate i).
    Support, bins, ranks and intervals are post-processing of the noisy masses and the
    public noise scale. `assignment` (`assign.assignment_info`: the scorer, its unit and
    its fidelity on auxiliary records) is public; only the admitted atoms' entries of
    its per-atom fidelity reach the plan.
    """
    assignment = dict(assignment or {})
    per_atom = {int(e["atom_id"]): e for e in ((assignment.get("fidelity") or {}).get("atoms") or [])}
    request = mechanism.request
    if request.segments is not None and not isinstance(noisy, SegmentNoise):
        return _segmented_plan(noisy, mechanism, atoms, dictionary_id, release_id, ledger_chain, assignment)
    denominator = request.public_denominator
    bins, basis = request.plan_bins()
    margin = request.comparison_margin
    if margin is None:
        margin = comparison_margin(mechanism.noise_kind, mechanism.noise_scale, request.comparison_confidence)
    half = interval_half_width(mechanism, request.interval_confidence)
    plan_atoms = []
    for rank, (pos, value) in enumerate(zip(noisy.admitted, noisy.noisy_mass), start=1):
        atom = atoms[pos]
        display = max(float(value), 0.0) + 0.0   # + 0.0: never a negative zero
        support = display / denominator if denominator else None
        interval = [float(value) - half, float(value) + half]
        support_interval = ([max(interval[0], 0.0) / denominator, max(interval[1], 0.0) / denominator]
                            if denominator else None)
        bin_name = assign_bin(support if support is not None else rank, bins, basis)  # None iff no denominator
        if interval[0] <= 0:
            bin_name = "low"   # indistinguishable from no mass at the stated confidence
        fid = per_atom.get(int(atom.atom_id))
        plan_atoms.append(PlanAtom(atom_id=int(atom.atom_id), label=atom.label, description=atom.description or "",
                                   noisy_mass=float(value), display_mass=display, bin=bin_name, rank=rank,
                                   support=support, interval=interval, support_interval=support_interval,
                                   measure=(assignment["measure"].replace("{label}", atom.label)
                                            if assignment.get("measure") else None),
                                   fidelity=({"precision": fid.get("precision"), "recall": fid.get("recall")}
                                             if fid else None)))
    eps_cost, delta_cost = mechanism.cost
    details = {"noise": mechanism.noise_kind, "comparison_confidence": request.comparison_confidence,
               "fixed_point_scale": mechanism.scale} | mechanism.extra
    if mechanism_kinds.selects_privately(request.mechanism):
        details["selection_fraction"] = request.selection_fraction
    assert request.B is not None  # ReleaseRequest fills it in
    return Plan(mechanism=request.mechanism, epsilon=request.epsilon, delta=request.delta,
                unit=request.unit, adjacency=request.adjacency, B=request.B, K=request.K,
                L=request.L, m=mechanism.m, calibration=request.calibration or "laplace",
                noise_scale=float(mechanism.noise_scale), comparison_margin=float(margin),
                public_denominator=denominator, bins=bins, bin_basis=basis, dictionary=dictionary_id,
                atoms=plan_atoms, privacy_cost={"epsilon": eps_cost, "delta": delta_cost},
                mechanism_details=details, release_id=release_id, ledger_chain=ledger_chain,
                interval_confidence=request.interval_confidence, interval_half_width=half,
                bin_rule=bin_rule(bins, basis), mass_unit=assignment.get("mass_unit"),
                assignment=public_assignment(assignment), notes=dict(NOTES))


def public_assignment(info: dict) -> dict:
    """The plan's `assignment` block: the scorer and its whole-dictionary fidelity (never
    per-atom entries, which would name atoms outside the admitted set)."""
    if not info:
        return {}
    fid = info.get("fidelity") or None
    keep = ("precision", "recall", "macro_precision", "macro_recall", "spearman_mass_expressing", "records")
    return {"scorer": info.get("scorer"), "calibrated": bool(info.get("calibrated")),
            "mention_based": bool(info.get("mention_based")), "definition": info.get("definition"),
            "split": info.get("split"),
            "fidelity": {k: fid.get(k) for k in keep} if fid else None,
            "fidelity_minimum": info.get("fidelity_minimum")}


class SegmentNoise(NoisyRelease):
    """One segment's admitted atoms (positions in the dictionary) and noisy masses, in rank order."""


def _segmented_plan(noisy: NoisyRelease, mechanism: Mechanism, atoms: list, dictionary_id: str,
                    release_id: str | None, ledger_chain: str | None, assignment: dict) -> Plan:
    """A segmented plan (docs/DESIGN.md §11): each segment's admitted atoms made into plan
    atoms by `make_plan` itself (ranks within the segment; the intervals are the segmented
    mechanism's, which hold for every coordinate at once), gathered under `segments`."""
    segments = mechanism.request.segments
    assert segments is not None
    m = len(atoms)
    parts: dict[int, list[tuple[int, float]]] = {s: [] for s in range(segments.S)}
    for pos, value in zip(noisy.admitted, noisy.noisy_mass):
        parts[pos // m].append((pos % m, float(value)))
    plans = []
    for s in range(segments.S):
        ranked = sorted(parts[s], key=lambda iv: (-iv[1], iv[0]))   # by noisy mass, ties: lower atom index
        plans.append(make_plan(SegmentNoise([i for i, _ in ranked], [v for _, v in ranked]), mechanism, atoms,
                               dictionary_id, release_id, ledger_chain, assignment=assignment))
    segmentation = {"name": segments.name, "kind": segments.kind, "labels": list(segments.labels),
                    "definition": segments.definition, "admission": segments.admission,
                    "coordinates": mechanism.size}
    if segments.kind == "periods":
        segmentation["boundaries"] = list(segments.boundaries)
    return replace(plans[0], segments=[PlanSegment(label, p.atoms) for label, p in zip(segments.labels, plans)],
                   atoms=[], segmentation=segmentation, notes=dict(plans[0].notes) | SEGMENT_NOTES,
                   schema_version=SEGMENTED_SCHEMA_VERSION)


def assign_bin(value: float, bins: dict, basis: str) -> str:
    """Public bin rule: support ≥ high → high, ≥ moderate → moderate, else low; on rank,
    rank ≤ high → high, ≤ moderate → moderate, else low."""
    if basis == "support":
        return "high" if value >= bins["high"] else "moderate" if value >= bins["moderate"] else "low"
    return "high" if value <= bins["high"] else "moderate" if value <= bins["moderate"] else "low"


def bin_rule(bins: dict, basis: str) -> str:
    if basis == "support":
        return (f"support ≥ {bins['high']:g} → high; support ≥ {bins['moderate']:g} → moderate; otherwise low; "
                "low whenever the interval reaches 0")
    return (f"rank ≤ {bins['high']:g} → high; rank ≤ {bins['moderate']:g} → moderate; otherwise low; "
            "low whenever the interval reaches 0")


# -- the public dictionary beside a plan ------------------------------------------------

def dictionary_body(atoms: list, dictionary_id: str) -> str:
    body = {"dictionary": dictionary_id,
            "atoms": [{"atom_id": a.atom_id, "label": a.label, "description": a.description} for a in atoms]}
    return json.dumps(body, indent=1, ensure_ascii=False)


# -- validation of a plan read from a file ------------------------------------------------

def validate_plan(d: Any, dictionary: Any = None) -> None:
    """Refuse (BadInput) a plan that is not what a release writes. `dictionary` is the
    parsed sidecar ({"dictionary", "atoms"}) when there is one. A segmented plan
    (`segments`, docs/PLAN.md) is checked segment by segment."""
    if not isinstance(d, dict) or not (isinstance(d.get("atoms"), list) or isinstance(d.get("segments"), list)):
        raise BadInput("not a dpspin plan: it needs an 'atoms' list")
    L = d.get("L")
    if not isinstance(L, int) or isinstance(L, bool) or L < 0:
        raise BadInput("tampered plan: L is missing or not a non-negative integer")
    m = d.get("m")
    parts: list[tuple[str | None, list]]
    if isinstance(d.get("segments"), list):
        parts = list(_segment_lists(d))
        joint = (d.get("segmentation") or {}).get("admission") == "joint"
        if joint and sum(len(atoms) for _, atoms in parts) > L:
            raise BadInput(f"tampered plan: more than L={L} atoms admitted jointly")
    else:
        parts = [(None, d["atoms"])]
    for segment, atoms in parts:
        where = f" in segment {segment!r}" if segment is not None else ""
        if len(atoms) > L:
            raise BadInput(f"tampered plan: {len(atoms)} atoms for L={L}{where}")
        if isinstance(m, int) and len(atoms) > m:
            raise BadInput(f"tampered plan: {len(atoms)} atoms for a dictionary of m={m}{where}")
        _validate_atoms(atoms, where)
    for k in ("comparison_margin", "noise_scale", "epsilon"):
        v = d.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0):
            raise BadInput(f"tampered plan: {k} is not a finite non-negative number")
    if dictionary is None:
        return
    if not isinstance(dictionary, dict) or not isinstance(dictionary.get("atoms"), list):
        raise BadInput("the dictionary file is not a dpspin dictionary ({dictionary, atoms})")
    try:
        digest = hash_entries(dictionary["atoms"])
    except (KeyError, TypeError, ValueError):
        raise BadInput("the dictionary file has malformed atoms") from None
    if d.get("dictionary") and digest != d["dictionary"]:
        raise BadInput(f"the dictionary's content hashes to {digest[:19]}…, not the plan's {str(d['dictionary'])[:19]}…")
    by_id = {int(e["atom_id"]): e for e in dictionary["atoms"]}
    for _, atoms in parts:
        for a in atoms:
            entry = by_id.get(a["atom_id"])
            if entry is None or str(entry.get("label")) != a["label"]:
                raise BadInput(f"tampered plan: atom {a['atom_id']} ({a['label']!r}) is not in the plan's dictionary")
    if isinstance(m, int) and m != len(by_id):
        raise BadInput(f"tampered plan: m={m} but the dictionary holds {len(by_id)} atoms")


def _validate_atoms(atoms: list, where: str = "") -> None:
    ids, ranks = [], []
    for a in atoms:
        if not isinstance(a, dict) or not isinstance(a.get("label"), str):
            raise BadInput(f"tampered plan: every atom needs a string label{where}")
        for key in ("noisy_mass", "display_mass", "support"):
            v = a.get(key)
            if v is None and key == "support":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise BadInput(f"tampered plan: atom {a.get('label')!r} has a non-finite or missing {key}{where}")
        for key in ("interval", "support_interval"):
            v = a.get(key)
            if v is not None and not (isinstance(v, list) and len(v) == 2 and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)
                    and v[0] <= v[1]):
                raise BadInput(f"tampered plan: atom {a.get('label')!r} has a malformed {key}{where}")
        if not isinstance(a.get("atom_id"), int) or isinstance(a.get("atom_id"), bool):
            raise BadInput(f"tampered plan: atom {a.get('label')!r} has no integer atom_id{where}")
        ids.append(a["atom_id"])
        ranks.append(a.get("rank"))
    if len(set(ids)) != len(ids):
        raise BadInput(f"tampered plan: an atom appears twice{where}")
    if ranks != list(range(1, len(atoms) + 1)):
        raise BadInput(f"tampered plan: ranks must be 1..n in order{where}")


def _segment_lists(d: dict) -> list[tuple[str, list]]:
    """A segmented plan's (label, atoms) parts, checked against its declared domain."""
    segmentation = d.get("segmentation")
    labels = segmentation.get("labels") if isinstance(segmentation, dict) else None
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise BadInput("tampered plan: a segmented plan needs segmentation.labels, a list of strings")
    parts = []
    for part in d["segments"]:
        if not isinstance(part, dict) or not isinstance(part.get("segment"), str) \
                or not isinstance(part.get("atoms"), list):
            raise BadInput("tampered plan: every segment needs a 'segment' label and an 'atoms' list")
        parts.append((part["segment"], part["atoms"]))
    if [p[0] for p in parts] != labels:
        raise BadInput("tampered plan: the segments are not the declared domain, in order")
    return parts


def segment_part(d: dict, segment: str) -> dict:
    """One segment of a segmented plan as a plan of its own (docs/PLAN.md): every public
    field, the segment's atoms as `atoms`, and `segment` naming it. Its intervals are the
    segmented release's (they hold together for every segment at once)."""
    if not isinstance(d.get("segments"), list):
        raise BadInput("the plan is not segmented: it has no segment to choose")
    parts = dict(_segment_lists(d))
    if segment not in parts:
        known = ", ".join(repr(s) for s in parts)
        raise BadInput(f"the plan has no segment {segment!r} (its segments: {known})")
    part = {k: v for k, v in d.items() if k != "segments"}
    part["atoms"] = parts[segment]
    part["segment"] = segment
    return part
