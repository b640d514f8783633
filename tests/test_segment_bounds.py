"""Segmented sketches hold their bounds whatever the store holds (docs/DESIGN.md §11).

The segmented sketch is the DP-SPIN sketch of the product dictionary segment × atom. On
stores with hostile assignment rows (tests/test_sketch_bounds.py's strategy) and hostile
segment values (a value outside the domain, a number, no metadata, no key), a user whose
records lie in many segments, and one user with thousands of records over all segments,
every check is exact integer arithmetic:

* the sketch equals an independent reference: per segment at record level, and at user
  level the reference sketch over relabelled (segment, atom) ids — one clip per user of
  the whole vector, across segments;
* each user's clipped vector, read from the SQL's own `user_totals`, sums to ≤ ⌊B·2^24⌋
  over all segments together;
* neighbouring stores (one user, or one record, added or removed; one user replaced) give
  sketches whose difference has L1 and L2 norms within the d_in the release is charged at
  (`ReleaseRequest.d_in` of the segmented request), and is non-negative under add/remove.
"""
from __future__ import annotations

import functools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpspin_sql.request import SCALE, Bounds, ReleaseRequest, fixed_bound
from dpspin_sql.segment_by import by_values
from dpspin_sql.segments import encode_key
from dpspin_sql.sketch import TargetFacts, assemble, dictionary_atoms
from dpspin_sql.sketch.engines.duckdb import STORE_ROWS, DuckDBEngine, segmented_sql
from tests.helpers.core import install_atoms, new_store, put_assignments, reference_sketch
from tests.test_sketch_bounds import ATOM_IDS, SETTINGS, hostile_tables

SETTINGS = settings(SETTINGS, max_examples=30)

LABELS = ("Mortgage", "Credit card", "3")
# what a record's metadata may say about its product: a label of the domain, a value outside
# it, a number whose text is a label, a lower-case near miss, no key, no metadata at all
VALUES = [{"product": "Mortgage"}, {"product": "Credit card"}, {"product": 3}, {"product": "mortgage"},
          {"product": "Student loan"}, {"other": "Mortgage"}, None]
SEGMENTS, PLACEMENT = by_values("product", LABELS)


def segment_of(value) -> int | None:
    """The reference placement: the text of metadata.product, if it is a label."""
    if not isinstance(value, dict) or "product" not in value:
        return None
    text = str(value["product"])
    return LABELS.index(text) if text in LABELS else None


@st.composite
def segmented_tables(draw, unit: str):
    records, rows, K, B = draw(hostile_tables(unit))
    values = [draw(st.sampled_from(VALUES)) for _ in records]
    return [(r[0], r[1], r[2], v) for r, v in zip(records, values)], rows, K, B


def put_segmented(con, records, rows) -> None:
    """records: (record_id, user_id, split, metadata value or None). Replaces the tables."""
    con.execute("DELETE FROM records")
    con.execute("INSERT INTO records (record_id, user_id, text, split, metadata) "
                "SELECT r, u, 'text of ' || r, s, CAST(j AS JSON) FROM (SELECT unnest($r::VARCHAR[]) AS r, "
                "unnest($u::VARCHAR[]) AS u, unnest($s::VARCHAR[]) AS s, unnest($j::VARCHAR[]) AS j)",
                {"r": [r[0] for r in records], "u": [r[1] for r in records], "s": [r[2] for r in records],
                 "j": [None if r[3] is None else json.dumps(r[3]) for r in records]})
    put_assignments(con, rows)


@functools.cache
def _query(unit: str) -> str:
    return segmented_sql(Bounds(unit, 3, None if unit == "record" else 1.0), None, PLACEMENT, STORE_ROWS)


def segmented(con, unit: str, K: int, B: float | None = None, *, engine: bool = False) -> list[int]:
    """The segmented sketch: the engine's (`engine`), or its query run as the engine runs it
    (rendered once per unit: the property tests run it hundreds of times)."""
    bounds = Bounds(unit, K, None if unit == "record" else B)
    if engine:
        sk = DuckDBEngine(segments=PLACEMENT).sketch(con, bounds)
    else:
        rows = con.execute(_query(unit), bounds.params()).fetchall()
        sk = assemble(TargetFacts(dictionary_atoms(con), None, None), rows, bounds, PLACEMENT.labels)
    assert sk.segments == LABELS and len(sk.mass) == len(LABELS) * len(ATOM_IDS)
    return [int(v) for v in sk.mass]


