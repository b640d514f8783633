"""The budget ledger: what the data owner allowed, what each release spent.

It lives in the store's DuckDB file, so the budget travels with the data. A release is
charged inside one transaction that re-reads what was spent, so two releases cannot
both squeeze under the total; costs compose by basic sequential composition, summed
with `math.fsum` (exact rounding, no tolerance that could let an overspend through).
"""
from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb

from dpspin_sql import queries
from dpspin_sql.errors import BadInput, BudgetExceeded
from dpspin_sql.store import first_row, transaction

DEFAULT_DATASET = "default"
DEFAULT_EPSILON_BUDGET = 1.0
DEFAULT_DELTA_BUDGET = 1e-5


@dataclass
class BudgetStatus:
    dataset: str
    epsilon_total: float
    delta_total: float
    epsilon_spent: float
    delta_spent: float
    releases: list[dict] = field(default_factory=list)

    @property
    def epsilon_remaining(self) -> float:
        return max(self.epsilon_total - self.epsilon_spent, 0.0)

    @property
    def delta_remaining(self) -> float:
        return max(self.delta_total - self.delta_spent, 0.0)

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "epsilon_total": self.epsilon_total, "delta_total": self.delta_total,
                "epsilon_spent": self.epsilon_spent, "delta_spent": self.delta_spent,
                "epsilon_remaining": self.epsilon_remaining, "delta_remaining": self.delta_remaining,
                "releases": self.releases}


def set_budget(con: duckdb.DuckDBPyConnection, epsilon: float, delta: float,
               dataset: str = DEFAULT_DATASET) -> None:
    """Set the total. It may be raised or lowered, but never below what is already spent."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise BadInput(f"--epsilon-budget must be a positive number, not {epsilon!r}")
    if not (math.isfinite(delta) and 0 <= delta < 1):
        raise BadInput(f"--delta-budget must lie in [0, 1), not {delta!r}")
    with transaction(con):
        spent_eps, spent_delta = _spent(con, dataset)
        if epsilon < spent_eps or delta < spent_delta:
            raise BadInput(f"cannot set the budget below what is already spent (ε {spent_eps:g}, δ {spent_delta:g})")
        con.execute(queries.load("ledger_set_budget"), {"dataset": dataset, "eps": epsilon, "delta": delta})


def ensure_budget(con: duckdb.DuckDBPyConnection, dataset: str = DEFAULT_DATASET) -> None:
    if first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset})) is None:
        set_budget(con, DEFAULT_EPSILON_BUDGET, DEFAULT_DELTA_BUDGET, dataset)


def status(con: duckdb.DuckDBPyConnection, dataset: str = DEFAULT_DATASET) -> BudgetStatus:
    row = first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset}))
    if row is None:
        raise BadInput(f"no budget set for dataset {dataset!r} (dpspin init --db FILE --epsilon-budget E)")
    spent_eps, spent_delta = _spent(con, dataset)
    rows = con.execute(queries.load("ledger_releases"), {"dataset": dataset}).fetchall()
    releases = [{"release_id": r[0], "created_at": r[1].isoformat(timespec="seconds"), "mechanism": r[2],
                 "epsilon": r[3], "delta": r[4], "params": json.loads(r[5]) if r[5] else {}, "plan_path": r[6]}
                for r in rows]
    return BudgetStatus(dataset, row[0], row[1], spent_eps, spent_delta, releases)


def check(con: duckdb.DuckDBPyConnection, epsilon: float, delta: float, dataset: str = DEFAULT_DATASET) -> None:
    """Refuse now, before any work, if a release of this cost cannot fit."""
    st = status(con, dataset)
    _refuse_if_over(st.epsilon_total, st.delta_total, *_costs(con, dataset), epsilon, delta, dataset)


def charge(con: duckdb.DuckDBPyConnection, epsilon: float, delta: float, *, mechanism: str, params: dict,
           measurements: list[dict], plan_path: str | None, dataset: str = DEFAULT_DATASET) -> str:
    """Record a release's cost, or refuse it. Runs before the plan exists."""
    if not (math.isfinite(epsilon) and epsilon >= 0 and math.isfinite(delta) and delta >= 0):
        raise BadInput(f"invalid release cost ({epsilon!r}, {delta!r})")
    release_id = uuid.uuid4().hex[:16]
    with transaction(con):
        row = first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset}))
        if row is None:
            raise BadInput(f"no budget set for dataset {dataset!r} (dpspin init --db FILE --epsilon-budget E)")
        _refuse_if_over(row[0], row[1], *_costs(con, dataset), epsilon, delta, dataset)
        con.execute(queries.load("ledger_insert"), {
            "release_id": release_id, "dataset": dataset,
            "created_at": datetime.now(timezone.utc).replace(tzinfo=None), "mechanism": mechanism,
            "eps": epsilon, "delta": delta, "params": json.dumps(params), "measurements": json.dumps(measurements),
            "plan_path": plan_path})
    return release_id


def measurements(con: duckdb.DuckDBPyConnection, release_id: str) -> list[dict]:
    """The serialized OpenDP measurements and d_in of one release, for an auditor."""
    row = first_row(con.execute(queries.load("ledger_measurements"), {"release_id": release_id}))
    if row is None:
        raise BadInput(f"no release {release_id!r} in the ledger")
    return json.loads(row[0])


def recompute_cost(records: list[dict]) -> tuple[float, float]:
    """Rebuild each stored measurement and evaluate its own privacy map at its d_in."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    eps, delta = [], []
    for rec in records:
        meas = dp.deserialize(rec["measurement"])
        out = meas.map(rec["d_in"])
        e, d = (out if isinstance(out, tuple) else (out, 0.0))
        eps.append(float(e))
        delta.append(float(d))
    return math.fsum(eps), math.fsum(delta)


def _costs(con, dataset: str) -> tuple[list[float], list[float]]:
    rows = con.execute(queries.load("ledger_costs"), {"dataset": dataset}).fetchall()
    return [r[0] for r in rows], [r[1] for r in rows]


def _spent(con, dataset: str) -> tuple[float, float]:
    eps_costs, delta_costs = _costs(con, dataset)
    return math.fsum(eps_costs), math.fsum(delta_costs)


def _refuse_if_over(eps_total, delta_total, eps_costs, delta_costs, eps, delta, dataset) -> None:
    # one correctly rounded sum over every charge and the new one: fsum(fsum(spent), new)
    # rounds twice and can let a release through whose total exceeds the budget
    new_eps, new_delta = math.fsum([*eps_costs, eps]), math.fsum([*delta_costs, delta])
    eps_spent, delta_spent = math.fsum(eps_costs), math.fsum(delta_costs)
    if new_eps > eps_total or new_delta > delta_total:
        raise BudgetExceeded(
            f"refused: this release costs (ε={eps:.6g}, δ={delta:.3g}) but dataset {dataset!r} has only "
            f"(ε={max(eps_total - eps_spent, 0):.6g}, δ={max(delta_total - delta_spent, 0):.3g}) left of "
            f"(ε={eps_total:g}, δ={delta_total:g}); no plan was written")
