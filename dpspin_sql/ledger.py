"""The budget ledger: what the data owner allowed, what each release spent.

It lives in the store's DuckDB file, so the budget travels with the data.

Atomic. A charge re-reads everything spent and appends its row inside one transaction
that also advances the single `ledger_head` row. Two charges that run at once (threads on
separate connections) both write that row, so DuckDB's optimistic concurrency makes one
of them conflict; it is retried from the start (re-reading what was spent) until the lock
timeout, then refused as "store busy". Across processes DuckDB's file lock already
serialises writers; `store.connect` waits for it. So a charge that would exceed the total
can never commit.

Tamper-evident. Rows form a hash chain: each stores sha256 over its own content and the
previous row's hash, and the head row holds the last hash. An edited cost, a deleted or
re-ordered row breaks the chain; `verify` also rebuilds every stored OpenDP measurement,
re-evaluates its privacy map and checks its d_in against the sensitivity table, so even a
consistently re-hashed edit is caught. A charge refuses to spend on a ledger that fails
these checks. Each plan carries its release id and the chain hash at its row.

Costs compose by basic sequential composition, summed with `math.fsum` (exact rounding,
no tolerance that could let an overspend through).
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb

from dpspin_sql import queries
from dpspin_sql.db import first_row, lock_timeout, transaction
from dpspin_sql.errors import BadInput, BudgetExceeded, LedgerTampered, StoreBusy

DEFAULT_DATASET = "default"
DEFAULT_EPSILON_BUDGET = 1.0
DEFAULT_DELTA_BUDGET = 1e-5
GENESIS = "sha256:" + "0" * 64
_CHARGE_LOCK = threading.Lock()   # in-process: threads queue instead of conflicting


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


@dataclass(frozen=True)
class Charge:
    """A committed charge: the ledger row's id and its chain hash (both go into the plan)."""

    release_id: str
    row_hash: str


def set_budget(con: duckdb.DuckDBPyConnection, epsilon_total: float, delta_total: float,
               dataset: str = DEFAULT_DATASET, *, experiment_run: bool = False) -> None:
    """Set the total. It may be raised or lowered, but never below what is already spent.

    A store has one budget: its target split is one protected dataset. `experiment_run` is
    the one exception: each run of an experiment grid (dpspin_sql.experiment) charges a budget
    of its own in the grid's working store, whose releases measure utility and are audited
    per run, never published as the store's releases."""
    if not (_finite(epsilon_total) and epsilon_total > 0):
        raise BadInput(f"--epsilon-budget must be a positive number, not {epsilon_total!r}")
    if not (_finite(delta_total) and 0 <= delta_total < 1):
        raise BadInput(f"--delta-budget must lie in [0, 1), not {delta_total!r}")

    def attempt() -> None:
        with transaction(con):
            # one store holds one protected dataset, its target split: a second budget name would
            # release the same records again under a budget of its own
            other = first_row(con.execute("SELECT dataset FROM budget WHERE dataset <> $d ORDER BY dataset LIMIT 1",
                                          {"d": dataset}))
            if other is not None and not experiment_run:
                raise BadInput(f"this store already has the budget {other[0]!r}; a store holds one protected "
                               f"dataset (its target split) and so one budget: charge releases to {other[0]!r}, "
                               "or put other data in a store of its own")
            spent_eps, spent_delta = _spent(con, dataset)
            if epsilon_total < spent_eps or delta_total < spent_delta:
                raise BadInput(f"cannot set the budget below what is already spent (ε {spent_eps:g}, δ {spent_delta:g})")
            con.execute(queries.load("ledger_set_budget"),
                        {"dataset": dataset, "eps": epsilon_total, "delta": delta_total})

    _with_retry(attempt)


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
                 "epsilon": r[3], "delta": r[4], "params": json.loads(r[5]) if r[5] else {}, "plan_path": r[6],
                 "chain": r[7]}
                for r in rows]
    return BudgetStatus(dataset, row[0], row[1], spent_eps, spent_delta, releases)