def reference(records, rows, unit: str, K: int, B: float = 1.0) -> list[int]:
    """The product-dictionary reference: records in no segment are not target records; each
    known atom of a record in segment s becomes the key (s, atom)."""
    seg = {r[0]: segment_of(r[3]) for r in records}
    recs = [(r[0], r[1], r[2] if seg[r[0]] is not None else "excluded") for r in records]
    relabelled = [(rid, encode_key(seg[rid], aid) if rid in seg and seg[rid] is not None and aid in ATOM_IDS else None,
                   w) for rid, aid, w in rows]
    keys = [encode_key(s, a) for s in range(len(LABELS)) for a in sorted(ATOM_IDS)]
    return reference_sketch(recs, relabelled, keys, unit, K, B)


def user_totals(con, K: int, B: float) -> dict[str, int]:
    """Each user's clipped vector's L1 over all segments, from the segmented query's own
    `user_totals` (the final aggregation swapped for a per-user one)."""
    import sqlglot
    from sqlglot import exp

    from dpspin_sql.segments import place
    from dpspin_sql.sketch.rewrite import rewrite
    from dpspin_sql.sketch.transpile import inline_macros

    tree = place(rewrite("user", None, "duckdb", STORE_ROWS), PLACEMENT)
    tail = sqlglot.parse_one("SELECT user_id, SUM(dpspin_clip(u, total, $bound)) AS v FROM user_totals "
                             "GROUP BY user_id", read="duckdb")
    for key in ("expressions", "from_", "group", "order", "where"):
        tree.set(key, tail.args.get(key))
    # user_totals carries no user_id in the store's portable query: read it where it is joined
    ut = next(c.this for c in tree.args["with_"].expressions if c.alias_or_name == "user_totals")
    if "user_id" not in [e.alias_or_name for e in ut.expressions]:
        ut.select(exp.column("user_id", "uv"), append=True, copy=False)
    sql = inline_macros(tree).sql("duckdb")
    params = {"K": K, "scale": SCALE, "bound": fixed_bound(B)}
    return {r[0]: int(r[1]) for r in con.execute(sql, params).fetchall()}


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    c = new_store(tmp_path_factory.mktemp("segments") / "s.duckdb")
    install_atoms(c, ATOM_IDS)
    yield c
    c.close()


def d_in(unit: str, adjacency: str, B: float):
    return ReleaseRequest(mechanism="gaussian", unit=unit, adjacency=adjacency, B=B if unit == "user" else None,
                          segments=SEGMENTS).d_in


def norms(before: list[int], after: list[int]) -> tuple[int, float, list[int]]:
    delta = [a - b for a, b in zip(after, before)]
    return sum(abs(x) for x in delta), math.sqrt(sum(x * x for x in delta)), delta


# ------------------------------------------------------------------------------- properties

@SETTINGS
@given(data=segmented_tables("record"))
def test_record_level_is_the_sum_per_segment(con, data):
    records, rows, K, _ = data
    put_segmented(con, records, rows)
    got = segmented(con, "record", K, engine=True)
    assert got == reference(records, rows, "record", K)
    # each segment's block is the unsegmented sketch of that segment's records, exactly
    m = len(ATOM_IDS)
    for s in range(len(LABELS)):
        only = [(r[0], r[1], r[2] if segment_of(r[3]) == s else "excluded") for r in records]
        assert got[s * m:(s + 1) * m] == reference_sketch(only, rows, ATOM_IDS, "record", K)


@SETTINGS
@given(data=segmented_tables("user"))
def test_user_level_clips_the_whole_vector_across_segments(con, data):
    records, rows, K, B = data
    put_segmented(con, records, rows)
    got = segmented(con, "user", K, B)
    assert got == reference(records, rows, "user", K, B)
    assert all(v >= 0 for v in got)
    totals = user_totals(con, K, B)
    assert all(0 <= v <= fixed_bound(B) for v in totals.values()), (totals, fixed_bound(B))
    assert sum(got) == sum(totals.values())


