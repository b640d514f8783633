"""Atom scorers for the assignment map, stored in a portable form (npz + JSON, no pickle).

A scorer turns texts into an (n × m) matrix of non-negative scores over the dictionary
in atom_id order; `score_top_k` keeps the K best (lower atom index wins ties) and
normalises them to L1 ≤ 1 — the record contribution bound of docs/DESIGN.md §1. By default the
kept scores are scaled to sum to 1 (`renormalise=True`: every assigned record spends its
whole unit of mass); `renormalise=False` keeps them as they are, scaled down only when
above 1 (class probabilities then keep the mass of the classes left out). Everything a
scorer holds was fitted on public atom labels/descriptions and the auxiliary split, so
its bytes can be stored beside the dictionary and shipped to a Spark executor.

The batch path is columnar: `score_top_k_arrays(texts, K)` returns (record index, atom
id, weight) arrays, with no per-record Python loop anywhere between the texts and them.
"""
from __future__ import annotations

import io
import json

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

from dpspin_sql.termcount import TOKEN_PATTERN, TOKEN_RE, TermCounter

STOP_WORDS = frozenset(ENGLISH_STOP_WORDS)
_TOKEN_RE = TOKEN_RE
# Float sums of normalised weights can round above 1; shrinking multi-atom rows by this
# factor keeps any-order sums ≤ 1 and costs far less than one fixed-point unit (2^-24).
_SHRINK = 1.0 - 1e-12
# Above this many entries an atom matrix stays sparse in the product (memory over speed).
_DENSE_LIMIT = 32_000_000
# Up to this K the dense top-K is K argmax rounds; above it, a partition.
_ARGMAX_ROUNDS = 8


def content_words(text: str) -> list[str]:
    """Lowercased tokens that are not stop words, in order, without repeats."""
    seen: dict[str, None] = {}
    for tok in _TOKEN_RE.findall(text.lower()):
        if tok not in STOP_WORDS:
            seen.setdefault(tok)
    return list(seen)


def _sanitise(scores) -> np.ndarray:
    """A float64 copy with NaN, ±inf and negatives set to 0 (-0.0 kept: it is not < 0)."""
    scores = np.array(scores, dtype=np.float64)
    if scores.ndim != 2:
        raise ValueError("scores must be an (n × m) matrix")
    bad = ~np.isfinite(scores)
    bad |= scores < 0
    scores[bad] = 0.0
    return scores


def top_k_columns(scores, K: int, *, renormalise: bool = True, owned: bool = False, thresholds=None,
                  per_record: int | None = None):
    """The assignment rule on a score matrix, columnar: (row, column, weight) arrays.

    With `thresholds` (one per column, calibrated on the auxiliary split: the calibrated
    rule, docs/DESIGN.md §1): a record expresses an atom when its score reaches the atom's
    threshold, and only those atoms compete; the K highest-scoring of them are kept (a tie
    to the lower column), and each gets 1/k of the record's unit (`renormalise`, k the
    number kept) or 1/K (not renormalised). A record that reaches no threshold keeps
    nothing (it abstains). `per_record` (≤ K, calibrated rule only) keeps fewer atoms than K per
    record (1 for exclusive categories) while a share stays 1/K. Without thresholds (the
    uncalibrated rule, for comparison and for scorers
    saved before calibration existed):

    Per row: the K highest positive scores, in descending order, a tie going to the lower
    column; kept weights scaled to sum 1 (`renormalise`) or only scaled down when above 1;
    rows with more than one kept atom shrunk by `_SHRINK`; zero weights dropped. Output is
    row-major (rows ascending, then rank), the order `top_k_normalise` lists them in.

    Selection is exact without a full sort: `np.partition` finds each row's K-th largest
    value t; entries > t are in, and of the entries == t the lowest-indexed ones fill the
    remaining places. The kept K are then sorted (stable, so ties stay in column order).
    A scipy sparse matrix (the keyword scorer's) is ranked on its positive entries only.
    `owned=True` lets the function sanitise `scores` (a float64 array) in place.
    """
    share_K = int(K)
    if thresholds is not None:
        scores, owned = relevant_scores(scores, thresholds), True
        if per_record is not None:
            K = min(int(per_record), share_K)
    if sparse.issparse(scores):
        n, m = scores.shape
        k = min(int(K), m)
        if n == 0 or k == 0:
            return _empty_columns()
        kept, cols = _top_k_sparse(sparse.csr_matrix(scores), k)
    else:
        if owned and isinstance(scores, np.ndarray) and scores.dtype == np.float64 and scores.ndim == 2:
            bad = ~np.isfinite(scores)
            bad |= scores < 0
            scores[bad] = 0.0
        else:
            scores = _sanitise(scores)
        n, m = scores.shape
        k = min(int(K), m)
        if n == 0 or k == 0:
            return _empty_columns()
        kept, cols = _top_k_dense(scores, k)
    if thresholds is not None:
        return _uniform_columns(kept, cols, share_K, renormalise)
    total = kept.sum(axis=1, keepdims=True)
    if renormalise:
        denom = np.where(total > 0, total, 1.0)
    else:
        denom = np.where(total > 1.0, total, 1.0)
    weights = kept / denom
    multi = (kept > 0).sum(axis=1) > 1
    weights[multi] *= _SHRINK
    keep = weights > 0
    rows = np.broadcast_to(np.arange(n)[:, None], (n, k))[keep]
    return rows, cols[keep].astype(np.int64, copy=False), weights[keep]


