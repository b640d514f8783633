"""The sketch's bounds in the fast loop: worst cases written by hand, through every form of
the enforcement (docs/DESIGN.md §1).

The property runs of tests/test_sketch_bounds.py and tests/test_sketch_store.py draw
hostile tables at random and are slow; this module is their guard in `pytest -m "not slow"`:
one fixed store, built so that each step of the enforcement is the one that decides some
unit's vector — weights above one, NaN, ±inf, negative, NULL and subnormal weights; a
record's two rows of one atom (max, not sum); K + 2 atoms with tied weights (lower id
wins); records of one to two units that fit K (renormalised, not passed as regular);
unknown atoms; auxiliary, excluded and unknown records; users spread thinly over many
atoms (the user clip reads the L1 norm, not a coordinate); a heavy user whose clip needs
the 128-bit product. Every form computes the same sketch, equal to the independent
reference (tests/helpers/core.py):

- the portable query (queries/sketch_<unit>.sql, what the other engines and files run);
- the DuckDB store query over raw rows (queries/sketch_store_<unit>.sql, slow branch);
- the same rows written by the project's loader (canonical vectors where they qualify:
  the fast branch), with raw rows besides for a record that has a vector;
- a store of canonical vectors only (every record fast: the compiled queries, chunked or
  not, over a dictionary of consecutive ids or a sparse one), with auxiliary and excluded
  records that hold vectors too;

and, read from the SQL's own per-unit vectors, every record holds ≤ 2^S and every user
≤ floor(B·2^S), exactly; dropping a unit moves the sketch by a non-negative vector of L1 at
most the bound.
"""
from __future__ import annotations

import math

import pytest

from dpspin_sql import queries
from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import SCALE, compute_sketch, fixed_bound, run_sketch, store_plan
from tests.helpers.core import (
    install_atoms,
    new_store,
    put_assignments,
    put_records,
    reference_sketch,
    set_split,
    sql_unit_vectors,
)
from tests.test_sketch_store import load_mixed

pytestmark = pytest.mark.guard

ATOMS = [0, 1, 2, 3, 5, 8, 13]
NAN, INF = float("nan"), float("inf")

# (record_id, user_id, split)
RECORDS = (
    [(f"w{i}", "weird", "target") for i in range(4)]        # weights that must be fixed or dropped
    + [("dup", "dup", "target"), ("dup3", "dup", "target")]  # one atom twice (n = 2, n = 3)
    + [("ties", "ties", "target"), ("over", "over", "target"), ("over2", "over", "target")]
    + [("reg", "reg", "target")]                             # regular: 3 distinct atoms, Σ < 1
    + [(f"thin{i}", "thin", "target") for i in range(7)]     # a user spread over every atom
    + [(f"big{i}", "big", "target") for i in range(3)]       # a user of three whole units on one atom
    + [("mid0", "mid", "target"), ("mid1", "mid", "target"), ("half0", "half", "target")]   # B < Σ ≤ 2B
    + [("pair", "pair", "target")]                           # a canonical vector of two atoms (K + 1 at K = 1)
    + [("aux0", "auxuser", "aux"), ("ex0", "exuser", "excluded")]
)
ROWS = (
    [("w0", 0, 1e308), ("w0", 1, NAN), ("w0", 2, INF), ("w0", 3, -INF),       # w0: only atom 0, capped
     ("w1", 1, -0.5), ("w1", 2, None), ("w1", 3, 5e-324), ("w1", 5, 2.0 ** -24),  # w1: one unit of mass on 5
     ("w2", 99, 1.0), ("w2", None, 1.0), ("w2", 8, 0.25),                      # unknown atoms dropped
     ("w3", 0, 3.0), ("w3", 1, 0.5)]                                           # capped at 1: Σ 1.5 → renormalised
    + [("dup", 2, 0.3), ("dup", 2, 0.3), ("dup3", 3, 0.2), ("dup3", 3, 0.4), ("dup3", 5, 0.1)]
    + [("ties", a, 0.25) for a in (13, 8, 5, 3, 2)]                           # K+2 tied: 2, 3, 5 win at K = 3
    + [("over", 0, 0.7), ("over", 1, 0.6), ("over2", 2, 0.9), ("over2", 3, 0.9), ("over2", 5, 0.15)]
    + [("reg", 1, 0.2), ("reg", 8, 0.3), ("reg", 13, 0.4)]
    + [(f"thin{i}", ATOMS[i], 0.6) for i in range(7)]
    + [(f"big{i}", 13, 1.0) for i in range(3)]
    + [("mid0", 2, 0.75), ("mid1", 3, 0.75), ("half0", 5, 0.5)]
    + [("pair", 2, 0.4), ("pair", 3, 0.3)]
    + [("aux0", 0, 1.0), ("ex0", 0, 1.0), ("ghost", 0, 1.0), (None, 1, 1.0)]
)
# rows written after the loader, straight into `assignments`: a record with a canonical vector
# and raw rows besides (a hand-edited store) is enforced over both (its logical rows)
LATE_ROWS = [("reg", 0, 0.5), ("reg", 1, 0.3)]
ALL_ROWS = ROWS + LATE_ROWS
USERS = sorted({r[1] for r in RECORDS if r[2] == "target"})
CASES = [("record", 1, None), ("record", 3, None), ("user", 3, 1.0), ("user", 2, 1 / 3)]


