"""The budget ledger: what the data owner allowed, what each release spent.

It lives in the store's DuckDB file, so the budget travels with the data.

Atomic. A charge re-reads everything spent and appends its row inside one transaction
that also advances the single `ledger_head` row. Two charges that run at once (threads on
separate connections) both write that row, so DuckDB's optimistic concurrency makes one
of them conflict; it is retried from the start (re-reading what was spent) until the lock
timeout, then refused as "store busy". Across processes DuckDB's file lock already
serialises writers; `store.connect` waits for it. So a charge that would exceed the total
can never commit. A failure that is not a conflict (a full disk) is never retried.

One transaction charges and stores the plan. `charge(..., publish=...)` calls `publish`
(which draws the noise and makes the plan) after the release's row is written and before
the commit, and stores the plan and its dictionary (`release_plans`) in the same
transaction: the plan becomes visible only with the charge, and there is never a charge
without its stored plan (docs/DESIGN.md §4). `then` (the plan file's write) runs after
the commit; SIGINT/SIGTERM from the row's write to the end of `then` are deferred
(`interrupts`).

Tamper-evident. One hash chain runs through the release rows (`ledger`) and the chain's
other events (`ledger_events`: the store's creation and every change of a budget's total),
in `seq` order: each row stores sha256 over its own content and the previous row's hash,
and the head row holds the last hash. `verify` finds an edited, deleted, inserted or
re-ordered row, a head that is not the chain's end, missing ledger tables, an emptied
chain, a budget total that is not the last budget event's, a stored plan that is not its
row's (or a row whose stored plan is gone); it rebuilds every stored OpenDP measurement,
re-evaluates its privacy map and checks its d_in against the sensitivity table, so a
consistently re-hashed cost edit is caught too. A rewound or replaced chain that is
consistent in itself is caught against anchors kept outside the store: published plans
and a witness file (`anchors.py`). A charge or budget change refuses to extend a ledger
that fails these checks.

How costs compose is the store's accountant (`accountant.py`, an event of the chain:
the creation event names it, an 'accountant' event changes it before any release): basic
sequential composition (ε and δ summed with `math.fsum`, exact rounding, no tolerance that
could let an overspend through) or zcdp. Every row keeps its serialised measurements, their
d_in and each one's zCDP ρ; every charge rebuilds them and recomposes the dataset's
releases under the accountant before it admits one more.
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from dpspin_sql import accountant, anchors, interrupts, queries
from dpspin_sql.accountant import Composition, Release
from dpspin_sql.db import first_row, lock_timeout, storage_error, transaction
from dpspin_sql.errors import BadInput, BudgetExceeded, LedgerTampered, Refusal, StoreBusy

DEFAULT_DATASET = "default"
DEFAULT_EPSILON_BUDGET = 1.0
DEFAULT_DELTA_BUDGET = 1e-5
GENESIS = "sha256:" + "0" * 64
_CHARGE_LOCK = threading.Lock()   # in-process: threads queue instead of conflicting
# the tables the ledger is made of (queries/schema.sql), column by column, and the store's
# tables whose rows a ledger protects
_COLUMNS = {
    "ledger": {"release_id": "VARCHAR", "dataset": "VARCHAR", "created_at": "TIMESTAMP", "mechanism": "VARCHAR",
               "epsilon": "DOUBLE", "delta": "DOUBLE", "params": "JSON", "measurements": "JSON",
               "plan_path": "VARCHAR", "seq": "BIGINT", "prev_hash": "VARCHAR", "row_hash": "VARCHAR",
               "plan_stored": "BOOLEAN"},
    "ledger_head": {"id": "INTEGER", "seq": "BIGINT", "head_hash": "VARCHAR"},
    "ledger_events": {"event_id": "VARCHAR", "kind": "VARCHAR", "dataset": "VARCHAR", "created_at": "TIMESTAMP",
                      "epsilon_total": "DOUBLE", "delta_total": "DOUBLE", "details": "VARCHAR", "seq": "BIGINT",
                      "prev_hash": "VARCHAR", "row_hash": "VARCHAR"},
    "release_plans": {"release_id": "VARCHAR", "plan": "VARCHAR", "dictionary": "VARCHAR"},
    "budget": {"dataset": "VARCHAR", "epsilon_total": "DOUBLE", "delta_total": "DOUBLE"},
}
CHAIN_TABLES = tuple(_COLUMNS)
_HOLDINGS = (("records", "record"), ("atoms", "atom"), ("assignments", "assignment row"),
             ("dictionary", "dictionary"), ("release_plans", "stored plan"), ("ledger", "release row"),
             ("ledger_events", "ledger event"), ("budget", "budget"))


@dataclass
class BudgetStatus:
    dataset: str
    epsilon_total: float
    delta_total: float
    epsilon_spent: float
    delta_spent: float
    releases: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    accountant: str = accountant.BASIC
    composition: Composition | None = None   # spent (above) is what the accountant counts

    @property
    def epsilon_charged(self) -> float:
        """The sum of the ε each release was charged: what basic composition spends, an
        upper bound of what the store's accountant counts (``epsilon_spent``)."""
        return math.fsum(float(r["epsilon"]) for r in self.releases)

    @property
    def epsilon_remaining(self) -> float:
        return max(self.epsilon_total - self.epsilon_spent, 0.0)

    @property
    def delta_remaining(self) -> float:
        return max(self.delta_total - self.delta_spent, 0.0)

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "epsilon_total": self.epsilon_total, "delta_total": self.delta_total,
                "epsilon_spent": self.epsilon_spent, "delta_spent": self.delta_spent,
                "epsilon_charged": self.epsilon_charged,
                "epsilon_remaining": self.epsilon_remaining, "delta_remaining": self.delta_remaining,
                "releases": self.releases, "budget_events": self.events,
                "accountant": self.composition.to_dict() if self.composition is not None
                else {"name": self.accountant}}


@dataclass(frozen=True)
class Charge:
    """A committed row of the chain: its id and hash (both go into the plan), its row
    number, and the chain's id (the hash of its first row: what a witness names)."""

    release_id: str
    row_hash: str
    seq: int = 0
    chain_id: str | None = None


