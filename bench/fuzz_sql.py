"""The big neighbour-invariance run of `dpspin sql`, and the security issue's timing case.

    .venv/bin/python bench/fuzz_sql.py fuzz   [--cli N] [--sketch M] [--seed S] [--minutes T]
    .venv/bin/python bench/fuzz_sql.py timing [--users U] [--repeat R]
    .venv/bin/python bench/fuzz_sql.py neighbours [--statements N] [--databases D] [--reviews R] [--seed S]
                                                [--minutes T] [--rule-off]

fuzz: the CI fuzzer of tests/test_sql_fuzz.py (tests/helpers/sql_fuzz.py) at size: N accepted
statements through the CLI on every store of the family (base without X, 17 variants of the
adversarial record X, the union store), both mechanisms; M accepted statements at the sketch
level on every store. Prints the JSON report; exits 1 if any outcome differed.

timing: a store of U synthetic users (~4.7 records each, 70% target) plus the chosen record X, and the
issue's timing shape — a trigger term on X that raises (integer overflow: abs(INT_MIN)) only
when the guess about X's text is true, OR-ed with 40 cheap terms over every row:

- before: the filter as the old rewrite ran it, COALESCE(TRY(filter), FALSE) with integer
  arithmetic; a row that raises inside TRY makes DuckDB re-run its chunk row by row;
- after: the same statement as the audit now admits and rewrites it (DOUBLE arithmetic,
  no TRY): nothing raises, for either guess;
- after, CLI: the whole `dpspin sql` for each guess;
- TRY_CAST: the time of TRY_CAST(text AS INTEGER) over 10^6 strings that all fail against
  10^6 that all succeed (an exception-based TRY_CAST would show here).

Median and minimum over R interleaved runs (guess true, guess false, ...), for the sketch
query and for a bare scan of the records with the same filter. Prints JSON.

neighbours: the neighbour-sensitivity fuzzer of tests/test_sql_neighbours.py
(tests/helpers/sql_neighbours.py) at size: N statements (views, CTEs, subqueries of the row-wise
grammar and near misses) over D random adversarial user databases of R reviews each; every
accepted one's exact sketch on add/drop/replace neighbours of one base record and one unit
against the charged L1/L2. Prints the JSON report (statements, pairs, the class table); exits 1
on any violation, accepted near miss or refused statement of the accepted grammar. With
--rule-off (the mutation check) the row-wise rule is switched off and it exits 0 only if it
finds violations.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from tests.helpers import sql_fuzz  # noqa: E402

DP = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e-9, mechanism = 'laplace', top = 3) atom_id, "
      "DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) WHERE {} GROUP BY atom_id")
SECRET = "my secret complaint about a refund"
TRIGGER = "abs(-2147483647 - TRY_CAST(record_id = 'X' AND text ILIKE '%{g}%' AS INTEGER)) > 0"
HEAVY = " OR ".join(f"length(text) = {i}" for i in range(40))


def fuzz(args) -> int:
    work = Path(tempfile.mkdtemp(prefix="dpspin-fuzz-"))
    try:
        started = time.perf_counter()
        family = sql_fuzz.build_family(sql_fuzz.build_base(work / "base.duckdb", n_users=args.users), work / "family")
        deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
        report = sql_fuzz.fuzz_sketch(family, args.sketch, args.seed, deadline=deadline)
        report = sql_fuzz.fuzz_cli(family, args.cli, args.seed + 1, work / "plan.json", variants_per_statement=None,
                                   refused_checks=50, report=report, deadline=deadline)
        out = report.to_dict() | {"stores": len(family), "wall_seconds": round(time.perf_counter() - started, 1)}
        print(json.dumps(out, indent=2, sort_keys=True))
        for failure in report.failures[:10]:
            print(sql_fuzz.describe(failure), file=sys.stderr)
        return 1 if report.failures else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _timing_store(path: Path, users: int) -> Path:
    from dpspin_sql import assign, atoms, ledger, split, store
    from dpspin_sql.demo import TAXONOMY, synthetic_corpus

    con = store.connect(path, create=True)
    ledger.set_budget(con, 1e9, 0.999)
    store.load_records(con, "synthetic", id_col="record_id", user_col="user_id", text_col="text",
                       relation=con.from_arrow(synthetic_corpus(3, n_users=users)))
    split.split(con, unit="user", aux_fraction=0.3, seed=3)
    atoms.install(con, [atoms.Atom(i, lab, desc) for i, (lab, desc) in enumerate(TAXONOMY)], builder="file")
    assign.assign(con, scorer="keyword", K=3)
    sql_fuzz.add_record(con, dict(text=SECRET, metadata=None))
    con.close()
    return path


def _median_ms(values: list[float]) -> float:
    return round(1000 * statistics.median(values), 1)


SHAPES = {  # name: (cheap terms OR-ed with the trigger before, the same after the fix)
    "40 length terms": (HEAVY, HEAVY),
    "40 ILIKE terms (after: 15, the audit's limit of 16 with the trigger's)": (
        " OR ".join(f"text ILIKE '%q{i}%'" for i in range(40)),
        " OR ".join(f"text ILIKE '%q{i}%'" for i in range(15))),
}


def _queries(where_before: str, where_after: str):
    """{guess: {"before"/"after": (sketch SQL, filter-scan SQL), "params": ...}} for one shape: the
    sketch query `dpspin sql` runs, and a bare scan of the records with the same filter (where
    the chunk re-run is not diluted by the rest of the sketch)."""
    from sqlglot import exp

    from dpspin_sql.sketch import rewrite
    from dpspin_sql.sketch.transpile import sketch_sql
    from dpspin_sql.sql import audit as audit_module
    from dpspin_sql.sql import audit_statement

    def scan(audited) -> str:
        return ("SELECT count(*) FROM records WHERE split = 'target' AND "
                + rewrite.total_form(audited.records_filter).sql("duckdb"))

    out = {}
    for guess in ("secret", "wrong"):
        after_audited = audit_statement(DP.format(f"({TRIGGER.format(g=guess)}) OR {where_after}"))
        entry = {"after": (sketch_sql(after_audited.request.bounds, after_audited.filters, "duckdb", pretty=False, bind_params=False),
                           scan(after_audited)), "params": after_audited.request.bounds.params()}
        # the old rewrite: the filter as written, guarded by COALESCE(TRY(f), FALSE), with the
        # new audit's checks off (it refuses 40 ILIKEs)
        real_form, real_check = rewrite.total_form, audit_module.check_predicate
        audit_module.check_predicate = lambda predicate, resolve, limits=None: None
        rewrite.total_form = lambda term, dialect="duckdb": exp.func("COALESCE", exp.Try(this=term.copy()),
                                                                     exp.false())
        try:
            before_audited = audit_statement(DP.format(f"({TRIGGER.format(g=guess)}) OR {where_before}"))
            entry["before"] = (sketch_sql(before_audited.request.bounds, before_audited.filters, "duckdb", pretty=False, bind_params=False),
                               scan(before_audited))
        finally:
            rewrite.total_form, audit_module.check_predicate = real_form, real_check
        out[guess] = entry
    return out


def _time_queries(con, queries, which: str, repeat: int) -> dict:
    import duckdb

    result = {}
    for index, label in ((0, "sketch query"), (1, "filter scan")):
        times, outcome = {"secret": [], "wrong": []}, {}
        for _ in range(repeat):
            for guess in ("secret", "wrong"):
                sql = queries[guess][which][index]
                values = queries[guess]["params"] if index == 0 else None
                start = time.perf_counter()
                try:
                    con.execute(sql, values).fetchall()
                    outcome[guess] = "ok"
                except duckdb.Error as exc:
                    outcome[guess] = type(exc).__name__
                times[guess].append(time.perf_counter() - start)
        result[label] = {"true guess ms (median, min)": (_median_ms(times["secret"]), _min_ms(times["secret"])),
                         "false guess ms (median, min)": (_median_ms(times["wrong"]), _min_ms(times["wrong"])),
                         "outcome": outcome}
    return result


def _min_ms(values: list[float]) -> float:
    return round(1000 * min(values), 1)


def timing(args) -> int:
    import duckdb

    from dpspin_sql import store

    work = Path(tempfile.mkdtemp(prefix="dpspin-timing-"))
    try:
        db = _timing_store(work / "timing.duckdb", args.users)
        con = store.connect(db)
        n_records = con.execute("SELECT count(*) FROM records WHERE split = 'target'").fetchone()[0]
        results: dict = {}
        for shape, (before, after) in SHAPES.items():
            queries = _queries(before, after)
            results[shape] = {
                "before: COALESCE(TRY(f), FALSE), integer arithmetic": _time_queries(con, queries, "before",
                                                                                     args.repeat),
                "after: total form, DOUBLE, no TRY": _time_queries(con, queries, "after", args.repeat)}
        con.close()
        statement = {g: DP.format(f"({TRIGGER.format(g=g)}) OR {HEAVY}") for g in ("secret", "wrong")}
        sql_fuzz.run_cli(db, statement["wrong"], work / "plan.json")          # warm-up (imports, caches)
        cli, codes = {"secret": [], "wrong": []}, {}
        for _ in range(args.repeat):
            for guess in ("secret", "wrong"):
                o = sql_fuzz.run_cli(db, statement[guess], work / "plan.json")
                cli[guess].append(o.seconds)
                codes[guess] = {"exit": o.code, "stderr": o.stderr, "plan": o.plan_written, "ledger rows": len(o.ledger)}
        results["after, the whole dpspin sql (40 length terms)"] = {
            "true guess ms (median, min)": (_median_ms(cli["secret"]), _min_ms(cli["secret"])),
            "false guess ms (median, min)": (_median_ms(cli["wrong"]), _min_ms(cli["wrong"])), "outcome": codes}
        raw = duckdb.connect()
        raw.execute("CREATE TABLE bad AS SELECT 'x' || range::VARCHAR || 'y' AS s FROM range(1000000)")
        raw.execute("CREATE TABLE good AS SELECT CASE WHEN range % 2 = 0 THEN range::VARCHAR "
                    "ELSE '2020-01-' || (1 + range % 28)::VARCHAR END AS s FROM range(1000000)")
        casts = {}
        for target in ("INTEGER", "BIGINT", "DOUBLE", "BOOLEAN", "DATE"):
            source = "good" if target != "BOOLEAN" else "(SELECT 'true' AS s FROM range(1000000))"
            cast = {"all fail": [], "valid input": []}
            for _ in range(args.repeat):
                for label, table in (("all fail", "bad"), ("valid input", source)):
                    start = time.perf_counter()
                    raw.execute(f"SELECT count(TRY_CAST(s AS {target})) FROM {table}").fetchall()
                    cast[label].append(time.perf_counter() - start)
            casts[target] = {k: _median_ms(v) for k, v in cast.items()}
        results["TRY_CAST over 10^6 strings, ms"] = casts
        print(json.dumps({"target records": n_records, "repeat": args.repeat, **results}, indent=2,
                         ensure_ascii=False))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def neighbours(args) -> int:
    from tests.helpers import sql_neighbours

    if args.rule_off:
        from dpspin_sql.sql import rowwise

        rowwise.ROWWISE = False
    started = time.perf_counter()
    deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
    report = sql_neighbours.run(args.seed, args.statements, databases=args.databases, n_reviews=args.reviews,
                                deadline=deadline, near_miss=1.0 if args.rule_off else 0.35)
    out = report.to_dict() | {"wall_seconds": round(time.perf_counter() - started, 1), "rule_off": args.rule_off}
    print(json.dumps(out, indent=2, sort_keys=True))
    if args.rule_off:
        return 0 if report.violations else 1
    return 1 if report.violations or report.near_miss_accepted or report.false_refusals else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fuzz")
    f.add_argument("--cli", type=int, default=60, help="accepted statements through the CLI (all stores)")
    f.add_argument("--sketch", type=int, default=1000, help="accepted statements at the sketch level")
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--users", type=int, default=30)
    f.add_argument("--minutes", type=float, default=0, help="stop after this long (0: no limit)")
    t = sub.add_parser("timing")
    t.add_argument("--users", type=int, default=8000)
    t.add_argument("--repeat", type=int, default=21)
    n = sub.add_parser("neighbours")
    n.add_argument("--statements", type=int, default=600)
    n.add_argument("--databases", type=int, default=12)
    n.add_argument("--reviews", type=int, default=60)
    n.add_argument("--seed", type=int, default=1)
    n.add_argument("--minutes", type=float, default=0, help="stop after this long (0: no limit)")
    n.add_argument("--rule-off", action="store_true", help="the mutation check: switch the row-wise rule off")
    args = parser.parse_args()
    if args.command == "neighbours":
        return neighbours(args)
    return fuzz(args) if args.command == "fuzz" else timing(args)


if __name__ == "__main__":
    sys.exit(main())
