"""Shared helpers for the core release-path tests (sensitivity, sketch bounds, mechanisms,
ledger, CLI): tiny DuckDB stores written directly, an independent pure-Python reference
of the enforced sketch, store snapshots, and CLI invocation.

The reference sketch below is written from docs/DESIGN.md §1 and docs/ARCHITECTURE.md ("Fixed
point"), not from the SQL: a weight becomes floor(min(w, 1)·2^S) when it is a finite
positive number (anything else is dropped), duplicated (record, atom) rows keep their
largest weight, a record keeps its top K atoms by fixed-point weight (tie → lower atom
id), and its kept weights are renormalised in integers to Σ ≤ 2^S
(v = floor(w·2^S / total) when total > 2^S, unchanged otherwise); a user's summed vector
is clipped the same way to Σ ≤ floor(B·2^S).
"""
from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from pathlib import Path

import duckdb

from dpspin_sql import atoms as atoms_mod
from dpspin_sql import queries, store
from dpspin_sql.sketch import SCALE, SCALE_BITS
from tests.helpers.data import data_root

DATA = Path(__file__).resolve().parents[1] / "data"
SHARED_DATA = data_root()   # $DPSPIN_DATA, else ../shared/data (tests/helpers/data.py)


# --------------------------------------------------------------------------- stores

@functools.cache
def _empty_store() -> Path:
    """One empty store a process, made by store.connect; new stores are copies of its file
    (the schema's DDL and macros took ~0.1 s of every store a test made)."""
    import atexit
    import shutil
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="dpspin-empty-store-"))
    atexit.register(shutil.rmtree, where, True)
    path = where / "empty.duckdb"
    store.connect(path, create=True).close()
    return path


def new_store(path: str | Path, *, epsilon_budget: float | None = None, delta_budget: float = 1e-5,
              own_genesis: bool = False, accountant: str | None = None):
    """A fresh store (a copy of an empty one when `path` is new; `own_genesis`: made by
    store.connect itself, so that its ledger's creation row is its own, as `dpspin init`
    makes it, not the shared copy's); with `epsilon_budget`, its total budget is set; with
    `accountant`, it composes by that accountant (new stores: zcdp)."""
    import shutil

    from dpspin_sql import ledger

    if not Path(path).exists() and not own_genesis:
        shutil.copyfile(_empty_store(), path)
    con = store.connect(path, create=True)
    if accountant is not None:
        ledger.set_accountant(con, accountant)
    if epsilon_budget is not None:
        ledger.set_budget(con, epsilon_budget, delta_budget)
    return con


def install_atoms(con, atom_ids, labels=None) -> None:
    labels = labels or [f"atom {a}" for a in atom_ids]
    atoms_mod.install(con, [atoms_mod.Atom(int(a), lab, f"description of {lab}") for a, lab in zip(atom_ids, labels)],
                      builder="file", manifest={"source": "tests"})


def put_records(con, records) -> None:
    """records: iterable of (record_id, user_id | None, split). Replaces the table."""
    records = list(records)
    con.execute("DELETE FROM records")
    if not records:
        return
    con.execute("INSERT INTO records (record_id, user_id, text, split) "
                "SELECT r, u, 'text of ' || r, s FROM (SELECT unnest($r::VARCHAR[]) AS r, "
                "unnest($u::VARCHAR[]) AS u, unnest($s::VARCHAR[]) AS s)",
                {"r": [r[0] for r in records], "u": [r[1] for r in records], "s": [r[2] for r in records]})


def put_assignments(con, rows) -> None:
    """rows: iterable of (record_id | None, atom_id | None, weight | None), stored as given
    (NaN, ±inf, negatives, duplicates and unknown ids included). Replaces the table."""
    rows = list(rows)
    con.execute("DELETE FROM assignments")
    store.mark_step(con, "assignments")   # as `dpspin assignments load` records it
    if not rows:
        return
    con.execute("INSERT INTO assignments SELECT unnest($r::VARCHAR[]), unnest($a::INTEGER[]), "
                "unnest($w::DOUBLE[])",
                {"r": [r[0] for r in rows], "a": [r[1] for r in rows],
                 "w": [None if r[2] is None else float(r[2]) for r in rows]})