def bound_of(unit: str, B) -> int:
    return SCALE if unit == "record" else fixed_bound(B)


def portable(con, unit: str, K: int, B) -> list[int]:
    """queries/sketch_<unit>.sql as written (what the portable engines run), on the dictionary."""
    params = Bounds(unit, K, B).params()
    got = dict(con.execute(queries.load(f"sketch_{unit}"), params).fetchall())
    return [int(got.get(a, 0)) for a in sorted(ATOMS)]


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """The rows as given, all in `assignments` (the store query's slow branch)."""
    con = new_store(tmp_path_factory.mktemp("guard") / "raw.duckdb")
    install_atoms(con, ATOMS)
    put_records(con, RECORDS)
    put_assignments(con, ALL_ROWS)
    yield con
    con.close()


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """The same rows through the project's loader: canonical vectors where a record qualifies;
    every record keyed but mid1 (a slow record of a user whose other record is fast: it must
    find its user's key, or the user would be clipped twice)."""
    con = new_store(tmp_path_factory.mktemp("guard") / "loaded.duckdb")
    install_atoms(con, ATOMS)
    ids = {r[0] for r in RECORDS}
    load_mixed(con, RECORDS, ROWS, ids, ids - {"mid1"})
    assert con.execute("SELECT atom_ids FROM records WHERE record_id = 'reg'").fetchone()[0] == [13, 8, 1]
    con.execute("INSERT INTO assignments SELECT * FROM (VALUES ('reg', 0, 0.5), ('reg', 1, 0.3))")
    yield con
    con.close()


@pytest.mark.parametrize(("unit", "K", "B"), CASES)
def test_every_form_is_the_reference(raw, loaded, unit, K, B):
    want = reference_sketch(RECORDS, ALL_ROWS, ATOMS, unit, K, B or 1.0)
    assert portable(raw, unit, K, B) == want
    assert compute_sketch(raw, unit, K, B).mass.tolist() == want
    assert compute_sketch(loaded, unit, K, B).mass.tolist() == want
    n_vectors, n_raw = loaded.execute("SELECT (SELECT count(*) FROM records WHERE atom_ids IS NOT NULL), "
                                      "(SELECT count(DISTINCT record_id) FROM assignments)").fetchone()
    assert n_vectors >= 10 and n_raw >= 5          # both branches of the store query are exercised


def canonical_rows(rows, records, atoms):
    """The rows of the records whose rows the loader turns into canonical vectors (one atom
    at most once, Σ ≤ 1, weights in (0, 1], known atoms), on the dictionary `atoms`."""
    by_record: dict[str, list] = {}
    for r in rows:
        by_record.setdefault(r[0], []).append(r)
    known = {r[0] for r in records}
    keep = {rid for rid, rs in by_record.items() if rid in known
            and all(isinstance(w, float) and 0 < w <= 1 and a in ATOMS for _, a, w in rs)
            and len({a for _, a, _ in rs}) == len(rs) and math.fsum(w for _, _, w in rs) <= 1}
    remap = dict(zip(ATOMS, atoms))
    return [(rid, remap[a], w) for rid, a, w in rows if rid in keep]


FAST_RECORDS = RECORDS + [("ex1", "thin", "excluded"), ("aux1", "auxuser", "aux")]


@pytest.fixture(scope="module", params=["sparse", "dense"])
def fast(request, tmp_path_factory):
    """Canonical vectors only: every target record is fast (the compiled queries)."""
    atoms = ATOMS if request.param == "sparse" else list(range(len(ATOMS)))
    rows = canonical_rows(ROWS, RECORDS, atoms) + [("ex1", atoms[0], 1.0), ("aux1", atoms[1], 1.0)]
    con = new_store(tmp_path_factory.mktemp("guard") / "fast.duckdb")
    install_atoms(con, atoms)
    ids = {r[0] for r in FAST_RECORDS}
    load_mixed(con, FAST_RECORDS, rows, ids, ids)
    assert con.execute("SELECT count(*) FROM assignments").fetchone()[0] == 0
    yield con, atoms, rows
    con.close()


