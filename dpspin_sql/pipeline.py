"""One release, end to end: sketch → mechanism → ledger charge → noise → plan file.

The order is the privacy argument: the mechanism and its cost are fixed from public
parameters; the ledger is charged (or the release refused) before any noise is drawn
or any plan exists; only then does the mechanism see the sketch.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import duckdb
import numpy as np

from dpspin_sql import ledger
from dpspin_sql.atoms import Atom, current_atoms, current_dictionary_id, dictionary_hash
from dpspin_sql.errors import BadInput
from dpspin_sql.plan import Plan, dictionary_sidecar, make_plan, write_json_atomic
from dpspin_sql.release import Mechanism, ReleaseConfig, make_mechanism
from dpspin_sql.sketch import SCALE, Sketch, compute_sketch


def release_and_charge(con: duckdb.DuckDBPyConnection, config: ReleaseConfig, sketch: Sketch | None = None,
                       out_path: str | Path | None = None, atoms: list[Atom] | None = None,
                       dataset: str = ledger.DEFAULT_DATASET, extra_params: dict | None = None,
                       mechanism: Mechanism | None = None,
                       observe: Callable[[np.ndarray], None] | None = None) -> Plan:
    """Release a plan from the store (or from a sketch computed elsewhere, e.g. Spark).

    `extra_params` are recorded in the ledger entry (e.g. the SQL statement that asked).
    `mechanism` reuses a calibration already built for this config (experiments build
    one per grid cell); `observe` is passed to `Mechanism.apply`.
    """
    atoms = atoms if atoms is not None else current_atoms(con)
    if not atoms:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    out = _check_out_path(out_path)
    if mechanism is None:
        mechanism = make_mechanism(config, len(atoms))
    else:
        mechanism.check(config, len(atoms))
    eps, delta = mechanism.cost
    ledger.check(con, eps, delta, dataset)
    if sketch is None:
        sketch = compute_sketch(con, config.unit, config.K, config.B)
    _check_sketch(sketch, config, atoms)
    dictionary_id = current_dictionary_id(con) or dictionary_hash(atoms)
    # public parameters only: exact target counts are not DP and `dpspin budget` shows this
    params = asdict(config) | {"m": len(atoms), "dictionary": dictionary_id} | (extra_params or {})
    release_id = ledger.charge(con, eps, delta, mechanism=config.mechanism, params=params,
                               measurements=mechanism.audit_records(),
                               plan_path=str(out) if out else None, dataset=dataset)
    plan = make_plan(mechanism.apply(sketch.mass, observe), mechanism, atoms, dictionary_id, release_id)
    if out is not None:
        plan.write(out)
        write_dictionary(atoms, dictionary_id, dictionary_sidecar(out))
    return plan


def write_dictionary(atoms: list[Atom], dictionary_id: str, path: Path) -> Path:
    """The public dictionary beside a plan, so anyone can run the verifier on it."""
    body = {"dictionary": dictionary_id,
            "atoms": [{"atom_id": a.atom_id, "label": a.label, "description": a.description} for a in atoms]}
    return write_json_atomic(path, json.dumps(body, indent=1, ensure_ascii=False))


def _check_out_path(out_path) -> Path | None:
    if out_path is None:
        return None
    out = Path(out_path)
    if out.is_dir():
        raise BadInput(f"--out {out} is a directory; give a file name such as {out / 'private_plan.json'}")
    if not out.parent.exists():
        raise BadInput(f"output directory does not exist: {out.parent}")
    return out


def _check_sketch(sketch: Sketch, config: ReleaseConfig, atoms: list[Atom]) -> None:
    if sketch.scale != SCALE:
        raise BadInput("the sketch is not in the release's fixed-point units")
    if sketch.unit != config.unit or sketch.K != config.K or (config.unit == "user" and sketch.B != config.B):
        raise BadInput("the sketch was computed with other bounds (unit, K, B) than the release claims")
    if [int(a) for a in sketch.atom_ids] != [a.atom_id for a in atoms]:
        raise BadInput("the sketch does not cover the current dictionary")
