"""Atom builders: metadata top-m and phrase themes, from the auxiliary split only."""
from __future__ import annotations

import json

import pytest

from dpspin_sql import atoms, builders, phrases, split, store
from dpspin_sql.cli import run
from dpspin_sql.errors import BadInput
from tests.helpers.atoms import cfpb_like, make_store, shared

FIELDS = ["product", "issue", "sub_issue"]


def test_metadata_top_m_ranked_with_manifest(tmp_path):
    con = make_store(tmp_path, cfpb_like(10) + cfpb_like(50, split="target", start=1000))
    out = tmp_path / "manifest.json"
    dictionary_id, manifest = builders.build(con, "metadata", fields=FIELDS, m=3, manifest_out=out)
    got = atoms.current_atoms(con)
    assert [a.label for a in got] == [
        "Credit reporting / Incorrect information on your report / Information belongs to someone else",
        "Debt collection / Attempts to collect debt not owed / Debt is not yours",
        "Mortgage / Trouble during payment process"]          # 10, 10, 10: ties broken by text
    assert [a.aux_support for a in got] == [10.0, 10.0, 10.0]   # aux only: the 50 target copies never count
    assert manifest["m"] == 3 and manifest["dictionary"] == dictionary_id
    c = manifest["counts"]
    assert c["candidates"] == 4
    assert c["candidates"] == c["beyond_m"] + c["below_threshold"] + c["label_collisions"] + c["kept"]
    assert json.loads(out.read_text())["dictionary"] == dictionary_id
    assert atoms.current_manifest(con)["atoms"][0]["aux_support"] == 10.0


def test_metadata_realised_m_when_fewer_exist(tmp_path):
    con = make_store(tmp_path, cfpb_like(4))
    _, manifest = builders.build(con, "metadata", fields=FIELDS, m=50)
    assert manifest["m"] == 4 and manifest["m_requested"] == 50


@pytest.mark.parametrize("kwargs, match", [
    (dict(fields=["nope"]), "does not exist"),
    (dict(fields=FIELDS, m=0), "-m"),
    (dict(fields=FIELDS, m=-3), "-m"),
    (dict(fields=[]), "--fields"),
])
def test_metadata_bad_input(tmp_path, kwargs, match):
    con = make_store(tmp_path, cfpb_like(3))
    with pytest.raises(BadInput, match=match):
        builders.build(con, "metadata", **kwargs)


def test_empty_aux_split_is_bad_input(tmp_path):
    con = make_store(tmp_path, cfpb_like(3, split="target"))
    for builder, kw in (("metadata", dict(fields=FIELDS)), ("phrases", {})):
        with pytest.raises(BadInput, match="auxiliary split is empty"):
            builders.build(con, builder, **kw)


