"""Wall time of the Spark path against the DuckDB path on the same real sample.

    .venv/bin/python bench/bench_spark.py [--data ../shared/data] [--repeat 3]

Builds a store from the Amazon All_Beauty 2023 sample (user split, phrase dictionary,
similarity scorer), then times for the issue's user-level statement:

- duckdb: the audited, rewritten sketch on DuckDB (stored assignments);
- spark (table): the same sketch as Spark SQL over the stored assignments;
- spark (scorer): assignment with the saved scorer per partition + the sketch on Spark;

each cold (first call) and warm (median of --repeat), plus the local[2] session start.
Both engines' sketches are checked equal before any time is reported. Prints JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0, delta = 1e-6, privacy_unit_column = user_id, "
             "contribution_bound = 1, mechanism = 'gaussian', top = 10) atom_id, DPSPIN_MASS(weight) "
             "FROM assignments JOIN records USING (record_id) WHERE split = 'target' GROUP BY atom_id")


def timed(fn, repeat: int):
    start = time.perf_counter()
    first = fn()
    cold = time.perf_counter() - start
    warm = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - start)
    return first, cold, statistics.median(warm) if warm else cold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import test_spark

    test_spark.AMAZON = args.data / "amazon_all_beauty_2023" / "reviews.jsonl.gz"
    if not test_spark.AMAZON.exists():
        sys.exit(f"sample not found: {test_spark.AMAZON}")

    from dpspin_sql import store
    from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
    from dpspin_sql.sketch.engines.spark import SparkEngine, get_session
    from dpspin_sql.sql import audit_statement

    with tempfile.TemporaryDirectory() as tmp:
        path = test_spark.build_amazon_store(Path(tmp) / "amazon.duckdb")
        con = store.connect(path)
        audited = audit_statement(STATEMENT)
        bounds = audited.request.bounds
        n_records, n_users, n_rows = con.execute(
            "SELECT (SELECT count(*) FROM records WHERE split = 'target'), "
            "(SELECT count(DISTINCT user_id) FROM records WHERE split = 'target'), "
            "(SELECT count(*) FROM assignment_rows)").fetchall()[0]

        duck, duck_cold, duck_warm = timed(lambda: DuckDBEngine(audited.filters).sketch(con, audited.request.bounds), args.repeat)
        start = time.perf_counter()
        spark = get_session("local[2]")
        session_s = time.perf_counter() - start
        table, table_cold, table_warm = timed(lambda: SparkEngine(audited.filters, session=spark, assign="table").sketch(con, bounds),
                                              args.repeat)
        scored, scored_cold, scored_warm = timed(lambda: SparkEngine(audited.filters, session=spark, assign="scorer").sketch(con, bounds),
                                                 args.repeat)
        spark.stop()
        equal = bool(np.array_equal(duck.mass, table.mass) and np.array_equal(duck.mass, scored.mass))
        con.close()
    print(json.dumps({
        "sample": "amazon_all_beauty_2023", "unit": "user", "B": 1.0, "K": 3,
        "target_records": n_records, "target_users": n_users, "assignment_rows": n_rows, "m": int(duck.m),
        "sketches_equal": equal,
        "duckdb_s": {"cold": round(duck_cold, 3), "warm": round(duck_warm, 3)},
        "spark_session_start_s": round(session_s, 2),
        "spark_table_s": {"cold": round(table_cold, 2), "warm": round(table_warm, 2)},
        "spark_scorer_s": {"cold": round(scored_cold, 2), "warm": round(scored_warm, 2)},
    }, indent=1))
    if not equal:
        sys.exit("the Spark and DuckDB sketches differ")


if __name__ == "__main__":
    main()
