"""How the supervised scorer's defaults were chosen (issue 22): cross-validation on the
CFPB **auxiliary split only** (the README pipeline, `dpspin split --seed 1`), top-1 accuracy
of held-out auxiliary records whose combination is an atom. No target record is read.

Folds: 3, by a SHA-256 of the record id. Per fold, the word 1-2-gram and char 2-5-gram
TF-IDF are fitted on the other folds; grid: features {words, words + chars} × C {0.1,
0.3, 1} × level weight {0, 0.5, 1} (dpspin_sql.fit.add_levels), and the logistic scorer
before issue 22's top-1 work (word unigrams, C = 10) for reference. Prints the grid,
best first. Reports, asserts nothing.

    nice .venv/bin/python bench/cfpb_aux_cv.py [--folds 3] [--split-seed 1]
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cfpb_complaints" / "complaints.jsonl.gz"
FIELDS = ["product", "issue", "sub_issue"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folds", type=int, default=3)
    ap.add_argument("--split-seed", type=int, default=1)
    args = ap.parse_args()
    from dpspin_sql import builders, fit, presets, scorers, split, store
    from dpspin_sql.atoms import current_atoms, current_manifest

    with tempfile.TemporaryDirectory() as tmp:
        con = store.connect(Path(tmp) / "cfpb.duckdb", create=True)
        presets.load_preset(con, "cfpb", DATA)
        split.split(con, "record", 0.5, seed=args.split_seed)
        builders.build(con, "metadata", fields=FIELDS, m=50)
        atoms, manifest = current_atoms(con), current_manifest(con)
        ids, texts, metadata = fit.aux_records(con)      # the auxiliary split only
        con.close()
    y = fit.aux_labels(metadata, atoms, manifest)
    fold = np.array([int.from_bytes(hashlib.sha256(r.encode()).digest()[:8], "big") % args.folds for r in ids])
    res: dict[str, list[float]] = {}
    for f in range(args.folds):
        tr, te = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        t_tr, t_te = [texts[i] for i in tr], [texts[i] for i in te]
        md_tr = [metadata[i] for i in tr]
        y_tr, y_te = y[tr], y[te]
        known = y_te >= 0
        old = fit.fit_on(t_tr, md_tr, atoms, manifest, "supervised", model="logistic")
        S = old.scores(t_te)
        res.setdefault("logistic, words 1-gram, C=10 (before)", []).append(
            float((old.atom_ids[S.argmax(1)][known] == y_te[known]).mean()))
        w = scorers.tfidf_vectorizer(ngrams=2, min_df=2, max_features=50_000)
        Xw, Tw = w.fit_transform(t_tr), w.transform(t_te)
        c = scorers.char_vectorizer(ngrams=fit.CHAR_NGRAMS, min_df=fit.CHAR_MIN_DF, max_features=fit.CHAR_MAX_FEATURES)
        Xc, Tc = c.fit_transform(t_tr), c.transform(t_te)
        for name, (X, T) in {"words": (Xw, Tw),
                             "words+chars": (scorers.stack_views(Xw, Xc), scorers.stack_views(Tw, Tc))}.items():
            for C in (0.1, 0.3, 1.0):
                coef0, b0, classes = fit.fit_svm(X, y_tr, C)
                coef1, b1 = fit.add_levels(X, md_tr, classes, coef0, b0, manifest, C, 1.0)
                for lw in (0.0, 0.5, 1.0):   # the levels' part is linear in its weight
                    coef, b = coef0 + lw * (coef1 - coef0), b0 + lw * (b1 - b0)
                    margins = np.asarray(T @ np.asarray(coef).T) + b
                    cols = classes >= 0
                    pred = classes[cols][margins[:, cols].argmax(1)]
                    res.setdefault(f"svm, {name}, C={C}, level weight {lw}", []).append(
                        float((pred[known] == y_te[known]).mean()))
        print(f"fold {f} done", file=sys.stderr, flush=True)
    for k, v in sorted(res.items(), key=lambda kv: -np.mean(kv[1])):
        print(f"{np.mean(v):.4f}  {' '.join(f'{x:.4f}' for x in v)}  {k}")


if __name__ == "__main__":
    main()