def test_cli_bad_input_exits_2(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    make_store(tmp_path, cfpb_like(3)).close()
    assert run(["atoms", "build", "--db", str(db), "--builder", "metadata", "--fields", "missing_col"]) == 2
    assert run(["atoms", "build", "--db", str(db), "--builder", "metadata", "--fields", "product", "-m", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error:") for line in err)


# -- phrases -----------------------------------------------------------------------------

def review_rows(n: int = 30) -> list[dict]:
    texts = ["Great product, highly recommend. Easy apply and my dry skin loves it.",
             "Wasted money. It caused skin irritation on my sensitive skin.",
             "Works great! Love love it. Easy application, dry skin is gone.",
             "I wasted money again; waste money on this. Sensitive skin broke out.",
             "The staff friendly and the friendly staff smiled. Skin irritation too."]
    return [{"record_id": f"a{i}", "text": texts[i % len(texts)], "split": "aux"} for i in range(n)]


def test_phrases_rules(tmp_path):
    con = make_store(tmp_path, review_rows(50))
    _, manifest = builders.build(con, "phrases", profile="default", min_support=5)
    labels = [a.label for a in atoms.current_atoms(con)]
    assert "waste money" in labels and "wasted money" not in labels           # canonicalised
    assert {"dry skin", "sensitive skin", "skin irritation"} <= set(labels)  # distinct concerns stay distinct
    assert "friendly staff" in labels and "staff friendly" not in labels       # word-order variant merged
    for generic in ("great product", "highly recommend", "works great", "love love"):
        assert generic not in labels
    assert all(len(label.split()) == 2 for label in labels)
    check_phrase_manifest(manifest, atoms.current_atoms(con))


def test_beauty_profile_canonicalises_easy_apply(tmp_path):
    con = make_store(tmp_path, review_rows(50))
    builders.build(con, "phrases", profile="beauty", min_support=5)
    labels = [a.label for a in atoms.current_atoms(con)]
    assert "easy application" in labels and "easy apply" not in labels


def test_restaurant_profile_canonicalises_staff_friendly(tmp_path):
    con = make_store(tmp_path, [{"record_id": f"y{i}", "split": "aux",
                                 "text": "Staff friendly. Long wait though." if i % 2 else "The staff friendly, food good"}
                                for i in range(40)])
    builders.build(con, "phrases", profile="restaurants", min_support=5)
    labels = [a.label for a in atoms.current_atoms(con)]
    assert "friendly staff" in labels and "long wait" in labels and "staff friendly" not in labels


def test_user_profile_file_extends_a_builtin(tmp_path):
    custom = tmp_path / "mine.yaml"
    custom.write_text("name: mine\nextends: default\nmin_support: 5\ngeneric_phrases: [dry skin]\n")
    con = make_store(tmp_path, review_rows(50))
    _, manifest = builders.build(con, "phrases", profile=str(custom))
    labels = [a.label for a in atoms.current_atoms(con)]
    assert "dry skin" not in labels and "sensitive skin" in labels
    assert manifest["profile"] == "mine" and manifest["threshold"] == 5
    bad = tmp_path / "bad.yaml"
    bad.write_text("merge: {a b: a b c}\n")
    with pytest.raises(BadInput, match="two-word"):
        phrases.load_profile(str(bad))
    with pytest.raises(BadInput, match="unknown profile"):
        phrases.load_profile("no-such-profile")


def check_phrase_manifest(manifest: dict, got: list) -> None:
    c = manifest["counts"]
    assert c["candidates"] == sum(c["removed"].values()) + c["kept_candidates"]
    assert c["kept_candidates"] == c["themes"] + c["merged_variants"]
    assert c["themes"] == c["below_threshold"] + c["above_threshold"]
    assert c["above_threshold"] == c["beyond_m"] + c["final_m"] == c["beyond_m"] + len(got)
    supports = [a.aux_support for a in got]
    assert all(s >= manifest["threshold"] for s in supports)
    assert [(-s, a.label) for s, a in zip(supports, got)] == sorted((-s, a.label) for s, a in zip(supports, got))
    assert [e["label"] for e in manifest["atoms"]] == [a.label for a in got]
    profile = phrases.load_profile(manifest["profile_source"]) if manifest["profile_source"] else None
    for a in got:
        assert len(a.label.split()) == 2
        if profile is not None:
            assert phrases.removal_reason(a.label, profile) is None or a.label in profile.words("keep_phrases")


@pytest.mark.parametrize("preset, reviews, profile", [
    ("amazon", ("amazon_all_beauty_2023", "reviews.jsonl.gz"), "beauty"),
    ("yelp", ("yelp_phoenix_2013", "reviews.jsonl.gz"), "restaurants")])
def test_phrases_on_real_corpora(tmp_path, preset, reviews, profile):
    from dpspin_sql import presets

    con = store.connect(tmp_path / "s.duckdb", create=True)
    presets.load_preset(con, preset, shared(*reviews))
    split.split(con, "user", 0.5, seed=0)
    _, manifest = builders.build(con, "phrases", profile=profile)
    got = atoms.current_atoms(con)
    assert manifest["threshold"] == 25 and len(got) >= 5
    check_phrase_manifest(manifest, got)
    sentiment = phrases.load_profile(profile).words("sentiment_words")
    assert not any(set(a.label.split()) <= sentiment for a in got)
