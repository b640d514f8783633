"""The semantic sketch: the only thing the release mechanisms ever see of the records.

The bounds of docs/DESIGN.md §1 are enforced by the SQL in `queries/sketch_*.sql` in
integer fixed point, so the sensitivity the release is charged for holds exactly,
whatever the assignments table holds. Masses are int64 in units of 2^-SCALE_BITS.

Every engine (`dpspin_sql.engines`) runs the same enforced query — on DuckDB, Spark or
PostgreSQL — and hands back (atom_id, mass) rows; `assemble` is the one place those rows
become a `Sketch`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from dpspin_sql import queries
from dpspin_sql.errors import BadInput
from dpspin_sql.request import MAX_B, SCALE, SCALE_BITS, UNITS, Bounds, fixed_bound
from dpspin_sql.store import first_row

__all__ = ["SCALE", "SCALE_BITS", "MAX_B", "UNITS", "Sketch", "TargetFacts", "assemble", "target_facts",
           "check_user_level", "compute_sketch", "fixed_bound"]


@dataclass(frozen=True)
class Sketch:
    """Non-private: stays inside the curator. `mass[j]` belongs to `atom_ids[j]`."""

    atom_ids: np.ndarray      # int64, the whole dictionary in atom_id order
    mass: np.ndarray          # int64 fixed point, same order
    unit: str
    K: int
    B: float
    n_records: int
    n_users: int
    scale: int = SCALE

    @property
    def m(self) -> int:
        return len(self.atom_ids)

    @property
    def bounds(self) -> Bounds:
        return Bounds(self.unit, self.K, self.B)

    def as_float(self) -> np.ndarray:
        return self.mass / self.scale


@dataclass(frozen=True)
class TargetFacts:
    """The dictionary's order and the shape of the target split (records, units)."""

    atom_ids: np.ndarray
    n_records: int
    n_units: int


def target_facts(con: Any, unit: str) -> TargetFacts:
    """The facts every sketch engine needs, after the checks every engine makes: atoms exist,
    and at user level every target record has a user id and the split is user-disjoint.

    `con` is a DuckDB or psycopg connection: both run these queries unchanged.
    """
    n_records, n_users, n_without_user = first_row(con.execute(queries.load("sketch_units")))
    if n_records == 0:   # the one data-dependent refusal: the empty dataset (docs/THREAT_MODEL.md)
        raise BadInput("the target split is empty: load records (dpspin load) or split them (dpspin split)")
    if unit == "user":
        check_user_level(con, n_without_user)
    atom_ids = np.array([r[0] for r in con.execute(queries.load("atom_ids")).fetchall()], dtype=np.int64)
    if len(atom_ids) == 0:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    return TargetFacts(atom_ids, int(n_records), int(n_users if unit == "user" else n_records))


def check_user_level(con: Any, n_without_user: int) -> None:
    """A user-level release needs a user id on every target record and a user-disjoint split."""
    if n_without_user:
        raise BadInput(f"{n_without_user} target record(s) have no user id; user-level releases need one for every record")
    shared, aux_without_user = first_row(con.execute(queries.load("shared_users")))
    if aux_without_user:
        raise BadInput(f"{aux_without_user} auxiliary record(s) have no user id; a user-level release cannot tell "
                       "whether their authors are among the protected users")
    if shared:
        raise BadInput(f"{shared} user(s) have records in both the auxiliary and the target split; a user-level "
                       "release needs a user-disjoint split (dpspin split --unit user)")


def assemble(facts: TargetFacts, rows: Iterable[tuple[Any, Any]], bounds: Bounds) -> Sketch:
    """Place an engine's (atom_id, mass) rows on the dictionary's order (atoms nobody hit get 0)."""
    atom_ids = facts.atom_ids
    mass = np.zeros(len(atom_ids), dtype=np.int64)
    index = {int(a): i for i, a in enumerate(atom_ids)}
    limit = np.iinfo(np.int64).max
    for atom_id, value in rows:
        value = int(value)
        if value > limit:
            raise BadInput("the sketch overflows int64 fixed point; lower -B or split the release")
        mass[index[int(atom_id)]] = value
    return Sketch(atom_ids=atom_ids, mass=mass, unit=bounds.unit, K=bounds.K, B=bounds.B,
                  n_records=facts.n_records, n_users=facts.n_units)


def run_sketch(con: Any, bounds: Bounds, filters: Any = None) -> Sketch:
    """The enforced sketch of a DuckDB store's target split and dictionary (with a DP
    statement's audited `filters`, if any). n_records / n_users are those of the whole
    target split (its public shape), never counts of filtered records, which are not DP."""
    import duckdb

    from dpspin_sql.sql.transpile import sketch_sql

    facts = target_facts(con, bounds.unit)
    sql = sketch_sql(bounds, filters, "duckdb", pretty=False, bind_params=False)
    try:
        rows = con.execute(sql, bounds.params()).fetchall()
    except duckdb.Error:
        # never the engine's message: it can quote protected values
        raise BadInput("the sketch query failed on this store") from None
    return assemble(facts, rows, bounds)


def compute_sketch(con: Any, unit: str = "record", K: int = 3, B: float | None = None) -> Sketch:
    """The enforced sketch of the store's target split and dictionary, on DuckDB."""
    return run_sketch(con, Bounds(unit, K, None if unit == "record" else B))