@pytest.mark.parametrize(("unit", "K", "B"), CASES)
def test_a_store_of_vectors_runs_the_compiled_queries_and_is_the_reference(fast, monkeypatch, unit, K, B):
    con, atoms, rows = fast
    want = reference_sketch(FAST_RECORDS, rows, atoms, unit, K, B or 1.0)
    assert sum(want) > 0
    for chunk in ("131072", "2") if unit == "user" else ("131072",):
        monkeypatch.setenv("DPSPIN_CHUNK_USERS", chunk)
        flags = {"canonical": True, "keyed": True}
        chunks = store_plan(con, unit, flags, K=K)
        assert flags["all_fast"] is (K == 3) and flags["atoms_dense"] is (atoms != ATOMS)   # 'ties' has 3 atoms
        assert (len(chunks) > 1) is (unit == "user" and chunk == "2")
        assert compute_sketch(con, unit, K, B).mass.tolist() == want, chunk
    bound = bound_of(unit, B)
    for victim in ("thin",) if unit == "user" else ("reg",):
        mine = [r[0] for r in FAST_RECORDS if (r[0] if unit == "record" else r[1]) == victim and r[2] == "target"]
        set_split(con, mine, "excluded")
        try:
            without = compute_sketch(con, unit, K, B).mass.tolist()
        finally:
            set_split(con, mine, "target")
        delta = [a - b for a, b in zip(want, without)]
        assert all(d >= 0 for d in delta) and 0 < sum(delta) <= bound, (victim, delta)


@pytest.mark.parametrize(("unit", "K", "B"), CASES)
def test_each_units_vector_holds_its_bound(raw, unit, K, B):
    """Read from the SQL's own per-unit vectors: non-negative, only dictionary atoms, only
    target units, ≤ K atoms per record, L1 ≤ the bound — and the bound is reached where a
    unit has more than it may give (so a looser clip shows)."""
    bound = bound_of(unit, B)
    per_unit: dict[str, list[int]] = {}
    for (uid, aid), v in sql_unit_vectors(raw, unit, K, B or 1.0).items():
        assert aid in ATOMS and v >= 0
        per_unit.setdefault(uid, []).append(v)
    target = {r[0] for r in RECORDS if r[2] == "target"} if unit == "record" else set(USERS)
    assert set(per_unit) <= target
    for uid, vs in per_unit.items():
        assert sum(vs) <= bound, (uid, sum(vs), bound)
        if unit == "record":
            assert len([v for v in vs if v]) <= K, uid
    heavy = "w3" if unit == "record" else "big"
    assert bound - sum(per_unit[heavy]) < len(ATOMS)        # clipped to the bound, less < 1 unit per atom


@pytest.mark.parametrize(("unit", "K", "B"), CASES)
def test_dropping_a_unit_moves_the_sketch_by_at_most_its_bound(loaded, unit, K, B):
    bound = bound_of(unit, B)
    full = compute_sketch(loaded, unit, K, B).mass.tolist()
    victims = ["w3", "over"] if unit == "record" else ["thin", "over"]
    for victim in victims:
        mine = [r[0] for r in RECORDS if (r[0] if unit == "record" else r[1]) == victim]
        set_split(loaded, mine, "excluded")
        try:
            without = compute_sketch(loaded, unit, K, B).mass.tolist()
        finally:
            set_split(loaded, mine, "target")
        delta = [a - b for a, b in zip(full, without)]
        assert all(d >= 0 for d in delta) and sum(delta) <= bound, (victim, delta, bound)
        if victim in ("w3", "thin"):            # units with more than they may give: exactly full
            assert sum(delta) >= bound - len(ATOMS), (victim, sum(delta))


