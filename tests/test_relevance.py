"""What a mass means (issue 22): a record gives mass only to the atoms it expresses, its
total stays ≤ 1 and may be 0, the relevance thresholds are fitted on the auxiliary split
only, the same fitted scorer always gives the same rows, and the fidelity is measured on
held-out auxiliary records and said wherever a mass is shown."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpspin_sql import assign, builders, ledger, relevance, scorers
from dpspin_sql import embedding as embed
from dpspin_sql.cli import run
from dpspin_sql.decode import template_summary
from dpspin_sql.mentions import PhraseMatcher, inflections, phrase_forms
from dpspin_sql.release import release
from dpspin_sql.request import ReleaseRequest
from dpspin_sql.verify import verify
from tests.helpers.atoms import cfpb_like, make_store

FIELDS = ["product", "issue", "sub_issue"]
THEMES = {"outdoor seating": ["we sat at the outdoor seating", "the outdoor seating was full", "they have outdoor seating"],
          "friendly staff": ["the friendly staff was there", "so friendly staff", "friendly staff as always"],
          "wine list": ["we read the wine list", "the wine list was there", "ask for the wine list"],
          "live music": ["there was live music", "live music on fridays", "the live music was there"]}
PROFILE = "name: t\nextends: default\nmin_support: 3\npos_filter: false\n"


def reviews(n: int, split: str, start: int = 0, extra: str = "") -> list[dict]:
    """Short reviews: each mentions one or two themes, every fifth mentions none."""
    rows, names = [], list(THEMES)
    for i in range(n):
        if i % 5 == 4:
            text = "we ordered and paid and left"
        else:
            a, b = names[i % 4], names[(i // 4) % 4]
            text = THEMES[a][i % 3] + "." + (f" Also {THEMES[b][(i + 1) % 3]}." if i % 3 == 0 and b != a else "")
        rows.append({"record_id": f"{split[0]}{start + i:05d}", "user_id": f"u{start + i}", "split": split,
                     "text": text + extra})
    return rows


@pytest.fixture()
def phrase_store(tmp_path):
    con = make_store(tmp_path, reviews(80, "aux") + reviews(40, "target", 1000))
    (tmp_path / "t.yaml").write_text(PROFILE)
    builders.build(con, "phrases", profile=tmp_path / "t.yaml")
    return con


def rows_by_record(con) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list] = {}
    for rid, a, w in con.execute("SELECT record_id, atom_id, weight FROM assignment_rows ORDER BY ALL").fetchall():
        out.setdefault(rid, []).append((a, w))
    return out


# -- the rule ---------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(S=st.lists(st.lists(st.one_of(st.floats(0, 3), st.sampled_from([0.0, 1.0, math.nan, math.inf, -1.0])),
                           min_size=5, max_size=5), min_size=1, max_size=8),
       tau=st.lists(st.one_of(st.floats(0.01, 3), st.just(math.inf)), min_size=5, max_size=5),
       K=st.integers(1, 6), renorm=st.booleans(), dense=st.booleans())
def test_calibrated_rule_gives_mass_only_above_threshold_and_at_most_one(S, tau, K, renorm, dense):
    from scipy import sparse

    S, tau = np.array(S), np.array(tau)
    M = S if dense else sparse.csr_matrix(np.where(np.isnan(S), 0.0, S))     # ±inf stored as entries
    rows, cols, w = scorers.top_k_columns(M, K, renormalise=renorm, thresholds=tau)
    clean = np.nan_to_num(S, nan=0.0, posinf=0.0, neginf=0.0)                # never relevant
    for r in range(S.shape[0]):
        mine = cols[rows == r]
        weights = w[rows == r]
        above = [j for j in range(5) if clean[r, j] > 0 and np.isfinite(tau[j]) and clean[r, j] >= tau[j]]
        assert set(mine) <= set(above)                         # only atoms the record reaches
        assert len(mine) == min(len(above), K)                 # the K best of them, no fewer
        assert math.fsum(weights) <= 1.0 and weights.sum() <= 1.0
        if len(mine):
            want = (1.0 / len(mine) if renorm else 1.0 / K) * (scorers._SHRINK if len(mine) > 1 else 1.0)
            assert np.all(weights == want)                     # equal shares of the unit
        else:
            assert not above                                   # abstains only with no evidence


def test_a_record_with_no_evidence_abstains(phrase_store):
    report = assign.assign(phrase_store, "auto", K=3)
    assert report.scorer == "keyword" and report.calibrated
    per = rows_by_record(phrase_store)
    texts = dict(phrase_store.execute("SELECT record_id, text FROM records WHERE split = 'target'").fetchall())
    labels = [lab for (lab,) in phrase_store.execute("SELECT label FROM atoms").fetchall()]
    silent = [r for r, t in texts.items() if not any(lab in t for lab in labels)]
    assert silent and not any(r in per for r in silent)        # no mass at all: total 0
    assert report.n_unassigned == len(silent)
    for _rid, kept in per.items():
        assert math.fsum(w for _, w in kept) <= 1.0 and len(kept) <= 3


def test_keyword_mass_counts_records_that_mention_the_phrase(phrase_store):
    assign.assign(phrase_store, "keyword", K=5)     # more than any review mentions: none is cut
    labels = dict(phrase_store.execute("SELECT atom_id, label FROM atoms").fetchall())
    texts = dict(phrase_store.execute("SELECT record_id, text FROM records WHERE split = 'target'").fetchall())
    for rid, kept in rows_by_record(phrase_store).items():
        assert {labels[a] for a, _ in kept} == {lab for lab in labels.values() if lab in texts[rid]}
        assert all(w == pytest.approx(1 / len(kept), abs=1e-6) for _, w in kept)


def test_inflections_are_mentions():
    assert set(inflections("potatoes")) >= {"potato"} and set(inflections("fry")) >= {"fries"}
    m = PhraseMatcher([phrase_forms("mashed potatoes"), phrase_forms("egg roll", ["egg rolls"])])
    got = m.counts(["The MASHED potato was cold.", "egg-rolls", "two egg rolls", "mashed. potatoes"]).toarray()
    assert (got > 0).tolist() == [[True, False], [False, False], [False, True], [False, False]]


# -- calibration on aux only, and determinism -------------------------------------------

@pytest.mark.parametrize("kind", ["similarity", "supervised", "keyword"])
def test_changing_target_text_changes_no_fitted_parameter(tmp_path, kind):
    rows = cfpb_like(12) + cfpb_like(6, split="target", start=5000)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = make_store(tmp_path / "a", rows)
    b = make_store(tmp_path / "b", [dict(r, text=("zzq " * 9) + r["text"][::-1]) if r["split"] == "target" else r
                                    for r in rows] + cfpb_like(5, split="target", start=9000, canary="qqz"))
    for con in (a, b):
        builders.build(con, "metadata", fields=FIELDS, m=10)
    fa, fb = assign.fit_scorer(a, kind), assign.fit_scorer(b, kind)
    assert fa.calibrated and fb.calibrated
    assert fa.to_bytes() == fb.to_bytes()                     # thresholds, fidelity and model, byte for byte


def test_the_same_fitted_scorer_gives_identical_rows(phrase_store):
    fitted = assign.fit_scorer(phrase_store, "similarity")
    assert fitted.to_bytes() == assign.fit_scorer(phrase_store, "similarity").to_bytes()   # a refit is the same
    again = scorers.from_bytes(fitted.to_bytes())
    texts = [t for (t,) in phrase_store.execute("SELECT text FROM records ORDER BY record_id").fetchall()]
    assert again.score_top_k(texts, 3) == fitted.score_top_k(texts, 3)
    assert np.array_equal(again.thresholds, fitted.thresholds) and again.calibration == fitted.calibration
    assign.assign(phrase_store, fitted, K=3, batch_size=7)
    first = rows_by_record(phrase_store)
    assign.assign(phrase_store, assign.load_scorer(phrase_store), K=3, batch_size=3, workers=2)
    assert rows_by_record(phrase_store) == first


def test_thresholds_are_fitted_out_of_fold(phrase_store):
    """Each fold's scores come from a scorer fitted on the other folds only."""
    from dpspin_sql import fit
    from dpspin_sql.atoms import current_atoms, current_manifest

    ids, texts, metadata = fit.aux_records(phrase_store)
    atoms, manifest = current_atoms(phrase_store), current_manifest(phrase_store)
    folds = relevance.record_folds(ids)
    seen: list[set[str]] = []

    def fit_on(t, md):
        seen.append(set(t))
        return fit.fit_on(t, md, atoms, manifest, "similarity")

    full = fit_on(texts, metadata)
    relevance.calibrate(full, fit_on, texts, metadata, ids, atoms, manifest, K=3)
    assert len(seen) == 1 + relevance.FOLDS
    for f, trained in enumerate(seen[1:]):
        held = {texts[i] for i in np.flatnonzero(folds == f)} - {texts[i] for i in np.flatnonzero(folds != f)}
        assert held and not (held & trained)
    record = full.calibration
    assert record["held_out"] and record["folds"] == relevance.FOLDS and record["definition"] == "mention"


