"""Bring-your-own assignments on the same terms as DP SQL: `dpspin assignments load` maps
the file's column names (--record-col, --atom-col, --weight-col), takes atom labels of the
store's dictionary as well as ids (a label not in it is dropped and counted in one line),
and a value of the wrong type is one line, exit 2."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.core import assert_one_line_error, cli, new_store, put_records

LABELS = ["late delivery", "refund", "app crash", "login"]


@pytest.fixture
def db(tmp_path) -> Path:
    from tests.helpers.core import install_atoms

    path = tmp_path / "s.duckdb"
    con = new_store(path)
    install_atoms(con, [0, 1, 2, 3], LABELS)
    put_records(con, [(f"r{i}", f"u{i}", "target") for i in range(4)])
    con.close()
    return path


def rows(db: Path) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("SELECT record_id, atom_id, weight FROM assignment_rows").fetchall()
    return sorted((r, a, round(w, 6)) for r, a, w in got)   # stored in fixed point (2^-24)


def load(capsys, db, tmp_path, text, *extra, name="a.csv"):
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return cli(capsys, "assignments", "load", "--db", str(db), "--input", str(f), *extra)


def test_the_columns_are_named_by_flags(capsys, db, tmp_path):
    rc, out, err = load(capsys, db, tmp_path, "review,theme,score\nr0,1,0.5\nr1,2,0.25\n",
                        "--record-col", "review", "--atom-col", "theme", "--weight-col", "score")
    assert rc == 0, err
    assert "loaded 2 assignment rows" in out and "ignored column" not in out
    assert rows(db) == [("r0", 1, 0.5), ("r1", 2, 0.25)]


def test_atom_labels_load_as_their_ids_and_unknown_labels_are_dropped_in_one_line(capsys, db, tmp_path):
    rc, out, err = load(capsys, db, tmp_path,
                        "record_id,topic,weight\nr0,refund,0.5\nr1,app crash,1\nr2,no such theme,1\nr3,,1\nr3,login,0.2\n",
                        "--atom-col", "topic")
    assert rc == 0, err
    assert rows(db) == [("r0", 1, 0.5), ("r1", 2, 1.0), ("r3", 3, 0.2)]
    said = [line for line in out.splitlines() if "dropped" in line]
    assert said == ["dropped 2 row(s) whose atom label is not in the store's dictionary (the atom column 'topic' "
                    "holds labels)"]


def test_labels_from_a_jsonl_file(capsys, db, tmp_path):
    text = '{"id": "r0", "label": "late delivery", "w": 0.5}\n{"id": "r1", "label": "login", "w": 1}\n'
    rc, _, err = load(capsys, db, tmp_path, text, "--record-col", "id", "--atom-col", "label", "--weight-col", "w",
                      name="a.jsonl")
    assert rc == 0, err
    assert rows(db) == [("r0", 0, 0.5), ("r1", 3, 1.0)]


def test_ids_still_load_as_before(capsys, db, tmp_path):
    rc, out, err = load(capsys, db, tmp_path, "record_id,atom_id,weight\nr0,0,1\nr1,3,0.5\n")
    assert rc == 0, err
    assert rows(db) == [("r0", 0, 1.0), ("r1", 3, 0.5)] and "dropped" not in out


@pytest.mark.parametrize("text, extra, said", [
    ("record_id,atom_id,weight\nr0,seven,1\n", (), "atom_id that is not an integer (column 'atom_id'"),
    ("rid,atom_id,weight\nr0,1,heavy\n", ("--record-col", "rid"), "weight that is not a number (column 'weight')"),
    ("record_id,topic,weight\nr0,refund,heavy\n", ("--atom-col", "topic"), "weight that is not a number"),
    ("record_id,atom_id,weight\nr0,1,1\n", ("--atom-col", "theme"), "column 'theme' (from --atom-col) not in"),
    ("record_id,atom_id,weight\nr0,1,1\n", ("--weight-col", "atom_id"), "--atom-col and --weight-col name the same"),
])
def test_type_and_name_mismatches_are_one_line_exit_2(capsys, db, tmp_path, text, extra, said):
    rc, out, err = load(capsys, db, tmp_path, text, *extra)
    assert_one_line_error(rc, out, err, 2)
    assert said in err
    assert rows(db) == []
