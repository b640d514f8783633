"""Real files load whole, with identical results, through every command that reads them.

The corpus (tests/helpers/corpus.py) writes five small tables the way Python's csv module,
Excel, pandas, R, DuckDB, PostgreSQL and Spark write them, each also gzip-compressed. Every
command that reads such a table reads every file of it and must get exactly the result the
table holds:

| table | command | compared |
|---|---|---|
| records | `dpspin load` | every record's id, user, text, split and metadata values |
| taxonomy | `dpspin atoms load` | every atom's id, label and description |
| assignments | `dpspin assignments load` | every row that counts, at fixed point; the line that says which rows never count |
| assignments + units | `dpspin release --assignments --records` | the exact sketch the release computed |
| sketch | `dpspin release --from-sketch` | the exact vector the release used |

The fast writers' files are made once per session; PostgreSQL's and Spark's (real servers)
are in the slow tests at the end. A file that yields no rows, or whose header is
ambiguous, is an error that names the file (exit 2), for every command.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from dpspin_sql import atoms as atoms_mod
from dpspin_sql import store
from tests.helpers import corpus
from tests.helpers.core import cli, new_store, snapshot
from tests.helpers.postgres import pg_dsn  # noqa: F401 - the real-server fixture
from tests.helpers.prereq import environment_skip

HAS_PANDAS = importlib.util.find_spec("pandas") is not None
WRITERS = {k: v for k, v in corpus.FAST_WRITERS.items() if HAS_PANDAS or k not in corpus.PANDAS_WRITERS}
KEYS = [k + gz for k in WRITERS for gz in ("", ".gz")]


@pytest.fixture(scope="session")
def files(tmp_path_factory) -> dict[str, corpus.Written]:
    return corpus.write_all(tmp_path_factory.mktemp("corpus"), WRITERS)


@pytest.fixture(scope="session")
def templates(tmp_path_factory) -> dict[str, Path]:
    """Closed stores to copy: 'init' (a budget), 'dictionary' (+ the taxonomy), 'records'
    (+ the records), each written through the library, not through the readers under test."""
    import pyarrow as pa

    root = tmp_path_factory.mktemp("templates")
    paths = {}
    for name in ("init", "dictionary", "records"):
        path = root / f"{name}.duckdb"
        con = new_store(path, epsilon_budget=1000.0, delta_budget=1e-3)
        if name != "init":
            atoms_mod.install(con, [atoms_mod.Atom(a, label, desc or "") for a, label, desc in corpus.TAXONOMY],
                              builder="file", manifest={"source": "tests"})
        if name == "records":
            table = pa.Table.from_pylist([dict(zip(corpus.RECORDS_COLUMNS, r)) for r in corpus.RECORDS])
            con.register("corpus_records", table)
            store.load_records(con, "corpus", id_col="record_id", user_col="user_id", text_col="text",
                               relation=con.table("corpus_records"))
        con.close()
        paths[name] = path
    return paths


def fresh(templates, name: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{name}.duckdb"
    shutil.copy(templates[name], path)
    return path


@pytest.fixture
def sketches(monkeypatch) -> list[list[int]]:
    """The exact sketch each release of the test computed (from files or a warehouse's result)."""
    from dpspin_sql.sketch.engines import duckdb as engine
    from dpspin_sql.sketch.engines import given

    seen: list[list[int]] = []
    for cls in (engine.DuckDBEngine, given.GivenSketch):
        original = cls.sketch

        def spy(self, con, bounds, _original=original):
            sketch = _original(self, con, bounds)
            seen.append([int(v) for v in sketch.mass])
            return sketch

        monkeypatch.setattr(cls, "sketch", spy)
    return seen


def run_ok(capsys, *argv) -> str:
    rc, out, err = cli(capsys, *argv)
    assert rc == 0, f"{' '.join(map(str, argv))} exited {rc}: {err}"
    assert not out or out.endswith("\n")
    return out


# ------------------------------------------------------------------------------- the checks

def check_load(capsys, templates, tmp_path, written: corpus.Written) -> None:
    db = fresh(templates, "init", tmp_path)
    out = run_ok(capsys, "load", "--db", db, "--input", written.files["records"], "--user-col", "user_id",
                 *written.flags)
    assert f"loaded {len(corpus.RECORDS)} records" in out
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT record_id, user_id, text, split, metadata->>'product', metadata->>'issue', "
                       "metadata->>'sub_issue', metadata->>'rating' FROM records ORDER BY record_id").fetchall()
    keys = {tuple(sorted(r[0])) for r in con.execute("SELECT json_keys(metadata) FROM records").fetchall()}
    con.close()
    assert sorted(rows) == corpus.expected_records()
    assert keys == {("issue", "product", "rating", "sub_issue")}   # no row-names or index column