@SETTINGS
@given(data=segmented_tables("user"), which=st.integers(0, 10 ** 6))
def test_add_remove_one_user_across_segments(con, data, which):
    records, rows, K, B = data
    users = sorted({r[1] for r in records if r[2] == "target"})
    victim = users[which % len(users)]
    put_segmented(con, records, rows)
    full = segmented(con, "user", K, B)
    rest = [(r[0], r[1], "excluded" if r[1] == victim and r[2] == "target" else r[2], r[3]) for r in records]
    if not any(r[2] == "target" for r in rest):
        return   # the empty target split is refused (tests/test_sketch_bounds.py)
    put_segmented(con, rest, rows)
    without = segmented(con, "user", K, B)
    l1, l2, delta = norms(without, full)
    charged = d_in("user", "add_drop", B)
    assert all(x >= 0 for x in delta)
    assert l1 <= charged.l1 and l2 <= charged.l2


@SETTINGS
@given(data=segmented_tables("user"), other=segmented_tables("user"), which=st.integers(0, 10 ** 6))
def test_replace_one_user_across_segments(con, data, other, which):
    records, rows, K, B = data
    users = sorted({r[1] for r in records if r[2] == "target"})
    victim = users[which % len(users)]
    new = [("new-" + r[0], "newcomer", "target", r[3]) for r in other[0]]
    new_rows = [("new-" + r[0] if r[0] else r[0], r[1], r[2]) for r in other[1]]
    before_records = records + [(r[0], r[1], "excluded", r[3]) for r in new]
    put_segmented(con, before_records, rows + new_rows)
    before = segmented(con, "user", K, B)
    after_records = [(r[0], r[1], "excluded" if r[1] == victim and r[2] == "target" else r[2], r[3])
                     for r in records] + new
    put_segmented(con, after_records, rows + new_rows)
    after = segmented(con, "user", K, B)
    l1, l2, _ = norms(before, after)
    charged = d_in("user", "replace", B)
    assert l1 <= charged.l1 and l2 <= charged.l2


