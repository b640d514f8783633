"""The pre-rendered store queries (queries/compiled_*.sql, dpspin_sql.sketch.compiled): each is
exactly what the transpiler renders now for its flags, it is what a release over a
project-written store runs, and such a release does not import sqlglot at all.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from dpspin_sql import queries
from dpspin_sql.sketch import compiled
from dpspin_sql.sketch.transpile import STORE_FLAGS


@pytest.mark.parametrize("name", sorted(compiled.COMPILED))
def test_each_compiled_query_is_the_current_render(name):
    assert queries.load(name) == compiled.render(name), (
        f"queries/{name}.sql is stale: run python -m dpspin_sql.sketch.compiled")


def test_the_flags_are_the_transpilers_and_every_compiled_set_is_complete():
    assert compiled.STORE_FLAGS is STORE_FLAGS
    for unit, flags in compiled.COMPILED.values():
        assert set(flags) == set(STORE_FLAGS) and unit in ("record", "user")


LOOKUPS = [
    # (unit, flags as store_plan leaves them, compiled name or None)
    ("user", {"canonical": True, "keyed": True, "raw": False, "all_keyed": True, "all_fast": True,
              "atoms_dense": True}, "compiled_store_user"),
    ("user", {"canonical": True, "keyed": True, "raw": False, "all_keyed": True, "all_fast": True},
     "compiled_store_user_sparse_atoms"),
    ("user", {"canonical": True, "keyed": True, "raw": False, "all_keyed": True, "all_fast": True, "chunked": True,
              "atoms_dense": True, "lo": compiled.SENTINELS[0], "hi": compiled.SENTINELS[1]},
     "compiled_store_user_chunked"),
    ("record", {"canonical": True, "keyed": True, "raw": False, "all_fast": True, "atoms_dense": True},
     "compiled_store_record"),
    ("record", {"canonical": True, "keyed": True, "raw": False, "all_fast": True, "atoms_dense": False},
     "compiled_store_record_sparse_atoms"),
    ("record", {"canonical": True, "keyed": True, "raw": False, "all_fast": False}, None),
    ("user", {"canonical": True, "keyed": True, "raw": True, "all_keyed": True, "all_fast": False}, None),
    ("user", {"canonical": False, "keyed": True, "raw": False, "all_keyed": True, "all_fast": False}, None),
    ("user", {"canonical": True, "keyed": True, "raw": False, "all_keyed": True, "all_fast": True, "chunked": True,
              "lo": 0, "hi": 131072}, None),
    ("record", {"canonical": True, "keyed": False, "raw": False, "all_fast": True}, None),
    ("record", {"canonical": True, "keyed": True, "raw": False, "all_fast": True, "unknown": 1}, None),
]


@pytest.mark.parametrize(("unit", "flags", "name"), LOOKUPS)
def test_lookup_finds_exactly_the_compiled_flag_sets(unit, flags, name):
    got = compiled.lookup(unit, flags)
    assert got == (None if name is None else queries.load(name))


@pytest.mark.parametrize("unit", ["record", "user"])
def test_a_release_over_a_project_store_runs_a_compiled_query_without_sqlglot(tmp_path, unit):
    """The release imports no sqlglot (the render is what costs the time), and its sketch is
    the rendered query's."""
    code = textwrap.dedent(f"""
        import sys
        from tests.helpers.core import synthetic_store
        from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
        from dpspin_sql.outputs import Outputs
        from dpspin_sql.release import release
        from dpspin_sql.request import ReleaseRequest
        import duckdb
        from dpspin_sql import store
        from tests.helpers.core import install_atoms, new_store
        src = synthetic_store({str(tmp_path / "src.duckdb")!r}, m=12)
        raw = duckdb.connect(str(src), read_only=True)
        raw.execute("COPY (SELECT record_id, user_id, text FROM records) TO {str(tmp_path / "r.parquet")!r}")
        raw.execute("COPY (SELECT record_id, atom_id, weight / 1.2 AS weight FROM assignments) TO {str(tmp_path / "a.parquet")!r}")
        raw.close()
        db = {str(tmp_path / "s.duckdb")!r}
        con = new_store(db, epsilon_budget=10.0)
        install_atoms(con, list(range(12)))
        store.load_records(con, {str(tmp_path / "r.parquet")!r}, user_col="user_id")
        store.load_assignments(con, {str(tmp_path / "a.parquet")!r})
        assert con.execute("SELECT count(*) FROM assignments").fetchone()[0] == 0   # all canonical vectors
        # the front end and the sketch wing's compiler (not the sketch, its engines or the compiled queries)
        for name in [m for m in sys.modules if m.startswith(("sqlglot", "dpspin_sql.sql.", "dpspin_sql.sketch."))]:
            if name != "dpspin_sql.sketch.compiled" and not name.startswith("dpspin_sql.sketch.engines"):
                del sys.modules[name]
        request = ReleaseRequest(mechanism="laplace", epsilon=1.0, unit={unit!r}, K=3, L=5,
                                 B=1.0 if {unit!r} == "user" else None)
        engine = DuckDBEngine()
        release(con, request, engine, out={str(tmp_path / "plan.json")!r}, outputs=Outputs(store=db))
        print(sorted(m for m in sys.modules if m.startswith("sqlglot"))[:3])
        from dpspin_sql.sketch import compute_sketch, canonical_facts, store_plan
        from dpspin_sql.sketch.transpile import sketch_sql
        got = compute_sketch(con, {unit!r}, 3, 1.0 if {unit!r} == "user" else None)
        flags = dict(canonical=True, keyed=True)
        values = {{}}
        assert store_plan(con, {unit!r}, flags, K=3, values=values) == [{{}}] and flags["all_fast"], flags
        assert flags["atoms_dense"] and values == {{"atom_lo": 0, "atom_hi": 11}}, (flags, values)
        rendered = sketch_sql(request.bounds, None, "duckdb", bind_params=False, store_flags=flags)
        from dpspin_sql.sketch import used_params
        want = dict(con.execute(rendered, used_params(rendered, request.bounds.params() | values)).fetchall())
        assert got.mass.tolist() == [want.get(int(a), 0) for a in got.atom_ids], "compiled != rendered"
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(_root()))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", proc.stdout


def _root():
    from pathlib import Path

    return Path(__file__).resolve().parents[1]
