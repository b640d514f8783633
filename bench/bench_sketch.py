"""Benchmark: the enforced fixed-point sketch + an OpenDP release at scale (reports, never asserts).

Synthetic data is generated inside DuckDB with SQL (range() + hash, no Python loops) and
written to a temporary store file: N assignment rows = N/2 records × 2 atoms each, about
5 records per user on average with a heavy tail (a few users have thousands), m = 200
atoms with a skewed popularity, raw weights in (0, 1] (the sketch renormalises them).

For each size and unit, a fresh subprocess opens the store and times
  sketch  = sketch.compute_sketch (the SQL of queries/sketch_<unit>.sql), and
  release = make_mechanism + Mechanism.apply (OpenDP discrete Laplace, top-10 of 200),
and reports its peak RSS (resource.getrusage: DuckDB's native memory included) and the
peak above the RSS it had right after start-up and imports.

`--udf-at N` also compares, at N rows, the user-level clip as written (window SQL) with
the same query whose final clip is an arrow (vectorised Python) UDF, and checks they
agree exactly; `--baseline` adds a plain `SUM(weight) GROUP BY atom` (no bounds, no noise).

    .venv/bin/python bench/bench_sketch.py                    # 10^6 and 10^7 rows
    .venv/bin/python bench/bench_sketch.py --sizes 1e6 --udf-at 1e6
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

M_ATOMS = 200
TOP_L = 10
RECORDS_PER_USER = 5
ROWS_PER_RECORD = 2


def rss_now_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB on Linux


# ----------------------------------------------------------------------------- data

GENERATE_RECORDS = """
INSERT INTO records (record_id, user_id, text, split)
SELECT 'r' || i,
       -- heavy tail: user index = floor(n_users · U^3) puts thousands of records on the first
       -- users and one or two on most
       'u' || CAST(floor($n_users * pow(hash(i, 17) / 18446744073709551616.0, 3)) AS BIGINT),
       NULL, 'target'
