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


def fit_on(texts: list[str], metadata: list, atoms: list[Atom], manifest: dict, scorer: str, *, centroid: bool = True,
           min_df: int = 2, max_features: int = 50_000, C: float = 10.0, renormalise: bool = True,
           ngrams: int | None = None) -> scorers.Scorer:
    """Fit a TF-IDF scorer on these (auxiliary) texts and the public atom texts only.

    `renormalise` is saved with it. The calibration's folds call this on parts of the
    auxiliary split, so nothing here reads a store."""
    if not texts:
        raise BadInput(f"the {scorer} scorer needs auxiliary records to fit on")
    atom_texts = [f"{a.label}. {a.description}" for a in atoms]
    if ngrams is None:
        ngrams = 2 if scorer == "similarity" else 1     # bigrams help phrase atoms; unigrams suit the classifier
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
    coef, intercept, classes = fit_classifier(scorers.fast_transform(vec, texts), labels, C)
    return scorers.SupervisedScorer(ids, vocab, idf, coef, intercept, classes, ngrams, renormalise=renormalise)


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