def test_best_cut_maximises_f1():
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.1, 0.0])
    y = np.array([1, 1, 0, 1, 0, 0, 1], dtype=bool)
    tau, f1 = relevance.best_cut(s, y)
    assert f1 == pytest.approx(2 * 3 / (4 + 4))        # the cut at 0.6: 3 of the 4 labelled, 4 predicted
    assert tau == pytest.approx((0.6 + 0.2) / 2)      # halfway to the next lower score: same records pass
    assert relevance.best_cut(np.array([3.0, 2.0, 1.0]), np.array([1, 1, 1], bool)) == (1.0, 1.0)
    assert relevance.best_cut(s, np.zeros(7, bool)) == (math.inf, 0.0)


# -- fidelity and what a mass measures ----------------------------------------------------

def test_fidelity_is_stored_with_the_dictionary_and_reported(phrase_store, tmp_path, capsys):
    phrase_store.close()
    db = tmp_path / "s.duckdb"
    assert run(["assign", "--db", str(db), "--scorer", "similarity"]) == 0
    said = capsys.readouterr().out
    assert "one unit of mass: weight of records assigned to the theme by the similarity scorer" in said
    assert "held-out auxiliary records: precision" in said
    from dpspin_sql import store

    con = store.connect(db)
    fid = assign.load_scorer(con).calibration["fidelity"]
    m = con.execute("SELECT count(*) FROM atoms").fetchone()[0]
    assert 0 <= fid["precision"] <= 1 and 0 <= fid["recall"] <= 1 and len(fid["atoms"]) == m == 4
    assert {"precision", "recall", "expressing", "assigned", "mass"} <= set(fid["atoms"][0])