def check_atoms_load(capsys, templates, tmp_path, written: corpus.Written) -> None:
    db = fresh(templates, "init", tmp_path)
    out = run_ok(capsys, "atoms", "load", "--db", db, "--input", written.files["taxonomy"], *written.flags)
    assert f"installed {len(corpus.TAXONOMY)} atoms" in out
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT atom_id, label, description FROM atoms ORDER BY atom_id").fetchall()
    con.close()
    assert sorted(rows) == corpus.expected_atoms()


def check_assignments_load(capsys, templates, tmp_path, written: corpus.Written) -> None:
    db = fresh(templates, "records", tmp_path)
    out = run_ok(capsys, "assignments", "load", "--db", db, "--input", written.files["assignments"], *written.flags)
    assert "1 name an atom not in the dictionary" in out and "below the fixed-point resolution" in out
    con = store.connect(db, read_only=True)
    rows = con.execute(f"SELECT record_id, atom_id, dpspin_fix(weight, {corpus.SCALE}) AS w FROM assignment_rows "
                       "WHERE atom_id IN (SELECT atom_id FROM atoms) AND record_id IN (SELECT record_id FROM records) "
                       "AND dpspin_fix(weight, $s) > 0", {"s": corpus.SCALE}).fetchall()
    con.close()
    assert sorted(rows) == corpus.expected_counted_rows()


def check_release_files(capsys, templates, tmp_path, written: corpus.Written, sketches, want: list[int]) -> None:
    db = fresh(templates, "dictionary", tmp_path)
    run_ok(capsys, "release", "--db", db, "--mechanism", "laplace", "--epsilon", "0.1", "--unit", "user", "-L", "3",
           "--assignments", written.files["assignments"], "--records", written.files["units"], *written.flags,
           "--out", tmp_path / "plan.json", "-q")
    assert sketches[-1] == want and sum(want) > 0


def check_from_sketch(capsys, templates, tmp_path, written: corpus.Written, sketches) -> None:
    db = fresh(templates, "dictionary", tmp_path)
    statement = tmp_path / "query.sql"
    statement.write_text(corpus.STATEMENT)
    run_ok(capsys, "release", "--db", db, "--from-sketch", written.files["sketch"], "--statement", statement,
           "--dialect", "duckdb", *written.flags, "--out", tmp_path / "plan.json", "-q")
    assert sketches[-1] == corpus.expected_sketch()


@pytest.fixture(scope="session")
def file_sketch(templates, tmp_path_factory) -> list[int]:
    """The sketch of the assignment rows as the store's own query computes it from the same
    rows (put in the store directly, not read from any file): what every writer's files give."""
    from dpspin_sql.sketch import compute_sketch
    from tests.helpers.core import put_assignments

    path = tmp_path_factory.mktemp("want") / "s.duckdb"
    shutil.copy(templates["dictionary"], path)
    con = store.connect(path)
    con.execute("DELETE FROM records")
    con.execute("INSERT INTO users SELECT row_number() OVER (ORDER BY u) - 1, u FROM "
                "(SELECT DISTINCT unnest($u::VARCHAR[]) AS u)", {"u": [u[1] for u in corpus.UNITS]})
    con.execute("INSERT INTO records (record_id, user_id, split, user_key) SELECT r, u, s, k.user_key FROM "
                "(SELECT unnest($r::VARCHAR[]) AS r, unnest($u::VARCHAR[]) AS u, unnest($s::VARCHAR[]) AS s) "
                "JOIN users AS k ON k.user_id = u",
                {"r": [u[0] for u in corpus.UNITS], "u": [u[1] for u in corpus.UNITS],
                 "s": [u[2] for u in corpus.UNITS]})
    put_assignments(con, corpus.ASSIGNMENTS)
    want = [int(v) for v in compute_sketch(con, "user", 3, 1.0).mass]
    con.close()
    return want


# ------------------------------------------------------------------------------- fast writers

@pytest.mark.parametrize("key", KEYS)
def test_load_reads_every_writers_records(capsys, templates, tmp_path, files, key):
    check_load(capsys, templates, tmp_path, files[key])


