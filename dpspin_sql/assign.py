"""The assignment map φ: target records → sparse non-negative vectors over the atoms.

The scorer is fitted on the public dictionary and the auxiliary split only, saved
with the dictionary, and then applied to the target split in batches (bounded memory),
writing at most K rows per record with weights summing to ≤ 1. The sketch SQL
re-imposes these bounds anyway; writing them here keeps the non-private sketch honest.
"""
from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import duckdb
import numpy as np

from dpspin_sql import queries, scorers, store
from dpspin_sql.atoms import current_atoms, current_dictionary_id
from dpspin_sql.canonical import BatchVectors, batch_vectors
from dpspin_sql.db import only_row
from dpspin_sql.errors import BadInput
from dpspin_sql.store import transaction

SCORER_NAMES = ("auto", "keyword", "similarity", "supervised", "embedding", "embedding-supervised")
BATCH = 8192
SCORED_STEP = "scored"     # pipeline step: the current assignments were written by the saved scorer
# `--scorer auto`: the scorer whose masses mean what the dictionary's atoms say
AUTO = {"phrases": "keyword", "metadata": "supervised"}
AUTO_OTHER = "similarity"


@dataclass(frozen=True)
class AssignReport:
    scorer: str
    K: int
    m: int
    dictionary_id: str
    n_records: int          # target records read
    n_assigned: int         # records with at least one atom
    n_unassigned: int       # records that expressed no atom (an all-zero vector: they abstain, contributing nothing)
    n_rows: int             # assignment rows written (canonical vectors and raw rows)
    seconds: float
    calibrated: bool = False
    mass_unit: str = ""     # what one unit of an atom's mass is (docs/DESIGN.md §1)
    fidelity: dict | None = None    # on held-out auxiliary records (relevance.calibrate); None when uncalibrated

    def as_dict(self) -> dict:
        return asdict(self)


def resolve_scorer(con: duckdb.DuckDBPyConnection, scorer: str) -> str:
    """`auto` → the scorer for the current dictionary: keyword for phrase atoms (a mass
    counts records that mention the theme), supervised for metadata atoms (a classifier
    of the auxiliary categories), similarity otherwise."""
    if scorer != "auto":
        return scorer
    from dpspin_sql.atoms import current_manifest

    return AUTO.get(current_manifest(con).get("builder") or "", AUTO_OTHER)


