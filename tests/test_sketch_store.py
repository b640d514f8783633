"""The DuckDB store query (queries/sketch_store_*.sql) on hostile stores: canonical vectors
written by the project's own loader beside raw rows as given, keyed and unkeyed records,
with and without raw rows at all, in one query or in chunks of user keys. Whatever the
mix, the sketch is bit for bit the independent reference's on the store's logical rows
(the rows as given, before the loader canonicalised any), and the same as the portable
query's over the assignment_rows view.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpspin_sql import store
from dpspin_sql.sketch import compute_sketch, store_plan
from tests.helpers.core import install_atoms, new_store, put_records, reference_sketch
from tests.test_sketch_bounds import ATOM_IDS, SETTINGS, hostile_tables


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    c = new_store(tmp_path_factory.mktemp("store") / "s.duckdb")
    install_atoms(c, ATOM_IDS)
    yield c
    c.close()


def load_mixed(con, records, rows, through_loader: set, keyed: set) -> None:
    """Records with users keyed as `dpspin load` keys them (only those in `keyed`); the rows
    of the records in `through_loader` go through store.write_assignments (canonical vectors
    where they qualify, raw rows where not), every other row straight into `assignments`."""
    put_records(con, records)
    con.execute("DELETE FROM assignments")
    con.execute("DELETE FROM users")
    con.execute("INSERT INTO users SELECT row_number() OVER (ORDER BY u) - 1, u FROM "
                "(SELECT DISTINCT user_id AS u FROM records WHERE user_id IS NOT NULL)")
    con.execute("UPDATE records SET user_key = u.user_key FROM users AS u "
                "WHERE records.user_id = u.user_id AND list_contains($k::VARCHAR[], records.record_id)",
                {"k": sorted(keyed) or [""]})
    store.mark_step(con, "assignments")
    staged = [r for r in rows if r[0] in through_loader]
    direct = [r for r in rows if r[0] not in through_loader]
    if staged:
        con.register("staging_assignments", {
            "record_id": np.array([r[0] for r in staged], dtype=object),
            "atom_id": np.array([r[1] for r in staged], dtype=object),
            "weight": np.array([None if r[2] is None else float(r[2]) for r in staged], dtype=object)})
        try:
            con.execute("CREATE OR REPLACE TEMP TABLE staging_assignments_t AS SELECT CAST(record_id AS VARCHAR) "
                        "AS record_id, CAST(atom_id AS INTEGER) AS atom_id, CAST(weight AS DOUBLE) AS weight "
                        "FROM staging_assignments")
        finally:
            con.unregister("staging_assignments")
        con.execute("CREATE OR REPLACE TEMP VIEW staging_assignments AS SELECT * FROM staging_assignments_t")
        store.write_assignments(con)
        con.execute("DROP VIEW staging_assignments")
    if direct:
        con.execute("INSERT INTO assignments SELECT unnest($r::VARCHAR[]), unnest($a::INTEGER[]), "
                    "unnest($w::DOUBLE[])", {"r": [r[0] for r in direct], "a": [r[1] for r in direct],
                                             "w": [None if r[2] is None else float(r[2]) for r in direct]})


@st.composite
def mixed_stores(draw, unit: str):
    records, rows, K, B = draw(hostile_tables(unit))
    ids = [r[0] for r in records]
    through = set(draw(st.lists(st.sampled_from(ids), unique=True))) if draw(st.booleans()) else set(ids)
    keyed = set(ids) if draw(st.booleans()) else set(draw(st.lists(st.sampled_from(ids), unique=True)))
    if draw(st.booleans()):        # only the loader's rows: no raw rows left for the records it took
        rows = [r for r in rows if r[0] in through]
    return records, rows, K, B, through, keyed, draw(st.sampled_from([1, 2, 3, 1 << 17]))


@SETTINGS
@given(data=mixed_stores("record"))
def test_record_level_store_query_is_the_reference(con, data):
    records, rows, K, _, through, keyed, _ = data
    load_mixed(con, records, rows, through, keyed)
    sk = compute_sketch(con, "record", K)
    assert sk.mass.tolist() == reference_sketch(records, rows, ATOM_IDS, "record", K)


@SETTINGS
@given(data=mixed_stores("user"))
def test_user_level_store_query_is_the_reference_in_any_chunks(con, data, monkeypatch_module):
    records, rows, K, B, through, keyed, chunk = data
    load_mixed(con, records, rows, through, keyed)
    monkeypatch_module.setenv("DPSPIN_CHUNK_USERS", str(chunk))
    sk = compute_sketch(con, "user", K, B)
    assert sk.mass.tolist() == reference_sketch(records, rows, ATOM_IDS, "user", K, B)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_plan_chunks_only_a_fully_keyed_store(con, monkeypatch):
    records = [(f"r{i}", f"u{i % 7}", "target") for i in range(30)]
    rows = [(f"r{i}", ATOM_IDS[i % len(ATOM_IDS)], 0.5) for i in range(30)]
    monkeypatch.setenv("DPSPIN_CHUNK_USERS", "2")
    load_mixed(con, records, rows, {r[0] for r in records}, {r[0] for r in records})
    flags = {"canonical": True, "keyed": True}
    chunks = store_plan(con, "user", flags)
    assert flags["raw"] is False and flags["all_keyed"] is True
    assert [(c["lo"], c["hi"]) for c in chunks] == [(0, 2), (2, 4), (4, 6), (6, 8)]
    load_mixed(con, records, rows, {r[0] for r in records}, {r[0] for r in records[1:]})
    flags = {"canonical": True, "keyed": True}
    assert store_plan(con, "user", flags) == [{}] and flags["all_keyed"] is False
    assert store_plan(con, "record", {"keyed": True}) == [{}]


# The enforcement every record without a proven-canonical vector takes: the store query
# repeats these CTEs of the core query (queries/sketch_<unit>.sql); they must stay the same.
SHARED_ENFORCEMENT = {
    "record": ("positive", "per_record", "irregular", "deduplicated", "ranked", "kept"),
    "user": ("positive", "per_record", "irregular", "deduplicated", "ranked", "kept", "record_vectors"),
}


@pytest.mark.parametrize("unit", sorted(SHARED_ENFORCEMENT))
def test_the_store_query_repeats_the_core_enforcement_verbatim(unit):
    from dpspin_sql.sketch import rewrite

    core, fast = rewrite.core_query(unit), rewrite.store_query(unit)
    for name in SHARED_ENFORCEMENT[unit]:
        assert rewrite.cte(fast, name).sql() == rewrite.cte(core, name).sql(), name


@pytest.fixture(params=["sparse", "dense"])
def any_dictionary(request, con):
    """The module's store with its own (sparse) atom ids, or with consecutive ones."""
    if request.param == "dense":
        install_atoms(con, list(range(40, 40 + len(ATOM_IDS))))
    yield request.param
    if request.param == "dense":
        install_atoms(con, ATOM_IDS)


