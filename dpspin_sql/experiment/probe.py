"""The probe-atom experiment (paper §6.3, docs/DESIGN.md §9).

A public probe atom — label and description fixed in the grid file, before any target
record is read — is appended to the dictionary built on the auxiliary split. For each
injected support s, s synthetic probe records (public, fixed texts) are inserted into the
target split only (after the protected sample is drawn), pass through the same
assignment map as every record, and are removed again after the sketch is computed. The
report gives, per s, the probe's admission rate in the released plan, its mention rate
in the summary and its non-private rank.

    probe:
      dataset: cfpb
      label: "Cryptocurrency exchange / Frozen withdrawal"
      description: "..."
      texts: ["...", "..."]          # cycled to make s records
      support: [0, 5, 10, 20, 40, 80]
      unit: record
      n_records: 1000
      mechanism: [laplace, gaussian, private_topL]
      epsilon: [1.0]
      seeds: 10
"""
from __future__ import annotations

import itertools

import duckdb

from dpspin_sql import queries, store
from dpspin_sql.errors import BadInput

PROBE_PREFIX = "probe-"
DEFAULT_PROBE = {
    "label": "Cryptocurrency exchange / Frozen crypto withdrawal",
    "description": "product: Cryptocurrency exchange; issue: Frozen crypto withdrawal — the exchange froze the "
                   "consumer's cryptocurrency account and will not release a withdrawal",
    "texts": [
        "My cryptocurrency exchange froze my crypto withdrawal and will not release my funds from the "
        "cryptocurrency account.",
        "The crypto exchange has frozen my cryptocurrency withdrawal for weeks and support does not answer.",
        "I requested a cryptocurrency withdrawal but the exchange froze the crypto account and the withdrawal "
        "is still frozen.",
    ],
}
PROBE_SWEPT = ("n_records", "n_users", "m", "K", "L", "mechanism", "epsilon", "delta", "B")


def install_probe_atom(con: duckdb.DuckDBPyConnection, spec: dict, manifest: dict) -> dict:
    """Append the public probe atom to the installed (aux-built) dictionary."""
    from dpspin_sql.atoms import Atom, current_atoms, install

    atoms = current_atoms(con)
    if any(a.label.strip().lower() == spec["label"].strip().lower() for a in atoms):
        raise BadInput(f"the probe label {spec['label']!r} is already an atom of the dictionary")
    probe_atom = Atom(max(a.atom_id for a in atoms) + 1, spec["label"], spec.get("description") or "", None)
    builder = f"{manifest.get('builder', 'dictionary')}+probe"
    manifest = dict(manifest, probe={"atom_id": probe_atom.atom_id, "label": probe_atom.label,
                                     "description": probe_atom.description})
    dictionary_id = install(con, atoms + [probe_atom], builder=builder, manifest=manifest)
    return dict(manifest, dictionary=dictionary_id, m=len(atoms) + 1, builder=builder)


def insert_probe_records(con: duckdb.DuckDBPyConnection, spec: dict, K: int) -> dict:
    """Insert `support` probe records into the target split, assigned by the store's scorer."""
    from dpspin_sql.assign import load_scorer
    from dpspin_sql.atoms import current_atoms

    atoms = current_atoms(con)
    probe_atom = next((a for a in atoms if a.label == spec["label"]), None)
    if probe_atom is None:
        raise BadInput("the probe atom is not in the dictionary")
    s = int(spec["support"])
    info = {"atom_id": probe_atom.atom_id, "label": probe_atom.label, "inserted": s, "assigned_to_probe": 0.0}
    remove_probe_records(con)
    if s == 0:
        return info
    texts = [spec["texts"][i % len(spec["texts"])] for i in range(s)]
    ids = [f"{PROBE_PREFIX}{i:06d}" for i in range(s)]
    reader = store.cursor(con)   # load_scorer leaves its result open; keep it off this connection
    try:
        scorer = load_scorer(reader)
    finally:
        reader.close()
    rows = scorer.score_top_k(texts, int(K))
    info["assigned_to_probe"] = float(sum(w for r in rows for a, w in r if a == probe_atom.atom_id))
    rid, aid, wts = [], [], []
    for record_id, kept in zip(ids, rows):
        for atom_id, weight in kept:
            rid.append(record_id)
            aid.append(int(atom_id))
            wts.append(float(weight))
    users = [f"{PROBE_PREFIX}user-{i:06d}" for i in range(s)]
    with store.staged(con, "probe_records", {"record_id": (ids, object), "user_id": (users, object),
                                             "text": (texts, object)}), \
            store.staged(con, "probe_assignments", {"record_id": (rid, object), "atom_id": (aid, "int32"),
                                                    "weight": (wts, "float64")}):
        con.execute(queries.load("probe_insert_records"))
        con.execute(queries.load("probe_insert_assignments"))
    return info


def remove_probe_records(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(queries.load("probe_delete_assignments"), {"p": PROBE_PREFIX})
    con.execute(queries.load("probe_delete_records"), {"p": PROBE_PREFIX})