def fit_scorer(con: duckdb.DuckDBPyConnection, scorer: str = "auto", *, renormalise: bool = True,
               calibrate: bool = True, K: int = 3, **opts) -> scorers.Scorer:
    """Fit a scorer on the public atoms and (for similarity/supervised/embedding) the aux split.

    `calibrate=True` (the default): per-atom thresholds are fitted on out-of-fold scores
    of the auxiliary records against the dictionary's own definition of expressing an
    atom, and the scorer's fidelity is measured on held-out auxiliary records
    (dpspin_sql.relevance); a record then gives mass only to the atoms it reaches the
    threshold of — 1/k to each of its k ≤ K (`renormalise=True`) or 1/K each
    (`renormalise=False`) — and none when it reaches none. `calibrate=False` is the
    uncalibrated top-K rule (each record's K best scores, scaled to sum 1 or only down
    to 1), kept for comparison with results before calibration existed.
    """
    if not isinstance(renormalise, bool):
        raise BadInput(f"renormalise must be True or False, not {renormalise!r}")
    if not isinstance(calibrate, bool):
        raise BadInput(f"calibrate must be True or False, not {calibrate!r}")
    atoms = current_atoms(con)
    if not atoms:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    scorer = resolve_scorer(con, scorer)
    if scorer not in SCORER_NAMES:
        raise BadInput(f"--scorer must be one of {', '.join(SCORER_NAMES)}, not {scorer!r}")
    from dpspin_sql import fit
    from dpspin_sql.atoms import current_manifest

    manifest = current_manifest(con)
    fit_on = None
    if scorer == "keyword":
        if opts:
            raise BadInput(f"the keyword scorer takes no option {sorted(opts)[0]!r}")
        phrases = None
        if manifest.get("builder") == "phrases" and manifest.get("atoms"):
            from dpspin_sql.phrases import atom_forms

            by_id = dict(zip([int(e["atom_id"]) for e in manifest["atoms"]], atom_forms(manifest)))
            if all(a.atom_id in by_id for a in atoms):
                phrases = [by_id[a.atom_id] for a in atoms]
        full = scorers.KeywordScorer.from_atoms(atoms, renormalise=renormalise, phrases=phrases)
        if not calibrate:
            return full
        ids, texts, metadata = fit.aux_records(con)
    else:
        ids, texts, metadata = fit.aux_records(con)
        if not texts:
            raise BadInput(f"the {scorer} scorer is fitted on the auxiliary split, which is empty: "
                           "run dpspin split first, or load public records with --split aux")
        if scorer.startswith("embedding"):   # the [embed] extra
            from dpspin_sql import embedding

            given = opts.pop("encode", None)
            encode = embedding.memo_encoder(given or embedding.encoder(opts.get("max_tokens",
                                                                               embedding.MAX_TOKENS)).encode)

            def fit_on(t, md):
                return embedding.fit_on(t, md, atoms, manifest, scorer, renormalise=renormalise, encode=encode,
                                        **opts)
        else:
            def fit_on(t, md):
                return fit.fit_on(t, md, atoms, manifest, scorer, renormalise=renormalise, **opts)

        full = fit_on(texts, metadata)
        if not calibrate:
            return _release_encoder(full, given if scorer.startswith("embedding") else None)
    from dpspin_sql import relevance

    relevance.calibrate(full, fit_on, texts, metadata, ids, atoms, manifest, K=K)
    return _release_encoder(full, given if scorer.startswith("embedding") else None)


def _release_encoder(scorer: scorers.Scorer, encode) -> scorers.Scorer:
    """An embedding scorer keeps the caller's encoder (or the pinned model), never the
    calibration's memo of the auxiliary embeddings."""
    if hasattr(scorer, "_encode"):
        scorer._encode = encode
    return scorer


def load_scorer(con: duckdb.DuckDBPyConnection) -> scorers.Scorer:
    """The scorer saved with the current dictionary (`.score_top_k(texts, K)`)."""
    row = con.execute(queries.load("select_dictionary")).fetchone()
    if row is None or row[3] is None:
        raise BadInput("the dictionary has no fitted scorer: run dpspin assign first")
    return scorer_from_bytes(bytes(row[3]))


def scorer_from_bytes(blob: bytes) -> scorers.Scorer:
    """Rebuild any saved scorer, the embedding ones included (their module registers them)."""
    if scorers.kind_of(blob).startswith("embedding"):
        from dpspin_sql import embedding  # noqa: F401 - the [embed] extra

    return scorers.from_bytes(blob)


