"""The semantic sketch: the only thing the release mechanisms ever see of the records.

The bounds of docs/DESIGN.md §1 are enforced by the SQL in `queries/sketch_*.sql` in
integer fixed point, so the sensitivity the release is charged for holds exactly,
whatever the assignments table holds. Masses are int64 in units of 2^-SCALE_BITS.

Every engine (`dpspin_sql.sketch.engines`) runs the same enforced query — on DuckDB, Spark or
PostgreSQL — and hands back (atom_id, mass) rows; `assemble` is the one place those rows
become a `Sketch`. On a DuckDB store the engine runs the store form of the query
(queries/sketch_store_*.sql), which skips the per-record work only for the records whose
canonical vectors DuckDB's own constraints prove canonical (`canonical_facts` reads the
catalog; it never trusts a flag or a count).

The package is the sketch wing: this module, the query's compiler (`rewrite`, `transpile`,
the pre-rendered `compiled` queries and their `flags`, the filters' `totality` form) and the
`engines`. It never imports the DP SQL front end (dpspin_sql/sql/), which hands it audited
filters (tests/test_architecture.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from dpspin_sql import queries
from dpspin_sql.db import first_row, only_row, transaction
from dpspin_sql.errors import BadInput
from dpspin_sql.fixed_point import MAX_B, SCALE, SCALE_BITS, fixed_bound
from dpspin_sql.request import UNITS, Bounds
from dpspin_sql.sketch.compiled import SENTINELS

__all__ = ["SCALE", "SCALE_BITS", "MAX_B", "UNITS", "Sketch", "TargetFacts", "CanonicalFacts", "assemble",
           "target_facts", "canonical_facts", "check_user_level", "compute_sketch", "fixed_bound"]


@dataclass(frozen=True)
class Sketch:
    """Non-private: stays inside the curator. `mass[j]` belongs to `atom_ids[j]`."""

    atom_ids: np.ndarray      # int64, the whole dictionary in atom_id order
    mass: np.ndarray          # int64 fixed point, same order
    unit: str
    K: int
    B: float
    n_records: int | None     # the target split's public shape; None for a file source (not counted)
    n_users: int | None
    scale: int = SCALE
    # a segmented sketch (docs/DESIGN.md §11): the segment labels, and `mass` holds S·m
    # coordinates, segment-major: mass[s·m + j] is atom atom_ids[j] in segment labels[s]
    segments: tuple[str, ...] | None = None

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
    n_records: int | None
    n_units: int | None


@dataclass(frozen=True)
class CanonicalFacts:
    """What the store's catalog proves (queries/canonical_catalog.sql against schema.sql):

    canonical: records.atom_ids / masses are INTEGER[] under exactly the schema's CHECKs,
        so every vector DuckDB stored has distinct atoms and masses ≥ 0 with Σ ≤ 2^24;
    keyed: records (user_key, user_id) is a foreign key into users, whose user_key and
        user_id are each unique, so among records with both set, equal keys ⟺ equal ids.
    """

    canonical: bool = False
    keyed: bool = False


@cache
def _expected_catalog() -> tuple[frozenset, frozenset]:
    import duckdb

    ref = duckdb.connect()
    try:
        ref.execute(queries.load("schema"))
        rows = {_catalog_row(r) for r in ref.execute(queries.load("canonical_catalog")).fetchall()}
    finally:
        ref.close()
    canonical = frozenset(r for r in rows if r[0] == "records" and (
        r[1] == "CHECK" or (r[1] == "TYPE" and r[3] in (("atom_ids",), ("masses",)))))
    return canonical, frozenset(rows - canonical)


def _catalog_row(row: tuple) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


def canonical_facts(con: Any) -> CanonicalFacts:
    """Read the catalog (never the data): may the store query trust the canonical vectors
    and the user keys? A store made by an older version, or a table re-created without
    the constraints, gets False and the full enforcement."""
    import duckdb

    try:
        have = {_catalog_row(r) for r in con.execute(queries.load("canonical_catalog")).fetchall()}
    except duckdb.Error:
        return CanonicalFacts()
    canonical, keyed = _expected_catalog()
    return CanonicalFacts(canonical=canonical <= have, keyed=keyed <= have)


def target_facts(con: Any, unit: str, *, keyed: bool = False, count_users: bool = True) -> TargetFacts:
    """The facts every sketch engine needs, after the checks every engine makes: atoms exist,
    and at user level every target record has a user id and the split is user-disjoint.

    `con` is a DuckDB or psycopg connection: both run the portable queries unchanged. With
    `keyed` (a DuckDB store whose catalog proves its user keys, `canonical_facts`), the user
    facts are counted over integer keys in one pass (queries/unit_facts_keyed.sql).
    """
    if unit == "user" and keyed and not count_users:
        # a release needs the checks, not the number of users (n_units None): with no
        # auxiliary record no user can be shared, and every check is a count of records
        n_records, n_without_user, n_aux, aux_without_user = only_row(con.execute(
            queries.load("split_record_counts")))
        if not n_aux:
            _refuse_empty(n_records)
            _check_user_facts(n_without_user, 0, aux_without_user)
            return TargetFacts(dictionary_atoms(con), int(n_records), None)
    if unit == "user" and keyed:
        unkeyed = only_row(con.execute(
            "SELECT count(*) FROM records WHERE user_key IS NULL AND user_id IS NOT NULL"))[0]
        n_records, n_without_user, n_users, shared, aux_without_user = only_row(
            con.execute(queries.load("unit_facts_keyed" if unkeyed else "unit_facts_all_keyed")))
        _refuse_empty(n_records)
        _check_user_facts(n_without_user, shared, aux_without_user)
    elif unit == "user":
        n_records, n_users, n_without_user = only_row(con.execute(queries.load("sketch_units")))
        _refuse_empty(n_records)
        check_user_level(con, n_without_user)
    else:
        n_records = only_row(con.execute(queries.load("target_count")))[0]
        _refuse_empty(n_records)
        n_users = n_records
    return TargetFacts(dictionary_atoms(con), int(n_records), int(n_users))


def _refuse_empty(n_records: int) -> None:
    if n_records == 0:   # the one data-dependent refusal: the empty dataset (docs/THREAT_MODEL.md)
        raise BadInput("the target split is empty: load records (dpspin load) or split them (dpspin split)")


def dictionary_atoms(con: Any) -> np.ndarray:
    atom_ids = np.array([r[0] for r in con.execute(queries.load("atom_ids")).fetchall()], dtype=np.int64)
    if len(atom_ids) == 0:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    return atom_ids


def check_user_level(con: Any, n_without_user: int) -> None:
    """A user-level release needs a user id on every target record and a user-disjoint split."""
    if n_without_user:
        _check_user_facts(n_without_user, 0, 0)
    shared, aux_without_user = only_row(con.execute(queries.load("shared_users")))
    _check_user_facts(0, shared, aux_without_user)


def _check_user_facts(n_without_user: int, shared: int, aux_without_user: int) -> None:
    # the messages about target records say whether, never how many: a count would tell a
    # neighbouring store apart by more than the one bit the refusal itself reveals (THREAT_MODEL.md)
    if n_without_user:
        raise BadInput("some target records have no user id; user-level releases need one for every record")
    if aux_without_user:
        raise BadInput(f"{aux_without_user} auxiliary record(s) have no user id; a user-level release cannot tell "
                       "whether their authors are among the protected users")
    if shared:
        raise BadInput("some users have records in both the auxiliary and the target split; a user-level "
                       "release needs a user-disjoint split (dpspin split --unit user)")


def check_aux_users(con, unit: str) -> None:
    """At user level, every auxiliary record of the store must have a user id: units with auxiliary
    records are left out of the sketch (they shaped the dictionary), and a record without one
    could be any unit's. The store's own fact, never the user's rows."""
    if unit != "user":
        return
    row = first_row(con.execute(queries.load("aux_users")))
    assert row is not None   # counts with no GROUP BY: always one row
    _, aux_without_user = row
    if aux_without_user:
        raise BadInput(f"{aux_without_user} auxiliary record(s) of the store have no user id; a user-level "
                       "release cannot tell whether their authors are among the protected users")


