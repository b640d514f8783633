"""The core CLI (docs/DESIGN.md §8): bad input is one line on stderr, exit 2, no traceback and no
change to the store; `dpspin demo` works; releases work end to end on the real CFPB
(record level) and Amazon All_Beauty (user level) samples, for every mechanism, with a
plan of docs/PLAN.md's shape that never names a non-admitted atom."""
from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import pytest

from dpspin_sql import assign, store
from tests.helpers.core import (
    DATA,
    SHARED_DATA,
    SPEC_ATOM_KEYS,
    SPEC_PLAN_KEYS,
    assert_one_line_error,
    cli,
    new_store,
    put_records,
    read_plan,
    snapshot,
    synthetic_store,
)
from tests.helpers.prereq import missing_prerequisite

CFPB = SHARED_DATA / "cfpb_complaints" / "complaints.jsonl.gz"
AMAZON = SHARED_DATA / "amazon_all_beauty_2023" / "reviews.jsonl.gz"
M_SYNTH = 12


def rel_args(db, out, **over):
    opts = {"--mechanism": "gaussian", "--epsilon": "0.5", "--delta": "1e-6", "--unit": "user", "-L": "3"} | over
    args = ["release", "--db", str(db), "--out", str(out)]
    for k, v in opts.items():
        if v is not None:
            args += [k, str(v)]
    return args


@pytest.fixture
def db(tmp_path):
    return synthetic_store(tmp_path / "s.duckdb", m=M_SYNTH, epsilon_budget=10.0)


# ================================================================================ bad input

BAD_RELEASES = {
    "epsilon zero": {"--epsilon": "0"},
    "epsilon negative": {"--epsilon": "-1"},
    "epsilon nan": {"--epsilon": "nan"},
    "epsilon inf": {"--epsilon": "inf"},
    "delta zero": {"--delta": "0"},
    "delta one": {"--delta": "1"},
    "delta above one": {"--delta": "1.5"},
    "delta negative": {"--delta": "-0.1"},
    "delta zero top-L": {"--mechanism": "private_topL", "--delta": "0"},
    "L above m": {"-L": str(M_SYNTH + 1)},
    "L zero": {"-L": "0"},
    "K zero": {"-K": "0"},
    "B zero": {"-B": "0"},
    "B negative": {"-B": "-1"},
    "B huge": {"-B": "1e308"},
    "B below resolution": {"-B": "1e-9"},
    "unknown mechanism": {"--mechanism": "exponential"},
    "unknown unit": {"--unit": "household"},
    "unknown adjacency": {"--adjacency": "swap"},
    "unknown calibration": {"--calibration": "analytic"},
    "classical at eps 1": {"--calibration": "classical", "--epsilon": "1"},
    "selection fraction 0": {"--mechanism": "private_topL", "--selection-fraction": "0"},
    "selection fraction 1": {"--mechanism": "private_topL", "--selection-fraction": "1"},
    "epsilon not a number": {"--epsilon": "lots"},
    "missing epsilon": {"--epsilon": None},
    "K above the cap": {"-K": "100000000000"},
    "epsilon beyond calibration": {"--epsilon": "1e6"},
    "delta beyond calibration": {"--delta": "0.999"},
}


@pytest.mark.parametrize("override", list(BAD_RELEASES.values()), ids=list(BAD_RELEASES))
def test_bad_release_input(db, tmp_path, capsys, override):
    before = snapshot(db)
    out = tmp_path / "plan.json"
    rc, stdout, err = cli(capsys, *rel_args(db, out, **override))
    assert_one_line_error(rc, stdout, err)
    assert not out.exists() and not (tmp_path / "plan.dictionary.json").exists()
    assert snapshot(db) == before


def test_release_out_in_missing_directory(db, tmp_path, capsys):
    before = snapshot(db)
    out = tmp_path / "nowhere" / "plan.json"
    rc, stdout, err = cli(capsys, *rel_args(db, out))
    assert_one_line_error(rc, stdout, err)
    assert not out.parent.exists()
    assert snapshot(db) == before          # refused before the ledger is charged


def test_release_out_is_a_directory(db, tmp_path, capsys):
    before = snapshot(db)
    rc, stdout, err = cli(capsys, *rel_args(db, tmp_path))
    assert_one_line_error(rc, stdout, err)
    assert snapshot(db) == before


