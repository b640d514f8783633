"""Auxiliary / target split and protected-unit sampling, both decided by seeded hashes.

Hashing the unit id (record id, or user id at user level) makes the split reproducible,
independent of row order, and user-disjoint at user level. Re-splitting invalidates
whatever was fitted on the old auxiliary split: a builder dictionary is dropped, and a
taxonomy's fitted scorer and the assignments are cleared, so no record that is now
protected can have shaped a public object.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import duckdb

from dpspin_sql import queries, store
from dpspin_sql.db import only_row
from dpspin_sql.errors import BadInput
from dpspin_sql.store import transaction

UNITS = ("record", "user")
AUX_DERIVED_BUILDERS = ("metadata", "phrases")
RESOLUTION = 1_000_000


@dataclass(frozen=True)
class SplitReport:
    unit: str
    seed: int
    aux_fraction: float | None
    aux_records: int
    target_records: int
    excluded_records: int
    aux_users: int
    target_users: int
    shared_users: int            # users on both sides (0 after a user-level split)
    requested_units: int | None  # n_records / n_users asked for
    sampled_units: int | None    # units kept in the target split
    aux_changed: int             # records whose aux membership changed
    invalidated: str | None      # 'dictionary', 'scorer' or None

    def as_dict(self) -> dict:
        return asdict(self)


def split(con: duckdb.DuckDBPyConnection, unit: str = "record", aux_fraction: float = 0.5, seed: int = 0, *,
          n_records: int | None = None, n_users: int | None = None,
          strict_sample_size: bool = False) -> SplitReport:
    """Re-partition every record into aux/target; optionally sample the target units."""
    _check_unit(unit)
    if not isinstance(aux_fraction, (int, float)) or not 0.0 <= aux_fraction < 1.0:
        raise BadInput(f"--aux-fraction must be in [0, 1), not {aux_fraction!r}")
    seed = _check_seed(seed)
    n = _sample_size(unit, n_records, n_users)
    if unit == "user":
        _require_user_ids(con)
    if _count(con, "count_records") == 0:
        raise BadInput("the store has no records: load some first (dpspin load)")
    threshold = int(round(aux_fraction * RESOLUTION))
    invalidated = None
    with transaction(con):
        con.execute(queries.load("split_plan"), {"unit": unit, "seed": str(seed), "threshold": threshold})
        _refuse_publishing_released_records(con)
        changed = _count(con, "split_plan_changes")
        con.execute(queries.load("split_apply"))
        if changed:
            invalidated = _invalidate(con)
        sampled = _sample(con, unit, n, seed, strict_sample_size) if n is not None else None
    return _report(con, unit, seed, aux_fraction, n, sampled, changed, invalidated)


def sample(con: duckdb.DuckDBPyConnection, unit: str = "record", n: int | None = None, seed: int = 0, *,
           strict_sample_size: bool = False) -> SplitReport:
    """Re-draw the protected sample from the non-aux records, leaving the aux split alone.

    Assignments stay valid (they cover excluded records too), so experiments can vary
    the sampling seed without re-assigning.
    """
    _check_unit(unit)
    seed = _check_seed(seed)
    if n is None:
        raise BadInput("give the number of protected units to sample (n_records or n_users)")
    _sample_size(unit, n if unit == "record" else None, n if unit == "user" else None)
    if unit == "user":
        _require_user_ids(con)
    with transaction(con):
        sampled = _sample(con, unit, n, seed, strict_sample_size)
    return _report(con, unit, seed, None, n, sampled, 0, None)


def _sample(con, unit: str, n: int, seed: int, strict: bool) -> int:
    con.execute(queries.load("split_sample_reset"))
    available = int(con.execute(queries.load("split_sample_units"), {"unit": unit}).fetchall()[0][0])
    if available < n:
        if strict:
            raise BadInput(f"strict_sample_size: asked for {n} {unit}s but the target split has only {available}")
        return available
    con.execute(queries.load("split_sample"), {"unit": unit, "seed": str(seed), "n": int(n)})
    return int(n)


def _refuse_publishing_released_records(con) -> None:
    """Once a release has been charged, a record outside the auxiliary split is protected for good
    (target, or sampled out of a target that was released): moving it to the auxiliary split
    would make it public (atoms, labels and fitted models are built from aux),
    turning what the ledger accounted for as private into data with no guarantee at all."""
    moved = only_row(con.execute("SELECT count(*) FROM split_plan WHERE old_split <> 'aux' AND new_split = 'aux'"))[0]
    if moved and only_row(con.execute("SELECT count(*) FROM ledger"))[0]:
        raise BadInput("this split would move target records that releases have already used into the auxiliary "
                       "(public) split; once the ledger has a release the target records stay protected "
                       "(re-split in a new store)")


def _invalidate(con) -> str | None:
    builders = [r[0] for r in con.execute(queries.load("split_dictionary_builder")).fetchall()]
    if not builders:
        con.execute(queries.load("assign_clear"))
        store.clear_vectors(con)
        return None
    if any(b in AUX_DERIVED_BUILDERS for b in builders):
        con.execute(queries.load("clear_dictionary"))
        store.clear_vectors(con)
        return "dictionary"
    con.execute(queries.load("split_invalidate_scorer"))
    store.clear_vectors(con)
    return "scorer"


def _report(con, unit, seed, aux_fraction, requested, sampled, changed, invalidated) -> SplitReport:
    row = con.execute(queries.load("split_stats")).fetchall()[0]
    aux_records, target_records, excluded_records, aux_users, target_users, shared_users = (int(x) for x in row)
    return SplitReport(unit, seed, aux_fraction, aux_records, target_records, excluded_records, aux_users,
                       target_users, shared_users, requested, sampled, int(changed), invalidated)


def _require_user_ids(con) -> None:
    missing = _count(con, "split_missing_users")
    if missing:
        raise BadInput(f"{missing} record(s) have no user id; a user-level split needs one for every record "
                       "(load with --user-col, or use --unit record)")


def _sample_size(unit: str, n_records, n_users) -> int | None:
    if unit == "record" and n_users is not None:
        raise BadInput("n_users is for --unit user; use n_records at record level")
    if unit == "user" and n_records is not None:
        raise BadInput("n_records is for --unit record; use n_users at user level")
    n = n_records if unit == "record" else n_users
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise BadInput(f"the sample size must be a positive integer, not {n!r}")
    return n


def _check_unit(unit: str) -> None:
    if unit not in UNITS:
        raise BadInput(f"--unit must be record or user, not {unit!r}")


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise BadInput(f"--seed must be an integer, not {seed!r}")
    return seed


def _count(con, name: str) -> int:
    return int(con.execute(queries.load(name)).fetchall()[0][0])