def assign(con: duckdb.DuckDBPyConnection, scorer: str | scorers.Scorer = "keyword", K: int = 3, *,
           batch_size: int = BATCH, progress: Callable[[int], None] | None = None, workers: int | None = None,
           **fit_opts) -> AssignReport:
    """Fit (or take) a scorer, save it with the dictionary, assign every target record.

    `progress(n)` is called after each batch with the number of records just done.
    `workers` batches are scored at once on threads (default: 2 where there are 2 cores;
    1 for scorers that parallelise inside, like the embedding ones); rows are written in
    batch order by this thread, so the table is the same whatever `workers` is.
    """
    check_K(K)
    dictionary_id = current_dictionary_id(con)
    if dictionary_id is None:
        raise BadInput("the store has no atoms: load a taxonomy (dpspin atoms load) or build one (dpspin atoms build)")
    started = time.perf_counter()
    fitted = scorer if isinstance(scorer, scorers.Scorer) else fit_scorer(con, scorer, K=K, **fit_opts)
    if workers is None:
        workers = 1 if getattr(fitted, "parallel_inside", False) else min(2, os.cpu_count() or 1)
    K = int(K)
    n_records = n_assigned = n_rows = 0

    def score(batch):
        # scoring and canonicalising (numpy, Arrow) run on the worker; the writes stay here
        rows, atom_ids, weights = fitted.score_top_k_arrays(batch.column(1).to_pylist(), K)
        return batch, rows, batch_vectors(batch.column(0), rows, atom_ids, weights, dictionary)

    def write(batch, rows, vectors) -> None:
        nonlocal n_records, n_assigned, n_rows
        n_records += batch.num_rows
        n_assigned += int(np.count_nonzero(np.diff(rows))) + 1 if rows.size else 0   # rows ascend
        _stage(con, vectors)
        n_rows += int(rows.size)
        if progress is not None:
            progress(batch.num_rows)

    reader = store.cursor(con)
    try:
        batches = reader.sql(queries.load("assign_target_texts")).to_arrow_reader(batch_size)
        with transaction(con):
            con.execute(queries.load("assign_clear"))   # the old vectors go in the last rewrite
            dictionary = np.array([r[0] for r in con.execute(queries.load("atom_ids")).fetchall()], dtype=np.int64)
            con.execute("CREATE OR REPLACE TEMP TABLE staged_vectors (record_id VARCHAR, atom_ids INTEGER[], "
                        "masses INTEGER[])")
            con.execute(queries.load("assign_save_scorer"),
                        {"scorer": fitted.to_bytes(), "dictionary_id": dictionary_id})
            if workers <= 1:
                for batch in batches:
                    write(*score(batch))
            else:
                # the GIL-free parts (Arrow kernels, numpy, scipy, DuckDB's insert) of several
                # batches overlap; at most workers + 1 batches are in memory at once
                with ThreadPoolExecutor(workers) as pool:
                    pending: deque = deque()
                    for batch in batches:
                        pending.append(pool.submit(score, batch))
                        if len(pending) > workers:
                            write(*pending.popleft().result())
                    while pending:
                        write(*pending.popleft().result())
            store.store_vectors(con, replace=True)
            store.mark_step(con, "assignments")
            store.mark_step(con, SCORED_STEP)   # the assignments are this scorer's (not loaded ones)
    finally:
        reader.close()
        con.execute("DROP TABLE IF EXISTS staged_vectors")
    from dpspin_sql import relevance
    from dpspin_sql.atoms import current_manifest

    info = relevance.describe(fitted, current_manifest(con))
    return AssignReport(scorer=fitted.kind, K=K, m=len(fitted.atom_ids), dictionary_id=dictionary_id,
                        n_records=n_records, n_assigned=n_assigned, n_unassigned=n_records - n_assigned,
                        n_rows=n_rows, seconds=round(time.perf_counter() - started, 3),
                        calibrated=fitted.calibrated, mass_unit=info["mass_unit"],
                        fidelity=(fitted.calibration or {}).get("fidelity"))


def assignment_info(con: duckdb.DuckDBPyConnection, engine_details: dict | None = None) -> dict:
    """What the masses of a release from this store measure (public: the scorer's kind,
    its calibration record, computed on the auxiliary split only, and the dictionary's
    definition). Assignments loaded with `dpspin assignments load`, or read from the
    user's own table or file, are the user's classifier's: their unit is stated as such."""
    from dpspin_sql import relevance
    from dpspin_sql.atoms import current_manifest

    if engine_details and engine_details.get("source_assignments"):
        return relevance.describe_loaded("rows read from " + str(engine_details["source_assignments"]))
    row = con.execute(queries.load("select_dictionary")).fetchone()
    if row is None or row[3] is None or not _scored_last(con):
        return relevance.describe_loaded("assignment rows loaded into the store")
    return relevance.describe(scorer_from_bytes(bytes(row[3])), current_manifest(con))


