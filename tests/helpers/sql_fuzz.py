"""Neighbour-invariance fuzzing of `dpspin sql` (used by tests/test_sql_fuzz.py and bench/fuzz_sql.py).

A seeded generator writes WHERE filters from the audit's grammar — every admitted
function and operator, with random and hostile literals, plus near misses the audit must
refuse — and each statement runs through the CLI entry point (`dpspin_sql.cli.run`, in
process) on a family of stores that differ from a base store in one record `X` (its text,
metadata, user and assignment rows: empty, 1 MB, LIKE/regex metacharacters, escape
characters, JSON- and date-looking text, control characters, long unicode, malformed and
deeply nested JSON, NaN/±inf/-0.0/1e308 weights, INT_MIN/INT_MAX atom ids), and without X
(add/drop). Each run's observable outcome — exit code, stderr (file-descriptor level, so
native writes count too), whether a plan was written, and the new ledger rows (mechanism,
ε, δ, params) — must be the same on every store. The noisy plan itself is not compared.

The generator's randomness is test input, never released noise.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

OPTIONS = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e-6, {unit}mechanism = '{mechanism}', top = 3) "
           "atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id){where} GROUP BY atom_id")

# -- the adversarial record X: text, metadata (JSON text, or ("raw", text) stored unchecked), assignments
MB = 1 << 20
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1


def variants() -> list[dict]:
    """X's versions; variant 0 is the plain one every other is compared with."""
    rnd = random.Random(5)
    noise = "".join(rnd.choice("ab%_\\!.*") for _ in range(MB))
    deep = "[" * 20000 + "]" * 20000
    return [
        dict(name="plain", text="my secret complaint about a refund", metadata='{"product": "Mortgage"}'),
        dict(name="empty", text="", metadata=None),
        dict(name="null text", text=None, metadata="{}"),
        dict(name="1 MB of a", text="a" * MB, metadata='{"product": "' + "x" * 1000 + '"}'),
        dict(name="1 MB of metacharacters", text=noise, metadata='{"a": [1, 2, {"b": "%_\\\\"}]}'),
        dict(name="LIKE/regex metacharacters", text="%_\\!'\"()[]{}.*+?^$|\\\\%", metadata='{"a": "%"}'),
        dict(name="escape at the end", text="abc!", metadata='{"product": "a!"}'),
        dict(name="JSON-looking", text='{"product": "Mortgage", "a": [1e999, -0.0]}',
             metadata='{"a": 1e999, "b": NaN, "c": "\\u0000x", "d": 123456789012345678901234567890}'),
        dict(name="date-looking", text="2020-01-01", metadata='{"date": "99999999-12-31"}'),
        dict(name="numbers", text="-2147483648", metadata='{"n": -9223372036854775808, "m": 1e308}'),
        dict(name="control characters", text="\t\x01\x02\x1b[31m\x7f\r\n\x1f", metadata='{"\\t": "\\n"}'),
        dict(name="long unicode", text="𝄞é€ẞİȿ" * 40000, metadata='{"ü": "𝄞"}'),
        dict(name="deep JSON", text="deep", metadata=deep),
        dict(name="malformed JSON", text="bad json", metadata=("raw", "{not json")),
        dict(name="NaN weights", text="weights", weights=[(0, float("nan")), (1, float("inf")), (2, float("-inf"))]),
        dict(name="odd weights", text="w", weights=[(0, -0.0), (1, 1e308), (2, 5e-324), (3, -1.0), (0, 0.5)]),
        dict(name="odd atom ids", text="ids", weights=[(INT_MIN, 1.0), (INT_MAX, 1.0), (0, 1.0), (-1, 0.5)]),
    ]


def build_base(path: Path, n_users: int = 30) -> Path:
    from dpspin_sql import assign, atoms, ledger, split, store
    from dpspin_sql.demo import TAXONOMY, corpus_relation

    con = store.connect(path, create=True)
    ledger.set_budget(con, 1e9, 0.999)
    store.load_records(con, "synthetic", id_col="record_id", user_col="user_id", text_col="text",
                       relation=corpus_relation(con, 11, n_users=n_users))
    split.split(con, unit="user", aux_fraction=0.3, seed=3)
    atoms.install(con, [atoms.Atom(i, lab, desc) for i, (lab, desc) in enumerate(TAXONOMY)], builder="file")
    assign.assign(con, scorer="keyword", K=3)
    con.close()
    return path


