"""One release, end to end: request → mechanism → sketch → ledger charge → noise → plan.

Every entry point (`dpspin release`, `dpspin sql`, the experiment harness, the demo)
calls `release` with a validated `ReleaseRequest` and an engine. The order is the
privacy argument (docs/DESIGN.md §4):

1. the mechanism is calibrated once, from the request and the dictionary size only;
2. the outputs are checked (nothing is charged for a path that would be refused);
3. the pipeline's preconditions are checked on what the curator ran, not on the records;
4. the engine computes the enforced sketch;
5. the ledger is charged once, atomically (or the release refused) — before any noise
   is drawn or any plan exists;
6. only then does the mechanism see the sketch; the public dictionary is written, then
   the plan, each atomically, so a plan never exists without its dictionary.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np

from dpspin_sql import ledger, store
from dpspin_sql.atoms import Atom, current_atoms, current_dictionary_id, dictionary_hash
from dpspin_sql.engines.base import Engine
from dpspin_sql.engines.duckdb import DuckDBEngine
from dpspin_sql.errors import BadInput
from dpspin_sql.mechanisms import Mechanism, make_mechanism
from dpspin_sql.outputs import Outputs, dictionary_sidecar, write_text_atomic
from dpspin_sql.plan import Plan, dictionary_body, make_plan
from dpspin_sql.request import SCALE, ReleaseRequest
from dpspin_sql.sketch import Sketch


def release(con: duckdb.DuckDBPyConnection, request: ReleaseRequest, engine: Engine | None = None, *,
            out: str | Path | None = None, outputs: Outputs | None = None,
            dataset: str = ledger.DEFAULT_DATASET, extra_params: dict | None = None,
            mechanism: Mechanism | None = None, observe: Callable[[np.ndarray], None] | None = None) -> Plan:
    """Release a plan from the store's target split (the engine says where the sketch is computed).

    `out` is the plan file (its dictionary goes beside it); `outputs` is the command's
    checked set of outputs, when the caller has other files to protect too (its inputs,
    `--force`). `extra_params` are recorded in the ledger entry (e.g. the SQL statement).
    `mechanism` reuses a calibration already built for this request (experiments build
    one per grid cell); `observe` is passed to `Mechanism.apply`. `con` is a store
    connection, or a DuckDB connection that `dpspin_sql.install` gave a store.
    """
    from dpspin_sql.embed import resolve

    with resolve(con) as con:
        return _release(con, request, engine, out=out, outputs=outputs, dataset=dataset, extra_params=extra_params,
                        mechanism=mechanism, observe=observe)


def _release(con, request, engine, *, out, outputs, dataset, extra_params, mechanism, observe) -> Plan:
    engine = engine or DuckDBEngine()
    atoms = current_atoms(con)
    if not atoms:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    if mechanism is None:
        mechanism = make_mechanism(request, len(atoms))
    else:
        mechanism.check(request, len(atoms))
    if out is not None:
        outputs = outputs or Outputs(store=store.path_of(con))
        outputs.add(out, "--out", kind="plan")
    dictionary_id = current_dictionary_id(con) or dictionary_hash(atoms)
    eps, delta = mechanism.cost
    ledger.check(con, eps, delta, dataset)   # refuse early, before the sketch is computed
    assignment = assignment_info(con, engine.details())   # public: what a mass measures (aux-only facts)
    sketch = engine.sketch(con, request.bounds)
    _check_sketch(sketch, request, atoms)
    # public parameters only: exact target counts are not DP and `dpspin budget` shows this
    params = request.public_params() | {"m": len(atoms), "dictionary": dictionary_id} | engine.details() \
        | (extra_params or {})
    charged = ledger.charge(con, eps, delta, mechanism=request.mechanism, params=params,
                            measurements=mechanism.audit_records(),
                            plan_path=str(out) if out is not None else None, dataset=dataset)
    plan = make_plan(mechanism.apply(sketch.mass, observe), mechanism, atoms, dictionary_id,
                     charged.release_id, charged.row_hash, assignment=assignment)
    if out is not None:
        write_text_atomic(dictionary_sidecar(out), dictionary_body(atoms, dictionary_id))
        plan.write(out)
    return plan


def assignment_info(con: duckdb.DuckDBPyConnection, details: dict) -> dict:
    """What the release's masses measure (`assign.assignment_info`); read before the charge,
    so the plan that follows it cannot fail on it."""
    from dpspin_sql.assign import assignment_info as info

    return info(con, details)


def _check_sketch(sketch: Sketch, request: ReleaseRequest, atoms: list[Atom]) -> None:
    if sketch.scale != SCALE:
        raise BadInput("the sketch is not in the release's fixed-point units")
    if sketch.bounds != request.bounds:
        raise BadInput("the sketch was computed with other bounds (unit, K, B) than the release claims")
    if [int(a) for a in sketch.atom_ids] != [a.atom_id for a in atoms]:
        raise BadInput("the sketch does not cover the current dictionary")
