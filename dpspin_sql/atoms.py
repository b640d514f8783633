"""The public atom dictionary: labels and descriptions fixed before the target split is read.

This module installs a dictionary (from a user's taxonomy file here; the builders that
derive one from the auxiliary split add theirs) and names it by a hash of its public
content, which every plan records.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from dpspin_sql import queries, store, tabular
from dpspin_sql.db import first_row
from dpspin_sql.errors import BadInput
from dpspin_sql.store import read_file, staged, transaction

MAX_ATOM_ID = (1 << 31) - 1   # atom ids are the store's INTEGER


@dataclass(frozen=True)
class Atom:
    atom_id: int
    label: str
    description: str = ""
    aux_support: float | None = None


def dictionary_hash(atoms: list[Atom]) -> str:
    """sha256 over the public content (id, label, description) in atom_id order."""
    return hash_entries({"atom_id": a.atom_id, "label": a.label, "description": a.description} for a in atoms)


def hash_entries(entries) -> str:
    """The dictionary hash of {atom_id, label, description} entries (a plan's sidecar, say)."""
    canon = sorted([int(e["atom_id"]), str(e["label"]), str(e.get("description") or "")] for e in entries)
    digest = hashlib.sha256(json.dumps(canon, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()
    return f"sha256:{digest}"


def install(con: duckdb.DuckDBPyConnection, atoms: list[Atom], *, builder: str,
            manifest: dict | None = None, scorer: bytes | None = None) -> str:
    """Replace the dictionary (and the assignments, which refer to the old atom ids)."""
    if not atoms:
        raise BadInput("the dictionary is empty")
    ids = [a.atom_id for a in atoms]
    if len(set(ids)) != len(ids):
        raise BadInput("atom ids in the dictionary are not unique")
    labels = [a.label.strip().lower() for a in atoms]
    if any(not lab for lab in labels):
        raise BadInput("every atom needs a non-empty label")
    if len(set(labels)) != len(labels):
        raise BadInput("atom labels in the dictionary are not unique")
    dictionary_id = dictionary_hash(atoms)
    manifest = dict(manifest or {}, dictionary=dictionary_id, builder=builder, m=len(atoms))
    with staged(con, "staging_atoms", {
        "atom_id": ([a.atom_id for a in atoms], "int64"),
        "label": ([a.label for a in atoms], object),
        "description": ([a.description or "" for a in atoms], object),
        "aux_support": ([a.aux_support for a in atoms], object),
    }), transaction(con):
        con.execute(queries.load("clear_dictionary"))
        store.clear_vectors(con)
        con.execute(queries.load("insert_atoms"), {"dictionary_id": dictionary_id})
        con.execute(queries.load("insert_dictionary"), {
            "dictionary_id": dictionary_id, "builder": builder,
            "manifest": json.dumps(manifest), "scorer": scorer,
            "created_at": datetime.now(UTC).replace(tzinfo=None)})
    return dictionary_id


def read_taxonomy(con: duckdb.DuckDBPyConnection, path: str | Path, *, delimiter: str | None = None) -> list[Atom]:
    """Read a taxonomy (CSV/JSONL/Parquet with label[, description][, atom_id], or JSON/YAML list)."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"taxonomy file not found: {path}")
    if path.suffix.lower() in (".yaml", ".yml") or (path.suffix.lower() == ".json" and _is_json_array(path)):
        import yaml

        if path.suffix.lower() == ".json":
            tabular.check_json_text(path)   # a key twice in an object: refused, as in every file
        try:
            rows = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise BadInput(f"cannot parse {path}: {str(exc).splitlines()[0]}") from None
        if isinstance(rows, dict) and "atoms" in rows:
            rows = rows["atoms"]
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise BadInput(f"{path} must hold a list of {{label, description}} entries")
    else:
        rel = read_file(con, path, delimiter=delimiter)
        rows = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
    if not rows:
        raise BadInput(f"taxonomy {path} has no atoms")
    if any("label" not in r for r in rows):
        raise BadInput(f"taxonomy {path} needs a 'label' column")
    with_ids = sum(_present(r.get("atom_id")) for r in rows)
    if 0 < with_ids < len(rows):
        raise BadInput(f"taxonomy {path}: {len(rows) - with_ids} of {len(rows)} rows have no atom_id; "
                       "give every atom an id or none (then they are numbered 0..m-1 in file order)")
    has_ids = with_ids == len(rows)
    atoms = []
    for i, r in enumerate(rows):
        atom_id = _integer_id(r["atom_id"], path) if has_ids else i
        if not 0 <= atom_id <= MAX_ATOM_ID:
            raise BadInput(f"taxonomy {path}: atom_id {atom_id} is outside 0..{MAX_ATOM_ID} (the store's atom ids)")
        support = r.get("aux_support")
        atoms.append(Atom(atom_id, str(r["label"] or "").strip(), str(r.get("description") or "").strip(),
                          float(support) if support is not None else None))
    return atoms


def load_taxonomy(con: duckdb.DuckDBPyConnection, path: str | Path, *, delimiter: str | None = None) -> str:
    return install(con, read_taxonomy(con, path, delimiter=delimiter), builder="file", manifest={"source": str(path)})


def current_atoms(con: duckdb.DuckDBPyConnection) -> list[Atom]:
    rows = con.execute(queries.load("select_atoms")).fetchall()
    return [Atom(int(r[0]), r[1], r[2] or "", r[3]) for r in rows]


def current_dictionary_id(con: duckdb.DuckDBPyConnection) -> str | None:
    row = first_row(con.execute(queries.load("select_dictionary")))
    return row[0] if row else None


def _present(value) -> bool:
    return value is not None and str(value).strip() != ""


def _integer_id(value, path) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number.is_integer():
        raise BadInput(f"taxonomy {path}: atom_id {value!r} is not an integer")
    return int(number)


def _is_json_array(path: Path) -> bool:
    with path.open("rb") as fh:
        head = fh.read(256).lstrip()
    return head.startswith(b"[") or head.startswith(b"{\"atoms\"")


def current_manifest(con: duckdb.DuckDBPyConnection) -> dict:
    row = con.execute(queries.load("select_dictionary")).fetchall()
    return json.loads(row[0][2]) if row and row[0][2] else {}


def check_m(m) -> None:
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise BadInput(f"-m must be a positive integer, not {m!r}")


def aux_count(con: duckdb.DuckDBPyConnection) -> int:
    """Records in the auxiliary split (what every builder may read)."""
    return int(con.execute(queries.load("atoms_aux_count")).fetchall()[0][0])