def add_record(con, variant: dict, record_id: str = "X") -> None:
    """Insert X (target split) and its assignment rows; malformed JSON goes in unchecked via Arrow."""
    import pyarrow as pa

    metadata = variant.get("metadata")
    raw = isinstance(metadata, tuple)
    table = pa.table({
        "record_id": [record_id], "user_id": [variant.get("user", "uX")], "text": [variant.get("text")],
        "split": ["target"],
        "metadata": pa.array([metadata[1] if raw else metadata], type=pa.json_() if raw else pa.string())})
    con.register("x_row", table)
    con.execute("INSERT INTO records (record_id, user_id, text, split, metadata) "
                "SELECT record_id, user_id, text, split, metadata FROM x_row")
    con.unregister("x_row")
    for atom_id, weight in variant.get("weights", [(0, 0.6), (3, 0.4)]):
        con.execute("INSERT INTO assignments VALUES (?, ?, ?)", [record_id, atom_id, weight])


def build_family(base: Path, out: Path) -> dict[str, Path]:
    """{name: store}: the base store without X, one store per variant of X, and a 'union' store
    holding every variant as its own record (not a neighbour: any total statement succeeds on it)."""
    from dpspin_sql import store

    out.mkdir(parents=True, exist_ok=True)
    family = {}
    without = out / "without-X.duckdb"
    shutil.copy(base, without)
    family["without X"] = without
    union = out / "union.duckdb"
    shutil.copy(base, union)
    ucon = store.connect(union)
    for i, variant in enumerate(variants()):
        path = out / f"x{i:02d}.duckdb"
        shutil.copy(base, path)
        con = store.connect(path)
        add_record(con, variant)
        con.close()
        family[variant["name"]] = path
        add_record(ucon, variant, record_id=f"X{i:02d}")
    ucon.close()
    family["union"] = union
    return family


# -- the statement generator -----------------------------------------------------------------------

NUMBERS = ["0", "1", "3", "-1", "0.5", "0.1", "-0.0", "2147483647", "-2147483648", "9007199254740992", "1e300",
           "1e-300", "1.2345678901234567890123456789012345678", "4294967296", "1e308", "1e400", "1e-400",
           "9007199254740993", "NULL"]
STRINGS = ["''", "'a'", "'%'", "'_'", "'\\'", "'!'", "''''", "'é€𝄞'", "'Mortgage'", "'2020-01-01'",
           "'target'", "'uX'", "'X'", "'{\"a\": 1}'", "'1e308'", "'NaN'", "'true'", "'a%b_c!d\\e'", "NULL",
           "'" + "x" * 300 + "'"]
LIKE_CHARS = ["a", "b", "%", "_", "!", "\\", "é", "''", "x", "c"]
ESCAPES = [None, None, None, "'!'", "'\\'", "''", "'ab'", "'%'", "'é'", "'a'"]
REGEXES = ["'a+'", "'(a|b)*c'", "'['", "'(?i)secret'", "'\\d{2,}'", "'a{1000}'", "'^$'", "'.*'", "'\\p{L}+'",
           "'(?P<n>a)b'", "'[[:alpha:]]+'", "'x{2,3}?'", "'(a{100}){100}'", "'(?s).'", "'\\C'"]
REGEX_FLAGS = [None, None, "'i'", "'c'", "'s'", "'g'", "'z'", "'ic'"]
PATHS = ["'$.product'", "'$.a'", "'$.a.b'", "'$[0]'", "'$.a[2]'", "'$.\"we ird\"'", "'$.Sub-issue'", "'$.*'",
         "'$[#-1]'", "'$..a'", "'a'", "'$.date'", "'$.n'", "'$.c'", "'$'", "'$.a[-1]'", "'$[99999999999]'"]
TYPES = ["VARCHAR", "INTEGER", "BIGINT", "DOUBLE", "BOOLEAN", "DATE", "DECIMAL(3,1)", "TIMESTAMP", "FLOAT"]
TEXT_COLUMNS = {"records": ["text", "user_id", "record_id", "split"], "assignments": ["record_id"]}
NUM_COLUMNS = {"records": [], "assignments": ["atom_id", "weight"]}


