"""The fast assignment path gives exactly what the straightforward one gave.

Reference implementations below are the pre-optimisation code, kept verbatim in spirit:
sklearn's own vectorizer transform, scipy's sparse products, a full stable argsort. The
fast path (Arrow term counting, dense products, argmax/partition top-K, columnar output)
must match them bit for bit — ties, zeros, NaN/inf, the shrink factor and all.
"""
from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer

from dpspin_sql import assign, builders, scorers
from dpspin_sql.termcount import TOKEN_PATTERN, TermCounter, _IntMap
from tests.helpers.atoms import cfpb_like, make_store

FIELDS = ["product", "issue", "sub_issue"]


# --- references ---------------------------------------------------------------------------
def reference_top_k(scores, atom_ids, K, renormalise=True):
    """The assignment rule as it was written before the fast path (stable full argsort)."""
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    scores[scores < 0] = 0.0
    n, m = scores.shape
    k = min(int(K), m)
    if n == 0 or k == 0:
        return [[] for _ in range(n)]
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    kept = np.take_along_axis(scores, order, axis=1)
    total = kept.sum(axis=1, keepdims=True)
    denom = np.where(total > 0, total, 1.0) if renormalise else np.where(total > 1.0, total, 1.0)
    weights = kept / denom
    multi = (kept > 0).sum(axis=1) > 1
    weights[multi] *= scorers._SHRINK
    return [[(a, w) for a, w in zip(ids, ws) if w > 0] for ids, ws in zip(atom_ids[order].tolist(), weights.tolist())]


def reference_calibrated(scores, atom_ids, K, thresholds, renormalise=True, keep=None):
    """The calibrated rule written out: atoms whose score reaches their threshold, ranked by
    score (stable: lower column first), the K best, equal shares of the unit."""
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    out = []
    for row in scores:
        above = [(row[j], j) for j in range(len(row))
                 if row[j] > 0 and np.isfinite(thresholds[j]) and row[j] >= thresholds[j]]
        kept = [j for _, j in sorted(above, key=lambda rj: -rj[0])][:K if keep is None else keep]   # stable
        w = (1.0 / len(kept) if renormalise else 1.0 / K) if kept else 0.0
        w = w * scorers._SHRINK if len(kept) > 1 else w
        out.append([(int(atom_ids[j]), w) for j in kept])
    return out


def reference_assignment(scores, scorer, K):
    if scorer.thresholds is None:
        return reference_top_k(scores, scorer.atom_ids, K, scorer.renormalise)
    keep = None
    if (scorer.calibration or {}).get("exclusive"):      # one category per record: the best, if it reaches
        keep, scores = 1, np.asarray(scores, dtype=np.float64).copy()
        best = np.nan_to_num(scores, nan=0.0, posinf=0.0, neginf=0.0).argmax(axis=1)
        mask = np.zeros(scores.shape, dtype=bool)
        mask[np.arange(len(scores)), best] = True
        scores[~mask] = 0.0
    return reference_calibrated(scores, scorer.atom_ids, K, scorer.thresholds, scorer.renormalise, keep)


def reference_scores(scorer, texts):
    """Scores the slow way: sklearn's transform, scipy sparse products."""
    texts = ["" if t is None else str(t) for t in texts]
    if isinstance(scorer, scorers.KeywordScorer):
        X = scorer._vectorizer.transform(texts)
        return np.asarray((X @ scorer._W).todense(), dtype=np.float64)
    X = scorer.vectorizer.transform(texts)
    if isinstance(scorer, scorers.SimilarityScorer):
        return np.asarray((X @ scorer.atom_matrix.T).todense(), dtype=np.float64)
    if getattr(scorer, "char_vocabulary", None) is not None:     # word and char n-gram views, rows L2-normalised
        from scipy import sparse
        from sklearn.preprocessing import normalize

        C = scorers.char_vectorizer(scorer.char_vocabulary, scorer.char_idf, scorer.char_ngrams).transform(texts)
        X = normalize(sparse.hstack([X, C], format="csr", dtype=np.float32))
    logits = np.asarray(X @ scorer.coef.T, dtype=np.float64) + scorer.intercept
    logits -= logits.max(axis=1, keepdims=True)
    proba = np.exp(logits)
    proba /= proba.sum(axis=1, keepdims=True)
    out = np.zeros((proba.shape[0], len(scorer.atom_ids)))
    known = scorer._cols >= 0
    out[:, scorer._cols[known]] = proba[:, known]
    return out


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# --- top-K --------------------------------------------------------------------------------
tie_values = st.sampled_from([0.0, -0.0, 0.25, 0.5, 0.5, 1.0, 1.0, 3.0, 1e-300, 0.1 + 0.2, -1.0,
                              math.nan, math.inf, -math.inf])


