"""The sketch holds its bounds whatever the assignments table holds (docs/DESIGN.md §1).

Hostile tables — negative, NaN, ±inf, huge (1e308), zero and subnormal weights,
NULLs, duplicated rows, K+5 atoms per record, unknown atom ids, rows for unknown,
auxiliary and excluded records, one user with 10,000 records — are written straight
into a DuckDB store, and every check is exact integer arithmetic (no tolerance):

* the sketch equals an independent pure-Python reference (tests/helpers_core.py);
* every record's fixed-point L1 ≤ 2^S and every user's clipped L1 ≤ floor(B·2^S), read
  from the SQL's own intermediate vectors;
* adding or removing one unit changes the sketch by a non-negative vector of L1 ≤ the
  bound, and replacing one unit by another moves it by ≤ 2·bound in L1.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpspin_sql.errors import BadInput
from dpspin_sql.sketch import SCALE, compute_sketch, fixed_bound
from tests.helpers.core import (
    install_atoms,
    new_store,
    put_assignments,
    put_records,
    reference_sketch,
    reference_user_vectors,
    set_split,
    sql_record_vectors_of_user_query,
    sql_unit_vectors,
)

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HOSTILE_WEIGHTS = st.one_of(
    st.sampled_from([0.0, -0.0, -1.0, -1e308, 1e308, float("nan"), float("inf"), -float("inf"), 5e-324,
                     2.0 ** -24, 2.0 ** -25, 1.0, 1.0 + 2 ** -52, 1 - 2 ** -53, 0.5, 1 / 3, 2.0, 1e6, None]),
    st.floats(min_value=-2.0, max_value=3.0, allow_nan=False),
    st.floats(allow_nan=True, allow_infinity=True),
)
# atom ids in the dictionary are not contiguous on purpose; 999/-1/None are unknown
ATOM_IDS = [0, 1, 2, 5, 7, 11, 40]
UNKNOWN_ATOMS = [999, -1, 3, None]


@st.composite
def hostile_tables(draw, unit: str):
    """(records, assignments, K, B): a store's records and a hostile assignments table."""
    K = draw(st.integers(1, 4))
    B = draw(st.sampled_from([1.0, 2.0, 5.0, 0.5, 1 / 3, 2.0 ** -24, 3.75]))
    n_users = draw(st.integers(1, 5))
    n_records = draw(st.integers(1, 14))
    records = []
    for i in range(n_records):
        split = draw(st.sampled_from(["target", "target", "target", "aux", "excluded"]))
        # aux records belong to aux-only users: user-level releases need a user-disjoint split
        user = f"u{draw(st.integers(0, n_users - 1))}" if split != "aux" else f"aux{i}"
        records.append((f"r{i}", user, split))
    if not any(r[2] == "target" for r in records):
        records[0] = (records[0][0], records[0][1], "target")
    record_ids = [r[0] for r in records] + ["ghost", None]          # ghost: no such record
    atom_choice = st.sampled_from(ATOM_IDS + UNKNOWN_ATOMS)
    rows = []
    for rid in [r[0] for r in records]:
        # up to K+5 atoms per record, some rows duplicated
        for _ in range(draw(st.integers(0, K + 5))):
            row = (rid, draw(atom_choice), draw(HOSTILE_WEIGHTS))
            rows.extend([row] * draw(st.integers(1, 2)))
    rows += draw(st.lists(st.tuples(st.sampled_from(record_ids), atom_choice, HOSTILE_WEIGHTS), max_size=10))
    rows = draw(st.permutations(rows))
    return records, rows, K, B


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    c = new_store(tmp_path_factory.mktemp("sketch") / "s.duckdb")
    install_atoms(c, ATOM_IDS)
    yield c
    c.close()


def load(con, records, rows):
    put_records(con, records)
    put_assignments(con, rows)


def l1_diff(a, b) -> int:
    return sum(abs(int(x) - int(y)) for x, y in zip(a, b))


def check_neighbour(before, after, bound: int) -> None:
    """`after` has one unit more than `before`: a non-negative change of L1 ≤ bound."""
    delta = [int(x) - int(y) for x, y in zip(after, before)]
    assert all(d >= 0 for d in delta), delta
    assert sum(delta) <= bound


# ------------------------------------------------------------------------------- properties