def set_budget(con: duckdb.DuckDBPyConnection, epsilon_total: float, delta_total: float,
               dataset: str = DEFAULT_DATASET, *, experiment_run: bool = False) -> None:
    """Set the total. It may be raised or lowered, but never below what is already spent.
    Each change is an event of the hash chain; setting the total it already has changes
    nothing.

    A store has one budget: its target split is one protected dataset. `experiment_run` is
    the one exception: each run of an experiment grid (dpspin_sql.experiment) charges a budget
    of its own in the grid's working store, whose releases measure utility and are audited
    per run, never published as the store's releases."""
    check_budget_values(epsilon_total, delta_total)
    epsilon_total, delta_total = float(epsilon_total), float(delta_total)
    store_path = _store_path(con)
    witness = anchors.witness_for(store_path)
    if witness is not None:
        anchors.probe_witness(witness)

    def attempt() -> Charge | None:
        with transaction(con):
            _require_schema(con)
            # one store holds one protected dataset, its target split: a second budget name would
            # release the same records again under a budget of its own
            other = first_row(con.execute("SELECT dataset FROM budget WHERE dataset <> $d ORDER BY dataset LIMIT 1",
                                          {"d": dataset}))
            if other is not None and not experiment_run:
                raise BadInput(f"this store already has the budget {other[0]!r}; a store holds one protected "
                               f"dataset (its target split) and so one budget: charge releases to {other[0]!r}, "
                               "or put other data in a store of its own")
            current = first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset}))
            if current is not None and (float(current[0]), float(current[1])) == (epsilon_total, delta_total):
                return None
            _, _, chain_id = _verified_head(con, store_path, witness)
            name = accountant.BASIC if experiment_run else _dataset_accountant(con, dataset)
            comp = accountant.compose(name, epsilon_total, delta_total, _history(con, dataset, need_rho=name != "basic"))
            if not comp.fits:
                if name == accountant.BASIC:
                    raise BadInput(f"cannot set the budget below what is already spent (ε {comp.basic_epsilon:g}, "
                                   f"δ {comp.basic_delta:g})")
                raise BadInput(f"cannot set the budget below what is already spent: with (ε={epsilon_total:g}, "
                               f"δ={delta_total:g}) the releases would not fit ({comp.summary()})")
            con.execute(queries.load("ledger_set_budget"), {"dataset": dataset, "eps": epsilon_total, "delta": delta_total})
            return _append_event(con, "budget", dataset, epsilon_total, delta_total,
                                 {"experiment_run": True} if experiment_run else None, chain_id)

    hold = interrupts.Hold()   # the witness is appended once the change has committed
    try:
        changed = _with_retry(attempt, on_commit=hold.enter)
        if changed is not None and witness is not None:
            _witness_append(witness, store_path, changed)
    finally:
        hold.exit()


def check_budget_values(epsilon_total: float, delta_total: float) -> None:
    """Bad input (exit 2) unless ε > 0 and 0 ≤ δ < 1, both finite."""
    if not (_finite(epsilon_total) and epsilon_total > 0):
        raise BadInput(f"--epsilon-budget must be a positive number, not {epsilon_total!r}")
    if not (_finite(delta_total) and 0 <= delta_total < 1):
        raise BadInput(f"--delta-budget must lie in [0, 1), not {delta_total!r}")


def accountant_of(con: duckdb.DuckDBPyConnection) -> str:
    """The store's accountant: the last one the chain names (its creation event, then any
    'accountant' event); a store created before accountants existed composes by basic."""
    name = accountant.LEGACY
    for kind, details in con.execute("SELECT kind, details FROM ledger_events WHERE kind IN ('created', "
                                     "'accountant') ORDER BY seq").fetchall():
        named = _details(details).get("accountant")
        if kind == "accountant" or named is not None:
            name = named if isinstance(named, str) else ""
    return name


