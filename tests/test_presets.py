"""Loaders for the paper's corpora (DuckDB readers only)."""
from __future__ import annotations

import gzip
import json

import pytest

from dpspin_sql import presets, store
from dpspin_sql.errors import BadInput
from tests.helpers.atoms import shared


def write_jsonl(path, rows):
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    return path


EXTRA = {"sub_product": None, "company": "C", "state": "CA", "date_received": "2020-01-01"}


def test_cfpb_null_id_gets_a_marked_surrogate(tmp_path):
    f = write_jsonl(tmp_path / "c.jsonl.gz", [
        dict(EXTRA, complaint_id="1", product="P", issue="I", sub_issue=None, narrative="text one"),
        dict(EXTRA, complaint_id=None, product="P", issue="I", sub_issue="S", narrative="text two")])
    con = store.connect(tmp_path / "s.duckdb", create=True)
    assert presets.load_preset(con, "cfpb", f).loaded == 2
    ids = sorted(r[0] for r in con.execute("SELECT record_id FROM records").fetchall())
    assert ids[0] == "1" and ids[1].startswith("noid-")
    meta = json.loads(con.execute("SELECT metadata FROM records WHERE record_id = '1'").fetchall()[0][0])
    assert meta["product"] == "P" and meta["sub_issue"] is None


def test_amazon_drops_exact_duplicates_and_joins_title(tmp_path):
    row = {"user_id": "U1", "parent_asin": "A", "asin": "A", "rating": 5.0, "title": "Nice", "text": "soft skin",
           "timestamp": 1}
    f = write_jsonl(tmp_path / "a.jsonl.gz", [row, row, dict(row, timestamp=2)])
    con = store.connect(tmp_path / "s.duckdb", create=True)
    assert presets.load_preset(con, "amazon", f).loaded == 2
    assert {r[0] for r in con.execute("SELECT text FROM records").fetchall()} == {"Nice. soft skin"}
    assert {r[0] for r in con.execute("SELECT user_id FROM records").fetchall()} == {"U1"}


def test_yelp_keeps_restaurants_only(tmp_path):
    reviews = write_jsonl(tmp_path / "reviews.jsonl.gz", [
        {"review_id": "r1", "user_id": "u1", "business_id": "b1", "stars": 4, "date": "2012-01-01", "text": "tacos"},
        {"review_id": "r2", "user_id": "u2", "business_id": "b2", "stars": 2, "date": "2012-01-02", "text": "haircut"}])
    write_jsonl(tmp_path / "businesses.jsonl.gz", [
        {"business_id": "b1", "name": "T", "categories": "Mexican; Restaurants"},
        {"business_id": "b2", "name": "H", "categories": "Hair Salons; Beauty"}])
    con = store.connect(tmp_path / "s.duckdb", create=True)
    assert presets.load_preset(con, "yelp", reviews, split="aux").loaded == 1
    assert con.execute("SELECT record_id, user_id, split FROM records").fetchall() == [("r1", "u1", "aux")]


def test_bad_preset_input(tmp_path):
    con = store.connect(tmp_path / "s.duckdb", create=True)
    with pytest.raises(BadInput, match="--preset"):
        presets.load_preset(con, "imdb", tmp_path / "x.jsonl")
    with pytest.raises(BadInput, match="not found"):
        presets.load_preset(con, "cfpb", tmp_path / "missing.jsonl")
    lone = write_jsonl(tmp_path / "lone.jsonl.gz", [{"review_id": "r"}])
    with pytest.raises(BadInput, match="businesses"):
        presets.load_preset(con, "yelp", lone)
    wrong = write_jsonl(tmp_path / "wrong.jsonl.gz", [{"foo": 1}])
    with pytest.raises(BadInput, match="cfpb export"):
        presets.load_preset(con, "cfpb", wrong)


@pytest.mark.parametrize("preset, parts, n, users", [
    ("cfpb", ("cfpb_complaints", "complaints.jsonl.gz"), 6291, 0),
    ("amazon", ("amazon_all_beauty_2023", "reviews.jsonl.gz"), 5076, 1862),
    ("yelp", ("yelp_phoenix_2013", "reviews.jsonl.gz"), 6911, 4843)])
def test_real_corpora_counts(tmp_path, preset, parts, n, users):
    con = store.connect(tmp_path / "s.duckdb", create=True)
    assert presets.load_preset(con, preset, shared(*parts)).loaded == n
    assert con.execute("SELECT count(DISTINCT user_id) FROM records").fetchall()[0][0] == users
