"""The supervised scorer on metadata atoms (issue 22, CFPB top-1): thresholds that maximise
top-1 accuracy on out-of-fold auxiliary scores (an abstaining record is a miss), a linear
SVM on word and character TF-IDF with the dictionary's coarser levels, fitted on the
auxiliary split only, saved without pickle and deterministic."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpspin_sql import assign, builders, fit, relevance, scorers
from dpspin_sql.atoms import current_atoms, current_manifest
from tests.helpers.atoms import cfpb_like, make_store

FIELDS = ["product", "issue", "sub_issue"]


def test_top1_cut_keeps_every_correct_record_and_abstains_only_below_them():
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.1, 0.0])
    y = np.array([1, 0, 1, 1, 0, 0, 0], dtype=bool)
    tau, hits = relevance.top1_cut(s, y)
    assert hits == 3 and tau == pytest.approx((0.6 + 0.2) / 2)    # the lowest correct one passes, the wrong below it not
    assert relevance.top1_cut(np.array([0.5, 0.4]), np.array([0, 1], bool))[0] == 0.4        # no lower score: the score itself
    assert relevance.top1_cut(np.array([0.5, 0.4, 0.0]), np.array([0, 1, 0], bool))[0] == pytest.approx(0.2)
    assert relevance.top1_cut(s, np.zeros(7, bool)) == (math.inf, 0.0)
    assert relevance.top1_cut(np.array([0.0, 0.3]), np.array([1, 0], bool)) == (math.inf, 0.0)   # a 0 score never passes


def test_top1_thresholds_never_cost_a_correct_assignment():
    rng = np.random.default_rng(0)
    S = rng.random((200, 5))
    Y = np.zeros((200, 5), bool)
    Y[np.arange(200), rng.integers(0, 5, 200)] = True
    Y[rng.random(200) < 0.2] = False                 # records outside the dictionary
    tau = relevance.fit_thresholds(S, Y, exclusive=True, criterion="top1")
    B = scorers.best_only(S)
    best = B.argmax(axis=1)
    correct = Y[np.arange(200), best]
    passes = B[np.arange(200), best] >= tau[best]
    assert passes[correct].all()                     # every correct top-1 assignment is kept
    f1 = relevance.fit_thresholds(S, Y, exclusive=True, criterion="f1")
    assert (passes & correct).sum() >= ((B[np.arange(200), best] >= f1[best]) & correct).sum()


def test_every_keeps_each_positive_score():
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.1, 0.0])
    y = np.array([1, 0, 1, 1, 0, 0, 0], dtype=bool)
    assert relevance.top1_cut(s, y, every=True) == (pytest.approx(0.05), 3.0)    # halfway from 0.1 down to 0
    assert relevance.top1_cut(s, np.zeros(7, bool), every=True) == (math.inf, 0.0)


def test_the_rule_that_keeps_more_held_out_hits_is_chosen(tmp_path):
    """Abstain only when it pays: of the highest cut and no abstention, calibrate keeps the
    one with more correct assignments on held-out auxiliary records (a tie: the highest)."""
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(4, split="target", start=5000))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    record = assign.fit_scorer(con, "supervised").calibration
    got = record["held_out_top1"]
    chosen = "no abstention" if got["no abstention"] > got["highest cut"] else "highest cut"
    want = relevance.CRITERION_TEXT["top1-every" if chosen == "no abstention" else "top1"]
    assert record["criterion"] == want
    assert got["no abstention"] >= got["highest cut"]          # abstaining never adds a hit


def test_category_atoms_are_calibrated_for_top1(tmp_path):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(4, split="target", start=5000))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    fitted = assign.fit_scorer(con, "supervised")
    assert fitted.exclusive and "top-1" in fitted.calibration["criterion"]
    assert fitted.char_vocabulary is None             # words only by default (char=True adds characters)
    report = assign.assign(con, fitted, K=3)
    assert report.n_unassigned == 0                   # every target record has its category's words: none abstains
    ev = assign.evaluate(con, K=3)
    assert ev["top1_accuracy"] == 1.0


def _pair(tmp_path, change):
    rows = cfpb_like(12) + cfpb_like(6, split="target", start=5000)
    stores = []
    for name, rs in (("a", rows), ("b", change(rows))):
        (tmp_path / name).mkdir()
        con = make_store(tmp_path / name, rs)
        builders.build(con, "metadata", fields=FIELDS, m=10)
        stores.append(con)
    return stores


def _relabel(rows):
    """Every target record's text and categories changed, and new target records."""
    out = []
    for r in rows:
        if r["split"] == "target":
            md = dict(r["metadata"], product="Mortgage", issue="Trouble during payment process", sub_issue=None)
            r = dict(r, text="escrow escrow " + r["text"][::-1], metadata=md)
        out.append(r)
    return out + cfpb_like(5, split="target", start=9000, canary="qqz")


