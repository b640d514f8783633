"""Dictionary builders: derive the public atoms from the auxiliary split only.

`metadata` takes the top-m combinations of chosen metadata fields by auxiliary support;
`phrases` (phrases.py) builds two-word review themes. Every build writes a manifest and
installs the dictionary through `atoms.install`.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from dpspin_sql import queries
from dpspin_sql.atoms import Atom, aux_count, check_m, install
from dpspin_sql.errors import BadInput

BUILDERS = ("metadata", "phrases")


def build_metadata(con: duckdb.DuckDBPyConnection, fields: list[str], m: int = 50, *,
                   min_support: int = 1) -> tuple[list[Atom], dict]:
    """Top-m combinations of `fields` (metadata columns) by auxiliary support.

    Returns the atoms and the manifest (install() adds the dictionary hash). The
    realised m is smaller when fewer combinations reach `min_support`.
    """
    check_m(m)
    if isinstance(min_support, bool) or not isinstance(min_support, int) or min_support < 1:
        raise BadInput(f"--min-support must be a positive integer, not {min_support!r}")
    fields = [f.strip() for f in fields if f and f.strip()]
    if not fields:
        raise BadInput("--fields needs at least one metadata column, e.g. --fields product,issue,sub_issue")
    n_aux = aux_count(con)
    if n_aux == 0:
        raise BadInput("the auxiliary split is empty: run dpspin split first, or load public records with --split aux")
    have = [r[0] for r in con.execute(queries.load("atoms_metadata_keys")).fetchall()]
    missing = [f for f in fields if f not in have]
    if missing:
        raise BadInput(f"metadata column {missing[0]!r} does not exist in the auxiliary split; it has: "
                       f"{', '.join(have) or '(none)'}")
    rows = con.execute(queries.load("atoms_build_metadata"), {"fields": fields, "m": int(m)}).fetchall()
    candidates = int(rows[0][2]) if rows else 0
    atoms: list[Atom] = []
    entries: list[dict] = []
    seen: set[str] = set()
    collisions, below = 0, 0
    for key, support, _ in rows:
        if support < min_support:
            below += 1
            continue
        label = " / ".join(v for v in key if v is not None)
        if label.lower() in seen:
            collisions += 1
            continue
        seen.add(label.lower())
        description = "; ".join(f"{f}: {v}" for f, v in zip(fields, key) if v is not None)
        atoms.append(Atom(len(atoms), label, description, float(support)))
        entries.append({"atom_id": atoms[-1].atom_id, "label": label, "aux_support": float(support),
                        "values": list(key)})
    if not atoms:
        raise BadInput(f"no combination of {', '.join(fields)} reaches --min-support {min_support} in the aux split")
    manifest = {
        "builder": "metadata", "profile": None, "fields": fields,
        "rules": ["group aux records by the listed metadata columns (empty = missing)",
                  "rank by aux support, ties by the combination's text",
                  "label = non-missing values joined by ' / '"],
        "aux_records": n_aux, "candidates": candidates, "threshold": min_support,
        "m_requested": int(m), "m": len(atoms),
        "counts": {"candidates": candidates, "beyond_m": max(candidates - len(rows), 0),
                   "below_threshold": below, "label_collisions": collisions, "kept": len(atoms)},
        "shortfall": (f"{len(atoms)} atoms, not the {m} asked for (-m {m}): the auxiliary split has "
                      f"{candidates} combinations of {', '.join(fields)}"
                      + (f", {below} of them below --min-support {min_support}" if below else "")
                      + (f", {collisions} with a label another one has" if collisions else "")
                      if len(atoms) < m else None),
        "atoms": entries,
    }
    return atoms, manifest


def build(con: duckdb.DuckDBPyConnection, builder: str, *, fields: list[str] | None = None,
          profile: str | Path | None = None, m: int | None = None, min_support: int | None = None,
          manifest_out: str | Path | None = None) -> tuple[str, dict]:
    """Build and install a dictionary from the aux split; returns (dictionary_id, manifest)."""
    if builder == "metadata":
        atoms, manifest = build_metadata(con, fields or [], 50 if m is None else m,
                                         min_support=1 if min_support is None else min_support)
    elif builder == "phrases":
        from dpspin_sql import phrases

        atoms, manifest = phrases.build_phrases(con, profile=profile, m=m, min_support=min_support)
    elif builder == "file":
        raise BadInput("a taxonomy file is loaded with: dpspin atoms load --db FILE --input TAXONOMY")
    else:
        raise BadInput(f"--builder must be metadata or phrases, not {builder!r}")
    dictionary_id = install(con, atoms, builder=builder, manifest=manifest)
    manifest = dict(manifest, dictionary=dictionary_id, builder=builder, m=len(atoms))
    if manifest_out is not None:
        Path(manifest_out).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return dictionary_id, manifest