@pytest.mark.parametrize("command", [
    lambda d, t: rel_args(d, t / "plan.json"),
    lambda d, t: ["budget", "--db", str(d)],
    lambda d, t: ["budget", "--db", str(d), "--json"],
    lambda d, t: ["atoms", "load", "--db", str(d), "--input", str(DATA / "cfpb_taxonomy.csv")],
    lambda d, t: ["assignments", "load", "--db", str(d), "--input", str(t / "a.csv")],
], ids=["release", "budget", "budget-json", "atoms-load", "assignments-load"])
def test_missing_store(tmp_path, capsys, command):
    missing = tmp_path / "missing.duckdb"
    (tmp_path / "a.csv").write_text("record_id,atom_id,weight\nr1,0,1.0\n")
    rc, stdout, err = cli(capsys, *command(missing, tmp_path))
    assert_one_line_error(rc, stdout, err)
    assert "no dpspin store" in err
    assert not missing.exists() and not (tmp_path / "plan.json").exists()


def test_missing_db_option(capsys, tmp_path):
    rc, stdout, err = cli(capsys, "release", "--mechanism", "laplace", "--epsilon", "1", "--unit", "record",
                          "--out", tmp_path / "p.json")
    assert_one_line_error(rc, stdout, err)
    assert "--db" in err


def test_empty_target_split(tmp_path, capsys):
    con = synthetic_store(tmp_path / "s.duckdb", m=M_SYNTH, epsilon_budget=10.0, close=False)
    con.execute("UPDATE records SET split = 'aux'")
    con.close()
    dbp = tmp_path / "s.duckdb"
    before = snapshot(dbp)
    for unit in ("record", "user"):
        rc, stdout, err = cli(capsys, *rel_args(dbp, tmp_path / "p.json", **{"--unit": unit}))
        assert_one_line_error(rc, stdout, err)
        assert "target split is empty" in err
    assert snapshot(dbp) == before
    assert not (tmp_path / "p.json").exists()


def test_user_level_without_user_ids(tmp_path, capsys):
    con = synthetic_store(tmp_path / "s.duckdb", m=M_SYNTH, epsilon_budget=10.0, close=False)
    con.execute("UPDATE records SET user_id = NULL WHERE record_id = 'r000-0'")
    con.close()
    before = snapshot(tmp_path / "s.duckdb")
    rc, stdout, err = cli(capsys, *rel_args(tmp_path / "s.duckdb", tmp_path / "p.json"))
    assert_one_line_error(rc, stdout, err)
    assert snapshot(tmp_path / "s.duckdb") == before


def test_no_atoms(tmp_path, capsys):
    con = new_store(tmp_path / "s.duckdb", epsilon_budget=10.0)
    put_records(con, [("r1", "u1", "target")])
    con.close()
    before = snapshot(tmp_path / "s.duckdb")
    rc, stdout, err = cli(capsys, *rel_args(tmp_path / "s.duckdb", tmp_path / "p.json"))
    assert_one_line_error(rc, stdout, err)
    assert snapshot(tmp_path / "s.duckdb") == before


# ------------------------------------------------------------------------------- loading

def test_load_missing_file(db, tmp_path, capsys):
    before = snapshot(db)
    rc, stdout, err = cli(capsys, "load", "--db", db, "--input", tmp_path / "nope.csv")
    assert_one_line_error(rc, stdout, err)
    assert "not found" in err
    assert snapshot(db) == before


