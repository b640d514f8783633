"""One release, end to end: request → mechanism → sketch → ledger charge → noise → plan.

Every entry point (`dpspin release`, `dpspin sql`, the experiment harness, the demo)
calls `release` with a validated `ReleaseRequest` and an engine. The order is the
privacy argument (docs/DESIGN.md §4):

1. the mechanism is calibrated once, from the request and the dictionary size only;
2. the outputs are checked and probed for writability, room included (nothing is charged
   for a path that would be refused);
3. the pipeline's preconditions are checked on what the curator ran, not on the records;
4. the engine computes the enforced sketch;
5. one transaction charges the ledger (or refuses the release), and only after the row
   is written does the mechanism see the sketch: the noise is drawn, the plan made and
   stored with its dictionary beside the row, and the transaction commits — so no plan
   is visible anywhere before its charge is, and no charge exists without its plan;
6. the public dictionary is written, then the plan, each atomically, so a plan file never
   exists without its dictionary. If that fails or the command is interrupted, one line
   says that the budget was spent and how to write the plan again (`recover`).
"""
from __future__ import annotations

import shlex
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np

from dpspin_sql import interrupts, ledger, store
from dpspin_sql.atoms import Atom, current_atoms, current_dictionary_id, dictionary_hash
from dpspin_sql.errors import BadInput, PlanNotWritten
from dpspin_sql.fixed_point import SCALE
from dpspin_sql.mechanisms import Mechanism, make_mechanism
from dpspin_sql.outputs import Outputs, dictionary_sidecar, write_text_atomic
from dpspin_sql.plan import Plan, dictionary_body, make_plan
from dpspin_sql.request import ReleaseRequest
from dpspin_sql.sketch import Sketch
from dpspin_sql.sketch.engines.base import Engine
from dpspin_sql.sketch.engines.duckdb import DuckDBEngine


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
    dictionary_id = current_dictionary_id(con) or dictionary_hash(atoms)
    dictionary_text = dictionary_body(atoms, dictionary_id)
    if out is not None:
        outputs = outputs or Outputs(store=store.path_of(con))
        outputs.add(out, "--out", kind="plan")
        outputs.reserve(out, "--out", len(dictionary_text.encode()) + _plan_size_bound(atoms, request.L))
    eps, delta = mechanism.cost
    ledger.check(con, eps, delta, dataset, measurements=mechanism.audit_records())   # refuse early, before the sketch
    assignment = assignment_info(con, engine.details())   # public: what a mass measures (aux-only facts)
    sketch = engine.sketch(con, request.bounds)
    _check_sketch(sketch, request, atoms)
    # public parameters only: exact target counts are not DP and `dpspin budget` shows this
    params = request.public_params() | {"m": len(atoms), "dictionary": dictionary_id} | engine.details() \
        | (extra_params or {})
    def draw(charged: ledger.Charge) -> Published:
        seen: list[np.ndarray] = []
        noisy = mechanism.apply(sketch.mass, seen.append if observe is not None else None)
        plan = make_plan(noisy, mechanism, atoms, dictionary_id, charged.release_id, charged.row_hash,
                         assignment=assignment)
        return Published(plan, plan.to_json(), dictionary_text, seen)

    published = _charge_and_publish(con, eps, delta, mechanism=request.mechanism, params=params,
                                    measurements=mechanism.audit_records(), dataset=dataset, out=out, draw=draw)
    if observe is not None and published.seen:
        observe(published.seen[-1])
    return published.plan


@dataclass(frozen=True)
class Published:
    """What a release's draw made inside the charging transaction: the plan, the exact text
    its file and the ledger hold, its dictionary's text, and what the caller wanted to see."""

    plan: Plan
    text: str
    dictionary_text: str
    seen: list = field(default_factory=list)


@dataclass(frozen=True)
class Composite:
    """A release of several OpenDP measurements charged as one row (basic sequential
    composition: ε and δ are the sums of their maps' costs): the experiments' baselines,
    whose later steps read the noisy output of earlier ones. `name` is the ledger's
    mechanism column; `measurements` are the steps' audit records, which the ledger
    re-evaluates; `params` are public."""

    name: str
    epsilon: float
    delta: float
    measurements: list[dict]
    params: dict


def release_composite(con: duckdb.DuckDBPyConnection, composite: Composite,
                      draw: Callable[[ledger.Charge], Published], *, out: str | Path,
                      dataset: str = ledger.DEFAULT_DATASET, outputs: Outputs | None = None) -> Published:
    """Charge `composite` (refused over budget before any noise is drawn), then run `draw`
    inside the charging transaction: it draws every step's noise (OpenDP) and returns the
    plan, whose text is stored with the ledger row and then written to `out` — the same
    charge, storage and write as `release`, so a paid-for composite plan is never lost
    (`dpspin recover`). `outputs` as for `release`."""
    ledger.check(con, composite.epsilon, composite.delta, dataset, measurements=composite.measurements)
    (outputs or Outputs(store=store.path_of(con))).add(out, "--out", kind="plan")
    return _charge_and_publish(con, composite.epsilon, composite.delta, mechanism=composite.name,
                               params=composite.params, measurements=composite.measurements, dataset=dataset,
                               out=out, draw=draw)


