"""Atom scorers for the assignment map, stored in a portable form (npz + JSON, no pickle).

A scorer turns texts into an (n × m) matrix of non-negative scores over the dictionary
in atom_id order; `score_top_k` keeps the K best (lower atom index wins ties) and
normalises them to L1 ≤ 1 — the record contribution bound of SPEC §1. Everything a
scorer holds was fitted on public atom labels/descriptions and the auxiliary split, so
its bytes can be stored beside the dictionary and shipped to a Spark executor.
"""
from __future__ import annotations

import io
import json
import re

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

TOKEN_PATTERN = r"(?u)\b[^\W\d_][^\W\d_]+\b"   # words of two letters or more, no digits
STOP_WORDS = frozenset(ENGLISH_STOP_WORDS)
_TOKEN_RE = re.compile(TOKEN_PATTERN)
# Float sums of normalised weights can round above 1; shrinking multi-atom rows by this
# factor keeps any-order sums ≤ 1 and costs far less than one fixed-point unit (2^-24).
_SHRINK = 1.0 - 1e-12


def content_words(text: str) -> list[str]:
    """Lowercased tokens that are not stop words, in order, without repeats."""
    seen: dict[str, None] = {}
    for tok in _TOKEN_RE.findall(text.lower()):
        if tok not in STOP_WORDS:
            seen.setdefault(tok)
    return list(seen)


def top_k_normalise(scores: np.ndarray, atom_ids: np.ndarray, K: int, *, renormalise: bool = True):
    """Per row: the K highest positive scores (stable sort: lower atom index wins ties).

    With `renormalise` the kept weights are scaled to sum to 1; otherwise they are kept
    as they are (class probabilities already sum to ≤ 1) and only scaled down if above 1.
    Returns one list of (atom_id, weight) per row; a row with no positive score is [].
    """
    scores = np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    scores[scores < 0] = 0.0
    n, m = scores.shape
    k = min(int(K), m)
    if n == 0 or k == 0:
        return [[] for _ in range(n)]
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    kept = np.take_along_axis(scores, order, axis=1)
    total = kept.sum(axis=1, keepdims=True)
    if renormalise:
        denom = np.where(total > 0, total, 1.0)
    else:
        denom = np.where(total > 1.0, total, 1.0)
    weights = kept / denom
    multi = (kept > 0).sum(axis=1) > 1
    weights[multi] *= _SHRINK
    out = []
    for ids, ws in zip(atom_ids[order].tolist(), weights.tolist()):
        out.append([(a, w) for a, w in zip(ids, ws) if w > 0])
    return out


class Scorer:
    """Base: subclasses implement `scores(texts) -> ndarray (n × m)` and their state."""

    kind = "base"
    renormalise = True

    def __init__(self, atom_ids):
        self.atom_ids = np.asarray(atom_ids, dtype=np.int64)

    def scores(self, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def score_top_k(self, texts: list[str], K: int) -> list[list[tuple[int, float]]]:
        """The assignment map on a batch of texts (what a Spark partition calls)."""
        texts = ["" if t is None else str(t) for t in texts]
        if not texts:
            return []
        return top_k_normalise(self.scores(texts), self.atom_ids, K, renormalise=self.renormalise)

    # -- portable state -------------------------------------------------------------
    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        raise NotImplementedError  # pragma: no cover

    def to_bytes(self) -> bytes:
        meta, arrays = self.state()
        meta = dict(meta, kind=self.kind, format=1)
        buf = io.BytesIO()
        np.savez_compressed(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                            atom_ids=self.atom_ids, **arrays)
        return buf.getvalue()


class KeywordScorer(Scorer):
    """Baseline: an atom scores the number of its label's content words found in the text."""

    kind = "keyword"

    def __init__(self, atom_ids, words: list[list[str]]):
        super().__init__(atom_ids)
        self.words = [list(w) for w in words]
        vocab = sorted({w for ws in self.words for w in ws})
        self._vectorizer = CountVectorizer(token_pattern=TOKEN_PATTERN, lowercase=True, binary=True,
                                           vocabulary=vocab or ["\x00"])
        index = {w: i for i, w in enumerate(vocab)}
        rows = [index[w] for ws in self.words for w in ws]
        cols = [j for j, ws in enumerate(self.words) for _ in ws]
        self._W = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(max(len(vocab), 1), len(self.words)))

    @classmethod
    def from_atoms(cls, atoms) -> "KeywordScorer":
        return cls([a.atom_id for a in atoms], [content_words(a.label) for a in atoms])

    def scores(self, texts):
        X = self._vectorizer.transform(texts)
        return np.asarray((X @ self._W).todense(), dtype=np.float64)

    def state(self):
        return {"words": self.words}, {}

    @classmethod
    def from_state(cls, meta, arrays):
        return cls(arrays["atom_ids"], meta["words"])


TFIDF_PARAMS = {"token_pattern": TOKEN_PATTERN, "lowercase": True, "sublinear_tf": True, "dtype": np.float32}