@SETTINGS
@given(data=hostile_tables("record"))
def test_record_level_matches_reference_and_bounds(con, data):
    records, rows, K, _ = data
    load(con, records, rows)
    sk = compute_sketch(con, "record", K)
    assert sk.atom_ids.tolist() == sorted(ATOM_IDS)
    assert sk.mass.tolist() == reference_sketch(records, rows, ATOM_IDS, "record", K)
    assert all(int(v) >= 0 for v in sk.mass)
    # the SQL's own per-record vectors: K-sparse, non-negative, L1 ≤ 2^S, only known atoms, only target records
    vectors = sql_unit_vectors(con, "record", K)
    per_record: dict[str, list[int]] = {}
    for (rid, aid), v in vectors.items():
        assert aid in ATOM_IDS and v >= 0
        per_record.setdefault(rid, []).append(v)
    target = {r[0] for r in records if r[2] == "target"}
    assert set(per_record) <= target
    for vs in per_record.values():
        assert len(vs) <= K and sum(vs) <= SCALE


@SETTINGS
@given(data=hostile_tables("user"))
def test_user_level_matches_reference_and_bounds(con, data):
    records, rows, K, B = data
    load(con, records, rows)
    bound = fixed_bound(B)
    sk = compute_sketch(con, "user", K, B)
    assert sk.mass.tolist() == reference_sketch(records, rows, ATOM_IDS, "user", K, B)
    assert all(int(v) >= 0 for v in sk.mass)
    per_record: dict[str, int] = {}
    for (rid, _), v in sql_record_vectors_of_user_query(con, K, B).items():
        assert v >= 0
        per_record[rid] = per_record.get(rid, 0) + v
    assert all(total <= SCALE for total in per_record.values())
    per_user: dict[str, int] = {}
    for (uid, _), v in sql_unit_vectors(con, "user", K, B).items():
        assert v >= 0
        per_user[uid] = per_user.get(uid, 0) + v
    assert all(total <= bound for total in per_user.values()), (per_user, bound)
    # and they are the reference's clipped vectors, exactly
    ref = reference_user_vectors(records, rows, ATOM_IDS, K, B)
    got = {}
    for (uid, aid), v in sql_unit_vectors(con, "user", K, B).items():
        if v:
            got.setdefault(uid, {})[aid] = v
    assert got == {u: {a: v for a, v in vec.items() if v} for u, vec in ref.items() if any(vec.values())}


@SETTINGS
@given(data=hostile_tables("user"), which=st.integers(0, 10 ** 6))
def test_add_remove_one_user(con, data, which):
    records, rows, K, B = data
    bound = fixed_bound(B)
    users = sorted({r[1] for r in records if r[2] == "target"})
    victim = users[which % len(users)]
    mine = [r[0] for r in records if r[1] == victim and r[2] == "target"]
    load(con, records, rows)
    full = compute_sketch(con, "user", K, B).mass.tolist()
    set_split(con, mine, "excluded")                      # D − u
    if any(r[2] == "target" and r[1] != victim for r in records):
        without = compute_sketch(con, "user", K, B).mass.tolist()
        check_neighbour(without, full, bound)
        # the same difference through the reference (sanity of the neighbouring relation)
        rest = [(r[0], r[1], "excluded" if r[0] in mine else r[2]) for r in records]
        assert without == reference_sketch(rest, rows, ATOM_IDS, "user", K, B)
    else:
        with pytest.raises(BadInput):                     # the empty target split is refused
            compute_sketch(con, "user", K, B)
        assert sum(full) <= bound


@SETTINGS
@given(data=hostile_tables("record"), which=st.integers(0, 10 ** 6))
def test_add_remove_one_record(con, data, which):
    records, rows, K, _ = data
    targets = [r[0] for r in records if r[2] == "target"]
    victim = targets[which % len(targets)]
    load(con, records, rows)
    full = compute_sketch(con, "record", K).mass.tolist()
    if len(targets) > 1:
        con.execute("DELETE FROM records WHERE record_id = ?", [victim])   # its assignment rows stay behind
        without = compute_sketch(con, "record", K).mass.tolist()
        check_neighbour(without, full, SCALE)
    else:
        assert sum(full) <= SCALE