def assemble(facts: TargetFacts, rows: Iterable[tuple[Any, Any]], bounds: Bounds,
             segments: tuple[str, ...] | None = None) -> Sketch:
    """Place an engine's (atom_id, mass) rows on the dictionary's order (atoms nobody hit get 0).
    With `segments`, the rows are a segmented query's ((segment, atom) key, mass) rows
    (dpspin_sql.segments) and the sketch has S·m coordinates, segment-major."""
    atom_ids = facts.atom_ids
    m = len(atom_ids)
    mass = np.zeros(m * (len(segments) if segments is not None else 1), dtype=np.int64)
    index = {int(a): i for i, a in enumerate(atom_ids)}
    limit = np.iinfo(np.int64).max
    for atom_id, value in rows:
        value = int(value)
        if value > limit:
            raise BadInput("the sketch overflows int64 fixed point; lower -B or split the release")
        if segments is None:
            mass[index[int(atom_id)]] = value
        else:
            from dpspin_sql.segments import decode_key

            segment, atom = decode_key(int(atom_id))
            if not 0 <= segment < len(segments):
                raise AssertionError("the segmented sketch returned a segment outside its domain")
            mass[segment * m + index[atom]] = value
    assert bounds.B is not None  # Bounds always sets B
    return Sketch(atom_ids=atom_ids, mass=mass, unit=bounds.unit, K=bounds.K, B=bounds.B,
                  n_records=facts.n_records, n_users=facts.n_units,
                  segments=tuple(segments) if segments is not None else None)