class Generator:
    """Random filters from the audit's grammar (and near misses), seeded."""

    def __init__(self, seed: int, hostile: float = 0.15, mechanisms: tuple[str, ...] = ("laplace", "gaussian")):
        self.rng = random.Random(seed)
        self.hostile = hostile   # probability of a construct the audit should refuse
        self.mechanisms = mechanisms

    def pick(self, options):
        return self.rng.choice(options)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def statement(self) -> str:
        terms = [self.term(self.pick(["records", "records", "assignments"])) for _ in range(self.rng.randint(1, 3))]
        unit = self.pick(["privacy_unit_column = user_id, contribution_bound = 1, ", ""])
        mechanism = self.pick(list(self.mechanisms))
        return OPTIONS.format(unit=unit, mechanism=mechanism, where=" WHERE " + " AND ".join(terms))

    def term(self, table: str) -> str:
        return self.boolean(table, self.rng.randint(1, 3))

    # each returns SQL text of the given type
    def boolean(self, t: str, d: int) -> str:
        choices = ["cmp", "cmp", "like", "in", "between", "isnull", "const", "starts"]
        if t == "records":
            choices += ["like", "like", "regexp", "json"]
        if d > 0:
            choices += ["and", "or", "not", "paren"]
        kind = self.pick(choices)
        if kind == "and":
            return f"{self.boolean(t, d - 1)} AND {self.boolean(t, d - 1)}"
        if kind == "or":
            return f"({self.boolean(t, d - 1)} OR {self.boolean(t, d - 1)})"
        if kind == "not":
            return f"NOT ({self.boolean(t, d - 1)})"
        if kind == "paren":
            return f"({self.boolean(t, d - 1)})"
        if kind == "cmp":
            op = self.pick(["=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"])
            kind2 = self.pick(["num", "text", "text", "date", "bool"] + (["mixed"] if self.chance(self.hostile) else []))
            if kind2 == "num":
                return f"{self.numeric(t, d)} {op} {self.numeric(t, d)}"
            if kind2 == "text":
                return f"{self.text(t, d)} {op} {self.text(t, d)}"
            if kind2 == "date":
                return f"{self.date(t, d)} {op} {self.date(t, d)}"
            if kind2 == "bool":
                return f"({self.boolean(t, 0)}) {op} {self.pick(['TRUE', 'FALSE', 'NULL'])}"
            return f"{self.text(t, d)} {op} {self.numeric(t, d)}"   # mixed: refused
        if kind == "like":
            op = self.pick(["LIKE", "ILIKE", "NOT LIKE", "NOT ILIKE"])
            pattern = "".join(self.pick(LIKE_CHARS) for _ in range(self.rng.randint(0, 7)))
            escape = self.pick(ESCAPES)
            subject = self.text(t, d)
            if self.chance(self.hostile / 3):
                return f"'abc' {op} {subject}"          # a pattern from the data: refused
            return f"{subject} {op} '{pattern}'" + (f" ESCAPE {escape}" if escape else "")
        if kind == "regexp":
            flag = self.pick(REGEX_FLAGS)
            return f"regexp_matches({self.text(t, d)}, {self.pick(REGEXES)}" + (f", {flag})" if flag else ")")
        if kind == "json":
            arrow = self.pick(["->>", "->>", "->"])
            if arrow == "->":
                return f"metadata -> {self.pick(PATHS)} IS {self.pick(['NULL', 'NOT NULL'])}"
            return f"metadata ->> {self.pick(PATHS)} {self.pick(['=', '<>', '>'])} {self.text(t, 0)}"
        if kind == "in":
            if self.chance(0.5):
                return f"{self.text(t, d)} {self.pick(['IN', 'NOT IN'])} ({', '.join(self.pick(STRINGS) for _ in range(self.rng.randint(1, 4)))})"
            return f"{self.numeric(t, d)} IN ({', '.join(self.pick(NUMBERS) for _ in range(self.rng.randint(1, 4)))})"
        if kind == "between":
            return f"{self.numeric(t, d)} {self.pick(['BETWEEN', 'NOT BETWEEN'])} {self.numeric(t, 0)} AND {self.numeric(t, 0)}"
        if kind == "isnull":
            return f"{self.pick([self.text, self.numeric])(t, d)} IS {self.pick(['NULL', 'NOT NULL'])}"
        if kind == "starts":
            return f"starts_with({self.text(t, d)}, {self.text(t, 0)})"
        if self.chance(self.hostile):
            return self.pick(["text", "NOT user_id", "TRY_CAST(text AS BOOLEAN)", "text IS TRUE"])
        return self.pick(["TRUE", "FALSE", "NULL", "TRY_CAST(split AS BOOLEAN) IS NULL"])

    def numeric(self, t: str, d: int) -> str:
        choices = ["lit", "lit", "length", "trycast"] + (["col", "col", "col"] if NUM_COLUMNS[t] else [])
        if d > 0:
            choices += ["arith", "arith", "neg", "abs", "coalesce"]
        kind = self.pick(choices)
        if kind == "lit":
            return self.pick(NUMBERS)
        if kind == "col":
            return self.pick(NUM_COLUMNS[t])
        if kind == "length":
            return f"length({self.text(t, max(d - 1, 0))})"
        if kind == "trycast":
            return f"TRY_CAST({self.text(t, max(d - 1, 0))} AS {self.pick(['INTEGER', 'BIGINT', 'DOUBLE'])})"
        if kind == "arith":
            op = self.pick(["+", "-", "*", "/", "%"] + (["//"] if self.chance(self.hostile) else []))
            return f"({self.numeric(t, d - 1)} {op} {self.numeric(t, d - 1)})"
        if kind == "neg":
            return f"-({self.numeric(t, d - 1)})"
        if kind == "abs":
            return f"abs({self.numeric(t, d - 1)})"
        return f"coalesce({self.numeric(t, d - 1)}, {self.numeric(t, 0)})"

    def text(self, t: str, d: int) -> str:
        choices = ["col", "col", "lit"]
        if d > 0:
            choices += ["lower", "upper", "trim", "substring", "trycast", "coalesce", "concat_literals"]
            if t == "records":
                choices += ["json", "json"]
            if self.chance(self.hostile):
                choices += ["concat", "cast", "substring_data"]
        kind = self.pick(choices)
        if kind == "col":
            return self.pick(TEXT_COLUMNS[t])
        if kind == "lit":
            return self.pick(STRINGS)
        if kind in ("lower", "upper"):
            return f"{kind}({self.text(t, d - 1)})"
        if kind == "trim":
            return self.pick([f"trim({self.text(t, d - 1)})", f"trim({self.text(t, d - 1)}, {self.pick(STRINGS)})",
                              f"ltrim({self.text(t, d - 1)})"])
        if kind == "substring":
            start = self.pick(["1", "2", "0", "-3", "1048576", "-1048576", "4294967296"])
            length = self.pick(["", ", 1", ", 3", ", 0", ", 1048576", ", -1"])
            return f"substring({self.text(t, d - 1)}, {start}{length})"
        if kind == "substring_data":
            return f"substring({self.text(t, d - 1)}, 1, length({self.text(t, 0)}))"
        if kind == "trycast":
            inner = self.pick([self.numeric, self.date])(t, d - 1) if self.chance(0.7) else self.text(t, d - 1)
            return f"TRY_CAST({inner} AS {self.pick(TYPES[:1] * 4 + TYPES)})"
        if kind == "coalesce":
            return f"coalesce({self.text(t, d - 1)}, {self.text(t, 0)})"
        if kind == "json":
            return f"(metadata ->> {self.pick(PATHS)})"
        if kind == "concat":
            return self.pick([f"concat({self.text(t, d - 1)}, 'a')", f"({self.text(t, d - 1)} || 'x')"])
        if kind == "concat_literals":
            return self.pick(["('a' || 'b')", "concat('x', '%', '')"])
        return f"CAST({self.text(t, d - 1)} AS VARCHAR)"

    def date(self, t: str, d: int) -> str:
        return self.pick([f"TRY_CAST({self.text(t, max(d - 1, 0))} AS DATE)", "TRY_CAST('2020-01-01' AS DATE)",
                          "TRY_CAST('infinity' AS DATE)", "TRY_CAST(NULL AS DATE)"])


