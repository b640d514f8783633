"""The released plan (SPEC §4): the only object a decoder ever sees.

It holds the admitted atoms in rank order and public metadata. It never holds
non-private masses, per-unit values, text, seeds or atoms outside the admitted set;
`make_plan` is the single place a plan is made, from a `NoisyRelease` and public
parameters only.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from dpspin_sql.errors import BadInput
from dpspin_sql.release import (DEFAULT_RANK_BINS, DEFAULT_SUPPORT_BINS, Mechanism, NoisyRelease,
                                comparison_margin)

SCHEMA_VERSION = "1"


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

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["support"] is None:
            del d["support"]
        return d


@dataclass
class Plan:
    mechanism: str
    epsilon: float
    delta: float
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
    schema_version: str = SCHEMA_VERSION
    created_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

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
    def from_dict(cls, d: dict) -> "Plan":
        try:
            atoms = [PlanAtom(**{k: a.get(k) for k in PlanAtom.__dataclass_fields__}) for a in d["atoms"]]
            fields = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "atoms"}
            return cls(atoms=atoms, **fields)
        except (KeyError, TypeError) as exc:
            raise BadInput(f"not a dpspin plan: missing or malformed {exc}") from None

    def write(self, path: str | Path) -> Path:
        return write_json_atomic(path, self.to_json())


def load_plan(path: str | Path) -> Plan:
    path = Path(path)
    if not path.exists():
        raise BadInput(f"plan file not found: {path}")
    try:
        return Plan.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}") from None


def make_plan(noisy: NoisyRelease, mechanism: Mechanism, atoms: list, dictionary_id: str,
              release_id: str | None = None) -> Plan:
    """Assemble the plan from the noisy release and public inputs only.

    `atoms` is the public dictionary in sketch order (position i ↔ sketch coordinate i).
    Support, bins and ranks are post-processing of the noisy masses.
    """
    config = mechanism.config
    denominator = config.public_denominator
    basis = "support" if denominator else "rank"
    bins = dict(config.bins or (DEFAULT_SUPPORT_BINS if denominator else DEFAULT_RANK_BINS))
    margin = config.comparison_margin
    if margin is None:
        margin = comparison_margin(mechanism.noise_kind, mechanism.noise_scale, config.comparison_confidence)
    plan_atoms = []
    for rank, (pos, value) in enumerate(zip(noisy.admitted, noisy.noisy_mass), start=1):
        atom = atoms[pos]
        display = max(float(value), 0.0)
        support = display / denominator if denominator else None
        plan_atoms.append(PlanAtom(atom_id=int(atom.atom_id), label=atom.label, description=atom.description or "",
                                   noisy_mass=float(value), display_mass=display,
                                   bin=assign_bin(support if denominator else rank, bins, basis),
                                   rank=rank, support=support))
    eps_cost, delta_cost = mechanism.cost
    details = {"noise": mechanism.noise_kind, "comparison_confidence": config.comparison_confidence,
               "fixed_point_scale": mechanism.scale} | mechanism.extra
    if config.mechanism == "private_topL":
        details["selection_fraction"] = config.selection_fraction
    return Plan(mechanism=config.mechanism, epsilon=float(config.epsilon), delta=config.effective_delta,
                unit=config.unit, adjacency=config.adjacency, B=config.effective_B, K=int(config.K),
                L=int(config.L), m=mechanism.m,
                calibration=config.calibration if config.mechanism != "laplace" else "laplace",
                noise_scale=float(mechanism.noise_scale), comparison_margin=float(margin),
                public_denominator=denominator, bins=bins, bin_basis=basis, dictionary=dictionary_id,
                atoms=plan_atoms, privacy_cost={"epsilon": eps_cost, "delta": delta_cost},
                mechanism_details=details, release_id=release_id)


def assign_bin(value: float, bins: dict, basis: str) -> str:
    """Public bin rule: support ≥ high → high, ≥ moderate → moderate, else low; on rank,
    rank ≤ high → high, ≤ moderate → moderate, else low."""
    if basis == "support":
        return "high" if value >= bins["high"] else "moderate" if value >= bins["moderate"] else "low"
    return "high" if value <= bins["high"] else "moderate" if value <= bins["moderate"] else "low"


def write_json_atomic(path: str | Path, text: str) -> Path:
    """Write text via a temporary file and rename, so a reader never sees half a file."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise BadInput(f"output directory does not exist: {path.parent}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.write("\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a plan is meant to be published
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def dictionary_sidecar(plan_path: str | Path) -> Path:
    """Where `dpspin release` puts the public dictionary beside a plan (for the verifier)."""
    plan_path = Path(plan_path)
    return plan_path.with_name(plan_path.stem + ".dictionary.json")