@pytest.mark.parametrize("unit", ["record", "user"])
def test_all_fast_only_when_no_target_record_would_take_the_slow_branch(con, unit, any_dictionary):
    """$all_fast drops the slow branch from the plan; it is set only when the snapshot proves
    that branch empty: a vector longer than the release's K, an unkeyed record (user level)
    or any raw row turns it off, and the sketch is the reference's either way."""
    atoms = ATOM_IDS if any_dictionary == "sparse" else list(range(40, 40 + len(ATOM_IDS)))
    records = [(f"r{i}", f"u{i % 5}", "target") for i in range(24)]      # r20-r23: never assigned
    rows = [(f"r{i}", atoms[(i + j) % len(atoms)], 0.25) for i in range(20) for j in range(1 + i % 3)]
    rows.append(("r19", 999, 0.25))                                        # an atom not in the dictionary
    ids = {r[0] for r in records}
    B = 1.0 if unit == "user" else None
    # an unkeyed record without a vector gives no row on either branch: still all fast
    cases = [(3, ids, True), (2, ids, False), (3, ids - {"r4"}, unit == "record"), (3, ids - {"r21"}, True)]
    for K, keyed, expected in cases:
        load_mixed(con, records, rows, ids, keyed)
        flags = {"canonical": True, "keyed": True}
        store_plan(con, unit, flags, K=K)
        assert flags["all_fast"] is expected, (K, sorted(ids - keyed))
        assert flags["atoms_dense"] is (any_dictionary == "dense")
        assert compute_sketch(con, unit, K, B).mass.tolist() == reference_sketch(records, rows, atoms, unit, K, B)
    load_mixed(con, records, rows, ids - {"r0"}, ids)          # r0's rows stay raw
    flags = {"canonical": True, "keyed": True}
    store_plan(con, unit, flags, K=3)
    assert flags["raw"] is True and flags["all_fast"] is False
    assert compute_sketch(con, unit, 3, B).mass.tolist() == reference_sketch(records, rows, atoms, unit, 3, B)
    flags = {"canonical": False, "keyed": True}
    load_mixed(con, records, rows, ids, ids)
    store_plan(con, unit, flags, K=3)
    assert flags["all_fast"] is False
    con.execute("UPDATE records SET masses = NULL WHERE record_id = 'r3'")     # half a vector: slow
    flags = {"canonical": True, "keyed": True}
    store_plan(con, unit, flags, K=3)
    assert flags["all_fast"] is False


# The slow-branch-free store queries (sketch_store_<unit>_fast.sql) keep these parts of the
# full store query verbatim; the rest is the full query's fast branch without the union.
SHARED_WITH_FAST = {"record": (), "user": ("keyed_sums",)}


