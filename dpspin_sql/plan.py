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
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpspin_sql.atoms import hash_entries
from dpspin_sql.errors import BadInput
from dpspin_sql.mechanisms import Mechanism, NoisyRelease, comparison_margin, interval_half_width
from dpspin_sql.outputs import dictionary_sidecar, write_text_atomic

__all__ = ["SCHEMA_VERSION", "Plan", "PlanAtom", "make_plan", "load_plan", "assign_bin", "validate_plan",
           "dictionary_sidecar", "dictionary_body"]

SCHEMA_VERSION = "2"

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


@dataclass
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


@dataclass
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

    def to_dict(self) -> dict:
        d = asdict(self)
        d["atoms"] = [a.to_dict() for a in self.atoms]
        first = ["schema_version", "mechanism", "epsilon", "delta", "unit", "adjacency", "B", "K", "L", "m",
                 "calibration", "noise_scale", "comparison_margin", "public_denominator", "bins", "bin_basis",
                 "dictionary", "created_at"]
        return {k: d[k] for k in first} | {k: v for k, v in d.items() if k not in first}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> Plan:
        try:
            atoms = [PlanAtom(**{k: a.get(k) for k in PlanAtom.__dataclass_fields__}) for a in d["atoms"]]
            fields = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "atoms"}
            return cls(atoms=atoms, **fields)
        except (KeyError, TypeError, AttributeError) as exc:
            raise BadInput(f"not a dpspin plan: missing or malformed {exc}") from None

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
    if request.mechanism == "private_topL":
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
    parsed sidecar ({"dictionary", "atoms"}) when there is one."""
    if not isinstance(d, dict) or not isinstance(d.get("atoms"), list):
        raise BadInput("not a dpspin plan: it needs an 'atoms' list")
    atoms = d["atoms"]
    L = d.get("L")
    if not isinstance(L, int) or isinstance(L, bool) or L < 0:
        raise BadInput("tampered plan: L is missing or not a non-negative integer")
    if len(atoms) > L:
        raise BadInput(f"tampered plan: {len(atoms)} atoms for L={L}")
    m = d.get("m")
    if isinstance(m, int) and len(atoms) > m:
        raise BadInput(f"tampered plan: {len(atoms)} atoms for a dictionary of m={m}")
    ids, ranks = [], []
    for a in atoms:
        if not isinstance(a, dict) or not isinstance(a.get("label"), str):
            raise BadInput("tampered plan: every atom needs a string label")
        for key in ("noisy_mass", "display_mass", "support"):
            v = a.get(key)
            if v is None and key == "support":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise BadInput(f"tampered plan: atom {a.get('label')!r} has a non-finite or missing {key}")
        for key in ("interval", "support_interval"):
            v = a.get(key)
            if v is not None and not (isinstance(v, list) and len(v) == 2 and all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)
                    and v[0] <= v[1]):
                raise BadInput(f"tampered plan: atom {a.get('label')!r} has a malformed {key}")
        if not isinstance(a.get("atom_id"), int) or isinstance(a.get("atom_id"), bool):
            raise BadInput(f"tampered plan: atom {a.get('label')!r} has no integer atom_id")
        ids.append(a["atom_id"])
        ranks.append(a.get("rank"))
    if len(set(ids)) != len(ids):
        raise BadInput("tampered plan: an atom appears twice")
    if ranks != list(range(1, len(atoms) + 1)):
        raise BadInput("tampered plan: ranks must be 1..n in order")
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
    for a in atoms:
        entry = by_id.get(a["atom_id"])
        if entry is None or str(entry.get("label")) != a["label"]:
            raise BadInput(f"tampered plan: atom {a['atom_id']} ({a['label']!r}) is not in the plan's dictionary")
    if isinstance(m, int) and m != len(by_id):
        raise BadInput(f"tampered plan: m={m} but the dictionary holds {len(by_id)} atoms")