def set_accountant(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Choose how the store composes its releases (`accountant.ACCOUNTANTS`), as an event
    of the chain; True when it changed. Refused (exit 1) once any release was charged: the
    accountant is a property of the store's whole history, and one chosen after plans were
    seen would be an adaptive choice between two filters that neither one's guarantee
    covers (docs/DESIGN.md §4)."""
    accountant.check_name(name)
    store_path = _store_path(con)
    witness = anchors.witness_for(store_path)
    if witness is not None:
        anchors.probe_witness(witness)

    def attempt() -> Charge | None:
        with transaction(con):
            _require_schema(con)
            current = accountant_of(con)
            if current == name:
                return None
            _, _, chain_id = _verified_head(con, store_path, witness)
            n = con.execute("SELECT count(*) FROM ledger").fetchall()[0][0]
            if n:
                raise Refusal(f"refused: this store composes by its {current} accountant and has {n} release"
                              f"{'' if n == 1 else 's'}; the accountant is chosen before the first release "
                              f"(dpspin init --accountant {name} on a new store); nothing was changed")
            return _append_event(con, "accountant", None, None, None, {"accountant": name, "previous": current},
                                 chain_id)

    hold = interrupts.Hold()
    try:
        changed = _with_retry(attempt, on_commit=hold.enter)
        if changed is not None and witness is not None:
            _witness_append(witness, store_path, changed)
    finally:
        hold.exit()
    return changed is not None


def compositions(con: duckdb.DuckDBPyConnection) -> dict[str, Composition]:
    """Each dataset's releases composed by its accountant from the stored measurements
    (rebuilt, every map re-evaluated), against its total."""
    _require_schema(con)
    out = {}
    for dataset, eps, delta in con.execute("SELECT dataset, epsilon_total, delta_total FROM budget "
                                           "ORDER BY dataset").fetchall():
        name = _dataset_accountant(con, dataset)
        out[dataset] = accountant.compose(name, float(eps), float(delta), _history(con, dataset, verify=True))
    return out


def ensure_budget(con: duckdb.DuckDBPyConnection, dataset: str = DEFAULT_DATASET) -> None:
    _require_schema(con)
    if first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset})) is None:
        set_budget(con, DEFAULT_EPSILON_BUDGET, DEFAULT_DELTA_BUDGET, dataset)


def status(con: duckdb.DuckDBPyConnection, dataset: str = DEFAULT_DATASET) -> BudgetStatus:
    _require_schema(con)
    row = _budget_row(con, dataset)
    name = _dataset_accountant(con, dataset)
    history = _history(con, dataset, need_rho=name != "basic")
    comp = accountant.compose(name, float(row[0]), float(row[1]), history)
    rows = con.execute(queries.load("ledger_releases"), {"dataset": dataset}).fetchall()
    releases = [{"release_id": r[0], "created_at": r[1].isoformat(timespec="seconds"), "mechanism": r[2],
                 "epsilon": r[3], "delta": r[4], "params": json.loads(r[5]) if r[5] else {}, "plan_path": r[6],
                 "chain": r[7]} | ({"rho": h.rho} if name != accountant.BASIC else {})
                for r, h in zip(rows, history)]
    events = [{"row": e[0], "kind": e[4], "created_at": e[6].isoformat(timespec="seconds"),
               "epsilon_total": e[7], "delta_total": e[8]}
              for e in _event_rows(con) if e[5] == dataset and e[4] in ("budget", "migrated")]
    return BudgetStatus(dataset, row[0], row[1], comp.epsilon_spent, comp.delta_spent, releases, events, name, comp)


def check(con: duckdb.DuckDBPyConnection, epsilon: float, delta: float, dataset: str = DEFAULT_DATASET, *,
          measurements: list[dict] | None = None) -> None:
    """Refuse now, before any work, if a release of this cost (and these measurements: the
    zcdp accountant counts their ρ) cannot fit (charge decides)."""
    _require_schema(con)
    row = _budget_row(con, dataset)
    name = _dataset_accountant(con, dataset)
    candidate = _candidate(epsilon, delta, measurements or [])
    _admit(name, row, _history(con, dataset, need_rho=name != "basic"), candidate, dataset)
    witness = anchors.witness_for(_store_path(con))
    if witness is not None:
        anchors.probe_witness(witness)


def charge(con: duckdb.DuckDBPyConnection, cost_epsilon: float, cost_delta: float, *, mechanism: str,
           params: dict, measurements: list[dict], plan_path: str | None, dataset: str = DEFAULT_DATASET,
           publish: Callable[[Charge], tuple[str, str]] | None = None,
           then: Callable[[Charge], None] | None = None) -> Charge:
    """Record a release's cost (what its measurements' maps say), or refuse it. Runs before
    the plan exists.

    `publish(charge)` runs inside the charging transaction, after the release's row is
    written: it draws the noise and returns the plan's text and its dictionary's, which are
    stored with the row; nothing of it is visible outside this call until the commit. If
    the transaction does not commit, what `publish` made is dropped unseen (a write
    conflict retries the whole charge, `publish` included). `then(charge)` runs after the
    commit (writing the files). Signals are held from the row's write to the end of `then`."""
    if not (_finite(cost_epsilon) and cost_epsilon >= 0 and _finite(cost_delta) and cost_delta >= 0):
        raise BadInput(f"invalid release cost ({cost_epsilon!r}, {cost_delta!r})")
    epsilon, delta = float(cost_epsilon), float(cost_delta)
    release_id = uuid.uuid4().hex[:16]
    candidate = _candidate(epsilon, delta, measurements)
    # each record keeps its zCDP ρ, which the chain then holds (and verify re-derives)
    measurements = [dict(r, **{accountant.RHO_KEY: p.rho}) for r, p in zip(measurements, candidate.parts)] \
        if measurements else []
    params_text, measurements_text = json.dumps(params), json.dumps(measurements)
    store_path = _store_path(con)
    witness = anchors.witness_for(store_path)
    if witness is not None:
        anchors.probe_witness(witness)
    hold = interrupts.Hold()

    def attempt() -> tuple[Charge, Charge]:
        with transaction(con):
            head_seq, head_hash, chain_id = _verified_head(con, store_path, witness)   # the schema first
            row = _budget_row(con, dataset)
            _admit(_dataset_accountant(con, dataset), row, _history(con, dataset, verify=True), candidate, dataset)
            hold.enter()   # from here to the end of `then`, a signal waits
            created = datetime.now(UTC).replace(tzinfo=None)
            stored = publish is not None
            content = _Row(head_seq + 1, head_hash, release_id, dataset, created, mechanism, epsilon,
                           delta, params_text, measurements_text, plan_path, stored)
            row_hash = content.digest()
            con.execute(queries.load("ledger_insert"), {
                "release_id": release_id, "dataset": dataset, "created_at": created, "mechanism": mechanism,
                "eps": epsilon, "delta": delta, "params": params_text,
                "measurements": measurements_text, "plan_path": plan_path, "seq": head_seq + 1,
                "prev_hash": head_hash, "row_hash": row_hash, "plan_stored": stored})
            _advance_head(con, head_seq, head_seq + 1, row_hash)
            charged = Charge(release_id, row_hash, head_seq + 1, chain_id or row_hash)
            last = charged
            if publish is not None:
                plan_text, dictionary_text = publish(charged)
                con.execute(queries.load("release_plan_insert"),
                            {"release_id": release_id, "plan": plan_text, "dictionary": dictionary_text})
                # the next row of the chain pins the stored plan and dictionary by their hashes
                last = _append_event(con, "plan", dataset, None, None,
                                     {"release_id": release_id, "plan_sha256": _text_sha(plan_text),
                                      "dictionary_sha256": _text_sha(dictionary_text)}, charged.chain_id)
        return charged, last

    try:
        charged, last = _with_retry(attempt)
        if witness is not None:
            _witness_append(witness, store_path, last)
        if then is not None:
            then(charged)
    finally:
        hold.exit()
    return charged


def stored_plan(con: duckdb.DuckDBPyConnection, release_id: str | None = None) -> tuple[str, str, str]:
    """(release id, plan text, dictionary text) stored with a release (None: the last
    release that has a stored plan), after checking that the plan is its row's."""
    _require_schema(con)
    row = first_row(con.execute(queries.load("release_plan"), {"release_id": release_id}))
    if row is None:
        if release_id is None:
            raise BadInput("this store holds no stored plan (no release was charged by a version that stores "
                           "plans with their ledger rows)")
        known = first_row(con.execute("SELECT plan_stored FROM ledger WHERE release_id = $r", {"r": release_id}))
        if known is None:
            raise BadInput(f"no release {release_id!r} in the ledger (dpspin budget --db STORE lists them)")
        if known[0]:
            raise LedgerTampered(f"refused: release {release_id} was charged with its plan stored, but the stored "
                                 "plan is gone (the store was edited); run dpspin budget --verify")
        raise BadInput(f"release {release_id} has no stored plan: it was charged by an earlier version or "
                       "without a plan (an experiment baseline)")
    rid, plan_text, dictionary_text = row[0], row[5], row[6]
    wrong = [f for f in _plan_findings(con) if f.release_id == rid]
    if wrong:
        raise LedgerTampered(f"refused: the stored plan of release {rid} does not check ({wrong[0].line()}); "
                             "run dpspin budget --verify")
    return rid, plan_text, dictionary_text