@SETTINGS
@given(data=hostile_tables("user"), other=hostile_tables("user"), which=st.integers(0, 10 ** 6))
def test_replace_one_user(con, data, other, which):
    """D and D' differ in one user: u's records in D are swapped for a new user's hostile records."""
    records, rows, K, B = data
    bound = fixed_bound(B)
    users = sorted({r[1] for r in records if r[2] == "target"})
    victim = users[which % len(users)]
    new_records = [("new-" + r[0], "newcomer", "target") for r in other[0]]
    new_rows = [("new-" + r[0] if r[0] else r[0], r[1], r[2]) for r in other[1]]
    all_records = records + [(r[0], r[1], "excluded") for r in new_records]
    load(con, all_records, rows + new_rows)
    before = compute_sketch(con, "user", K, B).mass.tolist()
    set_split(con, [r[0] for r in records if r[1] == victim and r[2] == "target"], "excluded")
    set_split(con, [r[0] for r in new_records], "target")
    after = compute_sketch(con, "user", K, B).mass.tolist()
    assert l1_diff(before, after) <= 2 * bound
    assert all(v >= 0 for v in after)


@SETTINGS
@given(data=hostile_tables("record"))
def test_non_target_rows_are_ignored(con, data):
    """Rows for aux/excluded/unknown records and unknown atoms change nothing."""
    records, rows, K, _ = data
    target = {r[0] for r in records if r[2] == "target"}
    load(con, records, rows)
    full = compute_sketch(con, "record", K).mass.tolist()
    kept = [r for r in rows if r[0] in target and r[1] in ATOM_IDS]
    put_assignments(con, kept)
    assert compute_sketch(con, "record", K).mass.tolist() == full


# ------------------------------------------------------------------------------- fixed cases

@pytest.mark.parametrize("B", [1.0, 2.0, 5.0, 1 / 3])
def test_one_user_with_10000_records(tmp_path, B):
    """A heavy user: 10,000 records, each with K+5 rows at hostile weights. Its clipped vector
    has L1 exactly ≤ floor(B·2^S) and dropping the user moves the sketch by at most that."""
    K = 3
    c = new_store(tmp_path / "heavy.duckdb")
    install_atoms(c, ATOM_IDS)
    records = [(f"h{i}", "heavy", "target") for i in range(10_000)] + [(f"o{i}", f"o{i % 7}", "target")
                                                                      for i in range(50)]
    weights = [1e308, 1.0, 0.75, float("inf"), 0.5, float("nan"), 1 / 3, -2.0]  # K+5 = 8 rows per record
    rows = [(rid, ATOM_IDS[(i + j) % len(ATOM_IDS)], weights[j]) for i, (rid, _, _) in enumerate(records)
            for j in range(K + 5)]
    load(c, records, rows)
    bound = fixed_bound(B)
    full = compute_sketch(c, "user", K, B)
    assert full.mass.tolist() == reference_sketch(records, rows, ATOM_IDS, "user", K, B)
    per_user: dict[str, int] = {}
    for (uid, _), v in sql_unit_vectors(c, "user", K, B).items():
        per_user[uid] = per_user.get(uid, 0) + v
    assert per_user["heavy"] <= bound
    assert bound - per_user["heavy"] < len(ATOM_IDS)  # the clip loses < one unit per coordinate
    set_split(c, [f"h{i}" for i in range(10_000)], "excluded")
    without = compute_sketch(c, "user", K, B).mass.tolist()
    check_neighbour(without, full.mass.tolist(), bound)
    # record level on the same table: each of the 10,000 records is capped at 2^S
    set_split(c, [f"h{i}" for i in range(10_000)], "target")
    rec = compute_sketch(c, "record", K)
    assert rec.mass.tolist() == reference_sketch(records, rows, ATOM_IDS, "record", K)
    assert sum(rec.mass.tolist()) <= len(records) * SCALE
    c.close()