def _charge_and_publish(con, eps: float, delta: float, *, mechanism: str, params: dict, measurements: list[dict],
                        dataset: str, out: str | Path | None,
                        draw: Callable[[ledger.Charge], Published]) -> Published:
    """The one charge of every release: the ledger row, the plan `draw` makes stored with it
    in the same transaction, then the plan file (PaidRelease's line if it cannot be written)."""
    store_path = store.path_of(con)
    made: dict = {}
    interrupts.status("nothing was charged")

    def publish(charged: ledger.Charge) -> tuple[str, str]:
        # inside the charging transaction, after the row is written: nothing made here leaves
        # this frame unless the transaction commits (ledger.charge)
        made["published"] = published = draw(charged)
        return published.text, published.dictionary_text

    def then(charged: ledger.Charge) -> None:
        paid = PaidRelease(charged.release_id, eps, delta, store_path, out)
        interrupts.status(paid.unwritten())
        if out is None:
            interrupts.status(paid.stored())
            return
        try:
            write_text_atomic(dictionary_sidecar(out), made["published"].dictionary_text)
            write_text_atomic(out, made["published"].text)
        except (OSError, BadInput) as exc:
            raise PlanNotWritten(paid.not_written(exc)) from None
        interrupts.status(paid.written())

    ledger.charge(con, eps, delta, mechanism=mechanism, params=params, measurements=measurements,
                  plan_path=str(out) if out is not None else None, dataset=dataset, publish=publish, then=then)
    return made["published"]


@dataclass(frozen=True)
class PaidRelease:
    """A committed release, for the one line that says what happened to its plan."""

    release_id: str
    epsilon: float
    delta: float
    store: str | Path | None
    out: str | Path | None

    def _recover(self) -> str:
        db = shlex.quote(str(self.store)) if self.store else "STORE"
        target = shlex.quote(str(self.out)) if self.out is not None else "PLAN.json"
        return f"dpspin recover --db {db} --release {self.release_id} --out {target}"

    def _spent(self) -> str:
        return f"release {self.release_id} was charged (ε={self.epsilon:.6g}, δ={self.delta:.3g})"

    def unwritten(self) -> str:
        return (f"{self._spent()} and its plan is stored in the store but was not written to {self.out}; "
                f"write it with: {self._recover()}")

    def stored(self) -> str:
        return f"{self._spent()} and its plan is stored in the store ({self._recover()} writes it)"

    def written(self) -> str:
        return f"{self._spent()} and its plan was written to {self.out}"

    def not_written(self, exc: BaseException) -> str:
        reason = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)
        return (f"the plan could not be written to {self.out} ({reason}); {self._spent()} and its plan is stored "
                f"in the store: write it with {self._recover()}")


def recover(con: duckdb.DuckDBPyConnection, out: str | Path, release_id: str | None = None, *,
            outputs: Outputs | None = None) -> str:
    """Write the plan and dictionary stored with a release (None: the last one) to `out`
    and beside it, exactly as the release wrote them. Returns the release id."""
    from dpspin_sql.embed import resolve

    with resolve(con) as con:
        rid, plan_text, dictionary_text = ledger.stored_plan(con, release_id)
        outputs = outputs or Outputs(store=store.path_of(con))
        outputs.add(out, "--out", kind="plan")
        outputs.reserve(out, "--out", len(plan_text.encode()) + len(dictionary_text.encode()))
        with interrupts.deferred():
            write_text_atomic(dictionary_sidecar(out), dictionary_text)
            write_text_atomic(out, plan_text)
    return rid


def _plan_size_bound(atoms: list[Atom], L: int) -> int:
    """More bytes than the plan file can take: its fixed part, and per admitted atom its
    numbers plus the longest labels and descriptions (JSON-escaped at most 6 bytes a char)."""
    longest = sorted((len(a.label) + len(a.description or "") for a in atoms), reverse=True)[:max(L, 0)]
    return 8192 + 1024 * max(L, 0) + 6 * sum(longest)


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
    if sketch.segments != (request.segments.labels if request.segments is not None else None):
        raise BadInput("the sketch's segments are not the release's segment domain (docs/DESIGN.md §11)")


class _CallableModule(types.ModuleType):
    """`from dpspin_sql import release` is this module whether or not something imported it
    before; calling it is calling `release.release`."""

    def __call__(self, *args, **kwargs) -> Plan:
        return release(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