def check(con: duckdb.DuckDBPyConnection, epsilon: float, delta: float, dataset: str = DEFAULT_DATASET) -> None:
    """Refuse now, before any work, if a release of this cost cannot fit (charge decides)."""
    row = first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset}))
    if row is None:
        raise BadInput(f"no budget set for dataset {dataset!r} (dpspin init --db FILE --epsilon-budget E)")
    eps_costs, delta_costs = _costs(con, dataset)
    _refuse_if_over(row[0], row[1], eps_costs, delta_costs, epsilon, delta, dataset)


def charge(con: duckdb.DuckDBPyConnection, cost_epsilon: float, cost_delta: float, *, mechanism: str,
           params: dict, measurements: list[dict], plan_path: str | None, dataset: str = DEFAULT_DATASET) -> Charge:
    """Record a release's cost (what its measurements' maps say), or refuse it. Runs before
    the plan exists."""
    if not (_finite(cost_epsilon) and cost_epsilon >= 0 and _finite(cost_delta) and cost_delta >= 0):
        raise BadInput(f"invalid release cost ({cost_epsilon!r}, {cost_delta!r})")
    epsilon, delta = float(cost_epsilon), float(cost_delta)
    release_id = uuid.uuid4().hex[:16]
    params_text, measurements_text = json.dumps(params), json.dumps(measurements)

    def attempt() -> Charge:
        with transaction(con):
            row = first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset}))
            if row is None:
                raise BadInput(f"no budget set for dataset {dataset!r} (dpspin init --db FILE --epsilon-budget E)")
            head_seq, head_hash = _verified_head(con)
            eps_costs, delta_costs = _verified_costs(con, dataset)
            _refuse_if_over(row[0], row[1], eps_costs, delta_costs, epsilon, delta, dataset)
            created = datetime.now(UTC).replace(tzinfo=None)
            content = _Row(head_seq + 1, head_hash, release_id, dataset, created, mechanism, float(epsilon),
                           float(delta), params_text, measurements_text, plan_path)
            row_hash = content.digest()
            con.execute(queries.load("ledger_insert"), {
                "release_id": release_id, "dataset": dataset, "created_at": created, "mechanism": mechanism,
                "eps": float(epsilon), "delta": float(delta), "params": params_text,
                "measurements": measurements_text, "plan_path": plan_path, "seq": head_seq + 1,
                "prev_hash": head_hash, "row_hash": row_hash})
            advanced = con.execute(queries.load("ledger_advance_head"),
                                   {"seq": head_seq + 1, "head_hash": row_hash, "previous_seq": head_seq}).fetchall()
            if not advanced or advanced[0][0] != 1:
                raise _Conflict()
        return Charge(release_id, row_hash)

    return _with_retry(attempt)


def measurements(con: duckdb.DuckDBPyConnection, release_id: str) -> list[dict]:
    """The serialized OpenDP measurements and d_in of one release, for an auditor."""
    row = first_row(con.execute(queries.load("ledger_measurements"), {"release_id": release_id}))
    if row is None:
        raise BadInput(f"no release {release_id!r} in the ledger")
    return json.loads(row[0])


def recompute_cost(records: list[dict]) -> tuple[float, float]:
    """Rebuild each stored measurement and evaluate its own privacy map at its d_in."""
    import dpspin_sql.opendp_lite as dp

    dp.enable_features("contrib")
    eps, delta = [], []
    for rec in records:
        meas = dp.deserialize(rec["measurement"])
        out = meas.map(rec["d_in"])
        e, d = (out if isinstance(out, tuple) else (out, 0.0))
        eps.append(float(e))
        delta.append(float(d))
    return math.fsum(eps), math.fsum(delta)


# -- the hash chain ---------------------------------------------------------------------

