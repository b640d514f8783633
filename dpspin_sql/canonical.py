"""queries/canonicalise.sql on one batch of the assignment map, in numpy.

`dpspin assign` writes the scorer's rows for 10^5 records in ~2.7 s, and the canonicalising
statement (every staged row grouped by record again, in SQL) was 0.36 s of it, after a
staging insert of every row. The scorer's arrays are already grouped by record, so the
same vectors come out of a few array operations per batch, bit for bit (tests/test_assign_write.py
compares the stored tables with the SQL path's):

- a row counts when its weight is a finite positive number whose fixed point
  floor(min(w, 1)·2^24) is positive and its atom is in the dictionary (`dpspin_fix`);
- a record is canonical when its counting rows name no atom twice and sum to at most 2^24:
  its vector is those rows, by fixed-point mass descending, then atom id;
- a canonical record with no counting row keeps no vector and no row (nothing it has can
  ever count); every other record's rows are kept as given, for the sketch to enforce.

For a new assignment map only: `assign` deletes the raw rows first and replaces every
vector in its one rewrite of the records table, so canonicalise.sql's conditions (no
vector, no raw row yet) hold for every record the batches name.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from dpspin_sql.fixed_point import SCALE


@dataclass(frozen=True)
class BatchVectors:
    vectors: pa.Table    # record_id, atom_ids INTEGER[], masses INTEGER[]: canonical records
    raw: pa.Table        # record_id, atom_id, weight: the rows of every other record, as given


def batch_vectors(record_ids: pa.Array, rows: np.ndarray, atom_ids: np.ndarray, weights: np.ndarray,
                  dictionary: np.ndarray) -> BatchVectors:
    """`rows` index `record_ids` and ascend (the scorer's row-major output)."""
    rows = np.asarray(rows, dtype=np.int64)
    atom_ids = np.asarray(atom_ids, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    n = len(record_ids)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(weights) & (weights > 0)
        fix = np.where(ok, np.floor(np.minimum(np.where(ok, weights, 0.0), 1.0) * SCALE), 0.0).astype(np.int64)
    counts = (fix > 0) & np.isin(atom_ids, dictionary)
    c_rows, c_atoms, c_fix = rows[counts], atom_ids[counts], fix[counts]
    # a repeated atom within a record: adjacent after sorting by (record, atom)
    by_atom = np.lexsort((c_atoms, c_rows))
    r_sorted, a_sorted = c_rows[by_atom], c_atoms[by_atom]
    repeated = np.zeros(n, dtype=bool)
    dup = (r_sorted[1:] == r_sorted[:-1]) & (a_sorted[1:] == a_sorted[:-1])
    repeated[r_sorted[1:][dup]] = True
    total = np.zeros(n, dtype=np.int64)
    np.add.at(total, c_rows, c_fix)
    staged = np.zeros(n, dtype=bool)
    staged[rows] = True
    canonical = staged & ~repeated & (total <= SCALE)
    has_vector = canonical & (np.bincount(c_rows, minlength=n) > 0)
    # the vectors: counting rows of canonical records, by record, mass descending, atom id
    keep = canonical[c_rows]
    v_rows, v_atoms, v_fix = c_rows[keep], c_atoms[keep], c_fix[keep]
    order = np.lexsort((v_atoms, -v_fix, v_rows))
    v_rows, v_atoms, v_fix = v_rows[order], v_atoms[order], v_fix[order]
    owners = np.flatnonzero(has_vector)
    offsets = np.zeros(owners.size + 1, dtype=np.int32)
    np.cumsum(np.bincount(v_rows, minlength=n)[owners], out=offsets[1:])
    vectors = pa.table({
        "record_id": record_ids.take(pa.array(owners)).cast(pa.string()),
        "atom_ids": pa.ListArray.from_arrays(pa.array(offsets), pa.array(v_atoms.astype(np.int32))),
        "masses": pa.ListArray.from_arrays(pa.array(offsets), pa.array(v_fix.astype(np.int32)))})
    raw_rows = ~canonical[rows]
    raw = pa.table({
        "record_id": record_ids.take(pa.array(rows[raw_rows])).cast(pa.string()),
        "atom_id": pa.array(atom_ids[raw_rows].astype(np.int32)),
        "weight": pa.array(weights[raw_rows], pa.float64())})
    return BatchVectors(vectors, raw)