# -- running through the CLI -------------------------------------------------------------------------

@dataclass
class Outcome:
    code: int
    stderr: str
    plan_written: bool
    ledger: tuple
    seconds: float = field(default=0.0, compare=False)


@contextlib.contextmanager
def captured_stderr():
    """Everything written to stderr while the block runs: Python's sys.stderr and file descriptor 2."""
    buffer = io.StringIO()
    with tempfile.TemporaryFile(mode="w+b") as native:
        sys_stderr = os.dup(2)
        try:
            os.dup2(native.fileno(), 2)
            with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(io.StringIO()):
                yield buffer
        finally:
            os.dup2(sys_stderr, 2)
            os.close(sys_stderr)
            native.seek(0)
            buffer.write(native.read().decode("utf-8", "replace"))


def _ledger_rows(db: Path) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT release_id, mechanism, epsilon, delta, CAST(params AS VARCHAR) FROM ledger "
                           "ORDER BY created_at, release_id").fetchall()
    finally:
        con.close()


_LEDGER_SEEN: dict[Path, set] = {}


def run_cli(db: Path, sql: str, out: Path) -> Outcome:
    """One `dpspin sql --db DB -q --out OUT SQL` in process: its exit code, stderr, plan and new ledger rows."""
    from dpspin_sql import cli

    if db not in _LEDGER_SEEN:
        _LEDGER_SEEN[db] = {row[0] for row in _ledger_rows(db)}
    if out.exists():
        out.unlink()
    start = time.perf_counter()
    with captured_stderr() as err:
        code = cli.run(["sql", "--db", str(db), "-q", "--out", str(out), sql])
    seconds = time.perf_counter() - start
    rows = _ledger_rows(db)
    new = tuple(row[1:] for row in rows if row[0] not in _LEDGER_SEEN[db])
    _LEDGER_SEEN[db] = {row[0] for row in rows}
    return Outcome(code, err.getvalue(), out.exists(), new, seconds)