def head(con: duckdb.DuckDBPyConnection) -> Charge:
    """The chain's last row (its id, hash, number) and the chain's id, for a witness."""
    _require_schema(con)
    links = _links(con, "current")
    if not links:
        raise LedgerTampered("refused: the ledger is empty (its first row, the store's creation, is gone); "
                             "run dpspin budget --verify")
    last = links[-1]
    return Charge(last.ident, last.row_hash or "", last.seq or 0, links[0].row_hash)


def needs_migration(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store's ledger is in an earlier version's format (a write brings it up to date)."""
    tables, cols = _catalog(con)
    return _state(tables, cols) in ("unchained", "unevented")


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
    """A release row's hashed content."""

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
    plan_stored: bool | None = None   # None: a row of an earlier version, hashed without it

    def digest(self) -> str:
        canon: list[Any] = [self.seq, self.prev_hash, self.release_id, self.dataset, self.created_at.isoformat(),
                            self.mechanism, float(self.epsilon).hex(), float(self.delta).hex(), self.params,
                            self.measurements, self.plan_path]
        if self.plan_stored is not None:
            canon.append(bool(self.plan_stored))
        return _sha(canon)


@dataclass(frozen=True)
class _Event:
    """A chain event's hashed content (the store's creation, a budget's new total)."""

    seq: int
    prev_hash: str
    event_id: str
    kind: str
    dataset: str | None
    created_at: datetime
    epsilon_total: float | None
    delta_total: float | None
    details: str | None

    def digest(self) -> str:
        hexed = [None if v is None else float(v).hex() for v in (self.epsilon_total, self.delta_total)]
        return _sha(["event", self.seq, self.prev_hash, self.event_id, self.kind, self.dataset,
                     self.created_at.isoformat(), *hexed, self.details])


def _text_sha(text: str) -> str:
    """sha256 of a stored text (a plan, a dictionary), as DuckDB's sha256() computes it."""
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _sha(canon: list) -> str:
    body = json.dumps(canon, ensure_ascii=False, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class _Link:
    """One row of the chain, from either table."""

    seq: int | None
    prev_hash: str | None
    row_hash: str | None
    ident: str
    kind: str            # 'release' or the event's kind
    digest: str          # what its hash should be
    raw: tuple


@dataclass
class Finding:
    """One thing about the ledger that does not check."""

    release_id: str | None
    seq: int | None
    problem: str
    kind: str = "release"
    where: str | None = None

    def line(self) -> str:
        if self.where:
            where = self.where
        elif self.release_id:
            what = "release" if self.kind == "release" else f"{self.kind} event"
            where = f"row {self.seq} ({what} {self.release_id})"
        else:
            where = "the ledger head"
        return f"{where}: {self.problem}"


def verify(con: duckdb.DuckDBPyConnection, *, maps: bool = True, plans: Iterable[str | Path] = (),
           witness: str | Path | None = None, registered_witness: bool = True) -> list[Finding]:
    """Every problem with the ledger: missing tables or an emptied chain, a broken chain, a
    head that is not the last row, a budget total that is not its last budget event's, a
    charged cost that is not its measurements' maps, a d_in that is not the sensitivity
    table's for the row's parameters, a dataset spent beyond its total, a stored plan that
    is not its row's; and, against anchors kept outside the store, each given plan's row
    and each line of the witness (`witness`, else the store's registered one or
    $DPSPIN_WITNESS) that the ledger no longer holds."""
    state, tables, findings = _schema_findings(con)
    if findings:
        return findings
    if state == "new":
        raise BadInput("this database holds no dpspin store (create one with: dpspin init --db FILE)")
    if state in ("unchained", "unevented"):
        return [Finding(None, None, "is in the format of an earlier version: open the store once for writing "
                                    "(any dpspin command that changes it) to bring it up to date",
                        where="the ledger")]
    links = _links(con, state)
    prev, expected_seq = GENESIS, 1
    for link in links:
        if link.seq != expected_seq:
            findings.append(_at(link, f"out of sequence (expected row {expected_seq}): a row was deleted, "
                                      "inserted or re-ordered"))
        if link.prev_hash != prev:
            findings.append(_at(link, "does not chain to the previous row (a row before it was deleted or edited)"))
        if link.row_hash != link.digest:
            findings.append(_at(link, "its content does not match its hash (the row was edited)"))
        if maps and link.kind == "release":
            r = link.raw
            findings.extend(_check_measurements(r[3], r[0], r[7], r[8], r[9], r[10]))
        prev, expected_seq = link.row_hash or "", (link.seq or expected_seq) + 1
    head = first_row(con.execute(queries.load("ledger_head")))
    last_seq = links[-1].seq if links else 0
    if head is None:
        findings.append(Finding(None, None, "the head row is missing (table ledger_head was emptied)"))
    elif head[0] != last_seq or head[1] != prev:
        findings.append(Finding(None, None, f"the head says row {head[0]} but the chain ends at row "
                                            f"{last_seq}: rows were deleted, added or edited after it"))
    if not links and state == "current":
        held = _holdings(con, tables)
        findings.append(Finding(None, None, "it is empty (its first row, the store's creation, is gone): it was "
                                            "emptied" + (f" while the store holds {held}" if held else ""),
                                where="the ledger"))
    findings.extend(_budget_findings(con, links, state))
    if state == "current":
        findings.extend(_plan_findings(con))
    if witness is None and registered_witness:
        witness = anchors.witness_for(_store_path(con))
    findings.extend(_anchor_findings(con, links, plans, witness))
    return findings


def _at(link: _Link, problem: str) -> Finding:
    return Finding(link.ident, link.seq, problem, kind=link.kind)


def _links(con, state: str) -> list[_Link]:
    links = []
    for r in con.execute(queries.load("ledger_rows")).fetchall():
        content = _Row(r[0] if r[0] is not None else -1, r[1] or "", r[3], r[4], r[5], r[6], r[7], r[8],
                       r[9] or "", r[10] or "", r[11], r[12])
        links.append(_Link(r[0], r[1], r[2], r[3], "release", content.digest(), r))
    if state == "current":
        for e in _event_rows(con):
            content_e = _Event(e[0], e[1], e[3], e[4], e[5], e[6], e[7], e[8], e[9])
            links.append(_Link(e[0], e[1], e[2], e[3], e[4], content_e.digest(), e))
    links.sort(key=lambda lk: (-1 if lk.seq is None else lk.seq, str(lk.raw[5] if lk.kind == "release"
                                                                      else lk.raw[6]), lk.ident))
    return links


def _event_rows(con) -> list[tuple]:
    return con.execute(queries.load("ledger_event_rows")).fetchall()


def _budget_findings(con, links: list[_Link], state: str) -> list[Finding]:
    """Each budget's total is its last budget event's; no event set a total below what was
    spent before it; no dataset spent beyond its total — each as the dataset's accountant
    composes its releases; the accountant is one this version knows, chosen before the
    first release."""
    findings: list[Finding] = []
    budgets = {d: (e, dl) for d, e, dl in con.execute("SELECT dataset, epsilon_total, delta_total FROM budget "
                                                      "ORDER BY dataset").fetchall()}
    experiment = {lk.raw[5] for lk in links if lk.kind == "budget" and _details(lk.raw[9]).get("experiment_run")}
    store_accountant = accountant.LEGACY
    released = False

    def name_of(dataset: str) -> str:
        return accountant.BASIC if dataset in experiment else store_accountant

    def composed(dataset: str, eps: float, dlt: float, rows: list[Release]) -> Composition | None:
        name = name_of(dataset)
        if name not in accountant.ACCOUNTANTS:
            return None
        return accountant.compose(name, float(eps), float(dlt), rows)

    if state == "current":
        last: dict[str, tuple[_Link, float, float]] = {}
        spent: dict[str, list[Release]] = {}
        for link in links:
            if link.kind == "release":
                released = True
                rel = _row_release(float(link.raw[7]), float(link.raw[8]), link.raw[10], verify=False,
                                   need_rho=name_of(link.raw[4]) != accountant.BASIC)
                if rel is None:
                    findings.append(_at(link, "its measurements cannot be read"))
                    continue
                spent.setdefault(link.raw[4], []).append(rel)
            elif link.kind in ("created", "accountant"):
                named = _details(link.raw[9]).get("accountant")
                if link.kind == "created" and named is None:
                    continue
                if not (isinstance(named, str) and named in accountant.ACCOUNTANTS):
                    findings.append(_at(link, f"names an accountant this version does not know ({named!r})"))
                elif link.kind == "accountant" and released:
                    findings.append(_at(link, "changes the accountant after releases were charged (it is chosen "
                                              "before the first release)"))
                store_accountant = named if isinstance(named, str) else ""
            elif link.kind in ("budget", "migrated") and link.raw[5] is not None:
                dataset, eps, dlt = link.raw[5], link.raw[7], link.raw[8]
                comp = composed(dataset, eps or 0.0, dlt or 0.0, spent.get(dataset, []))
                if eps is None or dlt is None or (comp is not None and not comp.fits):
                    findings.append(_at(link, f"sets the total of {dataset!r} below what was spent before it"))
                last[dataset] = (link, float(eps or 0.0), float(dlt or 0.0))
        for dataset, (eps_total, delta_total) in budgets.items():
            if dataset not in last:
                findings.append(Finding(None, None, f"the budget of {dataset!r} (ε={eps_total:g}, δ={delta_total:g}) "
                                                    "was set outside dpspin: no budget event of the ledger has it",
                                        where="the budget table"))
            elif (float(eps_total), float(delta_total)) != last[dataset][1:]:
                link, e, d = last[dataset]
                findings.append(Finding(None, None, f"the budget of {dataset!r} says ε={eps_total:g}, "
                                                    f"δ={delta_total:g}, but its last budget event (row {link.seq}) "
                                                    f"set ε={e:g}, δ={d:g}: the total was changed outside dpspin",
                                        where="the budget table"))
        for dataset in last:
            if dataset not in budgets:
                findings.append(Finding(None, None, f"the budget of {dataset!r} (set by row {last[dataset][0].seq}) "
                                                    "was deleted", where="the budget table"))
    for dataset, (eps_total, delta_total) in budgets.items():
        rows = []
        for lk in links:
            if lk.kind == "release" and lk.raw[4] == dataset:
                rel = _row_release(float(lk.raw[7]), float(lk.raw[8]), lk.raw[10], verify=False,
                                   need_rho=name_of(dataset) != accountant.BASIC)
                rows.append(rel if rel is not None else Release(float(lk.raw[7]), float(lk.raw[8])))
        comp = composed(dataset, eps_total, delta_total, rows)
        if comp is not None and not comp.fits:
            what = (f"(ε={comp.basic_epsilon:g}, δ={comp.basic_delta:g})" if comp.accountant == accountant.BASIC
                    else f"({comp.summary()})")
            findings.append(Finding(None, None, f"dataset {dataset!r} spent {what} beyond its total "
                                                f"(ε={eps_total:g}, δ={delta_total:g})"))
    return findings


def _plan_findings(con) -> list[Finding]:
    """Each stored plan is its release row's (same release id, chain hash and cost) and is
    the text whose hash the chain's plan event holds; each row charged with a stored plan
    still has it."""
    out = []
    for (rid, seq, row_hash, eps, delta, plan_stored, has_row, has_plan, plan_release, plan_chain,
         plan_eps, plan_delta, plan_valid, pinned, pinned_seq, same_texts) in con.execute(
            queries.load("ledger_plans_check")).fetchall():
        if not has_row:
            out.append(Finding(rid, None, "a stored plan whose ledger row is gone: the row was deleted (the ledger "
                                          "was truncated or rewound)", where=f"the stored plan of release {rid}"))
        elif not has_plan:
            if plan_stored:
                out.append(Finding(rid, seq, "was charged with its plan stored, but the stored plan is gone"))
        elif not plan_valid or plan_release != rid or plan_chain != row_hash:
            out.append(Finding(rid, seq, "its stored plan is not this row's plan (another release id or chain "
                                         "hash): the row or the plan was edited"))
        elif plan_eps is not None and (plan_eps, plan_delta) != (eps, delta):
            out.append(Finding(rid, seq, f"charged (ε={eps!r}, δ={delta!r}) but its stored plan says it cost "
                                         f"(ε={plan_eps!r}, δ={plan_delta!r})"))
        elif plan_stored and not pinned:
            out.append(Finding(rid, seq, "its plan event (the chain's record of the stored plan's hash) is gone"))
        elif plan_stored and not same_texts:
            out.append(Finding(rid, seq, f"its stored plan or dictionary is not the text whose hash row {pinned_seq} "
                                         "holds: the stored plan was edited"))
    return out


def _anchor_findings(con, links: list[_Link], plans: Iterable[str | Path],
                     witness: str | Path | None) -> list[Finding]:
    plans = list(plans)
    store_path = _store_path(con)
    if not plans and witness is None:
        return []
    hashes = {lk.seq: lk.row_hash or "" for lk in links if lk.seq is not None}
    out = []
    if plans:
        rows = {lk.ident: (lk.seq or 0, lk.row_hash or "") for lk in links if lk.kind == "release"}
        pins = {}
        for lk in links:
            if lk.kind == "plan" and lk.raw[9]:
                details = json.loads(lk.raw[9])
                pins[details.get("release_id")] = details.get("plan_sha256")
        for where, problem in anchors.check_plans(anchors.read_plan_anchors(plans), rows, pins):
            out.append(Finding(None, None, problem, where=where))
    if witness is not None:
        chain_id = links[0].row_hash if links else None
        for where, problem in anchors.check_witness(anchors.read_witness(witness), store_path, chain_id, hashes,
                                                    str(witness)):
            out.append(Finding(None, None, problem, where=where))
    return out


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
    for rec in records:
        if isinstance(rec, dict) and accountant.RHO_KEY in rec:
            try:
                rho = accountant.part_of(rec).rho
            except Exception as exc:
                out.append(Finding(release_id, seq, f"its {rec.get('name')} measurement's zCDP form cannot be "
                                                    f"rebuilt ({type(exc).__name__})"))
                continue
            if rec[accountant.RHO_KEY] != rho:
                out.append(Finding(release_id, seq, f"its {rec.get('name')} measurement is recorded at zCDP "
                                                    f"ρ={rec[accountant.RHO_KEY]!r}, but its zCDP form gives "
                                                    f"ρ={rho!r}"))
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


def _verified_head(con, store_path: str | None, witness: Path | None) -> tuple[int, str, str | None]:
    """The chain's head and id, after checking the whole chain (hashes, not maps) and, when
    the store has a witness, the witness's lines."""
    findings = verify(con, maps=False, witness=witness, registered_witness=False)
    if findings:
        more = f" and {len(findings) - 1} more" if len(findings) > 1 else ""
        raise LedgerTampered(f"refused: the ledger does not check ({findings[0].line()}{more}); "
                             "run dpspin budget --verify; nothing was charged")
    head = first_row(con.execute(queries.load("ledger_head")))
    first = first_row(con.execute("SELECT row_hash FROM (SELECT seq, row_hash FROM ledger UNION ALL "
                                  "SELECT seq, row_hash FROM ledger_events) ORDER BY seq LIMIT 1"))
    assert head is not None   # verify found no missing head
    return int(head[0]), head[1], first[0] if first else None


def _history(con, dataset: str, *, verify: bool = False, need_rho: bool = True) -> list[Release]:
    """The releases of `dataset` in chain order, as the accountant composes them.

    `verify`: each row's measurements are rebuilt and their maps re-evaluated; its charge
    must be what they give and each recorded ρ what its zCDP form gives (else the ledger
    was edited: refused). Without it, the rows' recorded costs and ρ are read (hashed with
    the row; `verify` and every charge re-derive them), and rebuilt only where a ρ is
    needed and was not recorded. Rows with the very same measurements text (a release
    repeated) are rebuilt once: the map of a deserialised measurement is a function of it."""
    out: list[Release] = []
    seen: dict[tuple[str, float, float], Release | None] = {}
    for eps, delta, measurements_text, release_id in con.execute(queries.load("ledger_costs"),
                                                                 {"dataset": dataset}).fetchall():
        eps, delta = float(eps), float(delta)
        key = (measurements_text or "", eps, delta)
        if key not in seen:
            seen[key] = _row_release(eps, delta, measurements_text, verify=verify, need_rho=need_rho)
        release = seen[key]
        if release is None:
            raise LedgerTampered(f"refused: release {release_id} is charged (ε={eps:g}, δ={delta:g}) but its "
                                 "measurements say otherwise; run dpspin budget --verify; nothing was charged")
        out.append(release)
    return out


def _row_release(eps: float, delta: float, measurements_text: str | None, *, verify: bool,
                 need_rho: bool) -> Release | None:
    """A row as the accountant sees it; None when (verifying) its charge or a recorded ρ is
    not what its measurements give."""
    try:
        records = json.loads(measurements_text) if measurements_text else []
    except ValueError:
        return None
    if not isinstance(records, list) or not records:
        return Release(eps, delta, (accountant.opaque_part(eps, delta),))
    if not verify:
        try:
            parts = []
            for r in records:
                if need_rho and accountant.RHO_KEY not in r:
                    parts.append(accountant.part_of(r))
                else:
                    rho = r.get(accountant.RHO_KEY)
                    parts.append(accountant.Part(str(r.get("name", "")), float(r.get("epsilon", 0.0)),
                                                 float(r.get("delta", 0.0)), None if rho is None else float(rho),
                                                 float(r.get("delta", 0.0)) == 0.0))
        except Exception:
            return None
        return Release(eps, delta, tuple(parts))
    try:
        release = accountant.release_of(eps, delta, records)
    except Exception:
        return None
    if (math.fsum(p.epsilon for p in release.parts), math.fsum(p.delta for p in release.parts)) != (eps, delta):
        return None
    for r, p in zip(records, release.parts):
        if accountant.RHO_KEY in r and r[accountant.RHO_KEY] != p.rho:
            return None
    return release


def _candidate(epsilon: float, delta: float, measurements: list[dict]) -> Release:
    """The release being charged or pre-checked, its parts rebuilt from its records."""
    try:
        return accountant.release_of(epsilon, delta, measurements)
    except BadInput:
        raise
    except Exception as exc:
        raise BadInput(f"the release's measurements cannot be rebuilt ({type(exc).__name__}); nothing was "
                       "charged") from None


def _admit(name: str, budget: tuple, history: list[Release], candidate: Release, dataset: str) -> None:
    """Refuse (exit 1) a release the dataset's accountant cannot fit in its budget."""
    eps_total, delta_total = float(budget[0]), float(budget[1])
    after = accountant.compose(name, eps_total, delta_total, [*history, candidate])
    if not after.fits:
        before = accountant.compose(name, eps_total, delta_total, history)
        raise BudgetExceeded(accountant.refusal(before, after, candidate, dataset))


def _dataset_accountant(con, dataset: str) -> str:
    """The accountant that composes `dataset`: the store's, except for an experiment run's
    own budget (set to exactly its release's cost, audited per run): basic."""
    for (details,) in con.execute("SELECT details FROM ledger_events WHERE kind = 'budget' AND dataset = $d",
                                  {"d": dataset}).fetchall():
        if _details(details).get("experiment_run"):
            return accountant.BASIC
    name = accountant_of(con)
    if name not in accountant.ACCOUNTANTS:
        raise LedgerTampered(f"refused: the ledger names an accountant this version does not know ({name!r}); "
                             "run dpspin budget --verify; nothing was charged")
    return name


def _details(text: str | None) -> dict:
    try:
        d = json.loads(text) if text else {}
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def _advance_head(con, previous_seq: int, seq: int, row_hash: str) -> None:
    advanced = con.execute(queries.load("ledger_advance_head"),
                           {"seq": seq, "head_hash": row_hash, "previous_seq": previous_seq}).fetchall()
    if not advanced or advanced[0][0] != 1:
        # the head was checked in this very transaction: a concurrent charge conflicts instead
        raise LedgerTampered("refused: the ledger's head row is missing or moved; run dpspin budget --verify; "
                             "nothing was charged")


def _append_event(con, kind: str, dataset: str | None, eps: float | None, delta: float | None,
                  details: dict | None, chain_id: str | None) -> Charge:
    head = first_row(con.execute(queries.load("ledger_head")))
    if head is None:
        raise LedgerTampered("refused: the ledger's head row is missing; run dpspin budget --verify")
    seq, prev = int(head[0]) + 1, head[1]
    event_id = uuid.uuid4().hex[:16]
    created = datetime.now(UTC).replace(tzinfo=None)
    details_text = json.dumps(details, sort_keys=True) if details else None
    row_hash = _Event(seq, prev, event_id, kind, dataset, created, eps, delta, details_text).digest()
    con.execute(queries.load("ledger_event_insert"), {
        "event_id": event_id, "kind": kind, "dataset": dataset, "created_at": created, "eps": eps, "delta": delta,
        "details": details_text, "seq": seq, "prev_hash": prev, "row_hash": row_hash})
    _advance_head(con, seq - 1, seq, row_hash)
    return Charge(event_id, row_hash, seq, chain_id or row_hash)


def _witness_append(witness: Path, store_path: str | None, charged: Charge) -> None:
    """After the commit: a witness that cannot take the line is said, not fatal (the
    ledger is right; the witness is behind, which its next line catches up)."""
    import sys

    try:
        anchors.append_witness(witness, store_path, charged.chain_id or charged.row_hash, charged.seq,
                               charged.row_hash)
    except OSError as exc:
        print(f"warning: the witness {witness} could not be appended to ({exc.strerror}); record the head "
              f"with: dpspin budget --db {store_path or 'STORE'} --witness {witness}", file=sys.stderr)


# -- the schema: present, migrated, or tampered -----------------------------------------

def _catalog(con) -> tuple[set[str], dict[str, dict[str, str]]]:
    """The tables of the connection's default database, and the columns (name → type) of
    the ledger's tables among them."""
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                        "current_database() AND schema_name = 'main'").fetchall()}
    cols: dict[str, dict[str, str]] = {}
    for t, c, ty in con.execute("SELECT table_name, column_name, data_type FROM duckdb_columns() "
                                "WHERE database_name = current_database() AND schema_name = 'main' "
                                "AND table_name IN (SELECT unnest($t::VARCHAR[]))",
                                {"t": list(CHAIN_TABLES)}).fetchall():
        cols.setdefault(t, {})[c] = ty
    return tables, cols