def tfidf_vectorizer(vocabulary: list[str] | None = None, idf: np.ndarray | None = None, ngrams: int = 1,
                     **fit_params):
    """A TF-IDF vectorizer; with vocabulary and idf it is the fitted one, rebuilt without pickle."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if vocabulary is None:
        return TfidfVectorizer(stop_words=sorted(STOP_WORDS), ngram_range=(1, ngrams), **TFIDF_PARAMS, **fit_params)
    vec = TfidfVectorizer(vocabulary={t: i for i, t in enumerate(vocabulary)}, ngram_range=(1, ngrams), **TFIDF_PARAMS)
    vec.idf_ = np.asarray(idf, dtype=np.float64)
    return vec


def vocabulary_of(vec) -> list[str]:
    return [t for t, _ in sorted(vec.vocabulary_.items(), key=lambda kv: kv[1])]


class _TfidfScorer(Scorer):
    def __init__(self, atom_ids, vocabulary: list[str], idf, ngrams: int = 1):
        super().__init__(atom_ids)
        self.vocabulary = list(vocabulary)
        self.idf = np.asarray(idf, dtype=np.float64)
        self.ngrams = int(ngrams)
        self.vectorizer = tfidf_vectorizer(self.vocabulary, self.idf, self.ngrams)

    def _base_state(self):
        return {"vocabulary": self.vocabulary, "ngrams": self.ngrams}, {"idf": self.idf}


class SimilarityScorer(_TfidfScorer):
    """Cosine between a text's TF-IDF vector and each atom's (label + description [+ aux centroid])."""

    kind = "similarity"

    def __init__(self, atom_ids, vocabulary, idf, atom_matrix, ngrams: int = 2):
        super().__init__(atom_ids, vocabulary, idf, ngrams)
        self.atom_matrix = sparse.csr_matrix(atom_matrix, dtype=np.float32)   # m × V, rows L2-normalised

    def scores(self, texts):
        X = self.vectorizer.transform(texts)
        return np.asarray((X @ self.atom_matrix.T).todense(), dtype=np.float64)

    def state(self):
        meta, arrays = self._base_state()
        A = self.atom_matrix
        return meta, dict(arrays, A_data=A.data, A_indices=A.indices, A_indptr=A.indptr,
                          A_shape=np.array(A.shape, dtype=np.int64))

    @classmethod
    def from_state(cls, meta, arrays):
        A = sparse.csr_matrix((arrays["A_data"], arrays["A_indices"], arrays["A_indptr"]),
                              shape=tuple(arrays["A_shape"]))
        return cls(arrays["atom_ids"], meta["vocabulary"], arrays["idf"], A, meta.get("ngrams", 2))


class SupervisedScorer(_TfidfScorer):
    """Multinomial logistic regression on TF-IDF; atom class probabilities are the scores.

    A record's kept probabilities already sum to ≤ 1 (the 'other' class, aux records whose
    label is not an atom, takes the rest), so they are not renormalised.
    """

    kind = "supervised"
    renormalise = False

    def __init__(self, atom_ids, vocabulary, idf, coef, intercept, class_atoms, ngrams: int = 1):
        super().__init__(atom_ids, vocabulary, idf, ngrams)
        self.coef = np.asarray(coef, dtype=np.float32)          # C × V
        self.intercept = np.asarray(intercept, dtype=np.float64)
        self.class_atoms = np.asarray(class_atoms, dtype=np.int64)   # atom id per class, -1 = other
        col = {int(a): j for j, a in enumerate(self.atom_ids)}
        self._cols = np.array([col.get(int(a), -1) for a in self.class_atoms])

    def scores(self, texts):
        X = self.vectorizer.transform(texts)
        logits = np.asarray(X @ self.coef.T, dtype=np.float64) + self.intercept
        logits -= logits.max(axis=1, keepdims=True)
        proba = np.exp(logits)
        proba /= proba.sum(axis=1, keepdims=True)
        out = np.zeros((proba.shape[0], len(self.atom_ids)))
        known = self._cols >= 0
        out[:, self._cols[known]] = proba[:, known]
        return out

    def state(self):
        meta, arrays = self._base_state()
        return meta, dict(arrays, coef=self.coef, intercept=self.intercept, class_atoms=self.class_atoms)

    @classmethod
    def from_state(cls, meta, arrays):
        return cls(arrays["atom_ids"], meta["vocabulary"], arrays["idf"], arrays["coef"], arrays["intercept"],
                   arrays["class_atoms"], meta.get("ngrams", 1))


SCORERS: dict[str, type[Scorer]] = {"keyword": KeywordScorer, "similarity": SimilarityScorer,
                                    "supervised": SupervisedScorer}


def from_bytes(blob: bytes) -> Scorer:
    """Rebuild a scorer from `Scorer.to_bytes()` output (no pickle is ever loaded)."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode())
    cls = SCORERS.get(meta.get("kind"))
    if cls is None:
        raise ValueError(f"unknown scorer kind {meta.get('kind')!r}")
    return cls.from_state(meta, arrays)