# Users per chunk of the user-level store query (run_sketch): each chunk's per-(user, atom)
# hash table holds about this many users' rows, so the peak memory stays a fraction of the
# whole split's. DPSPIN_CHUNK_USERS overrides it (tests use tiny chunks).
CHUNK_USERS = 1 << 17


def run_sketch(con: Any, bounds: Bounds, filters: Any = None, *, settings: Any = None,
               count_users: bool = True) -> Sketch:
    """The enforced sketch of a DuckDB store's target split and dictionary (with a DP
    statement's audited `filters`, if any). n_records / n_users are those of the whole
    target split (its public shape), never counts of filtered records, which are not DP.

    The store query's fast path is on only where the catalog proves it sound
    (`canonical_facts`) and no filter reads assignment columns (such a filter must see
    every row before any bound is imposed, so every record takes the full enforcement).
    Everything is read in one transaction (one snapshot): the facts, the flags the query
    is specialised on (`store_plan`), and every chunk of the query."""
    with snapshot(con):
        facts_c = canonical_facts(con)
        facts = target_facts(con, bounds.unit, keyed=facts_c.keyed, count_users=count_users)
        flags = {"canonical": facts_c.canonical and not (filters is not None and filters.assignments is not None),
                 "keyed": facts_c.keyed}
        values: dict[str, int] = {}
        chunks = store_plan(con, bounds.unit, flags, K=bounds.K, values=values)
        total: dict[int, int] = {}
        report = getattr(settings, "progress", None)
        # rendered once (sqlglot takes ~0.2 s a query); each chunk's bounds replace two
        # sentinel literals that occur exactly once each
        marks = {"lo": SENTINELS[0], "hi": SENTINELS[1]} if chunks[0] else {}
        template = store_query(bounds, filters, flags | ({"chunked": True} | marks if marks else {}))
        if marks and any(template.count(str(v)) != 1 for v in marks.values()):
            raise AssertionError("the chunk bounds of the store query are not where they belong")
        settings = settings or _settings_from_env()
        params = used_params(template, bounds.params() | values)
        failure = "the sketch query failed on this store"
        with _mapped_errors(failure), settings.applied(con):
            for i, chunk in enumerate(chunks):
                sql = template
                for name, mark in marks.items():
                    sql = sql.replace(str(mark), str(int(chunk[name])))
                part = _chunk_settings(settings, report, i, len(chunks))
                for atom_id, mass in execute_sketch(con, sql, params, part, failure, applied=True):
                    total[int(atom_id)] = total.get(int(atom_id), 0) + int(mass)   # exact: Python integers
    return assemble(facts, sorted(total.items()), bounds)


def store_query(bounds: Bounds, filters: Any, flags: dict) -> str:
    """The store query specialised on `flags`, unbound: its compiled render where there is
    one (queries/compiled_*.sql, no sqlglot) and the statement has no filters, else
    rendered now."""
    from dpspin_sql.sketch import compiled

    text = compiled.lookup(bounds.unit, flags) if filters is None else None
    if text is not None:
        return text
    if filters is None:
        return _rendered(bounds.unit, tuple(sorted(flags.items())))
    from dpspin_sql.sketch.transpile import sketch_sql

    return sketch_sql(bounds, filters, "duckdb", pretty=False, bind_params=False, store_flags=flags)


@cache
def _rendered(unit: str, flags: tuple) -> str:
    """The store query without filters for `unit` and `flags`, rendered once a process
    (~0.2 s of sqlglot each time; unbound, its text depends on the unit and the flags only)."""
    from dpspin_sql.sketch.transpile import sketch_sql

    return sketch_sql(Bounds(unit, 1, None), None, "duckdb", pretty=False, bind_params=False, store_flags=dict(flags))