def test_load_missing_column(db, tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("id,body\n1,hello there\n2,general kenobi\n")
    before = snapshot(db)
    for args in (["--id-col", "id", "--text-col", "text"], ["--id-col", "ident", "--text-col", "body"],
                 ["--id-col", "id", "--text-col", "body", "--user-col", "author"]):
        rc, stdout, err = cli(capsys, "load", "--db", db, "--input", src, *args)
        assert_one_line_error(rc, stdout, err)
        assert "not in" in err
    assert snapshot(db) == before


def test_load_duplicate_ids_changes_nothing(db, tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("id,text\n1,hello there\n1,general kenobi\n")
    before = snapshot(db)
    rc, stdout, err = cli(capsys, "load", "--db", db, "--input", src, "--id-col", "id")
    assert_one_line_error(rc, stdout, err)
    assert snapshot(db) == before


def test_taxonomy_and_assignments_bad_input(db, tmp_path, capsys):
    before = snapshot(db)
    no_label = tmp_path / "tax.csv"
    no_label.write_text("name,description\nfoo,bar\n")
    no_weight = tmp_path / "a.csv"
    no_weight.write_text("record_id,atom_id\nr000-0,1\n")
    partial_ids = tmp_path / "partial.csv"          # one row without an id: never renumber silently
    partial_ids.write_text("atom_id,label\n,zeta\n5,alpha\n")
    fractional_id = tmp_path / "fraction.csv"
    fractional_id.write_text("atom_id,label\n5.5,alpha\n6,beta\n")
    for args in (["atoms", "load", "--db", db, "--input", tmp_path / "missing.csv"],
                 ["atoms", "load", "--db", db, "--input", no_label],
                 ["atoms", "load", "--db", db, "--input", partial_ids],
                 ["atoms", "load", "--db", db, "--input", fractional_id],
                 ["assignments", "load", "--db", db, "--input", tmp_path / "missing.csv"],
                 ["assignments", "load", "--db", db, "--input", no_weight]):
        rc, stdout, err = cli(capsys, *args)
        assert_one_line_error(rc, stdout, err)
    assert snapshot(db) == before


def test_failed_commands_leave_no_new_store(tmp_path, capsys):
    fresh = tmp_path / "new.duckdb"
    for args in (["init", "--db", fresh, "--epsilon-budget", "-1"],
                 ["init", "--db", fresh, "--epsilon-budget", "nan"],
                 ["load", "--db", fresh, "--input", tmp_path / "nofile.csv"]):
        rc, stdout, err = cli(capsys, *args)
        assert_one_line_error(rc, stdout, err)
        assert not fresh.exists()


# ================================================================================ demo

def test_demo(capsys):
    rc, out, err = cli(capsys, "demo")
    assert rc == 0, err
    assert "Traceback" not in out + err
    assert "rank" in out and "┃" in out and "noisy mass" in out
    assert "budget left" in out


# ================================================================================ real data

def check_plan(plan: dict, dictionary: list[dict], *, mechanism, unit, L, m, K=3, epsilon, delta, texts=()):
    """docs/PLAN.md's shape, and nothing outside the admitted set."""
    assert SPEC_PLAN_KEYS <= set(plan), SPEC_PLAN_KEYS - set(plan)
    assert plan["schema_version"] == "2"
    assert plan["mechanism"] == mechanism and plan["unit"] == unit
    assert plan["L"] == L and plan["m"] == m == len(dictionary) and plan["K"] == K
    assert plan["epsilon"] == epsilon
    assert plan["delta"] == (0.0 if mechanism == "laplace" else delta)
    assert plan["calibration"] == ("laplace" if mechanism == "laplace" else "zcdp")
    assert plan["noise_scale"] > 0 and plan["comparison_margin"] > 0
    assert plan["dictionary"].startswith("sha256:") and plan["created_at"]
    atoms = plan["atoms"]
    assert len(atoms) == L
    assert [a["rank"] for a in atoms] == list(range(1, L + 1))
    by_id = {d["atom_id"]: d for d in dictionary}
    ids = [a["atom_id"] for a in atoms]
    assert len(set(ids)) == L and set(ids) <= set(by_id)
    for a in atoms:
        assert SPEC_ATOM_KEYS <= set(a), SPEC_ATOM_KEYS - set(a)
        assert a["label"] == by_id[a["atom_id"]]["label"]
        assert a["description"] == by_id[a["atom_id"]]["description"]
        assert a["display_mass"] == max(a["noisy_mass"], 0.0)
        assert math.isfinite(a["noisy_mass"])
        assert a["bin"] in ("high", "moderate", "low")
        if plan["public_denominator"]:
            assert a["support"] == pytest.approx(a["display_mass"] / plan["public_denominator"])
        else:
            assert "support" not in a
    masses = [a["noisy_mass"] for a in atoms]
    assert masses == sorted(masses, reverse=True)
    text = json.dumps(plan, ensure_ascii=False).lower()
    admitted_text = " ".join(a["label"] + " " + a["description"] for a in atoms).lower()
    for atom_id, d in by_id.items():
        if atom_id not in ids:
            assert d["label"].lower() not in admitted_text, "taxonomy labels must not overlap"
            assert d["label"].lower() not in text, f"non-admitted atom {d['label']!r} in the plan"
    forbidden = {"seed", "text", "records", "sketch", "true_mass", "mass", "users"}

    def keys(obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield k
                yield from keys(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from keys(v)

    assert not forbidden & set(keys(plan))
    assert plan["noise_source"] == "opendp"
    for t in texts:
        assert t.lower() not in text


def sample_texts(path: Path, field: str, n: int = 20) -> list[str]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            t = (json.loads(line).get(field) or "").strip()
            if len(t) > 60:
                out.append(t[:60])
            if len(out) >= n:
                break
    return out


def read_dictionary(plan_path: Path) -> list[dict]:
    side = plan_path.with_name(plan_path.stem + ".dictionary.json")
    return json.loads(side.read_text())["atoms"]


def taxonomy(name: str) -> list[dict]:
    with open(DATA / name, newline="") as fh:
        return [{"atom_id": i, **row} for i, row in enumerate(csv.DictReader(fh))]


@pytest.fixture(scope="module")
def cfpb_store(tmp_path_factory):
    if not CFPB.exists():
        missing_prerequisite(f"CFPB sample not available: {CFPB} is absent")
    d = tmp_path_factory.mktemp("cfpb")
    db = d / "cfpb.duckdb"
    from dpspin_sql.cli import run

    assert run(["init", "--db", str(db), "--epsilon-budget", "3.0", "--delta-budget", "1e-5"]) == 0
    assert run(["load", "--db", str(db), "--input", str(CFPB), "--preset", "cfpb"]) == 0
    assert run(["atoms", "load", "--db", str(db), "--input", str(DATA / "cfpb_taxonomy.csv")]) == 0
    con = store.connect(db)
    report = assign.assign(con, scorer="keyword", K=3)
    assert report.n_assigned > 500      # records that contain every word of an atom's label; the rest abstain
    con.close()
    return db


@pytest.fixture(scope="module")
def amazon_store(tmp_path_factory):
    if not AMAZON.exists():
        missing_prerequisite(f"Amazon All_Beauty sample not available: {AMAZON} is absent")
    d = tmp_path_factory.mktemp("amazon")
    db = d / "amazon.duckdb"
    from dpspin_sql.cli import run

    assert run(["init", "--db", str(db), "--epsilon-budget", "3.0", "--delta-budget", "1e-5"]) == 0
    assert run(["load", "--db", str(db), "--input", str(AMAZON), "--user-col", "user_id", "--text-col", "text"]) == 0
    assert run(["atoms", "load", "--db", str(db), "--input", str(DATA / "beauty_taxonomy.csv")]) == 0
    con = store.connect(db)
    report = assign.assign(con, scorer="keyword", K=3)
    assert report.n_assigned > 500
    con.close()
    return db


def test_cfpb_raw_load_with_null_id_is_refused(tmp_path, capsys):
    """One CFPB complaint has a null complaint_id: a plain load refuses it cleanly (the cfpb
    preset gives it a surrogate id instead) and loads nothing."""
    if not CFPB.exists():
        missing_prerequisite(f"CFPB sample not available: {CFPB} is absent")
    db = tmp_path / "raw.duckdb"
    new_store(db).close()
    before = snapshot(db)
    rc, out, err = cli(capsys, "load", "--db", db, "--input", CFPB, "--id-col", "complaint_id",
                       "--text-col", "narrative")
    assert_one_line_error(rc, out, err)
    assert "no id" in err
    assert snapshot(db)["records"] == before["records"] == []


def test_cfpb_record_level_end_to_end(cfpb_store, tmp_path, capsys):
    db = cfpb_store
    dictionary = taxonomy("cfpb_taxonomy.csv")
    texts = sample_texts(CFPB, "narrative")
    released = []
    for mechanism, adjacency in (("laplace", "add_drop"), ("gaussian", "add_drop"), ("private_topL", "add_drop"),
                                 ("private_topL", "replace")):
        out = tmp_path / f"{mechanism}-{adjacency}.json"
        rc, stdout, err = cli(capsys, *rel_args(db, out, **{"--mechanism": mechanism, "--unit": "record",
                                                            "--epsilon": "0.5", "--adjacency": adjacency,
                                                            "-L": "5"}))
        assert rc == 0, err
        assert "plan written" in stdout
        plan = read_plan(out)
        assert plan["adjacency"] == adjacency and plan["B"] == 1.0
        check_plan(plan, dictionary, mechanism=mechanism, unit="record", L=5, m=12, epsilon=0.5, delta=1e-6,
                   texts=texts)
        assert [(d["atom_id"], d["label"]) for d in read_dictionary(out)] == \
               [(d["atom_id"], d["label"]) for d in dictionary]
        released.append((plan["release_id"], mechanism))
    # every charge is in the ledger, 4 × 0.5 = 2.0 of 3.0 spent (δ 3e-6)
    rc, stdout, err = cli(capsys, "budget", "--db", db, "--json")
    st = json.loads(stdout)
    assert [(r["release_id"], r["mechanism"]) for r in st["releases"]] == released
    assert st["epsilon_spent"] == pytest.approx(2.0, rel=1e-9) and st["epsilon_spent"] <= 2.0
    assert st["delta_spent"] == pytest.approx(3e-6)
    rc, stdout, err = cli(capsys, "budget", "--db", db)
    assert rc == 0 and stdout.count("record") >= 4
    # past the total: exit 1, no plan, nothing charged
    before = snapshot(db)
    out = tmp_path / "over.json"
    rc, stdout, err = cli(capsys, *rel_args(db, out, **{"--mechanism": "laplace", "--unit": "record",
                                                        "--epsilon": "1.5", "-L": "5"}))
    assert_one_line_error(rc, stdout, err, code=1)
    assert not out.exists() and not (tmp_path / "over.dictionary.json").exists()
    assert snapshot(db) == before


def test_cfpb_public_denominator(cfpb_store, tmp_path, capsys):
    out = tmp_path / "support.json"
    rc, _, err = cli(capsys, *rel_args(cfpb_store, out, **{"--mechanism": "laplace", "--unit": "record",
                                                           "--epsilon": "0.2", "-L": "4",
                                                           "--public-denominator": "6291"}))
    assert rc == 0, err          # fits in either order: 3.0 − 4 × 0.5 leaves 1.0
    plan = read_plan(out)
    check_plan(plan, taxonomy("cfpb_taxonomy.csv"), mechanism="laplace", unit="record", L=4, m=12, epsilon=0.2,
               delta=1e-6)
    assert plan["public_denominator"] == 6291 and plan["bin_basis"] == "support"


def test_amazon_user_level_end_to_end(amazon_store, tmp_path, capsys):
    db = amazon_store
    dictionary = taxonomy("beauty_taxonomy.csv")
    texts = sample_texts(AMAZON, "text")
    released = []
    for mechanism, B, adjacency in (("laplace", 1.0, "add_drop"), ("gaussian", 2.0, "add_drop"),
                                    ("private_topL", 1.0, "add_drop"), ("gaussian", 1.0, "replace")):
        out = tmp_path / f"{mechanism}-{B}-{adjacency}.json"
        rc, stdout, err = cli(capsys, *rel_args(db, out, **{"--mechanism": mechanism, "--unit": "user",
                                                            "--epsilon": "0.5", "-B": B, "--adjacency": adjacency,
                                                            "-L": "6"}))
        assert rc == 0, err
        plan = read_plan(out)
        assert plan["B"] == B and plan["adjacency"] == adjacency
        check_plan(plan, dictionary, mechanism=mechanism, unit="user", L=6, m=12, epsilon=0.5, delta=1e-6,
                   texts=texts)
        released.append(plan["release_id"])
    rc, stdout, _ = cli(capsys, "budget", "--db", db, "--json")
    st = json.loads(stdout)
    assert [r["release_id"] for r in st["releases"]] == released
    assert all(r["params"]["unit"] == "user" for r in st["releases"])
    before = snapshot(db)
    out = tmp_path / "over.json"
    out.write_text("an earlier plan\n")
    rc, stdout, err = cli(capsys, *rel_args(db, out, **{"--epsilon": "1.5"}))
    assert_one_line_error(rc, stdout, err, code=2)          # an existing file needs --force
    rc, stdout, err = cli(capsys, *rel_args(db, out, **{"--epsilon": "1.5"}), "--force")
    assert_one_line_error(rc, stdout, err, code=2)          # and --force replaces plans only
    assert "not a dpspin plan" in err
    assert out.read_text() == "an earlier plan\n"
    assert snapshot(db) == before