def _state(tables: set[str], cols: dict[str, dict[str, str]]) -> str:
    """'new' (no store table), 'unchained' (a ledger from before the hash chain),
    'unevented' (a chain from before ledger events and stored plans), 'current', or
    'broken' (some of the ledger's tables or columns are missing or changed)."""
    if not tables & ({t for t, _ in _HOLDINGS} | set(CHAIN_TABLES) | {"pipeline", "users"}):
        return "new"
    if "ledger" in tables and "row_hash" not in cols.get("ledger", {}):
        return "unchained"
    if "ledger_events" not in tables and "release_plans" not in tables and {"ledger", "ledger_head"} <= tables:
        return "unevented"
    return "broken" if _damage(tables, cols) else "current"


def _damage(tables: set[str], cols: dict[str, dict[str, str]]) -> list[str]:
    """What is missing or changed of the ledger's tables, in words."""
    gone = [t for t in CHAIN_TABLES if t not in tables]
    out = [f"tables {', '.join(gone)} are missing" if len(gone) > 1 else f"table {gone[0]} is missing"] if gone else []
    for t, want in _COLUMNS.items():
        if t not in tables:
            continue
        have = cols.get(t, {})
        for c, ty in want.items():
            if c not in have:
                out.append(f"column {t}.{c} is missing")
            elif have[c] != ty:
                out.append(f"column {t}.{c} is {have[c]}, not {ty}")
    return out


