"""Throughput of `dpspin assign` on 100,000 target records, m=200 atoms, K=3.

Synthetic corpus (seeded): 200 two-word topics; each record mentions one or two topics
among filler words; a 20,000-record auxiliary split carries the topic as metadata so the
metadata builder gives m=200 and every scorer can be fitted. Each scorer runs in its
own process so peak RSS is its own. Reports, never asserts.

    .venv/bin/python bench/bench_assign.py [--records 100000] [--scorers keyword,similarity,supervised]
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa


def words(rng, n: int) -> list[str]:
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "gu", "be", "fi", "ho"]
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(syll, size=rng.integers(2, 4))))
    return sorted(out)


def make_store(path: Path, n_target: int, n_aux: int, m: int, seed: int = 0) -> None:
    from dpspin_sql import atoms, store

    rng = np.random.default_rng(seed)
    vocab = words(rng, 3000)
    topics = [f"{vocab[2 * j]} {vocab[2 * j + 1]}" for j in range(m)]
    filler = vocab[2 * m:]
    n = n_target + n_aux
    weights = 1.0 / np.arange(1, m + 1)
    first = rng.choice(m, size=n, p=weights / weights.sum())
    second = rng.integers(0, m, size=n)
    fill = rng.choice(len(filler), size=(n, 25))
    texts = [" ".join([topics[first[i]]] + [filler[k] for k in fill[i, :12]] + [topics[second[i]]]
                      + [filler[k] for k in fill[i, 12:]]) for i in range(n)]
    con = store.connect(path, create=True)
    table = pa.table({"record_id": [f"r{i:07d}" for i in range(n)], "text": texts,
                      "split": ["aux" if i < n_aux else "target" for i in range(n)],
                      "metadata": [json.dumps({"topic": topics[first[i]]}) for i in range(n)]})
    con.register("bench_rows", table)
    con.execute("INSERT INTO records SELECT record_id, NULL, text, split, CAST(metadata AS JSON) FROM bench_rows")
    con.unregister("bench_rows")
    atoms.build(con, "metadata", fields=["topic"], m=m)
    con.close()


def run_one(db: Path, scorer: str, K: int) -> dict:
    from dpspin_sql import assign, store

    con = store.connect(db)
    t0 = time.perf_counter()
    fitted = assign.fit_scorer(con, scorer)
    fit_s = time.perf_counter() - t0
    report = assign.assign(con, fitted, K=K)
    total = time.perf_counter() - t0
    apply_s = total - fit_s
    return {"scorer": scorer, "records": report.n_records, "m": report.m, "K": K,
            "fit_s": round(fit_s, 2), "assign_s": round(apply_s, 2),
            "records_per_s": round(report.n_records / apply_s), "rows": report.n_rows,
            "unassigned": report.n_unassigned,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--aux", type=int, default=20_000)
    ap.add_argument("-m", type=int, default=200)
    ap.add_argument("-K", type=int, default=3)
    ap.add_argument("--scorers", default="keyword,similarity,supervised")
    ap.add_argument("--child", nargs=2, metavar=("DB", "SCORER"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(Path(args.child[0]), args.child[1], args.K)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        t = time.perf_counter()
        make_store(db, args.records, args.aux, args.m)
        print(f"synthetic store: {args.records} target + {args.aux} aux records, m={args.m} "
              f"({time.perf_counter() - t:.1f}s)")
        for scorer in args.scorers.split(","):
            res = subprocess.run([sys.executable, __file__, "--child", str(db), scorer, "-K", str(args.K)],
                                 capture_output=True, text=True, check=True)
            print(res.stdout.strip())


if __name__ == "__main__":
    main()