def test_worst_cases_spelled_out(raw):
    """The fixed-point vectors of the hand-made records, computed by hand (K = 3)."""
    S = SCALE
    got: dict[str, dict[int, int]] = {}
    for (rid, aid), v in sql_unit_vectors(raw, "record", 3).items():
        if v:
            got.setdefault(rid, {})[aid] = v
    f = lambda w: math.floor(w * S)
    assert got["w0"] == {0: S}
    assert got["w1"] == {5: 1}
    assert got["w2"] == {8: S // 4}
    assert got["w3"] == {0: S * S // (S + S // 2), 1: (S // 2) * S // (S + S // 2)}
    assert got["dup"] == {2: f(0.3)}                                  # max of the two rows, not their sum
    assert got["dup3"] == {3: f(0.4), 5: f(0.1)}
    assert got["ties"] == {2: f(0.25), 3: f(0.25), 5: f(0.25)}        # lower atom ids win the tie
    total = f(0.7) + f(0.6)
    assert got["over"] == {0: f(0.7) * S // total, 1: f(0.6) * S // total}
    assert sum(got["over2"].values()) <= S and set(got["over2"]) == {2, 3, 5}
    # its vector (1: 0.2, 8: 0.3, 13: 0.4) and its late rows (0: 0.5, 1: 0.3): atom 1 keeps its
    # larger row, the top 3 are 0, 13 and (a tie at 0.3, the lower id) 1, renormalised
    kept = {0: f(0.5), 13: f(0.4), 1: f(0.3)}
    assert got["reg"] == {a: v * S // sum(kept.values()) for a, v in kept.items()}
    assert "aux0" not in got and "ex0" not in got and "ghost" not in got


def test_a_heavy_users_clip_is_exact_past_64_bits(tmp_path):
    """300 records of one unit on one atom at B = 200: the clip's product u·bound is ~1.7e19,
    past BIGINT; the clipped user holds exactly floor(B·2^S) (no overflow error, no wrap)."""
    con = new_store(tmp_path / "heavy.duckdb")
    install_atoms(con, [0, 1])
    records = [(f"h{i}", "heavy", "target") for i in range(300)] + [("o", "other", "target")]
    rows = [(r[0], 0, 1.0) for r in records[:-1]] + [("o", 1, 1.0)]
    for through_loader in (False, True):
        if through_loader:
            load_mixed(con, records, rows, {r[0] for r in records}, {r[0] for r in records})
        else:
            put_records(con, records)
            put_assignments(con, rows)
        for B in (200.0, 299.5):
            bound = fixed_bound(B)
            assert 300 * SCALE * bound > 2 ** 63
            assert compute_sketch(con, "user", 3, B).mass.tolist() == [bound, SCALE]
            if not through_loader:   # the portable query reads the rows as given
                params = Bounds("user", 3, B).params()
                assert dict(con.execute(queries.load("sketch_user"), params).fetchall()) == {0: bound, 1: SCALE}
    con.close()


def test_user_level_refuses_shared_users_and_unowned_aux_records(raw, loaded, fast):
    """The user-level preconditions (docs/THREAT_MODEL.md): a user with records on both sides
    of the split, or an auxiliary record without a user id, is refused — through every form
    of the facts (the keyed counts of a project store and the portable ones)."""
    # the keyed counts with no record keyed, with one record unkeyed, with every record keyed
    # (the portable counts, on stores whose keys prove nothing: tests/test_catalog_proofs.py)
    for con in (raw, loaded, fast[0]):
        set_split(con, ["w0"], "aux")
        try:
            with pytest.raises(BadInput, match="both the auxiliary and the target split"):
                compute_sketch(con, "user", 3, 1.0)
            with pytest.raises(BadInput, match="both the auxiliary and the target split"):
                run_sketch(con, Bounds("user", 3, 1.0), count_users=False)
        finally:
            set_split(con, ["w0"], "target")
        con.execute("UPDATE records SET user_id = NULL WHERE record_id = 'aux0'")
        try:
            with pytest.raises(BadInput, match="auxiliary record"):
                compute_sketch(con, "user", 3, 1.0)
        finally:
            con.execute("UPDATE records SET user_id = 'auxuser' WHERE record_id = 'aux0'")
        assert compute_sketch(con, "user", 3, 1.0).mass.sum() > 0


def test_the_canonicalisers_write_only_canonical_vectors(loaded):
    """Both writers of canonical vectors (canonicalise.sql, which the loader ran for `loaded`,
    and canonical.py, what `dpspin assign` runs) keep a record's rows as a vector only when
    they name each atom once and sum to at most one unit, and write the same vectors."""
    import numpy as np
    import pyarrow as pa

    from dpspin_sql.canonical import batch_vectors

    known = {r[0] for r in RECORDS}
    rows = [r for r in ROWS if r[0] in known and r[1] is not None]
    ids = sorted({r[0] for r in rows})
    index = {rid: i for i, rid in enumerate(ids)}
    out = batch_vectors(pa.array(ids), np.array([index[r[0]] for r in rows]), np.array([r[1] for r in rows]),
                        np.array([np.nan if r[2] is None else r[2] for r in rows], dtype=np.float64),
                        np.array(ATOMS))
    numpy_vectors = {rid: (list(a), list(m)) for rid, a, m in zip(*(out.vectors.column(c).to_pylist()
                                                                  for c in ("record_id", "atom_ids", "masses")))}
    for rid, (atoms, masses) in numpy_vectors.items():
        assert len(set(atoms)) == len(atoms) and all(v > 0 for v in masses) and sum(masses) <= SCALE, rid
    assert {"w3", "dup", "dup3", "ties", "over", "over2"}.isdisjoint(numpy_vectors)   # not canonical: raw
    assert {"reg", "pair", "mid0", "thin0", "big0", "half0"} <= set(numpy_vectors)
    stored = {rid: (a, m) for rid, a, m in loaded.execute(
        "SELECT record_id, atom_ids, masses FROM records WHERE atom_ids IS NOT NULL").fetchall()}
    assert stored == numpy_vectors