def set_split(con, record_ids, split: str) -> None:
    con.execute("UPDATE records SET split = $s WHERE record_id IN (SELECT unnest($ids::VARCHAR[]))",
                {"s": split, "ids": list(record_ids)})


def synthetic_store(path: str | Path, *, n_users: int = 40, records_per_user: int = 3, m: int = 12,
                    epsilon_budget: float = 1.0, delta_budget: float = 1e-5, close: bool = True,
                    own_genesis: bool = False, accountant: str | None = None):
    """A small well-formed store (every target record has a user and 1–3 atoms) for the
    ledger and CLI tests. Deterministic; returns the path (or the open connection)."""
    con = new_store(path, epsilon_budget=epsilon_budget, delta_budget=delta_budget, own_genesis=own_genesis,
                    accountant=accountant)
    install_atoms(con, list(range(m)), [f"theme {chr(97 + i % 26)}{i}" for i in range(m)])
    records, rows = [], []
    for u in range(n_users):
        for r in range(records_per_user):
            rid = f"r{u:03d}-{r}"
            records.append((rid, f"u{u:03d}", "target"))
            for k in range(1 + (u + r) % 3):
                rows.append((rid, (u * 7 + r * 3 + k * 5) % m, 1.0 / (k + 2)))
    put_records(con, records)
    put_assignments(con, rows)
    if close:
        con.close()
        return Path(path)
    return con


# --------------------------------------------------------------------------- reference sketch

def fix_weight(w, scale: int = SCALE):
    """floor(min(w, 1)·2^S) for a finite positive weight, else None (dropped)."""
    if w is None or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
        return None
    return math.floor(min(float(w), 1.0) * scale)


