"""Loader cost before and after a change, side by side in one run (reports, asserts nothing).

    nice .venv/bin/python bench/bench_loaders.py --other /path/to/other/checkout [--records 1000000]

Writes synthetic records (id, user, text) and assignment rows (2 per record) as Parquet and as
CSV once, then, alternating the two checkouts in each of 3 rounds, times `dpspin load` and
`dpspin assignments load` of each file in a fresh process each (the CLI as a user runs it).
Prints the median wall time per checkout and the ratio this/other.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parents[1]


def make_files(root: Path, n: int) -> dict[str, Path]:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE r AS SELECT 'r' || i AS record_id, 'u' || (i % {max(n // 5, 1)}) AS user_id, "
                "'text of record ' || i || ', with a comma' AS text FROM range({n}) t(i)".format(n=n))
    con.execute("CREATE TABLE a AS SELECT record_id, (hash(record_id) % 200)::INTEGER AS atom_id, 0.5 AS weight "
                "FROM r UNION ALL SELECT record_id, ((hash(record_id) + 7) % 200)::INTEGER, 0.25 FROM r")
    out = {}
    for table, name in (("r", "records"), ("a", "assignments")):
        for fmt in ("parquet", "csv"):
            path = root / f"{name}.{fmt}"
            con.execute(f"COPY {table} TO '{path}' ({'FORMAT parquet' if fmt == 'parquet' else 'HEADER'})")
            out[f"{name}.{fmt}"] = path
    con.execute("CREATE TABLE t AS SELECT range AS atom_id, 'atom ' || range AS label FROM range(200)")
    con.execute(f"COPY t TO '{root / 'taxonomy.csv'}' (HEADER)")
    out["taxonomy"] = root / "taxonomy.csv"
    con.close()
    return out


def timed(checkout: Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from dpspin_sql.cli import run; "
            "sys.exit(run(sys.argv[2:]))")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(checkout), *argv], env=env, capture_output=True,
                          text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: {' '.join(argv)} failed: {proc.stderr.strip()}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", type=Path, required=True)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-loaders-"))
    files = make_files(work, args.records)
    results: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for label, checkout in (("this", HERE), ("other", args.other)):
            for fmt in ("parquet", "csv"):
                db = work / f"{label}-{fmt}.duckdb"
                db.unlink(missing_ok=True)
                timed(checkout, ["init", "--db", str(db), "--epsilon-budget", "10"])
                results.setdefault((f"load {fmt}", label), []).append(
                    timed(checkout, ["load", "--db", str(db), "--input", str(files[f"records.{fmt}"]),
                                     "--user-col", "user_id"]))
                timed(checkout, ["atoms", "load", "--db", str(db), "--input", str(files["taxonomy"])])
                results.setdefault((f"assignments load {fmt}", label), []).append(
                    timed(checkout, ["assignments", "load", "--db", str(db), "--input",
                                     str(files[f"assignments.{fmt}"])]))
    print(f"{args.records} records, {2 * args.records} assignment rows; median of {args.rounds} rounds")
    print("| step | this | other | this/other |")
    print("|---|---:|---:|---:|")
    for step in dict.fromkeys(k[0] for k in results):
        this, other = statistics.median(results[(step, "this")]), statistics.median(results[(step, "other")])
        print(f"| {step} | {this:.2f} s | {other:.2f} s | {this / other:.2f}× |")


if __name__ == "__main__":
    main()