@st.composite
def score_matrices(draw):
    n = draw(st.integers(0, 7))
    m = draw(st.integers(1, 14))
    flat = draw(st.lists(st.one_of(tie_values, st.floats(0, 2, width=16)), min_size=n * m, max_size=n * m))
    return np.array(flat, dtype=np.float64).reshape(n, m)


@settings(max_examples=400, deadline=None)
@given(S=score_matrices(), K=st.integers(1, 16), renorm=st.booleans())
def test_top_k_matches_the_stable_sort_reference(S, K, renorm):
    ids = np.arange(S.shape[1], dtype=np.int64) * 7 + 3
    want = reference_top_k(S.copy(), ids, K, renorm)
    assert scorers.top_k_normalise(S.copy(), ids, K, renormalise=renorm) == want
    rows, cols, w = scorers.top_k_columns(S.copy(), K, renormalise=renorm, owned=True)
    assert [[(int(ids[c]), x) for r2, c, x in zip(rows, cols, w) if r2 == r] for r in range(S.shape[0])] == want
    # the sparse path (keyword scorer) ranks only the stored entries: same answer (inf becomes
    # the largest float here, so sums overflow to inf: the weights then round to 0 either way)
    huge = np.nan_to_num(S, nan=0.0)
    with np.errstate(over="ignore"):
        assert scorers.top_k_normalise(sparse.csr_matrix(huge), ids, K, renormalise=renorm) \
            == reference_top_k(huge, ids, K, renorm)


@pytest.mark.parametrize("K", [1, 3, 8, 9, 40, 200, 250])
def test_top_k_large_random_with_ties(K):
    rng = np.random.default_rng(K)
    S = rng.integers(0, 6, size=(3000, 200)).astype(np.float64) / 4      # ties everywhere
    S[rng.random(S.shape) < 0.4] = 0.0
    S[:50] = 0.0                                                           # rows that score nothing
    S[50:60] = 1.5                                                         # rows that are one big tie
    ids = np.arange(200) + 1000
    assert scorers.top_k_normalise(S.copy(), ids, K) == reference_top_k(S, ids, K)
    assert scorers.top_k_normalise(S.copy(), ids, K, renormalise=False) == reference_top_k(S, ids, K, False)
    assert scorers.top_k_normalise(sparse.csr_matrix(S), ids, K) == reference_top_k(S, ids, K)


def test_top_k_does_not_touch_a_callers_array():
    S = np.array([[1.0, np.nan, 2.0, -1.0]])
    scorers.top_k_normalise(S, np.arange(4), 2)
    assert np.isnan(S[0, 1]) and S[0, 3] == -1.0 and S[0, 2] == 2.0


# --- term counting ------------------------------------------------------------------------
CHARS = list("abcdeéßxyzABCDEÉİΣς") + ["fee", "late", "the", "and", "card", "ab", "a", "K", "²", "½", "_",
                                      "0", "7", "'", "-", ".", " ", " ", "\t", "\n", "\x1c", "\xa0", "\u2028",
                                      "\x01", "\u0301", "ǅ", "ﬁ"]
text_st = st.lists(st.sampled_from(CHARS), max_size=40).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fit_texts=st.lists(text_st, min_size=1, max_size=12), texts=st.lists(text_st, max_size=12),
       ngrams=st.sampled_from([1, 2]), stop=st.booleans())
def test_term_counts_equal_sklearn(fit_texts, texts, ngrams, stop):
    vec = CountVectorizer(token_pattern=TOKEN_PATTERN, lowercase=True, ngram_range=(1, ngrams),
                          stop_words=sorted(scorers.STOP_WORDS) if stop else None)
    try:
        vec.fit(fit_texts + ["late fee the card", "Late the fee, ab ab"])
    except ValueError:
        return
    vocab = scorers.vocabulary_of(vec)
    ref = vec.transform(texts)
    got = TermCounter(vocab, ngrams, stop_words=vec.get_stop_words()).counts(texts, dtype=ref.dtype)
    assert same_bits(got.indptr, ref.indptr.astype(got.indptr.dtype))
    assert same_bits(got.indices, ref.indices.astype(got.indices.dtype))
    assert same_bits(got.data, ref.data)


def test_term_counts_odd_vocabularies():
    # terms no text can produce (digits, punctuation, three words, upper case) are never counted
    vocab = ["ab", "ab cd", "a1", "x-y", "ab cd ef", "Ab", "cd", "cd ab", "\x00", "ée"]
    texts = ["AB cd ab-cd a1 x-y Ab ée ÉE", "ab 1 cd", "cd  ab", ""]
    ref = CountVectorizer(token_pattern=TOKEN_PATTERN, ngram_range=(1, 2), vocabulary=vocab).transform(texts)
    got = TermCounter(vocab, 2).counts(texts, dtype=ref.dtype)
    assert (got != ref).nnz == 0 and got.has_sorted_indices


