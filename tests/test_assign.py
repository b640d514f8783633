"""The assignment map: K-sparse, L1 ≤ 1, fitted on aux only, saved and re-applied."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpspin_sql import assign, atoms, builders, scorers, split
from dpspin_sql import embedding as embed
from dpspin_sql.cli import run
from dpspin_sql.errors import BadInput
from tests.helpers.atoms import assert_no_canary_in_scorer, cfpb_like, make_store, shared

FIELDS = ["product", "issue", "sub_issue"]
WORDS = ["skin", "dry", "hair", "fee", "late", "debt", "card", "smell", "pump", "staff", "wait", "food",
         "the", "and", "credit", "report", "loan", "price", "quick", "soft"]
CANARY = "zorblaxquint"


def check_rows(rows, K):
    for kept in rows:
        assert len(kept) <= K
        assert len({a for a, _ in kept}) == len(kept)
        assert all(w > 0 and math.isfinite(w) for _, w in kept)
        assert math.fsum(w for _, w in kept) <= 1.0 and sum(w for _, w in kept) <= 1.0


text_st = st.lists(st.sampled_from(WORDS + ["x", "", "!!", "ünï"]), max_size=12).map(" ".join)
label_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(labels=st.lists(label_st, min_size=1, max_size=8, unique=True), texts=st.lists(text_st, max_size=10),
       K=st.integers(1, 5))
def test_keyword_and_similarity_rows_are_bounded(labels, texts, K):
    dictionary = [atoms.Atom(i * 3, lab) for i, lab in enumerate(labels)]
    kw = scorers.KeywordScorer.from_atoms(dictionary)
    check_rows(kw.score_top_k(texts, K), K)
    vec = scorers.tfidf_vectorizer(ngrams=2)
    vec.fit(WORDS + labels)
    A = vec.transform(labels)
    sim = scorers.SimilarityScorer([a.atom_id for a in dictionary], scorers.vocabulary_of(vec), vec.idf_, A)
    check_rows(sim.score_top_k(texts, K), K)


@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.lists(st.one_of(st.floats(-2, 5), st.sampled_from([math.nan, math.inf, -math.inf, 0.0])), min_size=4, max_size=4),
                       min_size=1, max_size=6), K=st.integers(1, 6), renorm=st.booleans())
def test_top_k_normalise_bounds_any_scores(scores, K, renorm):
    rows = scorers.top_k_normalise(np.array(scores), np.array([7, 3, 9, 1]), K, renormalise=renorm)
    check_rows(rows, K)


def test_ties_go_to_the_lower_atom_index():
    rows = scorers.top_k_normalise(np.array([[1.0, 1.0, 1.0, 2.0]]), np.array([10, 11, 12, 13]), 2)
    assert [a for a, _ in rows[0]] == [13, 10]


def fitted_store(tmp_path):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(6, split="target", start=5000, canary=CANARY)
                     + [{"record_id": "blank", "text": "nothing relevant here", "split": "target"}])
    builders.build(con, "metadata", fields=FIELDS, m=10)
    return con


@pytest.mark.parametrize("scorer", ["keyword", "similarity", "supervised"])
def test_assign_writes_bounded_rows_and_saves_the_scorer(tmp_path, scorer):
    con = fitted_store(tmp_path)
    report = assign.assign(con, scorer, K=2, batch_size=7)
    assert report.n_records == 6 * 4 - 3 + 1 and report.n_assigned + report.n_unassigned == report.n_records
    rows = con.execute("SELECT record_id, atom_id, weight FROM assignment_rows").fetchall()
    per: dict[str, list] = {}
    for rid, aid, w in rows:
        per.setdefault(rid, []).append((aid, w))
    check_rows(per.values(), 2)
    aux = {r for (r,) in con.execute("SELECT record_id FROM records WHERE split = 'aux'").fetchall()}
    assert per and not (aux & set(per))                          # aux records are never assigned
    again = assign.load_scorer(con)
    texts = ["collector called about a debt", "late fee and interest"]
    assert again.score_top_k(texts, 2) == assign.fit_scorer(con, scorer).score_top_k(texts, 2)
    blob = con.execute("SELECT scorer FROM dictionary").fetchall()[0][0]
    np.load(io.BytesIO(blob), allow_pickle=False)               # portable: npz, never a pickle


def test_unscored_records_are_counted(tmp_path):
    con = fitted_store(tmp_path)
    report = assign.assign(con, "keyword", K=3)
    assert report.n_unassigned >= 1
    assert con.execute("SELECT count(*) FROM assignment_rows WHERE record_id = 'blank'").fetchall()[0][0] == 0


NEEDS_MODEL = pytest.mark.skipif(embed.available() is not None,
                                 reason=f"embedding model not installed: {embed.available()}")


@pytest.mark.parametrize("scorer", ["keyword", "similarity", "supervised",
                                    pytest.param("embedding", marks=NEEDS_MODEL),
                                    pytest.param("embedding-supervised", marks=NEEDS_MODEL)])
def test_target_canary_never_reaches_dictionary_or_scorer(tmp_path, scorer):
    con = fitted_store(tmp_path)
    assign.assign(con, scorer, K=3)
    for a in atoms.current_atoms(con):
        assert CANARY not in a.label.lower() and CANARY not in a.description.lower()
    assert CANARY not in str(atoms.current_manifest(con))
    fitted = assign.load_scorer(con)
    assert_no_canary_in_scorer(fitted, CANARY)
    assert CANARY.encode() not in con.execute("SELECT scorer FROM dictionary").fetchall()[0][0]


def test_the_canary_check_sees_a_planted_canary():
    """The power of the canary tests above: a scorer that does hold the canary is caught."""
    import numpy as np

    for planted in (scorers.KeywordScorer([0, 1], [["fee"], ["late", CANARY]]),
                    scorers.SimilarityScorer([0], ["fee", CANARY], np.ones(2), np.ones((1, 2)))):
        with pytest.raises(AssertionError):
            assert_no_canary_in_scorer(planted, CANARY)
    assert_no_canary_in_scorer(scorers.KeywordScorer([0, 1], [["fee"], ["late"]]), CANARY)


def test_phrase_dictionary_canary(tmp_path):
    rows = [{"record_id": f"a{i}", "split": "aux", "text": "dry skin and sensitive skin, strong smell"} for i in range(30)]
    rows += [{"record_id": f"t{i}", "split": "target", "text": f"{CANARY} skin {CANARY} smell, dry {CANARY}"}
             for i in range(60)]
    con = make_store(tmp_path, rows)
    builders.build(con, "phrases", min_support=5)
    assign.assign(con, "similarity", K=3)
    assert not any(CANARY in a.label or CANARY in a.description for a in atoms.current_atoms(con))
    assert not any(CANARY in t for t in assign.load_scorer(con).vocabulary)


@pytest.mark.parametrize("K", [0, -1, 1.5, True])
def test_bad_K(tmp_path, K):
    con = fitted_store(tmp_path)
    with pytest.raises(BadInput, match="K = "):
        assign.assign(con, "keyword", K=K)


def test_bad_scorer_and_missing_pieces(tmp_path):
    con = fitted_store(tmp_path)
    with pytest.raises(BadInput, match="--scorer"):
        assign.assign(con, "magic")
    empty = make_store(tmp_path, [{"record_id": "1", "text": "a"}], name="e.duckdb")
    with pytest.raises(BadInput, match="no atoms"):
        assign.assign(empty, "keyword")
    with pytest.raises(BadInput, match="no fitted scorer"):
        assign.load_scorer(empty)
    atoms.install(empty, [atoms.Atom(0, "dry skin")], builder="file")
    with pytest.raises(BadInput, match="auxiliary split"):
        assign.assign(empty, "similarity")


def test_supervised_needs_labelled_atoms(tmp_path):
    con = make_store(tmp_path, [{"record_id": f"a{i}", "split": "aux", "text": "dry skin here"} for i in range(30)])
    builders.build(con, "phrases", min_support=5)
    with pytest.raises(BadInput, match="metadata"):
        assign.assign(con, "supervised")


def test_cli_assign_bad_K_exits_2(tmp_path, capsys):
    fitted_store(tmp_path).close()
    assert run(["assign", "--db", str(tmp_path / "s.duckdb"), "-K", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_cfpb_supervised_beats_label_similarity(tmp_path):
    from dpspin_sql import presets, store

    con = store.connect(tmp_path / "c.duckdb", create=True)
    presets.load_preset(con, "cfpb", shared("cfpb_complaints", "complaints.jsonl.gz"))
    split.split(con, "record", 0.5, seed=0)
    _, manifest = builders.build(con, "metadata", fields=FIELDS, m=50)
    assert manifest["m"] == 50
    assign.assign(con, "similarity", K=3, centroid=False)
    plain = assign.evaluate(con)
    assign.assign(con, "supervised", K=3)
    sup = assign.evaluate(con)
    assert sup["top1_accuracy"] > 2 * plain["top1_accuracy"]
    assert sup["overlap_at_L"] >= 7
