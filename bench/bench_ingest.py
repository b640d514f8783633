"""Building a store through the CLI against DuckDB's own `CREATE TABLE AS` of the same files
(issue 28 item 4; reports, asserts nothing).

    nice .venv/bin/python bench/bench_ingest.py [--records 1000000] [--rounds 3] [--formats parquet,csv] \
        [--checkout /path/to/other/checkout ...] [--data DIR]

Writes synthetic records (id, user, text; 5 records a user, scattered) and their assignment
rows (2 a record, weights 0.5 and 0.25, so every record gets a canonical vector) as Parquet
and as CSV once (bench_loaders.make_files), then, in each round and in a rotated order:

- the **anchor**: one fresh Python process that opens a new DuckDB file and runs
  `CREATE TABLE records AS SELECT * FROM read_parquet(records)` and the same for the
  assignments (`read_csv` for CSV), then closes the file;
- **dpspin** (this checkout, and each `--checkout`): `dpspin init`, `dpspin load --user-col
  user_id`, `dpspin atoms load` (the 200-atom taxonomy), `dpspin assignments load`, each a
  fresh CLI process, as a user runs them.

Wall time is spawn to exit (summed over the four processes for dpspin); peak RSS is the
largest of the processes' own (`wait4`). The table gives medians and the ratios to the
anchor's median, and, for each dpspin store, a digest of its records, users and assignments
(contents and the records' physical order), so checkouts that build different stores show it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "bench"))
from bench_loaders import make_files  # noqa: E402

ANCHOR = """
import sys, duckdb
db, records, assignments, reader = sys.argv[1:5]
con = duckdb.connect(db)
con.execute(f"CREATE TABLE records AS SELECT * FROM {reader}('{records}')")
con.execute(f"CREATE TABLE assignments AS SELECT * FROM {reader}('{assignments}')")
con.close()
"""
# The CLI of one checkout. An editable install maps dpspin_sql.queries and dpspin_sql.udfs to
# *its* checkout's queries/ and udfs/ folders (pyproject's package-dir), which PYTHONPATH does
# not override: the finder below puts the measured checkout's SQL first.
CLI = """
import importlib.abc, importlib.util, os, sys
root = sys.argv[1]
sys.path.insert(0, root)
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        sub = {"dpspin_sql.queries": "queries", "dpspin_sql.udfs": "udfs"}.get(name)
        if sub is None:
            return None
        d = os.path.join(root, sub)
        return importlib.util.spec_from_file_location(name, os.path.join(d, "__init__.py"),
                                                      submodule_search_locations=[d])