def test_int_map():
    rng = np.random.default_rng(0)
    keys = rng.choice(10**12, size=5000, replace=False)
    vals = rng.integers(0, 10**6, size=5000)
    mp = _IntMap(keys, vals)
    probe = np.concatenate([keys, rng.integers(0, 10**12, size=5000)])
    d = dict(zip(keys.tolist(), vals.tolist()))
    assert mp.get(probe).tolist() == [d.get(k, -1) for k in probe.tolist()]
    assert _IntMap(np.zeros(0, np.int64), np.zeros(0, np.int64)).get(np.array([1, 2])).tolist() == [-1, -1]


# --- whole scorers ------------------------------------------------------------------------
NASTY = ["Collector called about a DEBT; late fee & interest!!", "", None, 17, "Café crédit — dette ½ x² İ",
         "late the fee", "abc123 a_b x-y fee-late", "\x01\x02 fee\tlate\ncard", "the and of", "ΣΑΣ σας"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    con = make_store(tmp_path_factory.mktemp("fast"), cfpb_like(20) + cfpb_like(8, split="target", start=5000))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    out = {kind: assign.fit_scorer(con, kind) for kind in ("keyword", "similarity", "supervised")}
    out["supervised-raw"] = assign.fit_scorer(con, "supervised", renormalise=False)
    for kind in ("keyword", "similarity", "supervised"):
        out[f"{kind}-uncalibrated"] = assign.fit_scorer(con, kind, calibrate=False)
    texts = [r[0] for r in con.execute("SELECT text FROM records ORDER BY record_id").fetchall()]
    return out, texts + NASTY


@pytest.mark.parametrize("kind", ["keyword", "similarity", "supervised", "supervised-raw", "keyword-uncalibrated",
                                  "similarity-uncalibrated", "supervised-uncalibrated"])
@pytest.mark.parametrize("K", [1, 2, 3, 9, 50])
def test_scorers_match_the_reference(fitted, kind, K):
    scorers_, texts = fitted
    sc = scorers_[kind]
    assert sc.calibrated is not kind.endswith("-uncalibrated")
    ref = reference_scores(sc, texts)
    assert same_bits(sc.scores(texts), ref)
    assert sc.score_top_k(texts, K) == reference_assignment(ref, sc, K)
    again = scorers.from_bytes(sc.to_bytes())
    assert again.score_top_k(texts, K) == sc.score_top_k(texts, K)


def test_similarity_sparse_product_fallback_is_identical(fitted, monkeypatch):
    scorers_, texts = fitted
    sc = scorers_["similarity"]
    monkeypatch.setattr(scorers, "_DENSE_LIMIT", 0)
    sparse_one = scorers.from_bytes(sc.to_bytes())
    assert sparse_one._AT is None
    assert same_bits(sparse_one.scores(texts), sc.scores(texts))


def test_columnar_rows_are_the_list_rows(fitted):
    scorers_, texts = fitted
    sc = scorers_["similarity"]
    rows, atom_ids, weights = sc.score_top_k_arrays(texts, 3)
    lists = sc.score_top_k(texts, 3)
    assert [(r, a, w) for r, kept in enumerate(lists) for a, w in kept] == \
        list(zip(rows.tolist(), atom_ids.tolist(), weights.tolist()))
    assert np.all(np.diff(rows) >= 0)


def test_assign_writes_exactly_the_scorer_rows(tmp_path):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(6, split="target", start=5000)
                     + [{"record_id": "blank", "text": "nothing relevant here", "split": "target"}])
    builders.build(con, "metadata", fields=FIELDS, m=10)
    sc = assign.fit_scorer(con, "similarity")
    assign.assign(con, sc, K=3, batch_size=5)
    # the store keeps them as canonical vectors: each weight in the sketch's fixed point
    # (floor(w * 2^24) / 2^24, exact in DOUBLE), the logical rows in the assignment_rows view
    got = con.execute("SELECT record_id, atom_id, weight FROM assignment_rows "
                      "ORDER BY record_id, weight DESC, atom_id").fetchall()
    recs = con.execute("SELECT record_id, text FROM records WHERE split IN ('target','excluded') ORDER BY record_id").fetchall()
    fix = float(1 << 24)
    want = sorted(((rid, a, math.floor(min(w, 1.0) * fix) / fix)
                   for (rid, _), kept in zip(recs, sc.score_top_k([t for _, t in recs], 3)) for a, w in kept),
                  key=lambda r: (r[0], -r[2], r[1]))
    assert got == want
    assert con.execute("SELECT count(*) FROM assignments").fetchone()[0] == 0     # none needed raw rows


