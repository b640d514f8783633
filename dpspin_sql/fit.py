"""Fitting the TF-IDF scorers on the auxiliary split and the public atom texts only.

Nothing here reads a target record: the vocabulary, IDF weights, centroids and the
classifier come from `records WHERE split = 'aux'` (queries/assign_aux_texts.sql) and
from the dictionary's labels/descriptions, so a word seen only in protected records can
never reach the scorer (tests/test_assign.py plants such a canary).
"""
from __future__ import annotations

import json

import duckdb
import numpy as np
from scipy import sparse
from sklearn.preprocessing import normalize

from dpspin_sql import queries, scorers
from dpspin_sql.atoms import Atom, current_manifest
from dpspin_sql.errors import BadInput


def aux_rows(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str | None]]:
    _, texts, metadata = aux_records(con)
    return texts, metadata


def aux_records(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str], list[str | None]]:
    """(record ids, texts, metadata) of the auxiliary split, in record-id order."""
    rows = con.execute(queries.load("assign_aux_texts")).fetchall()
    return [str(r[0]) for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def fit(con: duckdb.DuckDBPyConnection, atoms: list[Atom], scorer: str, **opts) -> scorers.Scorer:
    """Fit a TF-IDF scorer on the store's auxiliary split (uncalibrated: see relevance.calibrate)."""
    texts, metadata = aux_rows(con)
    if not texts:
        raise BadInput(f"the {scorer} scorer is fitted on the auxiliary split, which is empty: "
                       "run dpspin split first, or load public records with --split aux")
    return fit_on(texts, metadata, atoms, current_manifest(con), scorer, **opts)


# The supervised scorer's defaults (issue 22, CFPB top-1), chosen by cross-validation on an
# auxiliary split only (bench/cfpb_aux_cv.py): one-vs-rest linear SVMs on word 1-2-gram
# TF-IDF, C = SVM_C, and the scores of the dictionary's coarser levels (Product, Product /
# Issue) added to each combination's, times LEVEL_WEIGHT. Character 2-5-gram TF-IDF beside the
# words (`char=True`) adds 1-2 points of CFPB top-1 at ~5x the scoring time: off by default.
SVM_C = 1.0
LEVEL_WEIGHT = 0.5
LOGISTIC_C = 10.0
CHAR_NGRAMS = (2, 5)
CHAR_MIN_DF = 3
CHAR_MAX_FEATURES = 100_000
MODELS = ("svm", "logistic")


def fit_on(texts: list[str], metadata: list, atoms: list[Atom], manifest: dict, scorer: str, *, centroid: bool = True,
           min_df: int = 2, max_features: int = 50_000, C: float | None = None, renormalise: bool = True,
           ngrams: int | None = None, model: str = "svm", char: bool | None = None,
           levels: bool | None = None) -> scorers.Scorer:
    """Fit a TF-IDF scorer on these (auxiliary) texts and the public atom texts only.

    `renormalise` is saved with it. The calibration's folds call this on parts of the
    auxiliary split, so nothing here reads a store. Supervised: `model` "svm" (the
    default: one-vs-rest linear SVMs, C = SVM_C; the dictionary's `levels` on by default,
    `char` n-grams off) or "logistic" (multinomial logistic regression on word
    TF-IDF, C = LOGISTIC_C: the scorer before issue 22's top-1 work)."""
    if not texts:
        raise BadInput(f"the {scorer} scorer needs auxiliary records to fit on")
    if model not in MODELS:
        raise BadInput(f"model must be one of {', '.join(MODELS)}, not {model!r}")
    svm = model == "svm"
    atom_texts = [f"{a.label}. {a.description}" for a in atoms]
    if ngrams is None:
        # bigrams help phrase atoms and the SVM; unigrams suit the logistic classifier
        ngrams = 2 if scorer == "similarity" or svm else 1
    vec = scorers.tfidf_vectorizer(ngrams=ngrams, min_df=min(min_df, len(texts)), max_features=max_features)
    try:
        vec.fit(texts + atom_texts if scorer == "similarity" else texts)
    except ValueError as exc:   # empty vocabulary
        raise BadInput(f"cannot fit the {scorer} scorer on the auxiliary split: {exc}") from None
    vocab, idf = scorers.vocabulary_of(vec), vec.idf_
    ids = [a.atom_id for a in atoms]
    if scorer == "similarity":
        A = normalize(scorers.fast_transform(vec, atom_texts))
        if centroid:
            members = aux_membership(texts, metadata, atoms, manifest)
            if members is not None:
                A = normalize(A + centroids(scorers.fast_transform(vec, texts), members, len(atoms)))
        return scorers.SimilarityScorer(ids, vocab, idf, A, ngrams, renormalise=renormalise)
    labels = aux_labels(metadata, atoms, manifest)
    if labels is None:
        raise BadInput("the supervised scorer needs atoms the auxiliary split carries as a label "
                       "(a metadata dictionary: dpspin atoms build --builder metadata); use --scorer similarity")
    X = scorers.fast_transform(vec, texts)
    if not svm:
        coef, intercept, classes = fit_classifier(X, labels, LOGISTIC_C if C is None else C)
        return scorers.SupervisedScorer(ids, vocab, idf, coef, intercept, classes, ngrams, renormalise=renormalise)
    C = SVM_C if C is None else C
    char_vocab = char_idf = None
    if char:
        cvec = scorers.char_vectorizer(ngrams=CHAR_NGRAMS, min_df=min(CHAR_MIN_DF, len(texts)),
                                       max_features=CHAR_MAX_FEATURES)
        try:
            Xc = cvec.fit_transform(texts)
        except ValueError:   # no n-gram frequent enough (a tiny split): words alone
            pass
        else:
            char_vocab, char_idf = scorers.vocabulary_of(cvec), cvec.idf_
            X = scorers.stack_views(X, Xc)
    coef, intercept, classes = fit_svm(X, labels, C)
    if levels is None or levels:
        coef, intercept = add_levels(X, metadata, classes, coef, intercept, manifest, C, LEVEL_WEIGHT)
    return scorers.SupervisedScorer(ids, vocab, idf, coef, intercept, classes, ngrams, renormalise=renormalise,
                                    char_vocabulary=char_vocab, char_idf=char_idf, char_ngrams=CHAR_NGRAMS)


def fit_classifier(X, labels: np.ndarray, C: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Multinomial logistic regression on aux features: (coef C × d, intercept C, class atom ids)."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    classes = np.unique(labels)
    if not (classes >= 0).any():
        raise BadInput("no auxiliary record carries an atom's label; the supervised scorer has nothing to learn")
    if len(classes) == 1:   # one class: probability 1 for it
        coef, intercept = np.zeros((1, X.shape[1])), np.zeros(1)
    else:
        with threadpool_limits(1):   # lbfgs on sparse input gains nothing from BLAS threads; they thrash (6x slower)
            clf = LogisticRegression(C=C, max_iter=2000).fit(X, labels)
        coef, intercept = clf.coef_, clf.intercept_
        if len(classes) == 2:   # sklearn's binary form: p(class 1) = sigmoid(w·x + b)
            coef, intercept = np.vstack([np.zeros_like(coef[0]), coef[0]]), np.array([0.0, intercept[0]])
    return coef, intercept, classes


def fit_svm(X, labels: np.ndarray, C: float, *, check: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-vs-rest linear SVMs (squared hinge, liblinear, a fixed seed: the same aux records
    give the same weights): (coef classes × d, intercept, classes). Two classes: the one
    margin, +f for the second class and -f for the first; one class: zero weights."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    classes = np.unique(labels)
    if check and not (classes >= 0).any():
        raise BadInput("no auxiliary record carries an atom's label; the supervised scorer has nothing to learn")
    if len(classes) == 1:
        return np.zeros((1, X.shape[1])), np.zeros(1), classes
    with warnings.catch_warnings():
        # liblinear's iteration cap (a few of the rare classes' problems): the weights at the cap are used as they are
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LinearSVC(C=C, random_state=0, max_iter=2000).fit(X, labels)
    coef, intercept = clf.coef_, clf.intercept_
    if len(classes) == 2:
        coef, intercept = np.vstack([-coef[0], coef[0]]), np.array([-intercept[0], intercept[0]])
    return coef, intercept, classes


def add_levels(X, metadata: list, classes: np.ndarray, coef: np.ndarray, intercept: np.ndarray, manifest: dict,
               C: float, weight: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """A metadata dictionary's coarser levels added to each combination's scores.

    For fields f1 … fk, level l < k labels each aux record with its first l fields (every
    aux record has them, the combinations outside the dictionary too: more records per
    class); a linear SVM is fitted per level, and each atom class's weights get its
    level-l class's weights, times `weight`, added (linear: the sum is one linear model).
    The 'other' class keeps its own."""
    fields = manifest.get("fields") or []
    values = {int(e["atom_id"]): tuple(v if v not in ("", None) else None for v in e["values"])
              for e in manifest.get("atoms", [])}
    coef = np.array(coef, dtype=np.float64)
    intercept = np.array(intercept, dtype=np.float64)
    for level in range(1, len(fields)):
        mine = {json.dumps(list(values[a][:level])) for a in classes.tolist() if a >= 0 and a in values}
        # a prefix no atom has is one class "" (it is never added to an atom; fewer problems to fit)
        keys = [k if k in mine else "" for k in (json.dumps(list(metadata_key(md, fields[:level]))) for md in metadata)]
        lcoef, lint, lclasses = fit_svm(X, np.array(keys, dtype=object), C, check=False)
        if len(lclasses) < 2:
            continue
        row = {str(c): j for j, c in enumerate(lclasses)}
        for i, a in enumerate(classes.tolist()):
            if a < 0 or a not in values:
                continue
            j = row.get(json.dumps(list(values[a][:level])))
            if j is not None:
                coef[i] += weight * lcoef[j]
                intercept[i] += weight * lint[j]
    return coef, intercept


def aux_labels(metadata: list[str | None], atoms: list[Atom], manifest: dict) -> np.ndarray | None:
    """Atom id per aux record from its metadata (-1: its combination is not an atom)."""
    if manifest.get("builder") != "metadata" or not manifest.get("fields"):
        return None
    fields = manifest["fields"]
    by_key = {tuple(e["values"]): e["atom_id"] for e in manifest.get("atoms", [])}
    valid = {a.atom_id for a in atoms}
    out = np.full(len(metadata), -1, dtype=np.int64)
    for i, meta in enumerate(metadata):
        key = metadata_key(meta, fields)
        atom = by_key.get(key)
        if atom is not None and atom in valid:
            out[i] = atom
    return out


def metadata_key(meta: str | dict | None, fields: list[str]) -> tuple:
    """The builder's key: each field's trimmed value, empty → None (queries/atoms_build_metadata.sql)."""
    d = json.loads(meta) if isinstance(meta, str) else (meta or {})
    key = []
    for f in fields:
        v = d.get(f)
        v = None if v is None else (str(v).strip() if not isinstance(v, str) else v.strip())
        key.append(v or None)
    return tuple(key)


def aux_membership(texts, metadata, atoms, manifest) -> list[set[int]] | None:
    """Which atoms each aux record belongs to, where the builder says (else None)."""
    labels = aux_labels(metadata, atoms, manifest)
    if labels is not None:
        return [{int(a)} if a >= 0 else set() for a in labels]
    if manifest.get("builder") == "phrases" and manifest.get("atoms"):
        from dpspin_sql import phrases

        return phrases.atom_documents(texts, manifest)
    return None


def centroids(X, members: list[set[int]], m: int):
    """Row-normalised mean TF-IDF vector of each atom's aux records (zero row if none)."""
    rows, cols = [], []
    for i, atoms in enumerate(members):
        for j in atoms:
            rows.append(j)
            cols.append(i)
    M = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, X.shape[0]))
    return normalize(M @ X)
