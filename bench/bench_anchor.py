"""Side by side, in one run and alternating: the plain DP-sound anchor query and dpspin.

The anchor is ../shared/perf/anchor.sql (a copy is below): integer fixed point 2^20, each
user's rows scaled by min(1, B/‖U‖₁) with a window over user_id, summed per atom, then
OpenDP integer Laplace over the 200-vector and the top 10. It trusts its input (no
dropping of bad weights, no deduplication, no top-K, no renormalisation). Its record-level
counterpart here ("plain sum") is the same without the window: SUM(w) GROUP BY atom_id.

dpspin is a full `release` (laplace, ε = 1, K = 3, L = 10, B = 1 at user level; the ledger
charged, the plan and its dictionary written) from
  store-ordered / store-scattered: a store built with `dpspin load` + `dpspin assignments
      load` from the records and assignments files written in record order or scattered
      (/work/perfdata/split_files.py), and
  parquet: straight from the Parquet file gen_data.py wrote (its rows carry user_id), with a
      small store that holds only the dictionary and the ledger.

Each variant is measured two ways, each in a fresh process:
  in-process: the process times itself from opening the store (or the file) to the
      released plan, after its imports; its peak RSS is the process's (ru_maxrss);
  CLI: the whole process (`dpspin release ...`, or `python bench_anchor.py --child anchor`
      for the anchor), wall time from spawn to exit, peak RSS from wait4.
Rounds alternate the variants (a rotated order each round) so that the ratios hold on a
shared machine; the table gives medians over rounds, and each ratio is the median of the
per-round ratios to that round's anchor. The last column is the largest difference between
the variant's un-noised sketch (2^24 fixed point) and the anchor's (2^20), in weight units:
fixed-point rounding and, on hostile rows, the enforcement (on gen_data's rows, which are
already clean, only rounding). It reports; it does not assert.

    python bench/bench_anchor.py --rounds 3 \
        --size 1e6 /work/perfdata/g1e6.parquet /work/perfdata/n1e6_ordered.duckdb /work/perfdata/n1e6_scattered.duckdb \
        --size 1e7 /work/perfdata/g1e7.parquet /work/perfdata/n1e7_ordered.duckdb /work/perfdata/n1e7_scattered.duckdb \
        --atoms /work/perfdata/atoms.csv
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ANCHOR_SQL = """
WITH r AS (SELECT user_id, atom_id, CAST(floor(weight * 1048576) AS BIGINT) AS w
           FROM read_parquet(?)),
     n AS (SELECT atom_id, w, CAST(SUM(w) OVER (PARTITION BY user_id) AS BIGINT) AS t FROM r)