def test_hostile_rows_by_hand(tmp_path):
    """Each hostile kind on its own, with the expected fixed-point vector spelled out."""
    c = new_store(tmp_path / "h.duckdb")
    install_atoms(c, [0, 1, 2, 3, 4, 5])
    records = [(f"r{i}", f"u{i}", "target") for i in range(9)] + [("a", "ua", "aux"), ("x", "ux", "excluded")]
    rows = [
        ("r0", 0, -0.5), ("r0", 1, float("nan")), ("r0", 2, float("inf")), ("r0", 3, -float("inf")),
        ("r0", 4, None), ("r0", 5, 0.0),                                   # r0: nothing survives
        ("r1", 0, 1e308),                                                  # capped at 1
        ("r2", 0, 0.5), ("r2", 0, 0.5), ("r2", 0, 0.25),                   # duplicates: max, not sum
        ("r3", 0, 0.9), ("r3", 1, 0.9), ("r3", 2, 0.9), ("r3", 3, 0.9),    # K=3 keeps 0,1,2; renormalised
        ("r4", 5, 0.2), ("r4", 4, 0.2), ("r4", 3, 0.2), ("r4", 2, 0.2),    # ties: lower atom ids win
        ("r5", 99, 1.0), ("r5", None, 1.0), ("r5", 1, 0.25),               # unknown atoms dropped
        ("r6", 1, 5e-324), ("r6", 2, 2.0 ** -24),                          # below resolution / one unit
        ("a", 0, 1.0), ("x", 0, 1.0), ("ghost", 0, 1.0), (None, 0, 1.0),   # not target records
        ("r7", 3, 0.1), ("r7", 4, 0.2),                                    # kept as is (Σ < 1)
    ]
    load(c, records, rows)
    S = SCALE
    third = (math.floor(0.9 * S) * S) // (3 * math.floor(0.9 * S))
    expected = {
        "r1": {0: S}, "r2": {0: S // 2}, "r3": {0: third, 1: third, 2: third},
        "r4": {2: math.floor(0.2 * S), 3: math.floor(0.2 * S), 4: math.floor(0.2 * S)},
        "r5": {1: S // 4}, "r6": {2: 1}, "r7": {3: math.floor(0.1 * S), 4: math.floor(0.2 * S)},
    }
    got: dict[str, dict[int, int]] = {}
    for (rid, aid), v in sql_unit_vectors(c, "record", 3).items():
        got.setdefault(rid, {})[aid] = v
    assert got == expected
    total = [sum(vec.get(a, 0) for vec in expected.values()) for a in range(6)]
    assert compute_sketch(c, "record", 3).mass.tolist() == total
    assert compute_sketch(c, "user", 3, 1.0).mass.tolist() == total   # one record per user, each ≤ 1
    c.close()


def test_user_level_needs_user_ids(tmp_path):
    c = new_store(tmp_path / "n.duckdb")
    install_atoms(c, [0, 1])
    load(c, [("r0", None, "target"), ("r1", "u1", "target")], [("r0", 0, 1.0), ("r1", 1, 1.0)])
    with pytest.raises(BadInput, match="no user id"):
        compute_sketch(c, "user", 3, 1.0)
    assert compute_sketch(c, "record", 3).mass.tolist() == [SCALE, SCALE]
    c.close()


@pytest.mark.parametrize("K,B", [(0, 1.0), (-1, 1.0), (3, 0.0), (3, -1.0), (3, float("nan")),
                                 (3, float("inf")), (3, 2.0 ** -26), (3, 1e308), (3, 1e12)])
def test_bad_bounds_refused(con, K, B):
    load(con, [("r0", "u0", "target")], [("r0", 0, 1.0)])
    with pytest.raises(BadInput):
        compute_sketch(con, "user", K, B)


def test_user_level_refuses_a_split_that_is_not_user_disjoint(tmp_path):
    """The public atoms and scorer come from aux records; a user with aux records would
    have shaped them, so a user-level release over a record-level split is bad input."""
    c = new_store(tmp_path / "shared.duckdb")
    install_atoms(c, ATOM_IDS)
    put_records(c, [("r0", "u0", "target"), ("r1", "u0", "aux"), ("r2", "u1", "target")])
    put_assignments(c, [("r0", ATOM_IDS[0], 1.0), ("r2", ATOM_IDS[1], 1.0)])
    with pytest.raises(BadInput, match=r"^some users have records in both the auxiliary and the target split"):
        compute_sketch(c, "user", K=3, B=1.0)
    assert compute_sketch(c, "record", K=3).mass.sum() == 2 * SCALE   # record level is unaffected
    set_split(c, ["r1"], "target")
    assert compute_sketch(c, "user", K=3, B=1.0).mass.sum() == 2 * SCALE
