"""The semantic sketch: the only thing the release mechanisms ever see of the records.

The bounds of SPEC §1 are enforced by the SQL in `queries/sketch_*.sql` in integer
fixed point, so the sensitivity the release is charged for holds exactly, whatever the
assignments table holds. Masses are int64 in units of 2^-SCALE_BITS.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from dpspin_sql import queries
from dpspin_sql.errors import BadInput
from dpspin_sql.store import first_row

SCALE_BITS = 24
SCALE = 1 << SCALE_BITS
UNITS = ("record", "user")
MAX_B = float(2 ** (61 - SCALE_BITS))  # so that 2·floor(B·2^S) (Δ1 under replace) fits OpenDP's i64 metrics


def fixed_bound(B: float, scale: int = SCALE) -> int:
    """floor(B · 2^S): the per-unit L1 bound in fixed point (never above B)."""
    return int(np.floor(B * scale))


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

    def as_float(self) -> np.ndarray:
        return self.mass / self.scale


def sketch_query(unit: str) -> str:
    if unit not in UNITS:
        raise BadInput(f"--unit must be record or user, not {unit!r}")
    return queries.load(f"sketch_{unit}")


def sketch_params(unit: str, K: int, B: float, scale: int = SCALE) -> dict[str, int]:
    params = {"K": int(K), "scale": int(scale)}
    if unit == "user":
        params["bound"] = fixed_bound(B, scale)
    return params


def validate_bounds(unit: str, K: int, B: float) -> None:
    if unit not in UNITS:
        raise BadInput(f"--unit must be record or user, not {unit!r}")
    if not isinstance(K, (int, np.integer)) or K < 1:
        raise BadInput(f"-K must be a positive integer, not {K!r}")
    if not np.isfinite(B) or B <= 0:
        raise BadInput(f"-B must be a positive number, not {B!r}")
    if B > MAX_B:
        raise BadInput(f"-B {B:g} is too large for the fixed-point sketch (at most {MAX_B:g})")
    if unit == "user" and fixed_bound(B) < 1:
        raise BadInput(f"-B {B} is below the fixed-point resolution 2^-{SCALE_BITS}")


def compute_sketch(con: duckdb.DuckDBPyConnection, unit: str = "record", K: int = 3, B: float = 1.0) -> Sketch:
    """Run the enforced sketch query over the target split and the current dictionary."""
    validate_bounds(unit, K, B)
    if unit == "record":
        B = 1.0
    atom_ids, n_records, n_units = target_facts(con, unit)
    rows = con.execute(sketch_query(unit), sketch_params(unit, K, B)).fetchall()
    return Sketch(atom_ids=atom_ids, mass=align(atom_ids, rows), unit=unit, K=int(K), B=float(B),
                  n_records=n_records, n_users=n_units)


def target_facts(con: duckdb.DuckDBPyConnection, unit: str) -> tuple[np.ndarray, int, int]:
    """Dictionary order and the shape of the target split (records, units), after the checks
    every sketch engine needs: a non-empty target split, atoms, and at user level a user id
    on every record and a user-disjoint split."""
    n_records, n_users, n_without_user = first_row(con.execute(queries.load("sketch_units")))
    if n_records == 0:
        raise BadInput("the target split is empty: load records (dpspin load) or split them (dpspin split)")
    if unit == "user":
        check_user_level(con, n_without_user)
    atom_ids = np.array([r[0] for r in con.execute(queries.load("atom_ids")).fetchall()], dtype=np.int64)
    if len(atom_ids) == 0:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    return atom_ids, int(n_records), int(n_users if unit == "user" else n_records)


def check_user_level(con: duckdb.DuckDBPyConnection, n_without_user: int) -> None:
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


def align(atom_ids: np.ndarray, rows) -> np.ndarray:
    """Place (atom_id, mass) rows on the dictionary's order; atoms nobody hit get 0."""
    mass = np.zeros(len(atom_ids), dtype=np.int64)
    index = {int(a): i for i, a in enumerate(atom_ids)}
    limit = np.iinfo(np.int64).max
    for atom_id, value in rows:
        value = int(value)
        if value > limit:
            raise BadInput("the sketch overflows int64 fixed point; lower -B or split the release")
        mass[index[int(atom_id)]] = value
    return mass