SELECT atom_id,
       CAST(SUM(CASE WHEN t <= 1048576 THEN w ELSE (w * 1048576) // t END) AS BIGINT) AS s
FROM n GROUP BY atom_id ORDER BY atom_id
"""
PLAIN_SQL = """
SELECT atom_id, CAST(SUM(CAST(floor(weight * 1048576) AS BIGINT)) AS BIGINT) AS s
FROM read_parquet(?) GROUP BY atom_id ORDER BY atom_id
"""
EPSILON, K, L, B = 1.0, 3, 10, 1.0
HERE = Path(__file__).resolve()


# ---------------------------------------------------------------------------- child processes

def child_anchor(parquet: str, unit: str, sketch_out: str | None) -> dict:
    import duckdb
    from opendp.domains import atom_domain, vector_domain
    from opendp.measurements import make_laplace
    from opendp.metrics import l1_distance
    from opendp.mod import enable_features
    from opendp.typing import i64

    enable_features("contrib")
    t0 = time.perf_counter()
    con = duckdb.connect()
    rows = con.execute(ANCHOR_SQL if unit == "user" else PLAIN_SQL, [parquet]).fetchall()
    m = 200
    vec = [0] * m
    for atom_id, s in rows:
        vec[int(atom_id)] = int(s)
    meas = make_laplace(vector_domain(atom_domain(T=i64), size=m), l1_distance(T=i64), scale=1048576 / EPSILON)
    noisy = meas(vec)
    top = sorted(range(m), key=lambda j: -noisy[j])[:L]
    wall = time.perf_counter() - t0
    if sketch_out:
        Path(sketch_out).write_text(json.dumps({"scale": 1 << 20, "mass": vec}))
    return {"wall": wall, "top": top}


def child_dpspin(db: str, parquet: str | None, unit: str, out: str, sketch_out: str | None) -> dict:
    from dpspin_sql import store
    from dpspin_sql.outputs import Outputs
    from dpspin_sql.release import release
    from dpspin_sql.request import ReleaseRequest
    from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
    from dpspin_sql.source import files

    request = ReleaseRequest(mechanism="laplace", epsilon=EPSILON, unit=unit, K=K, L=L,
                             B=B if unit == "user" else None)
    t0 = time.perf_counter()
    con = store.connect(db)
    engine = DuckDBEngine(source=files(con, parquet) if parquet else None)
    release(con, request, engine, out=out, outputs=Outputs(store=db, force=True))
    wall = time.perf_counter() - t0
    if sketch_out:
        sk = engine.sketch(con, request.bounds)
        Path(sketch_out).write_text(json.dumps({"scale": int(sk.scale), "mass": [int(x) for x in sk.mass],
                                                "atom_ids": [int(a) for a in sk.atom_ids]}))
    con.close()
    return {"wall": wall}


# ------------------------------------------------------------------------------------ runner

def run_process(argv: list[str]) -> str:
    """Run one process to the end; its stdout (its stderr goes into the error if it fails)."""
    proc = subprocess.run(argv, capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:6])} ... failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return proc.stdout.decode()


def measured(argv: list[str]) -> tuple[float, float, str]:
    """Run argv under a tiny wrapper process that reports the child's own peak RSS (wait4)."""
    out = run_process([sys.executable, str(HERE), "--measure", "--", *argv])
    last = out.strip().splitlines()[-1]
    info = json.loads(last)
    return info["wall"], info["rss_mb"], "\n".join(out.strip().splitlines()[:-1])


def measure_main(argv: list[str]) -> None:
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stderr.write(err.decode()[-3000:])
        sys.exit(code or 1)
    sys.stdout.write(out.decode())
    print(json.dumps({"wall": wall, "rss_mb": usage.ru_maxrss / 1024}))


def variants(parquet: str, ordered: str, scattered: str, dict_store: str) -> list[dict]:
    out = [{"name": "anchor (user)", "kind": "anchor", "unit": "user", "parquet": parquet},
           {"name": "plain sum (record)", "kind": "anchor", "unit": "record", "parquet": parquet}]
    for unit in ("user", "record"):
        for name, db, pq in (("store-ordered", ordered, None), ("store-scattered", scattered, None),
                             ("parquet", dict_store, parquet)):
            if db:
                out.append({"name": f"dpspin {name} ({unit})", "kind": "dpspin", "unit": unit, "db": db,
                            "parquet": pq})
    return out


def argv_of(v: dict, mode: str, work: Path, sketch_out: str | None = None) -> list[str]:
    py = [sys.executable, str(HERE), "--child", v["kind"], "--unit", v["unit"]]
    extra = ["--sketch-out", sketch_out] if sketch_out else []
    if v["kind"] == "anchor":
        return py + ["--parquet", v["parquet"]] + extra
    if mode == "in-process":
        return py + ["--db", v["db"], "--out", str(work / "plan.json")] + \
            (["--parquet", v["parquet"]] if v["parquet"] else []) + extra
    dpspin = str(Path(sys.executable).with_name("dpspin"))
    cmd = [dpspin, "release", "--db", v["db"], "--mechanism", "laplace", "--epsilon", str(EPSILON),
           "--unit", v["unit"], "-K", str(K), "-L", str(L), "--out", str(work / "plan.json"), "--force", "-q"]
    if v["unit"] == "user":
        cmd += ["-B", str(B)]
    if v["parquet"]:
        cmd += ["--assignments", v["parquet"]]
    return cmd


def max_difference(a: dict, b: dict) -> float:
    ma = [x / a["scale"] for x in a["mass"]]
    mb = [x / b["scale"] for x in b["mass"]]
    return max(abs(x - y) for x, y in zip(ma, mb))


def make_dict_store(atoms: str, work: Path) -> str:
    db = work / "dictionary.duckdb"
    dpspin = str(Path(sys.executable).with_name("dpspin"))
    for args in (["init", "--db", str(db), "--epsilon-budget", "100000", "--delta-budget", "0.9"],
                 ["atoms", "load", "--db", str(db), "--input", atoms]):
        subprocess.run([dpspin, *args], check=True, capture_output=True)
    return str(db)


def bench_size(label: str, parquet: str, ordered: str, scattered: str, dict_store: str, rounds: int,
               work: Path, modes: list[str]) -> list[dict]:
    vs = variants(parquet, ordered, scattered, dict_store)
    # the sketches once (untimed), for the differences
    sketches = {}
    for v in vs:
        path = work / f"sketch-{len(sketches)}.json"
        measured(argv_of(v, "in-process", work, str(path)))
        sketches[v["name"]] = json.loads(path.read_text())
    results = {(v["name"], m): [] for v in vs for m in modes}
    for r in range(rounds):
        order = vs[r % len(vs):] + vs[:r % len(vs)]
        for mode in modes:
            for v in order:
                wall, rss, out = measured(argv_of(v, mode, work))
                if mode == "in-process":
                    wall = json.loads(out.strip().splitlines()[-1])["wall"]
                results[(v["name"], mode)].append((wall, rss))
                print(f"  [{label} round {r + 1}] {mode:10s} {v['name']:32s} {wall:7.2f} s {rss:7.0f} MB",
                      file=sys.stderr, flush=True)
    rows = []
    for mode in modes:
        anchor = results[("anchor (user)", mode)]
        for v in vs:
            got = results[(v["name"], mode)]
            ref = "anchor (user)" if v["unit"] == "user" else "plain sum (record)"
            rows.append({
                "size": label, "mode": mode, "variant": v["name"],
                "wall_s": statistics.median(w for w, _ in got),
                "rss_mb": statistics.median(m for _, m in got),
                "time_ratio": statistics.median(w / a for (w, _), (a, _) in zip(got, anchor)),
                "rss_ratio": statistics.median(m / a for (_, m), (_, a) in zip(got, anchor)),
                "max_diff": max_difference(sketches[v["name"]], sketches[ref]),
            })
    return rows


def table(rows: list[dict]) -> str:
    out = ["| records | measured | variant | wall s | peak RSS MB | time / anchor | RSS / anchor | "
           "max sketch diff |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['size']} | {r['mode']} | {r['variant']} | {r['wall_s']:.2f} | {r['rss_mb']:.0f} | "
                   f"{r['time_ratio']:.2f}× | {r['rss_ratio']:.2f}× | {r['max_diff']:.2e} |")
    return "\n".join(out)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--measure":
        measure_main(sys.argv[3:])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", choices=["anchor", "dpspin"])
    ap.add_argument("--unit", default="user")
    ap.add_argument("--parquet")
    ap.add_argument("--db")
    ap.add_argument("--out")
    ap.add_argument("--sketch-out")
    ap.add_argument("--size", nargs=4, action="append", metavar=("LABEL", "PARQUET", "STORE_ORDERED", "STORE_SCATTERED"),
                    help="one size: a label, gen_data.py's Parquet file and the two stores built from it "
                         "('-' for a store not to measure)")
    ap.add_argument("--atoms", help="atoms file for the dictionary-only store of the parquet variant")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="in-process,cli")
    ap.add_argument("--json", help="also write the rows here")
    a = ap.parse_args()
    if a.child == "anchor":
        print(json.dumps(child_anchor(a.parquet, a.unit, a.sketch_out)))
        return
    if a.child == "dpspin":
        print(json.dumps(child_dpspin(a.db, a.parquet, a.unit, a.out, a.sketch_out)))
        return
    if not a.size or not a.atoms:
        ap.error("give at least one --size and --atoms")
    with tempfile.TemporaryDirectory(prefix="bench_anchor_") as tmp:
        work = Path(tmp)
        dict_store = make_dict_store(a.atoms, work)
        rows = []
        for label, parquet, ordered, scattered in a.size:
            rows += bench_size(label, parquet, None if ordered == "-" else ordered,
                               None if scattered == "-" else scattered, dict_store, a.rounds, work,
                               a.modes.split(","))
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
          f"(1 / 5 / 15 min) at the end; {a.rounds} rounds, medians")
    print(table(rows))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