sys.meta_path.insert(0, Finder())
from dpspin_sql.cli import run
sys.exit(run(sys.argv[2:]))
"""


def measured(argv: list[str], env: dict | None = None) -> tuple[float, int]:
    """Run `argv` under a fresh Python parent that reports the child's own wall time and
    peak RSS (wait4), so one child's peak never hides the next one's."""
    probe = ("import os, subprocess, sys, time, json\n"
             "t = time.perf_counter()\n"
             "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
             "err = p.stderr.read()\n"
             "_, status, ru = os.wait4(p.pid, 0)\n"
             "took = time.perf_counter() - t\n"
             "code = os.waitstatus_to_exitcode(status)\n"
             "sys.stderr.write(err.decode(errors='replace')[-2000:] if code else '')\n"
             "print(json.dumps([took, ru.ru_maxrss, code]))\n")
    proc = subprocess.run([sys.executable, "-c", probe, *argv], env=env, capture_output=True, text=True)
    import json

    took, rss, code = json.loads(proc.stdout.strip().splitlines()[-1])
    if code != 0:
        raise SystemExit(f"{' '.join(argv[2:8])} failed ({code}): {proc.stderr.strip()}")
    return took, rss


def anchor(work: Path, files: dict[str, Path], fmt: str) -> tuple[float, int]:
    db = work / f"anchor-{fmt}.duckdb"
    db.unlink(missing_ok=True)
    reader = "read_parquet" if fmt == "parquet" else "read_csv"
    return measured([sys.executable, "-c", ANCHOR, str(db), str(files[f"records.{fmt}"]),
                     str(files[f"assignments.{fmt}"]), reader])


def dpspin(checkout: Path, work: Path, files: dict[str, Path], fmt: str, label: str) -> tuple[float, int, Path]:
    db = work / f"{label}-{fmt}.duckdb"
    for leftover in (db, db.with_name(db.name + ".wal")):
        leftover.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    steps = [["init", "--db", str(db), "--epsilon-budget", "10"],
             ["load", "--db", str(db), "--input", str(files[f"records.{fmt}"]), "--user-col", "user_id"],
             ["atoms", "load", "--db", str(db), "--input", str(files["taxonomy"])],
             ["assignments", "load", "--db", str(db), "--input", str(files[f"assignments.{fmt}"])]]
    wall, rss, each = 0.0, 0, []
    for argv in steps:
        took, peak = measured([sys.executable, "-c", CLI, str(checkout), *argv], env)
        wall, rss = wall + took, max(rss, peak)
        each.append(f"{argv[0] if argv[0] in ('init', 'load') else argv[0] + ' ' + argv[1]} {took:.2f} s "
                    f"{peak / 1024:.0f} MB")
    print(f"  {label} {fmt}: " + "; ".join(each), file=sys.stderr, flush=True)
    return wall, rss, db


def digest(db: Path) -> str:
    """Contents of the records (with their physical order), users and assignments, hashed."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(
            "SELECT (SELECT count(*) || ':' || sum(hash(rowid, record_id, user_id, text, split, metadata, user_key, "
            "atom_ids, masses)) FROM records), "
            "(SELECT count(*) || ':' || sum(hash(user_key, user_id)) FROM users), "
            "(SELECT count(*) || ':' || COALESCE(sum(hash(record_id, atom_id, weight)), 0) FROM assignments)"
        ).fetchone()
    finally:
        con.close()
    import hashlib

    return f"{row[0].split(':')[0]} rows, " + hashlib.sha256(" ".join(str(v) for v in row).encode()).hexdigest()[:12]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=float, default=1e6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--formats", default="parquet,csv")
    ap.add_argument("--checkout", type=Path, action="append", default=[],
                    help="another checkout to build the same store with (e.g. the commit before a change)")
    ap.add_argument("--data", type=Path, help="folder for the generated files (kept; made once)")
    args = ap.parse_args()
    n = int(args.records)
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    data = args.data or work
    data.mkdir(parents=True, exist_ok=True)
    names = ("records.parquet", "records.csv", "assignments.parquet", "assignments.csv")
    if all((data / f).exists() for f in names) and (data / "taxonomy.csv").exists() and (data / f"n={n}").exists():
        files = {f: data / f for f in names} | {"taxonomy": data / "taxonomy.csv"}
    else:
        files = make_files(data, n)
        (data / f"n={n}").touch()
    formats = args.formats.split(",")
    variants = [("anchor", None), ("dpspin", HERE)] + [(f"dpspin@{c.name}", c) for c in args.checkout]
    wall: dict[tuple[str, str], list[float]] = {}
    rss: dict[tuple[str, str], list[int]] = {}
    digests: dict[tuple[str, str], str] = {}
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for fmt in formats:
            for label, checkout in order:
                if checkout is None:
                    took, peak = anchor(work, files, fmt)
                else:
                    took, peak, db = dpspin(checkout, work, files, fmt, label.replace("@", "-"))
                    digests[(label, fmt)] = digest(db)
                wall.setdefault((label, fmt), []).append(took)
                rss.setdefault((label, fmt), []).append(peak)
                print(f"round {r + 1} {fmt} {label}: {took:.2f} s, {peak / 1024:.0f} MB", file=sys.stderr, flush=True)
    load = os.getloadavg()
    print(f"{n} records, {2 * n} assignment rows; {args.rounds} rounds, medians; load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the end")
    print("| format | variant | wall s | peak RSS MB | time / anchor | RSS / anchor | store digest |")
    print("|---|---|---:|---:|---:|---:|---|")
    for fmt in formats:
        a_wall, a_rss = statistics.median(wall[("anchor", fmt)]), statistics.median(rss[("anchor", fmt)])
        for label, _ in variants:
            w, m = statistics.median(wall[(label, fmt)]), statistics.median(rss[(label, fmt)])
            print(f"| {fmt} | {label} | {w:.2f} | {m / 1024:.0f} | {w / a_wall:.2f}× | {m / a_rss:.2f}× | "
                  f"{digests.get((label, fmt), '')} |")


if __name__ == "__main__":
    main()