def relevant_scores(scores, thresholds):
    """The score where it reaches its column's threshold, else 0 (sanitised: NaN, ±inf and
    negative scores are 0; an infinite threshold is never reached).

    Dense in, dense out (a new float64 array); sparse in, CSR out."""
    tau = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if sparse.issparse(scores):
        S = sparse.csr_matrix(scores, dtype=np.float64, copy=True)
        if S.shape[1] != tau.size:
            raise ValueError("one threshold per atom column is needed")
        t = tau[S.indices]
        data = np.asarray(S.data, dtype=np.float64)
        ok = np.isfinite(data) & (data > 0) & np.isfinite(t) & (data >= t)
        S.data = np.where(ok, data, 0.0)
        S.eliminate_zeros()
        return S
    S = _sanitise(scores)
    if S.shape[1] != tau.size:
        raise ValueError("one threshold per atom column is needed")
    reached = (S >= tau) & np.isfinite(tau) & (S > 0)
    return np.where(reached, S, 0.0)


def best_only(scores) -> np.ndarray:
    """Each row's highest sanitised score (the lower column on a tie), every other entry 0."""
    S = scores.toarray() if sparse.issparse(scores) else scores
    S = _sanitise(S)
    out = np.zeros_like(S)
    if S.size:
        j = S.argmax(axis=1)
        rows = np.arange(S.shape[0])
        out[rows, j] = S[rows, j]
    return out


def _uniform_columns(kept: np.ndarray, cols: np.ndarray, K: int, renormalise: bool):
    """Equal weights for each record's kept atoms: 1/k of its unit (k kept) or 1/K."""
    n, k = kept.shape
    on = kept > 0
    count = on.sum(axis=1, keepdims=True)
    if renormalise:
        weights = np.where(on, 1.0 / np.maximum(count, 1), 0.0)
    else:
        weights = np.where(on, 1.0 / max(int(K), 1), 0.0)
    multi = count[:, 0] > 1
    weights[multi] *= _SHRINK
    keep = weights > 0
    rows = np.broadcast_to(np.arange(n)[:, None], (n, k))[keep]
    return rows, cols[keep].astype(np.int64, copy=False), weights[keep]


def _empty_columns():
    return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)