def _holdings(con, tables: set[str]) -> str:
    """What the store holds, in words ('' when nothing)."""
    db = con.execute("SELECT current_database()").fetchall()[0][0].replace('"', '""')
    said = []
    for table, words in _HOLDINGS:
        if table in tables:
            n = con.execute(f'SELECT count(*) FROM "{db}".main.{table}').fetchall()[0][0]
            if n:
                said.append(f"a {words}" if n == 1 and words in ("dictionary", "budget") else
                            f"{n:,} {words}{'' if n == 1 else 's'}")
    return ", ".join(said)


def _schema_findings(con) -> tuple[str, set[str], list[Finding]]:
    tables, cols = _catalog(con)
    state = _state(tables, cols)
    if state != "broken":
        return state, tables, []
    damage = _damage(tables, cols)
    held = _holdings(con, tables)
    return state, tables, [Finding(None, None, "; ".join(damage) + (f" while the store holds {held}" if held else "")
                                   + ": the ledger was removed or altered", where="the store")]


def check_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse (LedgerTampered, exit 1) a store whose ledger tables are missing or altered;
    a database with no store table at all passes (it is not a store)."""
    _require_schema(con, store_required=False)


def _require_schema(con, *, store_required: bool = True) -> None:
    """Refuse (exit 1) a store whose ledger tables are gone, before any query needs them;
    a database that holds no store at all is bad input (exit 2)."""
    state, _, findings = _schema_findings(con)
    if state == "new" and store_required:
        raise BadInput("this database holds no dpspin store (create one with: dpspin init --db FILE)")
    if findings:
        raise LedgerTampered(f"refused: the store's ledger was tampered with ({findings[0].line()}); it is not "
                             "re-initialised: restore the store from a backup")


def before_set_up(con: duckdb.DuckDBPyConnection) -> str:
    """Called by `store.set_up` before it creates or migrates anything: what it found
    ('new', 'unchained', 'unevented' or 'current', for `migrate`). A store whose ledger
    tables are missing while it holds anything is refused as tampered (exit 1), never
    re-initialised; one that holds nothing (a creation that never finished) is new."""
    tables, cols = _catalog(con)
    state = _state(tables, cols)
    if state == "broken":
        if _holdings(con, tables):
            _require_schema(con)
        return "new"
    return state


def migrate(con: duckdb.DuckDBPyConnection, state: str = "current") -> None:
    """After `store.set_up` created the schema: start a new store's chain with its creation
    event; chain the rows of a ledger written before the chain existed; record the budgets
    of a store written before budget events (both trust on first use, and said so in the
    event: 'migrated'). Runs inside the caller's transaction (`store.set_up` creates the
    schema and this in one)."""
    if state == "current":
        return
    if state == "unchained":
        rows = con.execute(queries.load("ledger_rows")).fetchall()
        prev = GENESIS
        for seq, r in enumerate(rows, start=1):
            content = _Row(seq, prev, r[3], r[4], r[5], r[6], r[7], r[8], r[9] or "", r[10] or "", r[11])
            prev = content.digest()
            con.execute(queries.load("ledger_rechain"),
                        {"seq": seq, "prev_hash": content.prev_hash, "row_hash": prev, "release_id": r[3]})
        con.execute("DELETE FROM ledger_head")
        con.execute("INSERT INTO ledger_head VALUES (1, $seq, $hash)", {"seq": len(rows), "hash": prev})
    if state == "new":   # nothing to protect: the chain starts here
        con.execute("DELETE FROM ledger_head")
        con.execute("INSERT INTO ledger_head VALUES (1, 0, $hash)", {"hash": GENESIS})
        _append_event(con, "created", None, None, None, {"accountant": accountant.DEFAULT}, None)
        return
    first = first_row(con.execute("SELECT row_hash FROM ledger ORDER BY seq LIMIT 1"))
    chain_id = first[0] if first else None
    budgets = con.execute("SELECT dataset, epsilon_total, delta_total FROM budget ORDER BY dataset").fetchall()
    for dataset, eps, delta in budgets:
        chain_id = _append_event(con, "migrated", dataset, eps, delta, {"from": state}, chain_id).chain_id
    if not budgets:
        _append_event(con, "migrated", None, None, None, {"from": state}, chain_id)


# -- helpers ------------------------------------------------------------------------------

class _Conflict(Exception):
    """The head moved under this charge: retry from the start."""


def _store_path(con) -> str | None:
    rows = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    return rows[0][0] if rows and rows[0][0] else None


def _is_conflict(exc: BaseException) -> bool:
    if isinstance(exc, _Conflict):
        return True
    text = str(exc).lower()
    if isinstance(exc, duckdb.ConstraintException):
        return "ledger" in text
    return "conflict" in text


def _with_retry(attempt, on_commit: Callable[[], None] | None = None):
    """Run `attempt` (one transaction) until it commits without a write conflict, waiting
    up to the lock timeout; then refuse as store busy. Anything else that fails the
    transaction (a full disk, an I/O error) is said at once, never retried."""
    deadline = time.monotonic() + lock_timeout()
    delay = 0.005
    if not _CHARGE_LOCK.acquire(timeout=lock_timeout()):
        raise StoreBusy(f"store busy: another release in this process held the ledger for {lock_timeout():g} s "
                        "(DPSPIN_LOCK_TIMEOUT); nothing was charged")
    try:
        while True:
            try:
                result = attempt()
                if on_commit is not None:
                    on_commit()
                return result
            except (_Conflict, duckdb.TransactionException, duckdb.ConstraintException) as exc:
                if not _is_conflict(exc):
                    full = storage_error(exc)
                    if full is not None:
                        raise full from None
                    raise
                if time.monotonic() >= deadline:
                    raise StoreBusy("store busy: the ledger kept changing under this release for "
                                    f"{lock_timeout():g} s (DPSPIN_LOCK_TIMEOUT); nothing was charged") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.25)
            except duckdb.Error as exc:
                full = storage_error(exc)
                if full is not None:
                    raise full from None
                raise
    finally:
        _CHARGE_LOCK.release()


def _budget_row(con, dataset: str) -> tuple:
    """The dataset's (ε total, δ total); a budget the chain set but the table lost is
    tampering (exit 1), one never set is bad input."""
    row = first_row(con.execute(queries.load("ledger_budget"), {"dataset": dataset}))
    if row is not None:
        return row
    if first_row(con.execute("SELECT seq FROM ledger_events WHERE dataset = $d AND kind IN ('budget', 'migrated') "
                             "LIMIT 1", {"d": dataset})) is not None:
        raise LedgerTampered(f"refused: the budget of {dataset!r} was deleted from the store, but the ledger set it; "
                             "run dpspin budget --verify; nothing was charged")
    raise BadInput(f"no budget set for dataset {dataset!r} (dpspin init --db FILE --epsilon-budget E)")


def _finite(x: Any) -> bool:
    try:
        return not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False