@dataclass(frozen=True)
class _Row:
    seq: int
    prev_hash: str
    release_id: str
    dataset: str
    created_at: datetime
    mechanism: str
    epsilon: float
    delta: float
    params: str
    measurements: str
    plan_path: str | None

    def digest(self) -> str:
        canon = [self.seq, self.prev_hash, self.release_id, self.dataset, self.created_at.isoformat(),
                 self.mechanism, float(self.epsilon).hex(), float(self.delta).hex(), self.params,
                 self.measurements, self.plan_path]
        body = json.dumps(canon, ensure_ascii=False, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(body).hexdigest()


@dataclass
class Finding:
    """One ledger row that does not check."""

    release_id: str | None
    seq: int | None
    problem: str

    def line(self) -> str:
        where = f"row {self.seq} (release {self.release_id})" if self.release_id else "the ledger head"
        return f"{where}: {self.problem}"


def verify(con: duckdb.DuckDBPyConnection, *, maps: bool = True) -> list[Finding]:
    """Every problem with the ledger: a broken chain, a head that is not the last row, a
    charged cost that is not its measurements' maps, a d_in that is not the sensitivity
    table's for the row's parameters, a dataset spent beyond its total."""
    findings: list[Finding] = []
    rows = con.execute(queries.load("ledger_rows")).fetchall()
    prev, expected_seq = GENESIS, 1
    for r in rows:
        seq, prev_hash, row_hash, release_id = r[0], r[1], r[2], r[3]
        content = _Row(seq if seq is not None else -1, prev_hash or "", release_id, r[4], r[5], r[6], r[7], r[8],
                       r[9] or "", r[10] or "", r[11])
        if seq != expected_seq:
            findings.append(Finding(release_id, seq, f"out of sequence (expected row {expected_seq}): a row was "
                                                     "deleted, inserted or re-ordered"))
        if prev_hash != prev:
            findings.append(Finding(release_id, seq, "does not chain to the previous row (a row before it was "
                                                     "deleted or edited)"))
        if row_hash != content.digest():
            findings.append(Finding(release_id, seq, "its content does not match its hash (the row was edited)"))
        if maps:
            findings.extend(_check_measurements(release_id, seq, r[7], r[8], r[9], r[10]))
        prev, expected_seq = row_hash, (seq or expected_seq) + 1
    head = first_row(con.execute(queries.load("ledger_head")))
    head_seq, head_hash = head if head else (0, GENESIS)
    last_seq = rows[-1][0] if rows else 0
    if head_seq != last_seq or head_hash != prev:
        findings.append(Finding(None, None, f"the head says row {head_seq} but the chain ends at row "
                                            f"{last_seq}: rows were deleted, added or edited after it"))
    for dataset, eps_total, delta_total in con.execute("SELECT dataset, epsilon_total, delta_total FROM budget "
                                                       "ORDER BY dataset").fetchall():
        eps_spent, delta_spent = _spent(con, dataset)
        if eps_spent > eps_total or delta_spent > delta_total:
            findings.append(Finding(None, None, f"dataset {dataset!r} spent (ε={eps_spent:g}, δ={delta_spent:g}) "
                                                f"beyond its total (ε={eps_total:g}, δ={delta_total:g})"))
    return findings


def _check_measurements(release_id, seq, epsilon, delta, params_text, measurements_text) -> list[Finding]:
    from dpspin_sql.request import Bounds, RequestError
    from dpspin_sql.sensitivity import fixed_point_d_in

    out: list[Finding] = []
    try:
        records = json.loads(measurements_text) if measurements_text else []
        params = json.loads(params_text) if params_text else {}
        eps, dlt = recompute_cost(records)
    except Exception as exc:  # a row whose measurement no longer deserialises is itself a finding
        return [Finding(release_id, seq, f"its measurements cannot be rebuilt ({type(exc).__name__})")]
    if (eps, dlt) != (float(epsilon), float(delta)):
        out.append(Finding(release_id, seq, f"charged (ε={epsilon!r}, δ={delta!r}) but its measurements' maps "
                                            f"give (ε={eps!r}, δ={dlt!r})"))
    try:
        unit = params["unit"]
        bounds = Bounds(unit, params.get("K", 3), params.get("B") if unit == "user" else None)
        d_in = fixed_point_d_in(unit, params["adjacency"], bounds.bound_fix)
    except (KeyError, TypeError, RequestError):
        return out + [Finding(release_id, seq, "its parameters do not name a unit, adjacency and B")]
    expected = {"laplace": d_in.l1, "gaussian": d_in.l2, "noisy_top_k": d_in.linf}
    for rec in records:
        want = expected.get(rec.get("name"))
        if want is None or rec.get("d_in") != int(want):
            out.append(Finding(release_id, seq, f"its {rec.get('name')} measurement is charged at d_in="
                                                f"{rec.get('d_in')}, but the sensitivity table gives {want} for "
                                                f"unit={unit}, adjacency={params['adjacency']}, B={bounds.B:g}"))
    return out


def _verified_head(con) -> tuple[int, str]:
    """The chain's head, after checking the whole chain (cheap: hashes only)."""
    findings = verify(con, maps=False)
    if findings:
        raise LedgerTampered(f"refused: the ledger does not check ({findings[0].line()}); "
                             "run dpspin budget --verify; nothing was charged")
    head = first_row(con.execute(queries.load("ledger_head")))
    return (int(head[0]), head[1]) if head else (0, GENESIS)


def _verified_costs(con, dataset: str) -> tuple[list[float], list[float]]:
    """What `dataset` spent, each row's charge checked against its own measurements' maps.
    Rows with the very same measurements text (a release repeated) are rebuilt once: the
    map of a deserialised measurement is a function of that text."""
    eps_costs, delta_costs = [], []
    seen: dict[str, tuple[float, float] | None] = {}
    for eps, delta, measurements_text, release_id in con.execute(queries.load("ledger_costs"),
                                                                 {"dataset": dataset}).fetchall():
        if not measurements_text:
            recomputed: tuple[float, float] | None = (eps, delta)
        elif measurements_text in seen:
            recomputed = seen[measurements_text]
        else:
            try:
                recomputed = recompute_cost(json.loads(measurements_text))
            except Exception:
                recomputed = None
            seen[measurements_text] = recomputed
        if recomputed != (float(eps), float(delta)):
            raise LedgerTampered(f"refused: release {release_id} is charged (ε={eps:g}, δ={delta:g}) but its "
                                 "measurements say otherwise; run dpspin budget --verify; nothing was charged")
        eps_costs.append(float(eps))
        delta_costs.append(float(delta))
    return eps_costs, delta_costs


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Chain the rows of a ledger written before the chain existed (trust on first use)."""
    if first_row(con.execute(queries.load("ledger_head"))) is not None:
        return
    rows = con.execute(queries.load("ledger_rows")).fetchall()
    with transaction(con):
        prev = GENESIS
        for seq, r in enumerate(rows, start=1):
            content = _Row(seq, prev, r[3], r[4], r[5], r[6], r[7], r[8], r[9] or "", r[10] or "", r[11])
            prev = content.digest()
            con.execute(queries.load("ledger_rechain"),
                        {"seq": seq, "prev_hash": content.prev_hash, "row_hash": prev, "release_id": r[3]})
        con.execute("INSERT INTO ledger_head VALUES (1, $seq, $hash)", {"seq": len(rows), "hash": prev})


# -- helpers ------------------------------------------------------------------------------

class _Conflict(Exception):
    """The head moved under this charge: retry from the start."""


def _with_retry(attempt):
    """Run `attempt` (one transaction) until it commits without a write conflict, waiting
    up to the lock timeout; then refuse as store busy."""
    deadline = time.monotonic() + lock_timeout()
    delay = 0.005
    if not _CHARGE_LOCK.acquire(timeout=lock_timeout()):
        raise StoreBusy(f"store busy: another release in this process held the ledger for {lock_timeout():g} s "
                        "(DPSPIN_LOCK_TIMEOUT); nothing was charged")
    try:
        while True:
            try:
                return attempt()
            except (_Conflict, duckdb.TransactionException, duckdb.ConstraintException) as exc:
                if isinstance(exc, duckdb.ConstraintException) and "ledger" not in str(exc).lower():
                    raise
                if time.monotonic() >= deadline:
                    raise StoreBusy("store busy: the ledger kept changing under this release for "
                                    f"{lock_timeout():g} s (DPSPIN_LOCK_TIMEOUT); nothing was charged") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
    finally:
        _CHARGE_LOCK.release()


def _costs(con, dataset: str) -> tuple[list[float], list[float]]:
    rows = con.execute(queries.load("ledger_costs"), {"dataset": dataset}).fetchall()
    return [float(r[0]) for r in rows], [float(r[1]) for r in rows]


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


def _finite(x: Any) -> bool:
    try:
        return not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False