NEIGHBOURS_OF_PLAIN = "plain"   # every other store but 'union' differs from it in one record


@dataclass
class Report:
    statements: int = 0          # generated
    accepted: int = 0
    refused: int = 0
    cli_statements: int = 0      # accepted statements run through the CLI
    cli_runs: int = 0
    cli_pairs: int = 0           # (plain, neighbour) outcome comparisons through the CLI
    sketch_statements: int = 0   # accepted statements whose sketch query ran on every store
    sketch_runs: int = 0
    sketch_pairs: int = 0
    seconds: float = 0.0
    max_cli_time_spread: float = 0.0
    refusal_reasons: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("failures", "refusal_reasons")}
        top = sorted(self.refusal_reasons.items(), key=lambda kv: -kv[1])[:12]
        return out | {"failures": len(self.failures), "top_refusal_reasons": dict(top)}


def _reason(message: str) -> str:
    body = message.split(": ", 1)[-1].split(" [at", 1)[0]
    return " ".join(re.sub(r"'[^']*'|\d+", "…", body).split()[:6])


def statements(seed: int, report: Report, mechanisms: tuple[str, ...] = ("laplace", "gaussian")):
    """Endless (sql, audited or None) from the generator; refusals are counted."""
    from dpspin_sql.errors import DpspinError
    from dpspin_sql.sql import audit_statement

    gen = Generator(seed, mechanisms=mechanisms)
    while True:
        sql = gen.statement()
        report.statements += 1
        try:
            audited = audit_statement(sql)
        except DpspinError as exc:
            report.refused += 1
            key = _reason(str(exc))
            report.refusal_reasons[key] = report.refusal_reasons.get(key, 0) + 1
            yield sql, None
            continue
        report.accepted += 1
        yield sql, audited


