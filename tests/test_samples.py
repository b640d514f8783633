"""A fresh clone has what the README runs: the shipped synthetic CFPB sample is exactly what
its script writes, the tests look for the real corpora where $DPSPIN_DATA says, and the
presets read the publishers' own exports (the CFPB's CSV and JSON, the current Yelp Open
Dataset's comma-separated categories)."""
from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

from tests.helpers.core import cli
from tests.helpers.data import CFPB_CSV_HEADER, data_root

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "examples" / "data" / "cfpb_complaints" / "complaints.jsonl.gz"


def _generator():
    spec = importlib.util.spec_from_file_location("make_cfpb_sample", REPO / "examples" / "make_cfpb_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_sample_is_what_its_script_writes():
    assert SAMPLE.read_bytes() == _generator().sample_bytes()


def test_the_shipped_sample_is_synthetic_and_cfpb_shaped():
    rows = _generator().complaints()
    assert len(rows) == 2400 and len({r["complaint_id"] for r in rows}) == 2400
    assert set(rows[0]) == {"complaint_id", "narrative", "product", "sub_product", "issue", "sub_issue", "company",
                            "state", "date_received"}
    assert len({(r["product"], r["issue"], r["sub_issue"]) for r in rows}) >= 30


def test_the_tests_look_for_the_corpora_where_dpspin_data_says(monkeypatch, tmp_path):
    monkeypatch.delenv("DPSPIN_DATA", raising=False)
    assert data_root() == REPO.parent / "shared" / "data"
    monkeypatch.setenv("DPSPIN_DATA", str(tmp_path))
    assert data_root() == tmp_path
    monkeypatch.setenv("DPSPIN_DATA", "examples/data")
    assert data_root() == REPO / "examples" / "data"


def test_the_cfpb_preset_reads_the_cfpbs_json_export(tmp_path, capsys):
    """The CFPB's JSON (an array, the API's field names: complaint_what_happened, ...)."""
    rows = [{"complaint_id": 9000000 + i, "complaint_what_happened": "" if i == 2 else f"charged twice ({i})",
             "product": "Debt collection", "sub_product": None, "issue": "Written notification",
             "sub_issue": None, "company": "Bank", "state": "CA", "date_received": "2023-01-01",
             "zip_code": None, "timely": "Yes"} for i in range(3)]
    src = tmp_path / "complaints.json"
    src.write_text(json.dumps(rows))
    db = tmp_path / "s.duckdb"
    assert cli(capsys, "init", "--db", db)[0] == 0
    rc, out, err = cli(capsys, "load", "--db", db, "--input", src, "--preset", "cfpb")
    assert rc == 0, err
    assert "loaded 2 records" in out and "1 rejected" in out


def test_the_yelp_preset_reads_the_open_datasets_comma_separated_categories(tmp_path, capsys):
    reviews = tmp_path / "yelp_academic_dataset_review.json"
    businesses = tmp_path / "yelp_academic_dataset_business.json"
    reviews.write_text("".join(json.dumps({"review_id": f"r{i}", "user_id": f"u{i % 2}", "business_id": f"b{i % 3}",
                                           "stars": 4.0, "useful": 0, "funny": 0, "cool": 0, "text": f"good {i}",
                                           "date": "2018-07-07 22:09:11"}) + "\n" for i in range(6)))
    businesses.write_text("".join(json.dumps(b) + "\n" for b in [
        {"business_id": "b0", "name": "Pizza", "categories": "Restaurants, Pizza"},
        {"business_id": "b1", "name": "Bar", "categories": "Nightlife, Beer, Wine & Spirits"},
        {"business_id": "b2", "name": "Old", "categories": "Food; Restaurants"}]))
    db = tmp_path / "s.duckdb"
    assert cli(capsys, "init", "--db", db)[0] == 0
    rc, out, err = cli(capsys, "load", "--db", db, "--input", reviews, "--preset", "yelp")
    assert rc == 0, err
    assert "loaded 4 records" in out and "2 rejected" in out


def test_the_cfpb_preset_reads_the_cfpbs_csv_export(tmp_path, capsys):
    src = tmp_path / "complaints.csv"
    with open(src, "w", newline="", encoding="utf-8-sig") as fh:
        w = csv.writer(fh)
        w.writerow(CFPB_CSV_HEADER)
        w.writerow(["2023-01-01", "Mortgage", "", "Escrow", "", "taxes went up,\nnobody said why", "", "Bank", "TX",
                    "", "", "Consent provided", "Web", "2023-01-02", "Closed", "Yes", "N/A", "7000001"])
    db = tmp_path / "s.duckdb"
    assert cli(capsys, "init", "--db", db)[0] == 0
    rc, out, err = cli(capsys, "load", "--db", db, "--input", src, "--preset", "cfpb")
    assert rc == 0 and "loaded 1 records" in out, err