def used_params(sql: str, params: dict) -> dict:
    """The bound parameters `sql` names (DuckDB refuses a value for one it does not: the
    fast store queries need no $K or $scale)."""
    import re

    return {k: v for k, v in params.items() if re.search(rf"\${re.escape(k)}\b", sql)}


def store_plan(con: Any, unit: str, flags: dict, *, K: int | None = None,
               values: dict | None = None) -> list[dict]:
    """The flags that specialise the store query (queries/sketch_store_*.sql), read in the
    caller's transaction, and its chunks: [{}] (one query) or one {chunked, lo, hi} per range
    of user keys. They change how the result is computed, never what it is: `raw` false
    only when `assignments` has no rows; `all_fast` only when, besides, no target record
    fails the fast test for this K (so the slow branch would be empty); `atoms_dense` only
    when the dictionary's ids are exactly the integers $atom_lo..$atom_hi (put in `values`,
    which the query binds at run time); chunks only at user level on a keyed store whose
    target records all have a key (so no user spans two chunks)."""
    raw = bool(only_row(con.execute("SELECT EXISTS (SELECT 1 FROM assignments)"))[0])
    flags["raw"] = raw
    needs_key = unit == "user"
    n_atoms, lo_atom, hi_atom, integer_ids = only_row(con.execute(queries.load("atom_range")))
    flags["atoms_dense"] = bool(integer_ids and n_atoms and hi_atom - lo_atom + 1 == n_atoms)
    if values is not None:
        values.update(atom_lo=int(lo_atom) if flags["atoms_dense"] else 0,
                      atom_hi=int(hi_atom) if flags["atoms_dense"] else -1)
    flags["all_fast"] = bool(
        K is not None and flags.get("canonical") and not raw and (flags.get("keyed") or not needs_key)
        and not only_row(con.execute(queries.load("sketch_slow_count"), {"K": int(K), "keyed": needs_key}))[0])
    if unit != "user" or not flags.get("keyed"):
        return [{}]
    unkeyed, low, top, n_users = only_row(con.execute(
        "SELECT (SELECT count(*) FROM records WHERE split = 'target' AND user_key IS NULL), "
        "min(user_key), max(user_key), count(*) FROM users"))
    flags["all_keyed"] = unkeyed == 0
    size = _chunk_users()
    if unkeyed or top is None or top - low < size:
        return [{}]
    if top - low + 1 > 4 * max(n_users, size):
        # keys far sparser than the loader's 0..n-1 (a hand-edited store): ranges of keys
        # would be mostly empty queries; one query gives the same result
        return [{}]
    return [{"chunked": True, "lo": lo, "hi": lo + size} for lo in range(int(low), int(top) + 1, size)]


def _chunk_users() -> int:
    import os

    try:
        return max(int(os.environ.get("DPSPIN_CHUNK_USERS", CHUNK_USERS)), 1)
    except ValueError:
        return CHUNK_USERS


def _chunk_settings(settings: Any, report: Any, i: int, n: int) -> Any:
    """The engine settings for chunk i of n: progress reported as the share of all chunks."""
    if report is None or n == 1:
        return settings
    from dataclasses import replace

    return replace(settings, progress=lambda done: report((i + min(max(done, 0.0), 1.0)) / n))


def snapshot(con: Any):
    """One read snapshot for the sketch's queries: a transaction of its own, or the
    caller's when one is open."""
    return transaction(con, join=True)


def execute_sketch(con: Any, sql: str, params: dict, settings: Any, failure: str, *,
                   applied: bool = False) -> list[tuple]:
    """Run a sketch query under the engine settings (memory limit, spill directory, progress,
    perfect hash threshold; already on `con` when `applied`); a DuckDB error becomes
    `failure`, never the engine's message (it can quote protected values)."""
    settings = settings or _settings_from_env()
    with _mapped_errors(failure):
        return settings.fetch(con, sql, params) if applied else settings.run(con, sql, params)


def _settings_from_env() -> Any:
    from dpspin_sql.sketch.engines.settings import EngineSettings

    return EngineSettings.from_env()


@contextmanager
def _mapped_errors(failure: str) -> Iterator[None]:
    import duckdb

    try:
        yield
    except duckdb.Error:
        raise BadInput(failure) from None


def compute_sketch(con: Any, unit: str = "record", K: int = 3, B: float | None = None) -> Sketch:
    """The enforced sketch of the store's target split and dictionary, on DuckDB."""
    return run_sketch(con, Bounds(unit, K, None if unit == "record" else B))