def fuzz_cli(family: dict[str, Path], n_accepted: int, seed: int, out: Path, *, variants_per_statement: int | None = None,
             refused_checks: int = 10, report: Report | None = None, deadline: float | None = None,
             mechanisms: tuple[str, ...] = ("laplace", "gaussian")) -> Report:
    """Run `n_accepted` accepted statements through the CLI on 'plain', 'without X', 'union' and
    `variants_per_statement` other variants of X (rotating; None: all), and compare outcomes with
    'plain'. The first `refused_checks` refusals also run once (one line, exit 1 or 2, no plan).
    The mechanism only changes the release, which reads the integer sketch alone; the CI run uses
    laplace, whose calibration is ~10x faster than gaussian's."""
    report = report or Report()
    began = time.perf_counter()
    others = [n for n in family if n not in ("plain", "without X", "union")]
    rotation = 0
    for sql, audited in statements(seed, report, mechanisms):
        if report.cli_statements >= n_accepted or (deadline is not None and time.monotonic() > deadline):
            break
        if audited is None:
            if refused_checks > 0:
                refused_checks -= 1
                o = run_cli(family["plain"], sql, out)
                report.cli_runs += 1
                if o.code not in (1, 2) or o.stderr.count("\n") != 1 or o.plan_written or o.ledger:
                    report.failures.append((sql, "a refusal that is not one line, exit 1/2, no plan, no charge",
                                            {"plain": o}))
            continue
        if variants_per_statement is None:
            chosen = others
        else:
            chosen = [others[(rotation + i) % len(others)] for i in range(variants_per_statement)]
            rotation += variants_per_statement
        names = ["plain", "without X", "union", *chosen]
        outcomes = {name: run_cli(family[name], sql, out) for name in names}
        report.cli_statements += 1
        report.cli_runs += len(outcomes)
        report.cli_pairs += len(outcomes) - 2
        reference = outcomes["plain"]
        times = [o.seconds for o in outcomes.values()]
        report.max_cli_time_spread = max(report.max_cli_time_spread, max(times) - min(times))
        differing = {n: o for n, o in outcomes.items() if o != reference}
        if reference.code != 0 or reference.stderr or differing:
            report.failures.append((sql, "the CLI outcome differs between neighbours (or the statement failed)",
                                    {"plain": reference, **differing}))
    report.seconds += time.perf_counter() - began
    return report


def fuzz_sketch(family: dict[str, Path], n_accepted: int, seed: int, *, report: Report | None = None,
                deadline: float | None = None, stop_after: int | None = None) -> Report:
    """Run the exact sketch query `dpspin sql` runs (sketch/transpile.sketch_sql) for `n_accepted`
    accepted statements on every store of the family: each must succeed everywhere (the only
    data-dependent step of the CLI path; everything before it is static, everything after it
    reads only the integer sketch)."""
    from dpspin_sql import store
    from dpspin_sql.sketch.transpile import sketch_sql

    report = report or Report()
    began = time.perf_counter()
    cons = {name: store.connect(path, read_only=True) for name, path in family.items()}
    try:
        for sql, audited in statements(seed, report):
            if report.sketch_statements >= n_accepted or (deadline is not None and time.monotonic() > deadline):
                break
            if audited is None:
                continue
            query = sketch_sql(audited.request.bounds, audited.filters, "duckdb", pretty=False, bind_params=False)
            failed = {}
            for name, con in cons.items():
                try:
                    con.execute(query, audited.request.bounds.params()).fetchall()
                except Exception as exc:  # any failure is the finding
                    failed[name] = f"{type(exc).__name__}: {str(exc)[:200]}"
            report.sketch_statements += 1
            report.sketch_runs += len(cons)
            report.sketch_pairs += len(cons) - 2
            if failed:
                report.failures.append((sql, "the sketch query failed on some stores", failed))
                if stop_after is not None and len(report.failures) >= stop_after:
                    break
    finally:
        for con in cons.values():
            con.close()
    report.seconds += time.perf_counter() - began
    return report


def describe(failure) -> str:
    sql, why, outcomes = failure
    lines = [why, sql]
    for name, o in outcomes.items():
        if isinstance(o, Outcome):
            lines.append(f"  {name}: exit {o.code}, plan {o.plan_written}, ledger rows {len(o.ledger)}, "
                         f"stderr {o.stderr[:300]!r}")
        else:
            lines.append(f"  {name}: {o}")
    return "\n".join(lines)


def to_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, sort_keys=True)