def _scored_last(con: duckdb.DuckDBPyConnection) -> bool:
    """The saved scorer wrote the current assignments (none were loaded after it)."""
    rows = dict(con.execute(queries.load("assign_scored_last"), {"step": SCORED_STEP}).fetchall())
    return SCORED_STEP in rows and "assignments" in rows and rows[SCORED_STEP] >= rows["assignments"]


def check_K(K: int) -> None:
    """K of the assignment map is the bound the sketch enforces; the request's rule decides."""
    from dpspin_sql.request import Bounds

    Bounds("record", K)


def count_target(con: duckdb.DuckDBPyConnection) -> int:
    return int(only_row(con.execute(queries.load("assign_count_target")))[0])


def _stage(con, batch: BatchVectors) -> None:
    """One batch into the store, columnar (Arrow straight into DuckDB): the canonical
    vectors to `staged_vectors`, written into `records` once after the last batch
    (`store.store_vectors`: rewriting the records table batch by batch would re-read it
    every time), and every other record's rows to `assignments` as given (dpspin_sql.canonical:
    what queries/canonicalise.sql does to staged rows, on the batch's arrays)."""
    for name, table, insert in (("assign_vectors", batch.vectors, "INSERT INTO staged_vectors SELECT * FROM "),
                                ("assign_raw", batch.raw, "INSERT INTO assignments (record_id, atom_id, weight) "
                                                          "SELECT * FROM ")):
        if table.num_rows:
            con.register(name, table)
            try:
                con.execute(insert + name)
            finally:
                con.unregister(name)


def evaluate(con: duckdb.DuckDBPyConnection, K: int = 3, L: int = 10) -> dict:
    """Curator-side check of the current assignments against a metadata dictionary's truth.

    top-1 accuracy among target records whose true combination is an atom (abstaining
    counts as a miss; `top1_accuracy_assigned`: among those that gave mass), and the
    overlap between the target split's true top-L combinations and the non-private
    sketch's top-L atoms. Never released; for choosing a scorer.
    """
    from dpspin_sql.atoms import current_manifest
    from dpspin_sql.sketch import compute_sketch

    manifest = current_manifest(con)
    fields = manifest.get("fields")
    if manifest.get("builder") != "metadata" or not fields:
        raise BadInput("--evaluate needs a metadata dictionary (dpspin atoms build --builder metadata)")
    keys = {e["atom_id"]: _skey(e["values"]) for e in manifest.get("atoms", [])}
    with store.staged(con, "eval_atom_keys", {"atom_id": (list(keys), "int32"), "skey": (list(keys.values()), object)}):
        n_target, n_true_atom, n_correct, n_assigned, n_true_assigned = con.execute(
            queries.load("assign_eval_top1"), {"fields": fields}).fetchall()[0]
    true_top = [r[0] for r in con.execute(queries.load("assign_eval_true_top"), {"fields": fields, "L": int(L)}).fetchall()]
    sk = compute_sketch(con, unit="record", K=K)
    order = sorted(range(sk.m), key=lambda j: (-int(sk.mass[j]), int(sk.atom_ids[j])))[:L]
    sketch_top = [keys.get(int(sk.atom_ids[j])) for j in order if sk.mass[j] > 0]
    overlap = len(set(true_top) & set(sketch_top))
    return {"scorer": load_scorer(con).kind, "K": K, "L": L, "n_target": int(n_target),
            "n_true_in_dictionary": int(n_true_atom), "n_top1_correct": int(n_correct),
            "top1_accuracy": round(n_correct / n_true_atom, 4) if n_true_atom else None,
            "top1_accuracy_assigned": round(n_correct / n_true_assigned, 4) if n_true_assigned else None,
            "n_true_assigned": int(n_true_assigned), "n_assigned": int(n_assigned), "overlap_at_L": overlap,
            "overlap_fraction": round(overlap / max(len(true_top), 1), 4),
            "true_top_in_dictionary": sum(1 for k in true_top if k in set(keys.values()))}


def _skey(values: list[str | None]) -> str:
    return "\x1f".join(v if v is not None else "\x00" for v in values)
