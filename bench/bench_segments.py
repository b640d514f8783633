"""Benchmark: a segmented sketch next to the unsegmented one, in one run (reports, never asserts).

A project-written store (records with user ids and a metadata product and date; assignment
rows loaded with `store.load_assignments`, so they are canonical vectors, as `dpspin assign`
writes them) is built in DuckDB with SQL. For each unit it times, best of --repeat runs:

  store query   the unsegmented release's sketch (DuckDBEngine: queries/sketch_store_*.sql, the fast path)
  portable      the unsegmented portable query over the store's logical rows (the query a segmented
                release extends)
  by product    a segmented sketch over 4 products (--segment-by product)
  by period     a segmented sketch over 3 periods (--period-col date --boundaries 2017-01-01,2019-01-01)

and reports each as a ratio to the store query (the anchor: what an unsegmented release costs).

    nice .venv/bin/python bench/bench_segments.py --records 1e6
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

M_ATOMS = 200
PRODUCTS = ("Mortgage", "Credit card", "Student loan", "Debt collection")


def build(path: Path, n_records: int) -> None:
    import duckdb

    from dpspin_sql import atoms, ledger, store

    con = store.connect(path, create=True)
    ledger.set_budget(con, 1e6, 0.5)
    atoms.install(con, [atoms.Atom(i, f"atom {i}", "") for i in range(M_ATOMS)], builder="file",
                  manifest={"source": "bench"})
    n_users = max(1, n_records // 5)
    # users first, with the integer keys `dpspin load` assigns (the store query's keyed fast path needs them)
    con.execute("INSERT INTO users SELECT CAST(k AS INTEGER), 'u' || k FROM range($u) AS t(k)", {"u": n_users})
    con.execute("""
        INSERT INTO records (record_id, user_id, text, split, metadata, user_key)
        SELECT 'r' || i, 'u' || k, NULL, 'target',
               json_object('product', ['Mortgage', 'Credit card', 'Student loan', 'Debt collection',
                                       'Other'][CAST(1 + hash(i, 5) % 5 AS BIGINT)],
                           'date', CAST(DATE '2015-01-01' + CAST(hash(i, 7) % 3000 AS INTEGER) AS VARCHAR)),
               CAST(k AS INTEGER)
        FROM (SELECT i, CAST(floor($u * pow(hash(i, 17) / 18446744073709551616.0, 3)) AS BIGINT) AS k
              FROM range($n) AS t(i))""", {"n": n_records, "u": n_users})
    rows = Path(path).with_suffix(".parquet")
    duckdb.sql(f"""SELECT 'r' || (r // 2) AS record_id,
                          CAST(floor({M_ATOMS} * pow(hash(r, 29) / 18446744073709551616.0, 2)) AS INTEGER) AS atom_id,
                          (1 + hash(r, 31) % 1000000) / 2000000.0 AS weight
                   FROM range({2 * n_records}) AS t(r)""").write_parquet(str(rows))
    store.load_assignments(con, rows)
    con.execute("CHECKPOINT")
    con.close()
    rows.unlink()


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="1e6")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    n = int(float(args.records))

    from dpspin_sql import store
    from dpspin_sql.request import Bounds
    from dpspin_sql.segment_by import by_periods, by_values
    from dpspin_sql.sketch import execute_sketch
    from dpspin_sql.sketch.engines.duckdb import STORE_ROWS, DuckDBEngine
    from dpspin_sql.sketch.transpile import sketch_sql

    _, products = by_values("product", PRODUCTS)
    _, periods = by_periods("date", ("2017-01-01", "2019-01-01"))
    print(f"# segmented sketch benchmark — {os.cpu_count()} CPUs, {n:,} records, {2 * n:,} assignment rows, "
          f"m={M_ATOMS}, K=3, B=1, best of {args.repeat}; load average {os.getloadavg()[0]:.1f}\n")
    with tempfile.TemporaryDirectory(prefix="dpspin-bench-seg-") as tmp:
        db = Path(tmp) / "seg.duckdb"
        t0 = time.perf_counter()
        build(db, n)
        print(f"built in {time.perf_counter() - t0:.1f} s\n")
        con = store.connect(db)
        print("| unit | sketch | seconds | × store query |")
        print("|---|---|---:|---:|")
        for unit in ("record", "user"):
            bounds = Bounds(unit, 3, None if unit == "record" else 1.0)
            portable = sketch_sql(bounds, None, "duckdb", pretty=False, bind_params=False, source=STORE_ROWS)
            cells = [("store query", lambda b=bounds: DuckDBEngine().sketch(con, b)),
                     ("portable", lambda b=bounds, q=portable: execute_sketch(con, q, b.params(), None, "failed")),
                     ("by product (4 segments)", lambda b=bounds: DuckDBEngine(segments=products).sketch(con, b)),
                     ("by period (3 segments)", lambda b=bounds: DuckDBEngine(segments=periods).sketch(con, b))]
            anchor = None
            for name, fn in cells:
                seconds = timed(fn, args.repeat)
                anchor = anchor or seconds
                print(f"| {unit} | {name} | {seconds:.3f} | {seconds / anchor:.2f} |")
        con.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