def test_the_threshold_and_the_model_are_chosen_on_aux_only(tmp_path):
    """Changing the target records (texts and their categories, which top-1 is scored
    against) changes nothing fitted: the thresholds, the record of how they were chosen,
    the vocabularies and the weights are the same bytes."""
    a, b = _pair(tmp_path, _relabel)
    fa, fb = assign.fit_scorer(a, "supervised"), assign.fit_scorer(b, "supervised")
    assert fa.calibration["criterion"] in (relevance.CRITERION_TEXT["top1"], relevance.CRITERION_TEXT["top1-every"])
    assert np.array_equal(fa.thresholds, fb.thresholds)
    assert fa.to_bytes() == fb.to_bytes()
    assert not any("qqz" in t for t in fa.vocabulary + (fa.char_vocabulary or []))


def test_changing_aux_records_changes_the_thresholds(tmp_path):
    """The contrapositive: the thresholds do depend on the auxiliary split they are fitted on."""
    def more_aux(rows):
        return rows + cfpb_like(6, split="aux", start=7000, canary="extra words about fees")
    a, b = _pair(tmp_path, more_aux)
    assert assign.fit_scorer(a, "supervised").to_bytes() != assign.fit_scorer(b, "supervised").to_bytes()


def test_refit_is_identical_and_the_saved_scorer_scores_the_same(tmp_path):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(6, split="target", start=5000))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    fitted = assign.fit_scorer(con, "supervised")
    assert fitted.to_bytes() == assign.fit_scorer(con, "supervised").to_bytes()
    again = scorers.from_bytes(fitted.to_bytes())
    texts = [t for (t,) in con.execute("SELECT text FROM records ORDER BY record_id").fetchall()]
    assert np.array_equal(again.scores(texts), fitted.scores(texts))
    assert again.score_top_k(texts, 3) == fitted.score_top_k(texts, 3)
    for kept in fitted.score_top_k(texts, 3):
        assert len(kept) <= 1 and math.fsum(w for _, w in kept) <= 1.0     # one category, total ≤ 1


def test_the_logistic_scorer_is_still_available_and_loads(tmp_path):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(6, split="target", start=5000))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    _ids, texts, metadata = fit.aux_records(con)
    old = fit.fit_on(texts, metadata, current_atoms(con), current_manifest(con), "supervised", model="logistic")
    assert old.char_vocabulary is None and old.ngrams == 1
    again = scorers.from_bytes(old.to_bytes())
    assert np.array_equal(again.scores(texts), old.scores(texts))


def test_levels_add_the_coarser_categories_weights(tmp_path):
    con = make_store(tmp_path, cfpb_like(12))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    _ids, texts, metadata = fit.aux_records(con)
    atoms, manifest = current_atoms(con), current_manifest(con)
    flat = fit.fit_on(texts, metadata, atoms, manifest, "supervised", levels=False)
    deep = fit.fit_on(texts, metadata, atoms, manifest, "supervised")
    assert flat.coef.shape == deep.coef.shape and not np.array_equal(flat.coef, deep.coef)
    other = flat.class_atoms < 0
    assert np.array_equal(flat.coef[other], deep.coef[other])     # the 'other' class keeps its own weights


def test_char_counts_are_sklearns_bit_for_bit():
    """The scorer's character n-gram counts (per distinct word) give the fitted vectorizer's
    own TF-IDF matrix: same CSR structure, same floats (short words, Unicode whitespace and
    case, empty texts)."""
    train = ["The payday lender charged fees I didn't expect on XX/XX/2019.",
             "Incorrect information on my credit report; it belongs to someone else!",
             "ΟΔΟΣ Σ and İstanbul\u00a0loans\tloans  loans", "a b c", "fees fees fees interest"] * 3
    texts = train + ["", "x", "Fees\u2003FEES  fees. ΣΟΦΟΣ", "unseen words only qwzx", "a  b\n\nc"]
    cvec = scorers.char_vectorizer(min_df=1)
    cvec.fit(train)
    vec = scorers.char_vectorizer(scorers.vocabulary_of(cvec), cvec.idf_)
    want = vec.transform(texts)
    got = scorers.fast_char_transform(vec, texts, scorers.CharCounter(scorers.vocabulary_of(cvec), (2, 5)))
    assert got.dtype == want.dtype and got.has_sorted_indices
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
    assert np.array_equal(got.data, want.data)