@pytest.mark.parametrize("kind,unit", [("keyword", "records that mention the theme"),
                                       ("similarity", "weight of records assigned to the theme by the similarity")])
def test_the_plan_card_and_template_say_what_a_mass_measures(phrase_store, tmp_path, kind, unit):
    ledger.set_budget(phrase_store, 10.0, 1e-5)
    assign.assign(phrase_store, kind, K=3)
    plan = release(phrase_store, ReleaseRequest(mechanism="laplace", epsilon=1.0, unit="record", L=3),
                   out=tmp_path / "plan.json").to_dict()
    assert plan["mass_unit"].startswith(unit) and plan["assignment"]["scorer"] == kind
    assert plan["assignment"]["calibrated"] and plan["assignment"]["fidelity"]["precision"] is not None
    for a in plan["atoms"]:
        assert a["measure"] == (f'records that mention "{a["label"]}"' if kind == "keyword"
                                else f'weight of records assigned to "{a["label"]}" by the similarity scorer')
        assert set(a["fidelity"]) == {"precision", "recall"}
    text = template_summary(plan)
    assert f"Unit of mass: {unit}" in text and verify(text, plan).accepted
    from dpspin_sql.card import gather, render

    page = render(gather(tmp_path / "plan.json"))
    assert "Unit of mass" in page and "the mass measures" in page and "precision (aux)" in page


def test_release_warns_below_the_documented_fidelity(tmp_path, capsys):
    con = make_store(tmp_path, reviews(80, "aux") + reviews(40, "target", 1000))
    (tmp_path / "t.yaml").write_text(PROFILE)
    builders.build(con, "phrases", profile=tmp_path / "t.yaml")
    ledger.set_budget(con, 10.0, 1e-5)
    con.close()
    db = str(tmp_path / "s.duckdb")
    for flag, warned in (("--calibrate", False), ("--no-calibrate", True)):
        assert run(["assign", "--db", db, "--scorer", "similarity", flag]) == 0
        capsys.readouterr()
        assert run(["release", "--db", db, "--mechanism", "laplace", "--epsilon", "0.5", "--unit", "record",
                    "-L", "3", "--out", str(tmp_path / f"p{flag}.json")]) == 0
        lines = [ln for ln in capsys.readouterr().err.splitlines() if "fidelity" in ln]
        assert len(lines) == (1 if warned else 0), lines
    assert relevance.release_warning({"scorer": "similarity", "fidelity": {"precision": 0.5, "recall": 0.9}})
    assert relevance.release_warning({"scorer": "keyword", "fidelity": {"precision": 1.0, "recall": 0.9}}) is None


