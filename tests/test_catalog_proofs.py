"""The proofs the store query's shortcuts rely on, tested on stores that lack them.

The DuckDB store query skips the per-record enforcement for a canonical vector, and groups
users by integer key, only where the catalog proves it sound (sketch.canonical_facts):

- canonical: records.atom_ids / masses are INTEGER[] under exactly schema.sql's CHECKs
  (distinct atoms; masses ≥ 0 with Σ ≤ one unit, 2^SCALE_BITS);
- keyed: records (user_key, user_id) is a foreign key into users, whose key and id are
  each unique.

So a store whose records table lacks a CHECK, has a looser one, another column type, or
whose keys are not proved one-to-one — a store written by an older version, a table
re-created without its constraints, an edited schema — must get the full enforcement and
stay bounded. Each edit of SCHEMA_EDITS builds such a store, writes the hostile rows the
edit admits (vectors of ten or sixteen units, negative masses, an atom twice, two keys for
one user, a key of another user, one key for two users), and checks that the fact goes
false, that the sketch at record and user level is the independent reference's on the
store's logical rows (the rows a vector stands for), and that the user-level refusals
still hold. Every row of the catalog the proof reads is removed by some edit (a new
constraint in schema.sql needs a line here). The schema's constants are tied to the
fixed-point scale by behaviour: a fresh store accepts a vector of exactly one unit,
2^SCALE_BITS, and refuses one more.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest

from dpspin_sql import queries, store
from dpspin_sql.errors import BadInput
from dpspin_sql.request import SCALE, SCALE_BITS, Bounds
from dpspin_sql.sketch import _expected_catalog, canonical_facts, compute_sketch, run_sketch, store_plan
from tests.helpers.core import install_atoms, new_store, put_records, reference_sketch

pytestmark = pytest.mark.guard

S = SCALE
ATOMS = [0, 1, 2, 3, 4]


# ------------------------------------------------------------------------------- the constants

def test_the_scale_is_two_to_the_scale_bits():
    assert S == 2 ** SCALE_BITS == 1 << SCALE_BITS


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A store made by the project, with one record to write vectors to."""
    con = new_store(tmp_path_factory.mktemp("fresh") / "s.duckdb")
    install_atoms(con, ATOMS)
    put_records(con, [("r", "u", "target")])
    yield con
    con.close()