@pytest.mark.parametrize("unit", sorted(SHARED_WITH_FAST))
def test_the_fast_store_query_is_the_store_querys_fast_branch(unit):
    from dpspin_sql.sketch import rewrite

    full, fast = rewrite.store_query(unit), rewrite.store_query(unit, fast=True)
    for name in SHARED_WITH_FAST[unit]:
        assert rewrite.cte(fast, name).sql() == rewrite.cte(full, name).sql(), name
    final = [t.copy() for t in (full, fast)]
    for t in final:                                      # the same last step over the vectors
        t.set("with_", None)
        t.set("from_", None)
        t.set("where", None)                             # the dictionary test (a range when dense)
    assert final[0].sql() == final[1].sql()
    assert rewrite.cte(fast, "target").args["where"].sql() == rewrite.cte(full, "target").args["where"].sql()


@pytest.mark.parametrize("unit", ["record", "user"])
def test_a_records_filter_on_an_all_fast_store_is_the_reference_on_the_chosen_records(con, unit):
    """A DP statement's records filter goes into the fast query's `target` as into the full
    one's: the sketch is the reference's over the records it keeps."""
    import sqlglot

    from dpspin_sql.request import Bounds
    from dpspin_sql.sketch import run_sketch
    from dpspin_sql.sketch.rewrite import SketchFilters

    records = [(f"r{i:02d}", f"u{i % 4}", "target") for i in range(16)]
    rows = [(f"r{i:02d}", ATOM_IDS[(i + j) % len(ATOM_IDS)], 0.3) for i in range(16) for j in range(1 + i % 3)]
    ids = {r[0] for r in records}
    load_mixed(con, records, rows, ids, ids)
    flags = {"canonical": True, "keyed": True}
    store_plan(con, unit, flags, K=3)
    assert flags["all_fast"] is True
    B = 1.0 if unit == "user" else None
    filters = SketchFilters(records=sqlglot.parse_one("record_id < 'r09'", read="duckdb"))
    got = run_sketch(con, Bounds(unit, 3, B), filters).mass.tolist()
    kept = [r for r in records if r[0] < "r09"]
    want = reference_sketch(kept, [r for r in rows if r[0] < "r09"], ATOM_IDS, unit, 3, B)
    assert got == want and sum(got) > 0


def test_a_dictionary_retyped_away_from_integer_ids_is_never_dense(tmp_path):
    """The range test stands for the dictionary test only for INTEGER ids (schema.sql):
    {0, 1.5, 2} would pass a count test for 0..2 and admit atom 1 (found in review)."""
    from tests.helpers.core import new_store as fresh

    c = fresh(tmp_path / "s.duckdb")
    install_atoms(c, [0, 1, 2])
    put_records(c, [("r1", "u1", "target"), ("r2", "u2", "target")])
    store.mark_step(c, "assignments")
    c.execute("CREATE TABLE atoms2 AS SELECT * REPLACE (CASE atom_id WHEN 1 THEN 1.5 ELSE atom_id END::DOUBLE "
              "AS atom_id) FROM atoms")
    c.execute("DROP TABLE atoms")
    c.execute("ALTER TABLE atoms2 RENAME TO atoms")
    c.execute("UPDATE records SET atom_ids = [1], masses = [16777216] WHERE record_id = 'r1'")
    c.execute("UPDATE records SET atom_ids = [2], masses = [16777216] WHERE record_id = 'r2'")
    flags = {"canonical": True, "keyed": True}
    store_plan(c, "record", flags, K=3, values={})
    assert flags["all_fast"] is True and flags["atoms_dense"] is False
    assert compute_sketch(c, "record", 3).mass.tolist() == [0, 0, 1 << 24]    # atom 1 is not in it
    c.close()


def test_sparse_user_keys_are_not_cut_into_empty_chunks(con, monkeypatch):
    """Keys spread far wider than the users (a hand-edited store) would make thousands of
    mostly empty chunk queries; the plan runs one query, with the same result."""
    records = [(f"r{i}", f"u{i}", "target") for i in range(6)]
    rows = [(f"r{i}", ATOM_IDS[i % len(ATOM_IDS)], 0.5) for i in range(6)]
    ids = {r[0] for r in records}
    monkeypatch.setenv("DPSPIN_CHUNK_USERS", "2")
    load_mixed(con, records, rows, ids, ids)
    flags = {"canonical": True, "keyed": True}
    assert len(store_plan(con, "user", flags)) == 3                  # keys 0..5: three chunks
    load_mixed(con, records, rows, ids, set())                          # vectors, no keys yet
    con.execute("DELETE FROM users")
    con.execute("INSERT INTO users SELECT 1000 * (row_number() OVER (ORDER BY u) - 1), u FROM "
                "(SELECT DISTINCT user_id AS u FROM records)")
    con.execute("UPDATE records SET user_key = u.user_key FROM users AS u WHERE records.user_id = u.user_id")
    flags = {"canonical": True, "keyed": True}
    assert store_plan(con, "user", flags) == [{}]
    assert compute_sketch(con, "user", 3, 1.0).mass.tolist() == reference_sketch(records, rows, ATOM_IDS, "user", 3,
                                                                                  1.0)