def l1_clip(vec: dict[int, int], bound: int) -> dict[int, int]:
    total = sum(vec.values())
    if total <= bound:
        return dict(vec)
    return {a: u * bound // total for a, u in vec.items()}


def reference_record_vectors(records, assignments, atom_ids, K: int, scale: int = SCALE) -> dict[str, dict[int, int]]:
    """record_id → {atom_id: v_fix} for every target record with a non-empty vector."""
    target = {r[0] for r in records if r[2] == "target"}
    known = {int(a) for a in atom_ids}
    best: dict[str, dict[int, int]] = defaultdict(dict)
    for rid, aid, w in assignments:
        if rid not in target or aid is None or int(aid) not in known:
            continue
        f = fix_weight(w, scale)
        if f is None:
            continue
        cur = best[rid].get(int(aid))
        best[rid][int(aid)] = f if cur is None else max(cur, f)
    out = {}
    for rid, ws in best.items():
        kept = sorted(((a, w) for a, w in ws.items() if w > 0), key=lambda aw: (-aw[1], aw[0]))[:K]
        if kept:
            out[rid] = l1_clip(dict(kept), scale)
    return out


def reference_user_vectors(records, assignments, atom_ids, K: int, B: float,
                           scale: int = SCALE) -> dict[str, dict[int, int]]:
    """user_id → clipped {atom_id: V_fix}, bound floor(B·2^S)."""
    bound = math.floor(B * scale)
    user_of = {r[0]: r[1] for r in records if r[2] == "target"}
    summed: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for rid, vec in reference_record_vectors(records, assignments, atom_ids, K, scale).items():
        for a, v in vec.items():
            summed[user_of[rid]][a] += v
    return {u: l1_clip(dict(vec), bound) for u, vec in summed.items()}


def reference_sketch(records, assignments, atom_ids, unit: str, K: int, B: float = 1.0,
                     scale: int = SCALE) -> list[int]:
    """C(D) in fixed point, in ascending atom_id order (the Sketch's order)."""
    if unit == "record":
        vectors = reference_record_vectors(records, assignments, atom_ids, K, scale).values()
    else:
        vectors = reference_user_vectors(records, assignments, atom_ids, K, B, scale).values()
    total = defaultdict(int)
    for vec in vectors:
        for a, v in vec.items():
            total[a] += v
    return [total.get(int(a), 0) for a in sorted(int(a) for a in atom_ids)]


# --------------------------------------------------------------------------- the SQL's own per-unit vectors

def sql_unit_vectors(con, unit: str, K: int, B: float = 1.0) -> dict[tuple, int]:
    """The per-record (`record`) or clipped per-user (`user`) vectors as the sketch SQL
    computes them: the shipped query with its final aggregation swapped for a select of
    the intermediate CTE. Keys are (unit id, atom_id)."""
    unit_sql = queries.load(f"sketch_{unit}")
    head, sep, _ = unit_sql.rpartition("\nSELECT atom_id")
    assert sep, "the sketch query no longer ends in 'SELECT atom_id …'; update tests/helpers/core.py"
    if unit == "record":
        tail = "\nSELECT record_id, atom_id, v FROM record_vectors"
        params = {"K": K, "scale": SCALE}
    else:
        tail = "\nSELECT user_id, atom_id, CAST(dpspin_clip(u, total, $bound) AS HUGEINT) FROM user_totals"
        params = {"K": K, "scale": SCALE, "bound": math.floor(B * SCALE)}
    return {(r[0], int(r[1])): int(r[2]) for r in con.execute(head + tail, params).fetchall()}


def sql_record_vectors_of_user_query(con, K: int, B: float) -> dict[tuple, int]:
    """The per-record vectors inside the *user-level* query (its record_vectors CTE)."""
    unit_sql = queries.load("sketch_user")
    head, sep, _ = unit_sql.rpartition("\nSELECT atom_id")
    assert sep
    rows = con.execute(head + "\nSELECT record_id, atom_id, v FROM record_vectors",
                       {"K": K, "scale": SCALE}).fetchall()
    return {(r[0], int(r[1])): int(r[2]) for r in rows}


# --------------------------------------------------------------------------- snapshots and the CLI

TABLES = ("records", "atoms", "assignments", "dictionary", "budget", "ledger")


def snapshot(path: str | Path) -> dict[str, list]:
    """Every table's rows, sorted (the store must be closed by its writers first)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        return {t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall())) if t in have else None
                for t in TABLES}
    finally:
        con.close()


def cli(capsys, *argv) -> tuple[int, str, str]:
    """Run `dpspin ARGV` in-process; returns (exit code, stdout, stderr)."""
    from dpspin_sql.cli import run

    capsys.readouterr()
    rc = run([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def assert_one_line_error(rc: int, out: str, err: str, code: int = 2) -> None:
    assert rc == code, (rc, out, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {err!r}"
    assert "Traceback" not in err and "Traceback" not in out
    assert "internal error" not in err


def read_plan(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


SPEC_PLAN_KEYS = {"schema_version", "mechanism", "epsilon", "delta", "unit", "adjacency", "B", "K", "L", "m",
                  "calibration", "noise_scale", "comparison_margin", "public_denominator", "bins", "dictionary",
                  "created_at", "atoms"}
SPEC_ATOM_KEYS = {"atom_id", "label", "description", "noisy_mass", "display_mass", "bin", "rank"}

__all__ = ["SCALE", "SCALE_BITS"]


def open_copy(template: Path, tmp_path: Path):
    """A connection to a fresh copy of a module's template store (tests mutate it freely);
    use as `yield from open_copy(template, tmp_path)` in a fixture."""
    import shutil

    from dpspin_sql import store

    path = tmp_path / "store.duckdb"
    shutil.copy(template, path)
    con = store.connect(path)
    yield con
    con.close()