@pytest.mark.parametrize(("atom_ids", "masses", "ok"), [
    ([0], [S], True),                                  # exactly one unit
    ([0, 1], [S // 2, S - S // 2], True),
    ([0, 1, 2], [0, 0, S], True),                      # zero masses are allowed (and dropped)
    ([0], [S + 1], False),                             # one fixed-point unit over
    ([0, 1], [S // 2, S // 2 + 1], False),
    ([0], [10 * S], False),
    ([0], [1 << 28], False),                           # 16 units: the mutant
    ([0, 1], [-1, S], False),                          # a negative mass
    ([0, 1], [-S, 2 * S], False),
    ([0, 0], [S // 2, S // 2], False),                 # one atom twice
    ([0, 1, 0], [1, 1, 1], False),
])
def test_a_fresh_store_refuses_a_vector_over_one_unit(fresh, atom_ids, masses, ok):
    con = fresh
    con.execute("UPDATE records SET atom_ids = NULL, masses = NULL")
    write = lambda: con.execute("UPDATE records SET atom_ids = $a, masses = $m WHERE record_id = 'r'",
                                {"a": atom_ids, "m": masses})
    if ok:
        write()
        assert con.execute("SELECT masses FROM records").fetchone()[0] == masses
    else:
        with pytest.raises(duckdb.ConstraintException):
            write()


def test_the_view_reads_a_mass_in_units_of_the_scale(tmp_path):
    """assignment_rows (what the other engines read) turns a mass into weight mass / 2^S."""
    con = new_store(tmp_path / "s.duckdb")
    install_atoms(con, ATOMS)
    put_records(con, [("r", "u", "target")])
    con.execute("UPDATE records SET atom_ids = [0, 1, 2], masses = $m WHERE record_id = 'r'",
                {"m": [S // 2, S // 4, 1]})
    rows = sorted(con.execute("SELECT atom_id, weight FROM assignment_rows").fetchall())
    assert rows == [(0, 0.5), (1, 0.25), (2, 2.0 ** -SCALE_BITS)]
    con.close()


# ------------------------------------------------------------------------------- stores without the proof

@dataclass(frozen=True)
class Edit:
    name: str
    old: str
    new: str
    breaks: frozenset        # the facts that must go false
    admits: frozenset = frozenset()   # the hostile rows the edited store must accept
    also: tuple[tuple[str, str], ...] = ()   # further (old, new) replacements the edit needs
    rows: bool = True        # False: the scenario's rows do not fit the edited types (facts only)

    def schema(self) -> str:
        text = queries.load("schema")
        for old, new in ((self.old, self.new), *self.also):
            assert text.count(old) == 1, f"schema.sql changed: update the edit {self.name!r}"
            text = text.replace(old, new)
        return text


MASSES = "    masses    INTEGER[] CHECK (COALESCE(list_min(masses), 0) >= 0 AND COALESCE(list_sum(masses), 0) <= 16777216),"
ATOM_IDS = "    atom_ids  INTEGER[] CHECK (COALESCE(len(list_distinct(atom_ids)) = list_count(atom_ids), TRUE)),"
FK = ",\n    FOREIGN KEY (user_key, user_id) REFERENCES users (user_key, user_id)"
CANONICAL, KEYED = frozenset({"canonical"}), frozenset({"keyed"})
SCHEMA_EDITS = [
    Edit("the mass CHECK dropped", MASSES, "    masses    INTEGER[],", CANONICAL,
         frozenset({"ten_units", "sixteen_units", "negative"})),
    Edit("the mass CHECK ten times looser", "<= 16777216)", "<= 167772160)", CANONICAL, frozenset({"ten_units"})),
    Edit("negative masses admitted", ">= 0 AND COALESCE(list_sum", ">= -16777216 AND COALESCE(list_sum", CANONICAL,
         frozenset({"negative"})),
    Edit("the distinct-atoms CHECK dropped", ATOM_IDS, "    atom_ids  INTEGER[],", CANONICAL,
         frozenset({"one_atom_twice"})),
    Edit("masses as BIGINT[]", "    masses    INTEGER[] CHECK", "    masses    BIGINT[] CHECK", CANONICAL),
    Edit("atom ids as BIGINT[]", "    atom_ids  INTEGER[] CHECK", "    atom_ids  BIGINT[] CHECK", CANONICAL),
    Edit("no foreign key", FK, "", KEYED, frozenset({"key_of_another_user"})),
    Edit("user ids not unique", "    user_id  VARCHAR NOT NULL UNIQUE,", "    user_id  VARCHAR NOT NULL,", KEYED,
         frozenset({"two_keys_one_user"})),
    Edit("user keys not unique", "    user_key INTEGER PRIMARY KEY,", "    user_key INTEGER,", KEYED,
         frozenset({"one_key_two_users"})),
    Edit("no UNIQUE (user_key, user_id) and so no foreign key",
         "    user_id  VARCHAR NOT NULL UNIQUE,\n    UNIQUE (user_key, user_id)\n",
         "    user_id  VARCHAR NOT NULL UNIQUE\n", KEYED, frozenset({"key_of_another_user"}), ((FK, ""),)),
    Edit("record ids not a key", "    record_id VARCHAR PRIMARY KEY,", "    record_id VARCHAR,", KEYED),
    Edit("user keys as BIGINT", "    user_key INTEGER PRIMARY KEY,", "    user_key BIGINT PRIMARY KEY,", KEYED,
         also=(("    user_key  INTEGER,", "    user_key  BIGINT,"),)),
    Edit("user ids as BIGINT", "    user_id  VARCHAR NOT NULL UNIQUE,", "    user_id  BIGINT NOT NULL UNIQUE,", KEYED,
         also=(("    user_id   VARCHAR,", "    user_id   BIGINT,"),), rows=False),
]


def edited_store(path, edit: Edit | None):
    """A set-up store (its migrations run, its macros registered) whose tables were created
    by `edit`'s schema; the project's own store when None."""
    if edit is not None:
        from dpspin_sql import udfs

        raw = duckdb.connect(str(path))
        raw.execute(edit.schema())
        raw.execute(queries.load("schema_migrate"))
        udfs.register(raw)
        raw.close()
        con = store.connect(path)
    else:
        con = new_store(path)
    install_atoms(con, ATOMS)
    return con


def _catalog(schema: str) -> set:
    c = duckdb.connect()
    try:
        c.execute(schema)
        return {tuple(tuple(v) if isinstance(v, list) else v for v in r)
                for r in c.execute(queries.load("canonical_catalog")).fetchall()}
    finally:
        c.close()


def test_every_row_of_the_proof_is_removed_by_some_edit():
    """The catalog rows canonical_facts compares, each one missing from some edited store's
    catalog: a constraint added to schema.sql is a fact the fast path may come to rely on,
    and needs an edit (and its hostile rows) here."""
    canonical, keyed = _expected_catalog()
    uncovered = set(canonical | keyed)
    for edit in SCHEMA_EDITS:
        uncovered -= set(canonical | keyed) - _catalog(edit.schema())
    assert not uncovered, sorted(uncovered)


# The hostile rows, each one row or vector an edit may admit; what a store accepts is kept.
# record_id → (user_id, split); vectors and keys are written after.
RECORDS = [("r0", "u0", "target"), ("r1", "u1", "target"), ("r2", "u2", "target"), ("r3", "u3", "target"),
           ("r4", "u4", "target"), ("r5", "u4", "target"), ("r6", "u5", "target"), ("r7", "u6", "target"),
           ("a0", "aux0", "aux")]
NORMAL_VECTORS = {"r4": ([0, 1], [S // 2, S // 4]), "r5": ([1], [S]), "r6": ([2, 3, 4], [S // 3] * 3),
                  "r7": ([4], [S]), "a0": ([0], [S])}
HOSTILE_VECTORS = {
    "ten_units": ("r0", [0], [10 * S]),
    "sixteen_units": ("r1", [1], [1 << 28]),
    "negative": ("r2", [2, 3], [-S, 2 * S]),
    "one_atom_twice": ("r3", [3, 3], [S // 2, S // 2]),
}


def write_store(con, edit: Edit | None) -> tuple[list, list, set]:
    """The records, keys and vectors of the scenario; returns (records, logical rows, the
    hostile kinds the store accepted)."""
    put_records(con, RECORDS)
    accepted: set[str] = set()

    def attempt(kind: str, sql: str, params: dict) -> None:
        try:
            con.execute(sql, params)
            accepted.add(kind)
        except duckdb.ConstraintException:
            pass

    users = sorted({r[1] for r in RECORDS})
    con.execute("DELETE FROM users")
    con.execute("INSERT INTO users SELECT i - 1, u FROM (SELECT unnest($u::VARCHAR[]) AS u, "
                "generate_subscripts($u::VARCHAR[], 1) AS i)", {"u": users})
    con.execute("UPDATE records SET user_key = u.user_key FROM users AS u WHERE records.user_id = u.user_id")
    key = {u: i for i, u in enumerate(users)}
    # u4 with a second key (two keys, one user): its record r5 under key 100
    attempt("two_keys_one_user", "INSERT INTO users VALUES (100, 'u4')", {})
    if "two_keys_one_user" in accepted:
        con.execute("UPDATE records SET user_key = 100 WHERE record_id = 'r5'")
    # r6 (user u5) under u6's key (a key of another user)
    attempt("key_of_another_user", "UPDATE records SET user_key = $k WHERE record_id = 'r6'", {"k": key["u6"]})
    # u5 and u6 under one key
    attempt("one_key_two_users", "INSERT INTO users VALUES ($k, 'u6-twin')", {"k": key["u5"]})
    if "one_key_two_users" in accepted:
        con.execute("UPDATE records SET user_id = 'u6-twin', user_key = $k WHERE record_id = 'r7'", {"k": key["u5"]})
    vectors = dict(NORMAL_VECTORS)
    for rid, (a, m) in NORMAL_VECTORS.items():
        con.execute("UPDATE records SET atom_ids = $a, masses = $m WHERE record_id = $r", {"a": a, "m": m, "r": rid})
    for kind, (rid, a, m) in HOSTILE_VECTORS.items():
        attempt(kind, "UPDATE records SET atom_ids = $a, masses = $m WHERE record_id = $r", {"a": a, "m": m, "r": rid})
        if kind in accepted:
            vectors[rid] = (a, m)
    store.mark_step(con, "assignments")
    records = [tuple(r) for r in con.execute("SELECT record_id, user_id, split FROM records").fetchall()]
    rows = [(rid, atom, mass / S) for rid, (a, m) in vectors.items() for atom, mass in zip(a, m)]
    return records, rows, accepted


@pytest.mark.parametrize("edit", [None, *SCHEMA_EDITS], ids=lambda e: "the project's schema" if e is None else e.name)
def test_a_store_without_the_proof_takes_the_full_enforcement(tmp_path, monkeypatch, edit):
    if edit is not None and not (edit.rows and edit.admits):
        # an edit that admits no hostile row: its facts are the point, read from its catalog
        con = duckdb.connect()
        con.execute(edit.schema())
        facts = canonical_facts(con)
        con.close()
        assert facts.canonical is ("canonical" not in edit.breaks) and facts.keyed is ("keyed" not in edit.breaks)
        return
    con = edited_store(tmp_path / "s.duckdb", edit)
    facts = canonical_facts(con)
    breaks = edit.breaks if edit is not None else frozenset()
    assert facts.canonical is ("canonical" not in breaks) and facts.keyed is ("keyed" not in breaks), facts
    records, rows, accepted = write_store(con, edit)
    assert (edit.admits if edit is not None else set()) <= accepted, accepted
    if edit is None:
        assert not accepted                                 # the project's schema admits none of them
    assert compute_sketch(con, "record", 3).mass.tolist() == reference_sketch(records, rows, ATOMS, "record", 3)
    assert compute_sketch(con, "user", 3, 1.0).mass.tolist() == reference_sketch(records, rows, ATOMS, "user", 3)
    if edit is not None and "keyed" not in edit.breaks:
        return                                           # the chunks below need the keys
    monkeypatch.setenv("DPSPIN_CHUNK_USERS", "2")        # two users per chunk where the store is keyed
    assert run_sketch(con, Bounds("user", 3, 0.5), count_users=False).mass.tolist() == \
        reference_sketch(records, rows, ATOMS, "user", 3, 0.5)
    if edit is None:                                     # the project's store: the compiled, chunked query
        flags = {"canonical": True, "keyed": True}
        assert len(store_plan(con, "user", flags, K=3)) > 1 and flags["all_fast"] and flags["atoms_dense"]
    # the store plan's own facts never contradict the catalog's
    flags = {"canonical": facts.canonical, "keyed": facts.keyed}
    store_plan(con, "user", flags, K=3)
    assert not flags["all_fast"] or (facts.canonical and facts.keyed)
    con.close()


@pytest.mark.parametrize("edit", [e for e in SCHEMA_EDITS if "two_keys_one_user" in e.admits or
                                  "key_of_another_user" in e.admits], ids=lambda e: e.name)
def test_a_user_on_both_sides_of_the_split_is_refused_whatever_its_keys(tmp_path, edit):
    """u4's records: one target record under one key, one auxiliary record under another (or
    under another user's key). Counted by key the two sides never meet; the refusal must
    still come (the keys prove nothing here, so users are counted by id)."""
    con = edited_store(tmp_path / "s.duckdb", edit)
    write_store(con, edit)
    con.execute("UPDATE records SET split = 'aux' WHERE record_id = 'r5'")
    if "two_keys_one_user" not in edit.admits:
        con.execute("UPDATE records SET split = 'aux' WHERE record_id = 'r6'")   # u5, under u6's key
    for count_users in (True, False):
        with pytest.raises(BadInput, match="both the auxiliary and the target split"):
            run_sketch(con, Bounds("user", 3, 1.0), count_users=count_users)
    con.close()


OLD_STORE = (Path(__file__).parent / "data" / "store_before_vectors.sql").read_text()


def test_a_store_of_an_older_version_is_migrated_without_the_proof(tmp_path):
    """A store written before the canonical vectors (its records table without them): the
    migration adds the columns without the CHECKs, which ALTER TABLE cannot add, so the
    catalog proves nothing and a vector of sixteen units counts one."""
    path = tmp_path / "old.duckdb"
    raw = duckdb.connect(str(path))
    raw.execute(OLD_STORE)
    raw.close()
    con = store.connect(path)
    assert canonical_facts(con).canonical is False
    install_atoms(con, ATOMS)
    put_records(con, [("r0", "u0", "target"), ("r1", "u0", "target"), ("r2", "u1", "target")])
    con.execute("UPDATE records SET atom_ids = [0], masses = [268435456] WHERE record_id = 'r0'")
    con.execute("UPDATE records SET atom_ids = [0, 1], masses = [$s, $s] WHERE record_id = 'r1'", {"s": S})
    con.execute("UPDATE records SET atom_ids = [2, 2], masses = [$h, $h] WHERE record_id = 'r2'", {"h": S // 2})
    store.mark_step(con, "assignments")
    records = [("r0", "u0", "target"), ("r1", "u0", "target"), ("r2", "u1", "target")]
    rows = [("r0", 0, 16.0), ("r1", 0, 1.0), ("r1", 1, 1.0), ("r2", 2, 0.5), ("r2", 2, 0.5)]
    assert compute_sketch(con, "record", 3).mass.tolist() == reference_sketch(records, rows, ATOMS, "record", 3)
    assert compute_sketch(con, "record", 3).mass.tolist() == [S + S // 2, S // 2, S // 2, 0, 0]
    assert compute_sketch(con, "user", 3, 1.0).mass.tolist() == reference_sketch(records, rows, ATOMS, "user", 3)
    con.close()


def test_a_records_table_recreated_without_constraints(tmp_path):
    """CREATE TABLE AS copies the rows and none of the constraints: the proof is gone with them."""
    con = edited_store(tmp_path / "s.duckdb", None)
    records, rows, _ = write_store(con, None)
    assert canonical_facts(con).canonical and canonical_facts(con).keyed
    con.execute("CREATE TABLE records_copy AS SELECT * FROM records")
    con.execute("DROP TABLE records")
    con.execute("ALTER TABLE records_copy RENAME TO records")
    facts = canonical_facts(con)
    assert facts.canonical is False and facts.keyed is False
    con.execute("UPDATE records SET atom_ids = [0], masses = [268435456] WHERE record_id = 'r0'")
    rows = [r for r in rows if r[0] != "r0"] + [("r0", 0, 16.0)]
    for unit in ("record", "user"):
        assert compute_sketch(con, unit, 3, 1.0 if unit == "user" else None).mass.tolist() == \
            reference_sketch(records, rows, ATOMS, unit, 3)
    con.close()