def _top_k_dense(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(n × k) kept values (descending, ties by column) and their columns, of sanitised scores.

    For small K, K rounds of `argmax` (which returns the first maximum: the lower column
    wins a tie) give exactly the stable descending order at ~1/4 the cost of a partition;
    each round masks its pick with -1, below every sanitised score. This overwrites
    `scores`. Larger K: partition-based selection.
    """
    n, m = scores.shape
    if k <= _ARGMAX_ROUNDS:
        rows = np.arange(n)
        cols = np.empty((n, k), dtype=np.int64)
        kept = np.empty((n, k), dtype=np.float64)
        for i in range(k):
            j = scores.argmax(axis=1)
            cols[:, i] = j
            kept[:, i] = scores[rows, j]
            scores[rows, j] = -1.0
        return kept, cols
    if k < m:
        t = np.partition(scores, m - k, axis=1)[:, m - k][:, None]     # each row's K-th largest
        sel = scores > t
        eq = scores == t
        need = k - sel.sum(axis=1)
        over = eq.sum(axis=1) > need          # more ties at t than places left: lowest columns win
        if over.any():
            eq_rows = eq[over]
            eq_rows &= np.cumsum(eq_rows, axis=1) <= need[over][:, None]
            eq[over] = eq_rows
        sel |= eq
        cols = np.nonzero(sel)[1].reshape(n, k)        # ascending column order within each row
    else:
        cols = np.broadcast_to(np.arange(m), (n, m))
    vals = np.take_along_axis(scores, cols, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(vals, order, axis=1), np.take_along_axis(cols, order, axis=1)


def _top_k_sparse(S: sparse.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """`_top_k_dense` on a sparse matrix: the same kept values in the same (n × k) layout.

    Only positive entries can carry weight; the places they leave are zeros (column 0,
    dropped later with the other zero weights — as the dense rule's zero columns are).
    """
    n = S.shape[0]
    rows = np.repeat(np.arange(n), np.diff(S.indptr))
    vals = np.asarray(S.data, dtype=np.float64)
    pos = np.isfinite(vals) & (vals > 0)
    rows, cols, vals = rows[pos], S.indices[pos].astype(np.int64), vals[pos]
    order = np.lexsort((cols, -vals, rows))            # by row, then value descending, then column
    rows, cols, vals = rows[order], cols[order], vals[order]
    starts = np.searchsorted(rows, np.arange(n))
    rank = np.arange(rows.size) - starts[rows]
    top = rank < k
    kept = np.zeros((n, k))
    out_cols = np.zeros((n, k), dtype=np.int64)
    kept[rows[top], rank[top]] = vals[top]
    out_cols[rows[top], rank[top]] = cols[top]
    return kept, out_cols


def top_k_normalise(scores: np.ndarray, atom_ids: np.ndarray, K: int, *, renormalise: bool = True,
                    thresholds=None):
    """`top_k_columns` as one list of (atom_id, weight) per row; a row with no positive score is []."""
    if not sparse.issparse(scores):
        scores = np.asarray(scores)
    rows, cols, weights = top_k_columns(scores, K, renormalise=renormalise, thresholds=thresholds)
    n = scores.shape[0]
    return _as_lists(n, rows, np.asarray(atom_ids)[cols], weights)


def _as_lists(n: int, rows: np.ndarray, atoms: np.ndarray, weights: np.ndarray) -> list[list[tuple[int, float]]]:
    out: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for r, a, w in zip(rows.tolist(), atoms.tolist(), weights.tolist()):
        out[r].append((a, w))
    return out


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz archive (what `np.load` reads) deflated at level 1: as `savez_compressed`
    at ~1/4 of its time (the save was 15% of a 100,000-record assignment), ~10% larger."""
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, value in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)
    return buf.getvalue()


class Scorer:
    """Base: subclasses implement `scores(texts) -> ndarray (n × m)` and their state.

    `renormalise` (default True) gives each record's kept atoms its whole unit; False
    keeps less (see `top_k_columns`). `thresholds` (one per atom, fitted on the auxiliary
    split by `dpspin_sql.relevance.calibrate`) switch on the calibrated rule: a record
    gives mass only to the atoms it reaches the threshold of, and may give none. None is
    the uncalibrated top-K rule. `calibration` is the public record of how the thresholds
    were fitted and how faithful the map is on held-out auxiliary records (fidelity).
    Both are saved with the scorer; a saved scorer without `renormalise` keeps the
    behaviour its kind had before the field existed (`_LEGACY_RENORMALISE`), one without
    thresholds the uncalibrated rule.
    """

    kind = "base"
    _LEGACY_RENORMALISE = True

    def __init__(self, atom_ids, *, renormalise: bool = True):
        self.atom_ids = np.asarray(atom_ids, dtype=np.int64)
        if not isinstance(renormalise, (bool, np.bool_)):
            raise ValueError(f"renormalise must be True or False, not {renormalise!r}")
        self.renormalise = bool(renormalise)
        self.thresholds: np.ndarray | None = None
        self.calibration: dict | None = None

    @property
    def exclusive(self) -> bool:
        """The dictionary's atoms exclude each other (a record has one category): a record
        expresses at most one, its best-scoring atom above threshold."""
        return bool((self.calibration or {}).get("exclusive"))

    def kept(self, K: int) -> int:
        """How many atoms a record may keep: K, or 1 for exclusive atoms."""
        return min(int(K), 1) if self.exclusive and self.thresholds is not None else int(K)

    def calibrate(self, thresholds, calibration: dict | None = None) -> Scorer:
        """Set the per-atom thresholds (finite and > 0, or +inf: never reached) and their record."""
        tau = np.asarray(thresholds, dtype=np.float64).reshape(-1)
        if tau.size != self.atom_ids.size:
            raise ValueError(f"{tau.size} thresholds for {self.atom_ids.size} atoms")
        if np.isnan(tau).any() or (tau <= 0).any():
            raise ValueError("thresholds must be positive (or +inf)")
        self.thresholds = tau
        self.calibration = dict(calibration or {})
        return self

    @property
    def calibrated(self) -> bool:
        return self.thresholds is not None

    def scores(self, texts: list[str]) -> np.ndarray:
        """The (n × m) score matrix, dense."""
        S = self._score_matrix(self._texts(texts))
        return S.toarray() if sparse.issparse(S) else S

    def raw_scores(self, texts: list[str]):
        """The score matrix as the scorer computes it (dense float64, or sparse for the keyword scorer)."""
        return self._score_matrix(self._texts(texts))

    def _score_matrix(self, texts: list[str]):  # pragma: no cover - abstract
        """Scores as a dense float64 array (owned by the caller) or a scipy sparse matrix."""
        raise NotImplementedError

    @staticmethod
    def _texts(texts) -> list[str]:
        return ["" if t is None else t if type(t) is str else str(t) for t in texts]

    def score_top_k_arrays(self, texts: list[str], K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The assignment map on a batch, columnar: (index into texts, atom_id, weight) arrays.

        Row-major: records in input order, each record's atoms by descending weight.
        """
        texts = self._texts(texts)
        if not texts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)
        S = self._score_matrix(texts)
        if self.exclusive and self.thresholds is not None:
            S = best_only(S)      # a record's one category is its best-scoring atom, kept if it reaches the threshold
        rows, cols, weights = top_k_columns(S, K, renormalise=self.renormalise,
                                            owned=True, thresholds=self.thresholds, per_record=self.kept(K))
        return rows, self.atom_ids[cols], weights

    def score_top_k(self, texts: list[str], K: int) -> list[list[tuple[int, float]]]:
        """The assignment map on a batch of texts (what a Spark partition calls)."""
        texts = self._texts(texts)
        rows, atoms, weights = self.score_top_k_arrays(texts, K)
        return _as_lists(len(texts), rows, atoms, weights)

    # -- portable state -------------------------------------------------------------
    def state(self) -> tuple[dict, dict[str, np.ndarray]]:
        raise NotImplementedError  # pragma: no cover

    @classmethod
    def from_state(cls, meta: dict, arrays: dict[str, np.ndarray]) -> Scorer:
        """The scorer `state()` describes (each kind rebuilds its own)."""
        raise NotImplementedError  # pragma: no cover

    def to_bytes(self) -> bytes:
        meta, arrays = self.state()
        meta = dict(meta, kind=self.kind, format=1, renormalise=self.renormalise)
        if self.thresholds is not None:
            arrays = dict(arrays, thresholds=self.thresholds)
            meta["calibration"] = self.calibration or {}
        return _npz({"__meta__": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                     "atom_ids": self.atom_ids, **arrays})

    @classmethod
    def _renormalise_of(cls, meta: dict) -> bool:
        value = meta.get("renormalise", cls._LEGACY_RENORMALISE)
        if not isinstance(value, bool):
            raise ValueError(f"saved scorer: renormalise must be true or false, not {value!r}")
        return value


class KeywordScorer(Scorer):
    """Counts what an atom's definition names, nothing fitted.

    Label words (any dictionary): an atom scores the number of its label's content words
    found in the text. Phrases (a phrase dictionary: `phrases` given): an atom scores the
    number of its phrase forms the text mentions (dpspin_sql.mentions: the label, the
    variants the builder merged into it and their head inflections, as adjacent words of
    one sentence), so a mass is a count of records that mention the theme."""

    kind = "keyword"

    def __init__(self, atom_ids, words: list[list[str]], *, renormalise: bool = True,
                 phrases: list[list[str]] | None = None):
        super().__init__(atom_ids, renormalise=renormalise)
        self.words = [list(w) for w in words]
        self.phrases = None if phrases is None else [list(p) for p in phrases]
        if self.phrases is not None:
            if len(self.phrases) != len(self.atom_ids):
                raise ValueError(f"{len(self.phrases)} phrase lists for {len(self.atom_ids)} atoms")
            from dpspin_sql.mentions import PhraseMatcher

            self._matcher = PhraseMatcher(self.phrases)
        vocab = sorted({w for ws in self.words for w in ws})
        self._vectorizer = CountVectorizer(token_pattern=TOKEN_PATTERN, lowercase=True, binary=True,
                                           vocabulary=vocab or ["\x00"])
        self._counter = TermCounter(vocab or ["\x00"], 1)
        index = {w: i for i, w in enumerate(vocab)}
        rows = [index[w] for ws in self.words for w in ws]
        cols = [j for j, ws in enumerate(self.words) for _ in ws]
        self._W = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(max(len(vocab), 1), len(self.words)))

    @property
    def mode(self) -> str:
        return "phrases" if self.phrases is not None else "label words"

    @classmethod
    def from_atoms(cls, atoms, *, renormalise: bool = True, phrases: list[list[str]] | None = None) -> KeywordScorer:
        return cls([a.atom_id for a in atoms], [content_words(a.label) for a in atoms], renormalise=renormalise,
                   phrases=phrases)

    def _score_matrix(self, texts):
        if self.phrases is not None:
            return self._matcher.counts(texts)
        X = self._counter.counts(texts, dtype=np.float64)
        X.data[:] = 1.0                       # binary: a word counts once
        return X @ self._W                    # sparse, small integers (exact in any order)

    def state(self):
        meta: dict = {"words": self.words}
        if self.phrases is not None:
            meta["phrases"] = self.phrases
        return meta, {}

    @classmethod
    def from_state(cls, meta, arrays):
        return cls(arrays["atom_ids"], meta["words"], renormalise=cls._renormalise_of(meta), phrases=meta.get("phrases"))


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


# Character n-grams within word boundaries (the supervised scorer's second view of a text:
# spellings, inflections and the masked `XXXX` spans the word tokens miss).
CHAR_PARAMS = {"analyzer": "char_wb", "lowercase": True, "sublinear_tf": True, "dtype": np.float32}


def char_vectorizer(vocabulary: list[str] | None = None, idf: np.ndarray | None = None,
                    ngrams: tuple[int, int] = (2, 5), **fit_params):
    """A character n-gram TF-IDF vectorizer; with vocabulary and idf the fitted one, rebuilt without pickle."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    lo, hi = (int(n) for n in ngrams)
    if vocabulary is None:
        return TfidfVectorizer(ngram_range=(lo, hi), **CHAR_PARAMS, **fit_params)
    vec = TfidfVectorizer(vocabulary={t: i for i, t in enumerate(vocabulary)}, ngram_range=(lo, hi), **CHAR_PARAMS)
    vec.idf_ = np.asarray(idf, dtype=np.float64)
    return vec


class CharCounter:
    """Character n-gram counts within word boundaries for a fixed vocabulary: element for
    element the counts of a fitted `char_wb` vectorizer (sklearn's `_count_vocab`: sorted
    CSR indices, integer counts), without its per-n-gram loop over every record.

    sklearn's `char_wb` analyzer lowercases the text, splits it on whitespace and counts,
    for each word w, the n-grams of " " + w + " " — so a record's counts are the sum of its
    words' counts. Each distinct word of a batch is cut into n-grams once (`word_ngrams`:
    the same loop as sklearn's), and the records' counts are the product of a records ×
    words count matrix with a words × n-grams one.
    """

    def __init__(self, vocabulary: list[str], ngrams: tuple[int, int]):
        self.index = {t: i for i, t in enumerate(vocabulary)}
        self.lo, self.hi = (int(n) for n in ngrams)

    def word_ngrams(self, word: str) -> list[str]:
        """sklearn's `_char_wb_ngrams` on one (lowercased) word."""
        w = " " + word + " "
        out = []
        for n in range(self.lo, self.hi + 1):
            offset = 0
            out.append(w[offset:offset + n])
            while offset + n < len(w):
                offset += 1
                out.append(w[offset:offset + n])
            if offset == 0:      # a word shorter than n is counted once
                break
        return out

    def counts(self, texts: list[str], dtype=np.float32) -> sparse.csr_matrix:
        ids: dict[str, int] = {}
        tok: list[int] = []
        indptr = [0]
        for text in texts:
            for w in text.lower().split():
                tok.append(ids.setdefault(w, len(ids)))
            indptr.append(len(tok))
        D = sparse.csr_matrix((np.ones(len(tok), dtype=np.int64), np.asarray(tok, dtype=np.int64),
                               np.asarray(indptr, dtype=np.int64)), shape=(len(texts), len(ids)))
        D.sum_duplicates()
        index = self.index
        rows: list[int] = []
        cols: list[int] = []
        for i, w in enumerate(ids):
            for g in self.word_ngrams(w):
                j = index.get(g)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
        G = sparse.csr_matrix((np.ones(len(rows), dtype=np.int64), (np.asarray(rows, dtype=np.int64),
                                                                     np.asarray(cols, dtype=np.int64))),
                              shape=(len(ids), len(index)))
        G.sum_duplicates()
        X = (D @ G).tocsr()
        X.sum_duplicates()
        X.eliminate_zeros()
        X.sort_indices()
        return X.astype(dtype)


def fast_char_transform(vec, texts: list[str], counter: CharCounter):
    """`vec.transform(texts)` of a fitted `char_vectorizer`, bit for bit, with the counts from a `CharCounter`."""
    return vec._tfidf.transform(counter.counts(texts, dtype=vec.dtype), copy=False)


def stack_views(word, char):
    """Word and character TF-IDF side by side, each row L2-normalised again (CSR float32)."""
    from sklearn.preprocessing import normalize

    X = sparse.hstack([word, char], format="csr", dtype=np.float32)
    return normalize(X, copy=False)


def vocabulary_of(vec) -> list[str]:
    return [t for t, _ in sorted(vec.vocabulary_.items(), key=lambda kv: kv[1])]


def fast_transform(vec, texts: list[str], counter: TermCounter | None = None):
    """`vec.transform(texts)`, bit for bit, with the term counts from a `TermCounter`.

    The counts are exact integers in sklearn's CSR layout; the TF-IDF weighting and the L2
    normalisation are the vectorizer's own transformer, so the floats are the same ones.
    Falls back to `vec.transform` for a configuration the counter does not reproduce.
    """
    counter = counter or fast_counter(vec)
    if counter is None or not hasattr(vec, "_tfidf"):
        return vec.transform(texts)
    return vec._tfidf.transform(counter.counts(texts, dtype=vec.dtype), copy=False)


def fast_counter(vec) -> TermCounter | None:
    """A `TermCounter` equivalent to a fitted word vectorizer's counting, or None if there is none."""
    lo, hi = vec.ngram_range
    if (vec.analyzer != "word" or vec.token_pattern != TOKEN_PATTERN or not vec.lowercase or vec.strip_accents
            or vec.preprocessor is not None or vec.tokenizer is not None or lo != 1 or hi not in (1, 2)
            or vec.input != "content" or getattr(vec, "binary", False)):
        return None
    return TermCounter(vocabulary_of(vec), hi, stop_words=vec.get_stop_words())


class _TfidfScorer(Scorer):
    def __init__(self, atom_ids, vocabulary: list[str], idf, ngrams: int = 1, *, renormalise: bool = True):
        super().__init__(atom_ids, renormalise=renormalise)
        self.vocabulary = list(vocabulary)
        self.idf = np.asarray(idf, dtype=np.float64)
        self.ngrams = int(ngrams)
        self.vectorizer = tfidf_vectorizer(self.vocabulary, self.idf, self.ngrams)
        self._counter = fast_counter(self.vectorizer)

    def transform(self, texts: list[str]):
        """The TF-IDF matrix of the texts (identical to `self.vectorizer.transform`)."""
        return fast_transform(self.vectorizer, texts, self._counter)

    def _base_state(self):
        return {"vocabulary": self.vocabulary, "ngrams": self.ngrams}, {"idf": self.idf}


class SimilarityScorer(_TfidfScorer):
    """Cosine between a text's TF-IDF vector and each atom's (label + description [+ aux centroid])."""

    kind = "similarity"

    def __init__(self, atom_ids, vocabulary, idf, atom_matrix, ngrams: int = 2, *, renormalise: bool = True):
        super().__init__(atom_ids, vocabulary, idf, ngrams, renormalise=renormalise)
        self.atom_matrix = sparse.csr_matrix(atom_matrix, dtype=np.float32)   # m × V, rows L2-normalised
        # X @ A.T with A.T dense gives the same float32 sums as with A.T sparse (scipy adds the
        # products in X's row order either way; a zero product changes no sum) at 1/6 the time.
        m, V = self.atom_matrix.shape
        self._AT = np.ascontiguousarray(self.atom_matrix.T.toarray()) if m * V <= _DENSE_LIMIT else None

    def _score_matrix(self, texts):
        X = self.transform(texts)
        if self._AT is not None:
            return np.asarray(X @ self._AT, dtype=np.float64)
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
        return cls(arrays["atom_ids"], meta["vocabulary"], arrays["idf"], A, meta.get("ngrams", 2),
                   renormalise=cls._renormalise_of(meta))


def softmax_atoms(logits: np.ndarray, cols: np.ndarray, m: int) -> np.ndarray:
    """Class probabilities (in place on float64 `logits`) scattered onto m atom columns.

    `cols[c]` is class c's atom column, -1 for the 'other' class (its mass is dropped).
    """
    logits -= logits.max(axis=1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=1, keepdims=True)
    known = cols >= 0
    if known.all() and cols.size == m and (cols == np.arange(m)).all():
        return logits
    out = np.zeros((logits.shape[0], m))
    out[:, cols[known]] = logits[:, known]
    return out


class SupervisedScorer(_TfidfScorer):
    """A linear classifier on TF-IDF; the softmax of its class scores are the atom scores.

    Features: the word TF-IDF vector, and with `char_vocabulary` (scorers fitted with
    `fit.fit_on(..., char=True)`) also a character n-gram TF-IDF vector beside it, the two rows
    L2-normalised together (`stack_views`). The weights are the fitted model's, whatever
    fitted them (multinomial logistic regression, or one-vs-rest linear SVMs summed over
    a metadata dictionary's levels: dpspin_sql.fit). The 'other' class (aux records whose
    label is not an atom) takes part of each record's probability. By default the kept
    top-K probabilities are renormalised to sum 1 (a record contributes its full unit);
    `renormalise=False` keeps the raw probabilities (the behaviour of scorers saved
    before the option existed).
    """

    kind = "supervised"
    _LEGACY_RENORMALISE = False

    def __init__(self, atom_ids, vocabulary, idf, coef, intercept, class_atoms, ngrams: int = 1, *,
                 renormalise: bool = True, char_vocabulary: list[str] | None = None, char_idf=None,
                 char_ngrams: tuple[int, int] = (2, 5)):
        super().__init__(atom_ids, vocabulary, idf, ngrams, renormalise=renormalise)
        self.coef = np.asarray(coef, dtype=np.float32)          # C × V (V: words, then char n-grams)
        self.intercept = np.asarray(intercept, dtype=np.float64)
        self.class_atoms = np.asarray(class_atoms, dtype=np.int64)   # atom id per class, -1 = other
        self.char_vocabulary = None if char_vocabulary is None else list(char_vocabulary)
        self.char_idf = None if char_idf is None else np.asarray(char_idf, dtype=np.float64)
        self.char_ngrams = (int(char_ngrams[0]), int(char_ngrams[1]))
        self._char = None
        if self.char_vocabulary is not None:
            if self.char_idf is None or self.char_idf.size != len(self.char_vocabulary):
                raise ValueError("the character vocabulary needs one idf weight per n-gram")
            self._char = char_vectorizer(self.char_vocabulary, self.char_idf, self.char_ngrams)
            self._char_counter = CharCounter(self.char_vocabulary, self.char_ngrams)
        width = len(self.vocabulary) + (len(self.char_vocabulary) if self.char_vocabulary is not None else 0)
        if self.coef.ndim != 2 or self.coef.shape[1] != width:
            raise ValueError(f"coef has {self.coef.shape[-1]} columns for {width} features")
        col = {int(a): j for j, a in enumerate(self.atom_ids)}
        self._cols = np.array([col.get(int(a), -1) for a in self.class_atoms])
        self._coef_T = np.ascontiguousarray(self.coef.T)       # V × C: the product reads rows of it

    def features(self, texts: list[str]):
        """The feature rows the weights apply to (word TF-IDF, or word beside char n-grams)."""
        X = self.transform(texts)
        if self._char is None:
            return X
        return stack_views(X, fast_char_transform(self._char, texts, self._char_counter))

    def _score_matrix(self, texts):
        X = self.features(texts)
        logits = np.asarray(X @ self._coef_T, dtype=np.float64)
        logits += self.intercept
        return softmax_atoms(logits, self._cols, len(self.atom_ids))

    def state(self):
        meta, arrays = self._base_state()
        arrays = dict(arrays, coef=self.coef, intercept=self.intercept, class_atoms=self.class_atoms)
        if self.char_vocabulary is not None:
            meta = dict(meta, char_vocabulary=self.char_vocabulary, char_ngrams=list(self.char_ngrams))
            arrays["char_idf"] = self.char_idf
        return meta, arrays

    @classmethod
    def from_state(cls, meta, arrays):
        return cls(arrays["atom_ids"], meta["vocabulary"], arrays["idf"], arrays["coef"], arrays["intercept"],
                   arrays["class_atoms"], meta.get("ngrams", 1), renormalise=cls._renormalise_of(meta),
                   char_vocabulary=meta.get("char_vocabulary"), char_idf=arrays.get("char_idf"),
                   char_ngrams=tuple(meta.get("char_ngrams", (2, 5))))


SCORERS: dict[str, type[Scorer]] = {"keyword": KeywordScorer, "similarity": SimilarityScorer,
                                    "supervised": SupervisedScorer}


def kind_of(blob: bytes) -> str:
    """The scorer kind a saved blob holds (without rebuilding it)."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return str(json.loads(z["__meta__"].tobytes().decode()).get("kind", ""))


def from_bytes(blob: bytes) -> Scorer:
    """Rebuild a scorer from `Scorer.to_bytes()` output (no pickle is ever loaded)."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode())
    cls = SCORERS.get(meta.get("kind"))
    if cls is None:   # the embedding scorers register here when dpspin_sql.embedding is imported
        raise ValueError(f"unknown scorer kind {meta.get('kind')!r} (load it with assign.scorer_from_bytes)")
    scorer = cls.from_state(meta, arrays)
    if "thresholds" in arrays:
        calibration = meta.get("calibration") or {}
        if not isinstance(calibration, dict):
            raise ValueError("saved scorer: calibration must be an object")
        scorer.calibrate(arrays["thresholds"], calibration)
    return scorer
