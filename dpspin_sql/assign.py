"""The assignment map φ: target records → sparse non-negative vectors over the atoms.

The scorer is fitted on the public dictionary and the auxiliary split only, saved
with the dictionary, and then applied to the target split in batches (bounded memory),
writing at most K rows per record with weights summing to ≤ 1. The sketch SQL
re-imposes these bounds anyway; writing them here keeps the non-private sketch honest.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Callable

import duckdb
import numpy as np
import pyarrow as pa

from dpspin_sql import queries, scorers
from dpspin_sql.atoms import current_atoms, current_dictionary_id
from dpspin_sql.errors import BadInput
from dpspin_sql.store import transaction

SCORER_NAMES = ("keyword", "similarity", "supervised")
BATCH = 8192


@dataclass(frozen=True)
class AssignReport:
    scorer: str
    K: int
    m: int
    dictionary_id: str
    n_records: int          # target records read
    n_assigned: int         # records with at least one atom
    n_unassigned: int       # records that scored no atom (an all-zero vector, contributes nothing)
    n_rows: int             # rows written to `assignments`
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def fit_scorer(con: duckdb.DuckDBPyConnection, scorer: str = "keyword", **opts) -> scorers.Scorer:
    """Fit a scorer on the public atoms and (for similarity/supervised) the aux split."""
    atoms = current_atoms(con)
    if not atoms:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    if scorer == "keyword":
        return scorers.KeywordScorer.from_atoms(atoms)
    if scorer in SCORER_NAMES:
        from dpspin_sql import fit

        return fit.fit(con, atoms, scorer, **opts)
    raise BadInput(f"--scorer must be one of {', '.join(SCORER_NAMES)}, not {scorer!r}")


def load_scorer(con: duckdb.DuckDBPyConnection) -> scorers.Scorer:
    """The scorer saved with the current dictionary (`.score_top_k(texts, K)`)."""
    row = con.execute(queries.load("select_dictionary")).fetchone()
    if row is None or row[3] is None:
        raise BadInput("the dictionary has no fitted scorer: run dpspin assign first")
    return scorers.from_bytes(bytes(row[3]))


def assign(con: duckdb.DuckDBPyConnection, scorer: str | scorers.Scorer = "keyword", K: int = 3, *,
           batch_size: int = BATCH, progress: Callable[[int], None] | None = None,
           **fit_opts) -> AssignReport:
    """Fit (or take) a scorer, save it with the dictionary, assign every target record.

    `progress(n)` is called after each batch with the number of records just done.
    """
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise BadInput(f"-K must be a positive integer, not {K!r}")
    dictionary_id = current_dictionary_id(con)
    if dictionary_id is None:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    started = time.perf_counter()
    fitted = scorer if isinstance(scorer, scorers.Scorer) else fit_scorer(con, scorer, **fit_opts)
    n_records = n_assigned = n_rows = 0
    reader = con.cursor()
    try:
        batches = reader.sql(queries.load("assign_target_texts")).to_arrow_reader(batch_size)
        with transaction(con):
            con.execute(queries.load("assign_clear"))
            con.execute(queries.load("assign_save_scorer"),
                        {"scorer": fitted.to_bytes(), "dictionary_id": dictionary_id})
            for batch in batches:
                ids = batch.column(0).to_pylist()
                rows = fitted.score_top_k(batch.column(1).to_pylist(), int(K))
                n_records += len(ids)
                n_assigned += sum(1 for r in rows if r)
                n_rows += _write(con, ids, rows)
                if progress is not None:
                    progress(len(ids))
    finally:
        reader.close()
    return AssignReport(scorer=fitted.kind, K=int(K), m=len(fitted.atom_ids), dictionary_id=dictionary_id,
                        n_records=n_records, n_assigned=n_assigned, n_unassigned=n_records - n_assigned,
                        n_rows=n_rows, seconds=round(time.perf_counter() - started, 3))


def count_target(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute(queries.load("assign_count_target")).fetchone()[0])


def _write(con, ids: list[str], rows: list[list[tuple[int, float]]]) -> int:
    rid, aid, wts = [], [], []
    for record_id, kept in zip(ids, rows):
        for atom_id, weight in kept:
            rid.append(record_id)
            aid.append(atom_id)
            wts.append(weight)
    if not rid:
        return 0
    con.register("staging_assignments", pa.table({
        "record_id": pa.array(rid, pa.string()), "atom_id": pa.array(aid, pa.int32()),
        "weight": pa.array(wts, pa.float64())}))
    try:
        con.execute(queries.load("insert_assignments"))
    finally:
        con.unregister("staging_assignments")
    return len(rid)