# -- better dictionaries -----------------------------------------------------------------

def test_near_duplicates_merge_and_a_profile_excludes_places_dishes_and_names(tmp_path, capsys):
    texts = (["good food and good service"] * 6 + ["great food here"] * 4 + ["great service here"] * 3
             + ["parking at the strip mall"] * 5 + ["the mashed potatoes were cold"] * 5
             + ["we walked around Old Town after", "then Old Town again", "I love Old Town", "back to Old Town",
                "near Old Town", "the old town"] + ["the outdoor patio"] * 5
             + ["we flew to New York", "then New York again", "I love New York", "back to New York",
                "near New York", "the new york"])
    con = make_store(tmp_path, [{"record_id": f"a{i}", "text": t, "split": "aux"} for i, t in enumerate(texts)])
    (tmp_path / "themes.yaml").write_text(PROFILE + "exclude: [places, dishes, names]\ndish_words: [potatoes]\n")
    (tmp_path / "all.yaml").write_text(PROFILE)
    _, plain = builders.build(con, "phrases", profile=tmp_path / "all.yaml")
    labels = {e["label"] for e in plain["atoms"]}
    assert {"good food", "good service", "strip mall", "mashed potatoes", "old town", "new york"} <= labels
    assert "great food" not in labels and "great service" not in labels          # merged into the good ones
    food = next(e for e in plain["atoms"] if e["label"] == "good food")
    assert "great food" in food["variants"] and food["aux_support"] == 10
    _, themes = builders.build(con, "phrases", profile=tmp_path / "themes.yaml")
    assert {e["label"] for e in themes["atoms"]} == {"good food", "good service", "outdoor patio"}
    removed = themes["counts"]["removed"]
    assert removed["place"] >= 1 and removed["dish"] >= 1 and removed["name"] >= 1
    con.close()
    assert run(["atoms", "build", "--db", str(tmp_path / "s.duckdb"), "--builder", "phrases",
                "--profile", str(tmp_path / "themes.yaml"), "-m", "40"]) == 0
    err = capsys.readouterr().err
    assert "3 atoms, not the 40 asked for (-m 40)" in err and len(err.strip().splitlines()) == 1


def test_metadata_m_shortfall_is_said(tmp_path):
    con = make_store(tmp_path, cfpb_like(6))
    _, manifest = builders.build(con, "metadata", fields=FIELDS, m=50)
    assert manifest["m"] == 4 and manifest["shortfall"].startswith("4 atoms, not the 50 asked for")


# -- the embedding scorer catches paraphrases ---------------------------------------------

@pytest.mark.skipif(embed.available() is not None, reason=f"embedding scorer unavailable: {embed.available()}")
def test_the_embedding_scorer_catches_a_paraphrase(phrase_store):
    fitted = assign.fit_scorer(phrase_store, "embedding")
    assert fitted.calibrated and fitted.calibration["held_out"]
    labels = {int(a): lab for a, lab in phrase_store.execute("SELECT atom_id, label FROM atoms").fetchall()}
    paraphrases = {"a band played songs on stage all night": "live music",
                   "the people working there were kind and welcoming": "friendly staff"}
    keyword = assign.fit_scorer(phrase_store, "keyword")
    assert keyword.score_top_k(list(paraphrases), 3) == [[], []]             # neither mentions its theme
    for text, theme in paraphrases.items():
        got = [labels[a] for a, _ in fitted.score_top_k([text], 3)[0]]
        assert got and got[0] == theme, (text, got)
    assert fitted.score_top_k(["the invoice was paid by bank transfer"], 3) == [[]]   # nothing like a theme


def test_loaded_assignments_state_their_own_unit(phrase_store, tmp_path):
    from dpspin_sql import store

    assign.assign(phrase_store, "keyword", K=3)
    assert assign.assignment_info(phrase_store)["scorer"] == "keyword"
    rows = phrase_store.execute("SELECT record_id, atom_id, weight FROM assignment_rows").fetchall()
    (tmp_path / "mine.csv").write_text("record_id,atom_id,weight\n" + "".join(f"{r},{a},{w}\n" for r, a, w in rows))
    store.load_assignments(phrase_store, tmp_path / "mine.csv", replace=True)
    info = assign.assignment_info(phrase_store)
    assert info["scorer"] == "loaded" and not info["calibrated"] and info["fidelity"] is None
    assert "loaded" in info["mass_unit"] and relevance.release_warning(info) is None