@pytest.mark.parametrize("key", KEYS)
def test_atoms_load_reads_every_writers_taxonomy(capsys, templates, tmp_path, files, key):
    check_atoms_load(capsys, templates, tmp_path, files[key])


@pytest.mark.parametrize("key", KEYS)
def test_assignments_load_reads_every_writers_rows(capsys, templates, tmp_path, files, key):
    check_assignments_load(capsys, templates, tmp_path, files[key])


@pytest.mark.parametrize("key", KEYS)
def test_release_from_every_writers_files(capsys, templates, tmp_path, files, key, sketches, file_sketch):
    check_release_files(capsys, templates, tmp_path, files[key], sketches, file_sketch)


@pytest.mark.parametrize("key", KEYS)
def test_release_from_every_writers_sketch_result(capsys, templates, tmp_path, files, key, sketches):
    check_from_sketch(capsys, templates, tmp_path, files[key], sketches)


# ------------------------------------------------------------------ empty and ambiguous files

def _commands(db: Path, tmp_path: Path, path: Path) -> list[list]:
    statement = tmp_path / "query.sql"
    statement.write_text(corpus.STATEMENT)
    out = tmp_path / "plan.json"
    return [["load", "--db", db, "--input", path],
            ["atoms", "load", "--db", db, "--input", path],
            ["assignments", "load", "--db", db, "--input", path],
            ["release", "--db", db, "--mechanism", "laplace", "--epsilon", "0.1", "--unit", "record", "-L", "3",
             "--assignments", path, "--out", out],
            ["release", "--db", db, "--mechanism", "laplace", "--epsilon", "0.1", "--unit", "record", "-L", "3",
             "--assignments", tmp_path / "ok.csv", "--records", path, "--out", out],
            ["release", "--db", db, "--from-sketch", path, "--statement", statement, "--dialect", "duckdb",
             "--out", out]]