# --- renormalisation ----------------------------------------------------------------------
def test_renormalise_is_the_default_and_spends_the_whole_unit(fitted):
    scorers_, texts = fitted
    for kind in ("keyword", "similarity", "supervised"):
        sc = scorers_[kind]
        assert sc.renormalise is True
        for kept in sc.score_top_k(texts, 3):
            if kept:
                total = math.fsum(w for _, w in kept)
                assert total <= 1.0 and total == pytest.approx(1.0, abs=1e-9)
    raw = scorers_["supervised-raw"]
    assert raw.renormalise is False
    raw_totals = [math.fsum(w for _, w in kept) for kept in raw.score_top_k(texts, 3) if kept]
    assert max(raw_totals) <= 1.0 and min(raw_totals) < 0.999     # the old behaviour: mass left unspent
    # same ranking either way: renormalising only rescales a record's kept weights
    for a, b in zip(raw.score_top_k(texts, 3), scorers_["supervised"].score_top_k(texts, 3)):
        assert [x for x, _ in a] == [x for x, _ in b]


def test_a_record_that_scores_nothing_stays_empty(fitted):
    scorers_, _ = fitted
    assert scorers_["keyword"].score_top_k(["zzz qqq", ""], 3) == [[], []]
    assert scorers_["similarity"].score_top_k(["zzz qqq", ""], 3) == [[], []]
    assert scorers.top_k_normalise(np.zeros((2, 4)), np.arange(4), 3) == [[], []]


def _strip_renormalise(blob: bytes) -> bytes:
    """A blob as scorers saved it before the field existed."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode())
    meta.pop("renormalise")
    buf = io.BytesIO()
    np.savez_compressed(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    return buf.getvalue()


@pytest.mark.parametrize("kind,legacy", [("keyword", True), ("similarity", True), ("supervised", False)])
def test_renormalise_is_saved_and_old_blobs_keep_their_behaviour(fitted, kind, legacy):
    scorers_, texts = fitted
    for renorm in (True, False):
        sc = scorers.from_bytes(scorers_[kind].to_bytes())
        sc.renormalise = renorm
        again = scorers.from_bytes(sc.to_bytes())
        assert again.renormalise is renorm
        assert again.score_top_k(texts, 3) == sc.score_top_k(texts, 3)
    old = scorers.from_bytes(_strip_renormalise(scorers_[kind].to_bytes()))
    assert old.renormalise is legacy


def test_renormalise_option_through_assign(tmp_path):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(6, split="target", start=5000))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    assign.assign(con, "supervised", K=3)
    full = con.execute("SELECT sum(weight) FROM assignment_rows").fetchone()[0]
    n = con.execute("SELECT count(DISTINCT record_id) FROM assignment_rows").fetchone()[0]
    assert n > 0 and full == pytest.approx(n, abs=n * 3 / 2**24 + 1e-9)    # each weight floored to 2^-24
    assert assign.load_scorer(con).renormalise is True
    assign.assign(con, "supervised", K=3, renormalise=False)
    assert assign.load_scorer(con).renormalise is False
    assert con.execute("SELECT sum(weight) FROM assignment_rows").fetchone()[0] < full
    with pytest.raises(Exception, match="renormalise"):
        assign.fit_scorer(con, "keyword", renormalise="yes")


def test_cli_no_renormalise(tmp_path):
    from dpspin_sql.cli import run

    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(6, split="target", start=5000))
    builders.build(con, "metadata", fields=FIELDS, m=10)
    con.close()
    assert run(["assign", "--db", str(tmp_path / "s.duckdb"), "--scorer", "supervised", "--no-renormalise"]) == 0
    from dpspin_sql import store

    assert assign.load_scorer(store.connect(tmp_path / "s.duckdb")).renormalise is False


@pytest.mark.parametrize("kind", ["keyword", "similarity", "supervised"])
def test_threaded_batches_write_the_same_table(tmp_path, kind):
    con = make_store(tmp_path, cfpb_like(12) + cfpb_like(9, split="target", start=5000)
                     + [{"record_id": "blank", "text": "nothing relevant here", "split": "target"}])
    builders.build(con, "metadata", fields=FIELDS, m=10)
    sc = assign.fit_scorer(con, kind)
    tables = []
    for workers in (1, 2, 3):
        report = assign.assign(con, sc, K=3, batch_size=4, workers=workers)
        tables.append((report.n_records, report.n_assigned, report.n_rows,
                       con.execute("SELECT record_id, atom_id, weight FROM assignments ORDER BY ALL").fetchall()))
    assert tables[0] == tables[1] == tables[2]
