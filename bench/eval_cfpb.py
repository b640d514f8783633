"""Top-1 accuracy of every scorer on CFPB, the README pipeline (curator-side, never released).

load --preset cfpb; split --unit record --aux-fraction 0.5 --seed 1; atoms build --builder
metadata --fields product,issue,sub_issue -m 50; then `assign` + `evaluate` (what
`dpspin assign --evaluate` prints) for each scorer variant. Embedding variants share one
in-process memo of the embeddings (each text is encoded once; nothing is written out),
and report the assignment records/s measured on their first run (model encode included).

    .venv/bin/python bench/eval_cfpb.py [--variants a,b,…] [--max-tokens 256] [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "cfpb_complaints" / "complaints.jsonl.gz"

# name → (scorer, fit options)
VARIANTS = {
    "keyword": ("keyword", {}),
    "similarity": ("similarity", {"centroid": False}),
    "similarity+centroids": ("similarity", {}),
    "supervised": ("supervised", {}),
    "supervised (no renormalise)": ("supervised", {"renormalise": False}),
    "supervised (char n-grams)": ("supervised", {"char": True}),
    "supervised (logistic: before the top-1 work)": ("supervised", {"model": "logistic"}),
    "embedding": ("embedding", {"centroid": False}),
    "embedding+centroids": ("embedding", {}),
    "embedding-supervised (emb)": ("embedding-supervised", {"features": "embedding"}),
    "embedding-supervised (emb+tfidf)": ("embedding-supervised", {"features": "embedding+tfidf"}),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from dpspin_sql import assign, builders, presets, split, store

    memo: dict[str, object] = {}
    encode = None
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        con = store.connect(Path(tmp) / "cfpb.duckdb", create=True)
        presets.load_preset(con, "cfpb", DATA)
        split.split(con, "record", 0.5, seed=1)
        builders.build(con, "metadata", fields=["product", "issue", "sub_issue"], m=50)
        for name in args.variants.split(","):
            scorer, opts = VARIANTS[name]
            opts = dict(opts)
            if scorer.startswith("embedding"):
                if encode is None:
                    import numpy as np

                    from dpspin_sql import embedding as embed

                    enc = embed.encoder(args.max_tokens)

                    def encode(texts, _enc=enc):
                        todo = [t for t in dict.fromkeys(texts) if t not in memo]
                        if todo:
                            for t, v in zip(todo, _enc.encode(todo)):
                                memo[t] = v
                        return np.stack([memo[t] for t in texts]) if texts else np.zeros((0, embed.DIM), np.float32)
                opts.update(encode=encode, max_tokens=args.max_tokens)
            t = time.perf_counter()
            fitted = assign.fit_scorer(con, scorer, **opts)
            fit_s = time.perf_counter() - t
            cached = len(memo)
            report = assign.assign(con, fitted, K=3)
            cached = scorer.startswith("embedding") and len(memo) == cached   # target embeddings reused
            ev = assign.evaluate(con, K=3)
            row = {"variant": name, "top1_accuracy": ev["top1_accuracy"], "overlap_at_10": ev["overlap_at_L"],
                   "n_target": ev["n_target"], "fit_s": round(fit_s, 1), "assign_s": report.seconds,
                   "records_per_s": round(report.n_records / max(report.seconds, 1e-9)),
                   "target_embeddings_cached": cached,
                   "sketch_mass": round(float(con.execute("SELECT sum(weight) FROM assignment_rows").fetchone()[0]), 1)}
            results.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
