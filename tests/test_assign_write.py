"""`dpspin assign` canonicalises each batch in numpy (dpspin_sql.canonical); what it stores
must be what queries/canonicalise.sql (the loader's path, store.write_assignments) stores
for the same rows: the same vectors in `records` and the same raw rows in `assignments`,
on hostile batches (NaN, ±inf, negative, tiny and >1 weights, repeated and unknown atoms,
sums over one) and on a real scorer's output.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpspin_sql import assign, builders, store
from dpspin_sql.canonical import batch_vectors
from tests.helpers.atoms import cfpb_like, make_store
from tests.helpers.core import install_atoms, new_store, put_records

ATOMS = [3, 5, 8, 13]
WEIGHTS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                    st.sampled_from([0.0, -0.0, 2.0 ** -25, 2.0 ** -24, 0.5, 1.0, 1.5, 1 / 3]))


@st.composite
def batches(draw):
    n = draw(st.integers(1, 6))
    rows = sorted(draw(st.lists(st.integers(0, n - 1), max_size=14)))
    atoms = [draw(st.sampled_from(ATOMS + [99, -1])) for _ in rows]
    weights = [draw(WEIGHTS) for _ in rows]
    return n, rows, atoms, weights


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    c = new_store(tmp_path_factory.mktemp("w") / "s.duckdb")
    install_atoms(c, ATOMS)
    yield c
    c.close()


def sql_path(con, ids, rows, atoms, weights):
    """The loader's path: the rows staged as given, canonicalise.sql, the raw rest."""
    con.execute("DELETE FROM assignments")
    store.clear_vectors(con)
    con.register("staging_assignments", pa.table({
        "record_id": pa.array([ids[r] for r in rows], pa.string()),
        "atom_id": pa.array(atoms, pa.int32()), "weight": pa.array(weights, pa.float64())}))
    try:
        store.write_assignments(con)
    finally:
        con.unregister("staging_assignments")
    return stored(con)


def stored(con):
    vectors = con.execute("SELECT record_id, atom_ids, masses FROM records WHERE atom_ids IS NOT NULL "
                          "OR masses IS NOT NULL ORDER BY record_id").fetchall()
    raw = con.execute("SELECT record_id, atom_id, weight FROM assignments ORDER BY ALL").fetchall()
    return vectors, sorted(raw, key=repr)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=batches())
def test_the_numpy_canonicaliser_is_canonicalise_sql(con, batch):
    n, rows, atoms, weights = batch
    ids = [f"r{i}" for i in range(n)]
    put_records(con, [(i, "u", "target") for i in ids])
    want = sql_path(con, ids, rows, atoms, weights)
    got = batch_vectors(pa.array(ids), np.array(rows, dtype=np.int64), np.array(atoms, dtype=np.int64),
                        np.array(weights, dtype=np.float64), np.array(ATOMS, dtype=np.int64))
    vectors = sorted(zip(got.vectors.column("record_id").to_pylist(), got.vectors.column("atom_ids").to_pylist(),
                         got.vectors.column("masses").to_pylist()))
    raw = sorted(zip(got.raw.column("record_id").to_pylist(), got.raw.column("atom_id").to_pylist(),
                     got.raw.column("weight").to_pylist()), key=repr)
    assert (vectors, raw) == (want[0], want[1]) or _same_with_nan((vectors, raw), want)


def _same_with_nan(a, b) -> bool:
    """NaN weights compare unequal to themselves; compare their reprs instead."""
    return repr(a) == repr(b)


@pytest.mark.parametrize("kind", ["keyword", "similarity", "supervised"])
def test_assign_stores_what_the_loader_stores_for_the_scorers_rows(tmp_path, kind):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(9, split="target", start=5000)
                     + [{"record_id": "blank", "text": "nothing relevant here", "split": "target"}])
    builders.build(con, "metadata", fields=FIELDS, m=10)
    sc = assign.fit_scorer(con, kind)
    assign.assign(con, sc, K=3, batch_size=4)
    got = stored(con)
    recs = con.execute("SELECT record_id, text FROM records WHERE split = 'target' ORDER BY record_id").fetchall()
    rows, atom_ids, weights = sc.score_top_k_arrays([t for _, t in recs], 3)
    ids = [r for r, _ in recs]
    want = sql_path(con, ids, rows.tolist(), atom_ids.tolist(), weights.tolist())
    assert got == want and got[0]


FIELDS = ["product", "issue", "sub_issue"]


def test_a_new_assignment_map_drops_every_old_vector_in_its_one_rewrite(tmp_path):
    """assign replaces the vectors: a record the new map does not give one to loses the old
    one, as it did when the vectors were cleared first (one rewrite of records, not two)."""
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(9, split="target", start=5000)
                     + [{"record_id": "blank", "text": "nothing relevant here", "split": "target"}])
    builders.build(con, "metadata", fields=FIELDS, m=10)
    sc = assign.fit_scorer(con, "keyword")
    assign.assign(con, sc, K=3, batch_size=4)
    first = stored(con)
    stale = con.execute("SELECT record_id FROM records WHERE atom_ids IS NULL ORDER BY record_id LIMIT 1").fetchone()
    atom = con.execute("SELECT min(atom_id) FROM atoms").fetchone()[0]
    con.execute("UPDATE records SET atom_ids = [$a], masses = [1] WHERE record_id = $r", {"a": atom, "r": stale[0]})
    assert stored(con) != first
    assign.assign(con, sc, K=3, batch_size=4)
    assert stored(con) == first