@SETTINGS
@given(data=segmented_tables("record"), which=st.integers(0, 10 ** 6))
def test_add_remove_one_record_moves_one_segment(con, data, which):
    records, rows, K, _ = data
    targets = [r for r in records if r[2] == "target"]
    victim = targets[which % len(targets)]
    if len(targets) < 2:
        return
    put_segmented(con, records, rows)
    full = segmented(con, "record", K)
    put_segmented(con, [r for r in records if r[0] != victim[0]], rows)   # its rows stay behind
    without = segmented(con, "record", K)
    l1, l2, delta = norms(without, full)
    assert all(x >= 0 for x in delta) and l1 <= d_in("record", "add_drop", 1.0).l1 and l2 <= SCALE
    m = len(ATOM_IDS)
    moved = {i // m for i, x in enumerate(delta) if x}
    assert len(moved) <= 1 and (not moved or moved == {segment_of(victim[3])})   # a record is in one segment


# ------------------------------------------------------------------------------- fixed cases

@pytest.mark.guard
def test_one_clip_a_user_across_segments(con):
    """The guard's small case: one user with two records of weight 1 in each of the three
    segments, next to one ordinary user. Its clipped vector over all segments sums to
    ⌊B·2^24⌋ exactly — a clip per segment would let it give 3·B."""
    B, K = 1.0, 3
    records = ([(f"h{i}", "heavy", "target", {"product": LABELS[i % 3]}) for i in range(6)]
               + [("o0", "other", "target", {"product": "Mortgage"})])
    rows = [(r[0], ATOM_IDS[i % len(ATOM_IDS)], 1.0) for i, r in enumerate(records)]
    put_segmented(con, records, rows)
    got = segmented(con, "user", K, B)
    assert got == reference(records, rows, "user", K, B)
    totals, bound = user_totals(con, K, B), fixed_bound(B)
    assert bound - len(LABELS) * len(ATOM_IDS) < totals["heavy"] <= bound and totals["other"] == bound
    assert sum(got) == sum(totals.values())


@pytest.mark.parametrize("B", [1.0, 2.0, 1 / 3])
def test_a_user_in_every_segment_with_many_records(tmp_path, B):
    """One user, 3,000 records spread over every segment (and outside the domain), each with
    K+5 rows at hostile weights, next to 40 ordinary users. Its vector over all segments
    together is clipped to ⌊B·2^24⌋ — released per segment with a clip each, it would give
    up to 3·B — and dropping the user moves the sketch by at most that, in L1 and in L2."""
    K = 3
    c = new_store(tmp_path / "heavy.duckdb")
    install_atoms(c, ATOM_IDS)
    weights = [1e308, 1.0, 0.75, float("inf"), 0.5, float("nan"), 1 / 3, -2.0]
    heavy = [(f"h{i}", "heavy", "target", VALUES[i % len(VALUES)]) for i in range(3000)]
    others = [(f"o{i}", f"o{i % 40}", "target", VALUES[i % 3]) for i in range(200)]
    records = heavy + others
    rows = [(r[0], ATOM_IDS[(i + j) % len(ATOM_IDS)], weights[j]) for i, r in enumerate(records) for j in range(K + 5)]
    put_segmented(c, records, rows)
    full = segmented(c, "user", K, B, engine=True)
    assert full == reference(records, rows, "user", K, B)
    totals = user_totals(c, K, B)
    bound = fixed_bound(B)
    assert totals["heavy"] <= bound and bound - totals["heavy"] < len(LABELS) * len(ATOM_IDS)
    per_segment_clip = 0   # what a clip per segment would have let the user give
    for s in range(len(LABELS)):
        mine = [(r[0], r[1], r[2] if segment_of(r[3]) == s else "excluded") for r in heavy]
        per_segment_clip += sum(reference_sketch(mine, rows, ATOM_IDS, "user", K, B))
    assert per_segment_clip > 2 * bound   # the hostile user would have moved a per-segment release by ~3B
    put_segmented(c, [(r[0], r[1], "excluded", r[3]) for r in heavy] + others, rows)
    without = segmented(c, "user", K, B, engine=True)
    l1, l2, delta = norms(without, full)
    assert all(x >= 0 for x in delta) and l1 <= bound and l2 <= bound
    assert l1 == totals["heavy"]
    c.close()


def test_records_outside_the_domain_are_left_out(tmp_path):
    """A record whose value is not a declared label (or has none) is in no segment, and the
    domain is never read from the data: an undeclared value adds no coordinate."""
    c = new_store(tmp_path / "d.duckdb")
    install_atoms(c, [0, 1])
    records = [("r1", "u1", "target", {"product": "Mortgage"}), ("r2", "u2", "target", {"product": "Auto loan"}),
               ("r3", "u3", "target", None), ("r4", "u4", "target", {"product": "3"}), ("r5", "u5", "aux",
                                                                                     {"product": "Mortgage"})]
    put_segmented(c, records, [("r1", 0, 1.0), ("r2", 0, 1.0), ("r3", 1, 1.0), ("r4", 1, 0.5), ("r5", 0, 1.0)])
    sk = DuckDBEngine(segments=PLACEMENT).sketch(c, Bounds("record", 3))
    assert sk.segments == LABELS
    assert [int(v) for v in sk.mass] == [SCALE, 0, 0, 0, 0, SCALE // 2]
    c.close()


def test_a_segmented_file_source_needs_its_records(tmp_path):
    """A file source: segments are read from the records file; an assignments file alone
    (rows that carry their own user) is refused, in one line, before anything runs."""
    import duckdb

    from dpspin_sql.errors import BadInput
    from dpspin_sql.source import files

    c = new_store(tmp_path / "f.duckdb")
    install_atoms(c, [0, 1])
    a = tmp_path / "a.parquet"
    r = tmp_path / "r.parquet"
    duckdb.sql("SELECT * FROM (VALUES ('x', 0, 1.0), ('y', 1, 1.0), ('z', 1, 1.0)) AS t(record_id, atom_id, weight)"
               ).write_parquet(str(a))
    duckdb.sql("SELECT * FROM (VALUES ('x', 'u', '{\"product\": \"Mortgage\"}'), ('y', 'v', '{\"product\": \"3\"}'),"
               "('z', 'w', NULL)) AS t(record_id, user_id, metadata)").write_parquet(str(r))
    sk = DuckDBEngine(source=files(c, a, r), segments=PLACEMENT).sketch(c, Bounds("user", 3, 1.0))
    assert [int(v) for v in sk.mass] == [SCALE, 0, 0, 0, 0, SCALE]
    with pytest.raises(BadInput, match="records"):
        DuckDBEngine(source=files(c, a), segments=PLACEMENT).sketch(c, Bounds("record", 3))
    c.close()