BAD_FILES = {
    "header_only.csv": "record_id,atom_id,weight,text,label,mass,user_id\r\n",
    "empty.csv": "",
    "empty.jsonl": "",
    "empty_array.json": "[]",
    "repeated.csv": "record_id,atom_id,weight,text,label,mass,mass\r\nr1,0,0.5,t,l,1,2\r\n",
    "case_variant.csv": "record_id,atom_id,weight,text,label,mass,MASS\r\nr1,0,0.5,t,l,1,2\r\n",
    "repeated_key.jsonl": '{"record_id": "r1", "atom_id": 0, "weight": 0.5, "text": "t", "label": "l", "mass": 1, '
                          '"mass": 2}\n',
    "case_key.jsonl": '{"record_id": "r1", "atom_id": 0, "weight": 0.5, "text": "t", "label": "l", "mass": 1}\n'
                      '{"record_id": "r2", "atom_id": 0, "weight": 0.5, "text": "t", "label": "m", "Mass": 1}\n',
    "repeated_key.json": '[{"record_id": "r1", "atom_id": 0, "weight": 0.5, "text": "t", "label": "l", "mass": 1, '
                         '"mass": 2}]',
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_empty_and_ambiguous_files_are_refused_by_every_command(capsys, templates, tmp_path, name):
    """exit 2, one line naming the file, and the store unchanged — for every command that reads it."""
    path = tmp_path / name
    path.write_text(BAD_FILES[name], encoding="utf-8")
    (tmp_path / "ok.csv").write_text("record_id,atom_id,weight\r\nc-001,0,0.5\r\n")
    db = fresh(templates, "records", tmp_path)
    before = snapshot(db)
    for argv in _commands(db, tmp_path, path):
        rc, _out, err = cli(capsys, *argv)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2 and len(lines) == 1, (argv[:3], rc, err)
        assert name in lines[0], (argv[:3], lines[0])
        assert "internal error" not in err
    assert snapshot(db) == before


def test_an_empty_parquet_file_and_folder_are_refused(capsys, templates, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({c: pa.array([], pa.string()) for c in
                             ("record_id", "atom_id", "weight", "text", "label", "mass")}), empty)
    folder = tmp_path / "no_data_files"
    folder.mkdir()
    (folder / "_SUCCESS").write_text("")
    (tmp_path / "ok.csv").write_text("record_id,atom_id,weight\r\nc-001,0,0.5\r\n")
    db = fresh(templates, "records", tmp_path)
    before = snapshot(db)
    for path in (empty, folder):
        for argv in _commands(db, tmp_path, path):
            rc, _out, err = cli(capsys, *argv)
            assert rc == 2 and len(err.strip().splitlines()) == 1 and path.name in err, (argv[:3], rc, err)
    assert snapshot(db) == before


def test_a_preset_whose_rows_are_all_rejected_is_an_error(capsys, templates, tmp_path):
    path = tmp_path / "complaints.jsonl"
    rest = '"product": "p", "sub_product": null, "issue": "i", "sub_issue": null, "company": "c", "state": "s", ' \
           '"date_received": "2020-01-01"'
    path.write_text(f'{{"complaint_id": 1, "narrative": "  ", {rest}}}\n{{"complaint_id": 2, "narrative": null, {rest}}}\n')
    db = fresh(templates, "init", tmp_path)
    rc, _out, err = cli(capsys, "load", "--db", db, "--input", path, "--preset", "cfpb")
    assert rc == 2 and "all 2 rows were rejected" in err and path.name in err


def test_unnamed_columns_are_left_out_and_said(capsys, templates, tmp_path, files):
    key = "r_csv" if "r_csv" in files else "python_csv"
    db = fresh(templates, "init", tmp_path)
    out = run_ok(capsys, "load", "--db", db, "--input", files[key].files["records"], "--user-col", "user_id")
    if key == "r_csv":
        assert "left out 1 unnamed column" in out


# ------------------------------------------------------------------------- R, byte for byte

def test_the_hand_written_r_format_is_what_r_writes(tmp_path):
    """r_csv writes R's format by hand; where R is installed, R's own write.csv must give the
    same bytes for every table (skips with the reason elsewhere)."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        environment_skip("R is not installed (Rscript; R is no prerequisite): the corpus writes R's write.csv format by hand")
    for table, (columns, rows) in corpus.TABLES.items():
        cols = []
        for i, c in enumerate(columns):
            values = [r[i] for r in rows]
            if all(v is None or isinstance(v, (int, float)) for v in values):
                cols.append(f"{c} = c({', '.join('NA' if v is None else repr(float(v)) for v in values)})")
            else:
                quoted = ("NA" if v is None else '"' + str(v).replace("\\", "\\\\").replace('"', '\\"')
                          .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"' for v in values)
                cols.append(f"{c} = c({', '.join(quoted)})")
        script = tmp_path / f"{table}.R"
        out = tmp_path / f"{table}.csv"
        script.write_text(f"df <- data.frame({', '.join(cols)}, stringsAsFactors = FALSE)\n"
                          f"write.csv(df, {str(out)!r}, fileEncoding = 'UTF-8')\n", encoding="utf-8")
        subprocess.run([rscript, "--vanilla", str(script)], check=True, capture_output=True, timeout=120,
                       env={**os.environ, "LC_ALL": "C.UTF-8"})
        assert out.read_bytes() == corpus.r_csv_text(columns, rows).encode(), table


# ------------------------------------------------------------------------ PostgreSQL and Spark

def _all_commands(capsys, templates, tmp_path, written, sketches, file_sketch) -> None:
    for i, check in enumerate((check_load, check_atoms_load, check_assignments_load)):
        where = tmp_path / f"{written.writer}-{i}"
        where.mkdir()
        check(capsys, templates, where, written)
    where = tmp_path / f"{written.writer}-release"
    where.mkdir()
    check_release_files(capsys, templates, where, written, sketches, file_sketch)
    where = tmp_path / f"{written.writer}-sketch"
    where.mkdir()
    check_from_sketch(capsys, templates, where, written, sketches)


@pytest.mark.postgres
def test_postgres_copy_csv_reads_the_same(capsys, templates, tmp_path, pg_dsn, sketches, file_sketch):
    for written in corpus.postgres_csv(pg_dsn, tmp_path / "pg").values():
        _all_commands(capsys, templates, tmp_path, written, sketches, file_sketch)


@pytest.mark.spark
def test_spark_folders_read_the_same(capsys, templates, tmp_path, sketches, file_sketch, spark):
    written = corpus.spark_files(spark, tmp_path / "spark")
    for one in written.values():
        assert any(p.name == "_SUCCESS" for p in one.files["records"].rglob("*"))
        _all_commands(capsys, templates, tmp_path, one, sketches, file_sketch)