FROM range($n_records) AS t(i)
"""

GENERATE_ASSIGNMENTS = """
INSERT INTO assignments (record_id, atom_id, weight)
SELECT 'r' || (r // 2),
       -- skewed atom popularity over the m atoms
       CAST(floor($m * pow(hash(r, 29) / 18446744073709551616.0, 2)) AS INTEGER),
       (1 + hash(r, 31) % 1000000) / 1000000.0
FROM range($n_rows) AS t(r)
"""


def build_store(path: Path, n_rows: int) -> dict:
    from dpspin_sql import atoms, ledger, store

    n_records = n_rows // ROWS_PER_RECORD
    n_users = max(1, n_records // RECORDS_PER_USER)
    started = time.perf_counter()
    con = store.connect(path, create=True)
    ledger.set_budget(con, 1e6, 0.5)
    atoms.install(con, [atoms.Atom(i, f"atom {i}", f"synthetic atom {i}") for i in range(M_ATOMS)],
                  builder="file", manifest={"source": "bench"})
    con.execute(GENERATE_RECORDS, {"n_records": n_records, "n_users": n_users})
    con.execute(GENERATE_ASSIGNMENTS, {"n_rows": n_rows, "m": M_ATOMS})
    con.execute("CHECKPOINT")
    users, mean_rpu, max_rpu = con.execute(
        "SELECT count(*), avg(n), max(n) FROM (SELECT user_id, count(*) AS n FROM records GROUP BY user_id)"
    ).fetchall()[0]
    con.close()
    return {"rows": n_rows, "records": n_records, "users": int(users), "records_per_user_mean": float(mean_rpu),
            "records_per_user_max": int(max_rpu), "build_s": time.perf_counter() - started}


# ----------------------------------------------------------------------------- one measurement (subprocess)

def measure_release(db: str, unit: str) -> dict:
    """Runs in its own process so that the peak RSS is this measurement's alone."""
    from dpspin_sql import store
    from dpspin_sql.mechanisms import make_mechanism
    from dpspin_sql.request import ReleaseRequest
    from dpspin_sql.sketch import compute_sketch

    base = rss_now_mb()
    con = store.connect(db, read_only=False)
    t0 = time.perf_counter()
    sk = compute_sketch(con, unit, K=3, B=1.0)
    t1 = time.perf_counter()
    mech = make_mechanism(ReleaseRequest(mechanism="laplace", epsilon=1.0, unit=unit, K=3, L=TOP_L), sk.m)
    rel = mech.apply(sk.mass)
    t2 = time.perf_counter()
    assert len(rel.admitted) == TOP_L
    return {"sketch_s": t1 - t0, "release_s": t2 - t1, "peak_rss_mb": peak_rss_mb(),
            "peak_above_start_mb": peak_rss_mb() - base}


def measure_baseline(db: str) -> dict:
    from dpspin_sql import store

    base = rss_now_mb()
    con = store.connect(db)
    t0 = time.perf_counter()
    con.execute("SELECT a.atom_id, SUM(a.weight) FROM assignment_rows a JOIN records r USING (record_id) "
                "WHERE r.split = 'target' GROUP BY a.atom_id").fetchall()
    return {"sketch_s": time.perf_counter() - t0, "release_s": 0.0, "peak_rss_mb": peak_rss_mb(),
            "peak_above_start_mb": peak_rss_mb() - base}


def _arrow_clip(u, total, bound):
    """floor(u · bound / total) when total > bound, else u — exact in int64 as long as
    total · bound < 2^63 (checked), via u = q·total + r."""
    import numpy as np
    import pyarrow as pa

    u = u.to_numpy(zero_copy_only=False).astype(np.int64)
    t = total.to_numpy(zero_copy_only=False).astype(np.int64)
    b = bound.to_numpy(zero_copy_only=False).astype(np.int64)
    if len(t) and int(t.max()) >= (2 ** 63 - 1) // max(int(b.max()), 1):
        out = [ui * bi // ti if ti > bi else ui for ui, ti, bi in zip(u.tolist(), t.tolist(), b.tolist())]
        return pa.array(out, pa.int64())
    q, r = np.divmod(u, np.maximum(t, 1))
    clipped = q * b + (r * b) // np.maximum(t, 1)
    return pa.array(np.where(t > b, clipped, u), pa.int64())


def measure_clip(db: str, how: str) -> dict:
    """The user-level sketch with its final clip in window SQL (as shipped) or an arrow UDF."""
    import duckdb

    from dpspin_sql import queries, store
    from dpspin_sql.sketch import SCALE, fixed_bound

    base = rss_now_mb()
    con = store.connect(db)
    sql = queries.load("sketch_user")
    if how == "arrow_udf":
        con.create_function("py_clip", _arrow_clip, [duckdb.sqltypes.BIGINT] * 3, duckdb.sqltypes.BIGINT,
                            type="arrow")
        target = "CAST(SUM(dpspin_clip(u, total, $bound)) AS HUGEINT)"
        assert target in sql, "sketch_user.sql changed; update the UDF variant"
        sql = sql.replace(target, "CAST(SUM(py_clip(CAST(u AS BIGINT), CAST(total AS BIGINT), $bound)) AS HUGEINT)")
    params = {"K": 3, "scale": SCALE, "bound": fixed_bound(1.0)}
    t0 = time.perf_counter()
    rows = con.execute(sql, params).fetchall()
    elapsed = time.perf_counter() - t0
    # the clip step alone, on the per-user vectors materialised first
    head, _, _ = sql.rpartition("\nSELECT atom_id")
    con.execute("CREATE TEMP TABLE uv AS " + head + "\nSELECT user_id, atom_id, u FROM user_vectors",
                {"K": 3, "scale": SCALE})
    clip = ("SUM(dpspin_clip(u, total, $bound))" if how == "window_sql"
            else "SUM(py_clip(CAST(u AS BIGINT), CAST(total AS BIGINT), $bound))")
    t2 = time.perf_counter()
    step = con.execute(f"WITH t AS (SELECT atom_id, u, SUM(u) OVER (PARTITION BY user_id) AS total FROM uv) "
                       f"SELECT atom_id, CAST({clip} AS HUGEINT) FROM t GROUP BY atom_id ORDER BY atom_id",
                       {"bound": params["bound"]}).fetchall()
    step_s = time.perf_counter() - t2
    assert [tuple(map(int, r)) for r in step] == [tuple(map(int, r)) for r in rows]
    return {"sketch_s": elapsed, "release_s": 0.0, "clip_step_s": step_s, "peak_rss_mb": peak_rss_mb(),
            "peak_above_start_mb": peak_rss_mb() - base, "result": [[int(a), int(v)] for a, v in rows]}


def run_child(kind: str, db: str, arg: str) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, db, arg]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         env=os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    return json.loads(out.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- main

def parse_size(s: str) -> int:
    return int(float(s))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7", help="assignment-row counts, comma-separated (default 1e6,1e7)")
    ap.add_argument("--units", default="record,user")
    ap.add_argument("--udf-at", default="1e6", help="compare window SQL vs arrow UDF clip at this size ('' to skip)")
    ap.add_argument("--baseline", action="store_true", help="also time a plain SUM … GROUP BY atom")
    ap.add_argument("--repeat", type=int, default=1, help="runs per cell (the fastest is reported)")
    ap.add_argument("--workdir", default=None, help="where to write the temporary stores")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        kind, db, arg = args.child
        if kind == "release":
            res = measure_release(db, arg)
        elif kind == "baseline":
            res = measure_baseline(db)
        else:
            res = measure_clip(db, arg)
        print(json.dumps(res))
        return 0

    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    units = [u for u in args.units.split(",") if u]
    udf_at = parse_size(args.udf_at) if args.udf_at else None
    if udf_at is not None and udf_at not in sizes:
        sizes.append(udf_at)
    import duckdb
    import opendp

    print(f"# dpspin sketch benchmark — {os.cpu_count()} CPUs, duckdb {duckdb.__version__}, "
          f"opendp {getattr(opendp, '__version__', '0.16')}, m={M_ATOMS}, K=3, B=1, top-{TOP_L} Laplace\n")
    rows = []
    udf_rows = []
    with tempfile.TemporaryDirectory(prefix="dpspin-bench-", dir=args.workdir) as tmp:
        for n in sorted(sizes):
            db = str(Path(tmp) / f"bench_{n}.duckdb")
            info = build_store(Path(db), n)
            print(f"built {n:,} rows: {info['records']:,} records, {info['users']:,} users "
                  f"(mean {info['records_per_user_mean']:.1f}, max {info['records_per_user_max']:,} records/user) "
                  f"in {info['build_s']:.1f} s", file=sys.stderr)
            cells = ([("baseline", "")] if args.baseline else []) + [("release", u) for u in units]
            for kind, unit in cells:
                best = min((run_child(kind, db, unit or "-") for _ in range(args.repeat)),
                           key=lambda r: r["sketch_s"] + r["release_s"])
                rows.append((info, "plain SUM (no bounds, no noise)" if kind == "baseline" else unit, best))
            if udf_at == n:
                window = min((run_child("clip", db, "window_sql") for _ in range(args.repeat)),
                             key=lambda r: r["sketch_s"])
                udf = min((run_child("clip", db, "arrow_udf") for _ in range(args.repeat)),
                          key=lambda r: r["sketch_s"])
                same = window.pop("result") == udf.pop("result")
                udf_rows.append((info, window, udf, same))
            os.unlink(db)

    print("| assignment rows | records | users | unit | sketch (s) | release (s) | total (s) | peak RSS (MB) "
          "| peak above start (MB) |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for info, unit, r in rows:
        print(f"| {info['rows']:,} | {info['records']:,} | {info['users']:,} | {unit} | {r['sketch_s']:.3f} | "
              f"{r['release_s']:.3f} | {r['sketch_s'] + r['release_s']:.3f} | {r['peak_rss_mb']:.0f} | "
              f"{r['peak_above_start_mb']:.0f} |")
    if udf_rows:
        print("\nUser-level clip (whole user-level sketch query), window SQL vs arrow UDF:\n")
        print("| assignment rows | clip | whole query (s) | clip step alone (s) | peak RSS (MB) | same result |")
        print("|---:|---|---:|---:|---:|---|")
        for info, window, udf, same in udf_rows:
            print(f"| {info['rows']:,} | window SQL + integer macro (shipped) | {window['sketch_s']:.3f} | "
                  f"{window['clip_step_s']:.3f} | {window['peak_rss_mb']:.0f} | {same} |")
            print(f"| {info['rows']:,} | window SQL + arrow UDF | {udf['sketch_s']:.3f} | {udf['clip_step_s']:.3f} | "
                  f"{udf['peak_rss_mb']:.0f} | {same} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
