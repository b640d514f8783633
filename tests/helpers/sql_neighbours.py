"""Neighbour sensitivity of DP statements over the user's own tables and views, fuzzed (issue 21).

Used by tests/test_sql_neighbours.py (a bounded run, seconds) and `bench/fuzz_sql.py neighbours`
(at size). The claim checked is the guarantee itself, at the level of the exact integer sketch:
for every statement the audit accepts, on every neighbouring pair of *base* databases, the
sketch moves by at most the sensitivity the release is charged for (docs/DESIGN.md §2, §10):

    add / drop one base record or one unit    L1 <= d_in.l1, L2 <= d_in.l2   (add_drop)
    replace one base record                   L1 <= d_in.l1, L2 <= d_in.l2   (replace)

A base record is every row of every protected base table with one record id (compared as
text, binary); a unit is every base record of one author. The user databases are random and
adversarial: a unit with many records, a record with many rows (duplicates, NaN/inf/huge
weights), join fan-out (a protected `flags` table with several rows per record, duplicate
rows in the public lookup), record ids of different types in different tables (BIGINT,
INTEGER, VARCHAR, VARCHAR COLLATE NOCASE, ids that differ in case or zero padding), NULL ids.

The views and statements come from the accepted grammar (projections of total expressions,
per-row filters, joins on the record id, joins with the public lookup, LEFT joins, UNION ALL,
CTEs, FROM subqueries, nested views, Parquet files) and from just outside it (a window, a rank,
a scalar/EXISTS/IN subquery, an aggregate CTE, DISTINCT, LIMIT, UNION, EXCEPT, TABLESAMPLE,
random(), a join of a protected table on something else than the record id, a protected lookup,
ids of different types joined through a conversion, a cross join). Every near miss must be
refused; with the row-wise rule switched off (`rowwise.ROWWISE = False`) the fuzzer must find
violations (the mutation check of the harness).

The generator's randomness is test input, never released noise.
"""
from __future__ import annotations

import math
import random
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

THEMES = ["refund", "crash", "charge", "login", "delivery", "fee"]
USER = "mem"      # the user's database: in memory, named like this


# -- the user's database ----------------------------------------------------------------------------

@dataclass
class Flavour:
    """One random user database: its id types and its adversarial rows."""

    review_type: str
    score_type: str
    flag_type: str
    nocase: bool
    n_reviews: int
    seed: int

    def id_literal(self, kind: str, i: int) -> str:
        if kind.startswith("VARCHAR"):
            return f"'r{i}'"
        return str(i)


def _ids(kind: str, n: int, rng: random.Random) -> list:
    if kind.startswith("VARCHAR"):
        return [f"r{i}" for i in range(n)]
    return list(range(n))


def build(con, flavour: Flavour) -> dict:
    """The base tables of one random user database in the catalog `mem`; returns facts the
    neighbours need (heavy record, heavy author, the protected tables)."""
    rng = random.Random(flavour.seed)
    n = flavour.n_reviews
    rt = flavour.review_type + (" COLLATE NOCASE" if flavour.nocase and flavour.review_type == "VARCHAR" else "")
    st, ft = flavour.score_type, flavour.flag_type
    con.execute(f"CREATE OR REPLACE TABLE {USER}.main.reviews (review_id {rt}, author VARCHAR, lang VARCHAR, "
                "stars INTEGER)")
    con.execute(f"CREATE OR REPLACE TABLE {USER}.main.scores (review_id {st}, theme VARCHAR, score DOUBLE, n INTEGER)")
    con.execute(f"CREATE OR REPLACE TABLE {USER}.main.flags (review_id {ft}, flag VARCHAR)")
    con.execute(f"CREATE OR REPLACE TABLE {USER}.main.themes (theme VARCHAR, label VARCHAR, factor DOUBLE)")
    con.execute(f"CREATE OR REPLACE TABLE {USER}.main.tags (theme VARCHAR, w DOUBLE)")   # protected: never public
    authors = [f"a{i}" for i in range(max(3, n // 4))]
    heavy_author = "heavy"
    reviews, scores, flags = [], [], []
    rid = _ids(flavour.review_type, n, rng)
    sid = _ids(st, n, rng)
    fid = _ids(ft, n, rng)
    for i in range(n):
        author = heavy_author if i % 3 == 0 else rng.choice(authors)   # a unit with many records
        reviews.append((rid[i], author, rng.choice(["en", "fr", "de"]), rng.randint(1, 5)))
        if rng.random() < 0.15:
            reviews.append((rid[i], author, "en", 5))      # a records row twice: fan-out within the record
        rows = 40 if i == 0 else rng.randint(0, 5)          # a record with many rows
        for _ in range(rows):
            w = rng.choice([0.1, 0.3, 0.5, 0.9, 1.0, 2.0, 50.0, -1.0, 0.0, float("nan"), float("-inf"), None])
            scores.append((sid[i], rng.choice(THEMES + ["other"]), w, rng.randint(-3, 9)))
        if i == 0:     # the trigger: the one n above 50, in the heavy record (what other-row views react to)
            scores.append((sid[i], "refund", 1.0, 100))
        for _ in range(rng.choice([0, 1, 1, 2, 6])):        # join fan-out
            flags.append((fid[i], rng.choice(["f0", "f1"]) if i != 1 else "refund"))
    if flavour.review_type.startswith("VARCHAR") and flavour.nocase:
        reviews.append(("R1", "a0", "en", 3))               # differs from r1 in case only
    if st.startswith("VARCHAR"):
        scores.append(("r01", "refund", 1.0, 1))             # zero padding
        scores.append(("R2", "crash", 1.0, 1))
    scores.append((None, "refund", 1.0, 1))                  # a NULL id
    for table, rows in (("reviews", reviews), ("scores", scores), ("flags", flags)):
        if rows:
            marks = ", ".join(["?"] * len(rows[0]))
            con.executemany(f"INSERT INTO {USER}.main.{table} VALUES ({marks})", rows)
    con.executemany(f"INSERT INTO {USER}.main.themes VALUES (?, ?, ?)",
                    [(t, t, rng.choice([0.5, 1.0, 2.0])) for t in THEMES] + [("refund", "refund", 1.0)])  # a dup
    con.executemany(f"INSERT INTO {USER}.main.tags VALUES (?, ?)", [(t, rng.random()) for t in THEMES])
    return {"heavy_record": str(rid[0]), "heavy_author": heavy_author, "ids": [str(r) for r in rid],
            "fanout_record": str(rid[min(1, n - 1)])}


# -- the generator ----------------------------------------------------------------------------------

NEAR_MISSES = {
    # class: (view of scores, what a refusal says)
    "window": "SELECT review_id, theme, score * 10 / nullif(max(n) OVER (), 0) AS score FROM {scores}",
    "rank": "SELECT review_id, theme, score FROM {scores} QUALIFY rank() OVER (ORDER BY score DESC) > 1",
    "scalar subquery": "SELECT review_id, theme, score FROM {scores} WHERE (SELECT max(n) FROM {scores}) < 50",
    "EXISTS": "SELECT review_id, theme, score FROM {scores} s WHERE NOT EXISTS "
              "(SELECT 1 FROM {scores} t WHERE t.n > 50)",
    "IN subquery": "SELECT review_id, theme, score FROM {scores} WHERE theme IN "
                   "(SELECT theme FROM {scores} WHERE n > 50)",
    "aggregate CTE": "WITH m AS (SELECT max(n) AS mx FROM {scores}) SELECT s.review_id, s.theme, s.score * 10 / m.mx "
                     "AS score FROM {scores} s, m",
    "aggregate": "SELECT review_id, theme, sum(score) AS score FROM {scores} GROUP BY review_id, theme",
    "DISTINCT": "SELECT DISTINCT review_id, theme, score FROM {scores}",
    "LIMIT": "SELECT review_id, theme, score FROM {scores} LIMIT 20",
    "ORDER BY LIMIT": "SELECT review_id, theme, score FROM {scores} ORDER BY score DESC LIMIT 5",
    "UNION": "SELECT review_id, theme, score FROM {scores} UNION SELECT review_id, theme, score FROM {scores}",
    "EXCEPT": "SELECT review_id, theme, score FROM {scores} EXCEPT SELECT review_id, theme, score FROM {scores} "
              "WHERE score > 0.5",
    "TABLESAMPLE": "SELECT review_id, theme, score FROM {scores} USING SAMPLE 50 PERCENT (bernoulli)",
    "random()": "SELECT review_id, theme, score * random() AS score FROM {scores}",
    "join off the record id": "SELECT s.review_id, s.theme, s.score FROM {scores} s JOIN {flags} f ON s.theme = f.flag",
    "protected lookup": "SELECT s.review_id, s.theme, s.score * g.w AS score FROM {scores} s JOIN {tags} g USING (theme)",
    "cross join": "SELECT s.review_id, s.theme, s.score FROM {scores} s, {flags} f",
    "ids through a conversion": "SELECT s.review_id, s.theme, s.score FROM {scores} s JOIN {reviews} r "
                                "ON CAST(s.review_id AS VARCHAR) = CAST(r.review_id AS VARCHAR)",
}


@dataclass
class Case:
    ddl: list[str]
    sql: str
    unit: str
    adjacency: str
    near_miss: str | None       # the near-miss class, None for the accepted grammar
    shape: str


class Generator:
    """Views and statements from the accepted grammar and just outside it, seeded."""

    def __init__(self, seed: int, files: Path | None = None, near_miss: float = 0.35,
                 flavour: Flavour | None = None, classes: tuple[str, ...] | None = None):
        self.rng = random.Random(seed)
        self.flavour = flavour
        self.classes = sorted(classes or NEAR_MISSES)
        self.files = files
        self.near_miss = near_miss      # the share of near misses; they cycle through every class
        self.count = 0
        self.cases = 0
        self.misses = self.rng.randrange(len(NEAR_MISSES))
        self.shape = ""

    def pick(self, options):
        return self.rng.choice(options)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def _name(self, stem: str) -> str:
        self.count += 1
        return f"{USER}.main.{stem}{self.count}"

    # -- values and filters of the accepted grammar --------------------------------------------------
    def weight(self, q: str) -> str:
        return self.pick([f"{q}.score", f"{q}.score * 2", f"abs({q}.score)", f"coalesce({q}.score, 0.5)",
                          f"CASE WHEN {q}.score > 0.5 THEN 1 ELSE {q}.score END", f"CAST({q}.n AS DOUBLE) / 4",
                          f"{q}.n * 0.25", f"{q}.score / {q}.n", f"TRY_CAST({q}.n AS DOUBLE)", f"-{q}.score"])

    def theme(self, q: str) -> str:
        return self.pick([f"{q}.theme", f"{q}.theme", f"lower({q}.theme)", f"trim({q}.theme)",
                          f"CASE WHEN {q}.theme LIKE 'c%' THEN 'crash' ELSE {q}.theme END",
                          f"coalesce({q}.theme, 'fee')"])

    def score_filter(self, q: str) -> str:
        return self.pick([f"{q}.score > 0.2", f"{q}.n BETWEEN 0 AND 6", f"{q}.theme LIKE '%r%'",
                          f"{q}.theme IN ('refund', 'crash', 'fee')", f"NOT ({q}.score IS NULL)",
                          f"length({q}.theme) > 3 OR {q}.n % 2 = 0", f"regexp_matches({q}.theme, '^(r|c)')"])

    # -- relations --------------------------------------------------------------------------------------
    def scores_source(self, ddl: list[str]) -> str:
        """`scores`, a Parquet copy of it, or a view over it."""
        if self.files is not None and self.chance(0.15):
            return f"read_parquet('{self.files / 'scores.parquet'}')"
        if self.chance(0.25):
            name = self._name("sv")
            ddl.append(f"CREATE VIEW {name} AS SELECT * FROM {USER}.main.scores WHERE {self.score_filter('scores')}")
            return name
        return f"{USER}.main.scores"

    def assignments_view(self, ddl: list[str], near_miss: str | None) -> str:
        base = self.scores_source(ddl)
        name = self._name("av")
        if near_miss is not None:
            body = NEAR_MISSES[near_miss].format(scores=base, flags=f"{USER}.main.flags", tags=f"{USER}.main.tags",
                                                 reviews=f"{USER}.main.reviews")
            ddl.append(f"CREATE VIEW {name} AS {body}")
            return name
        shape = self.pick(["project", "project", "join flags", "join reviews", "public", "left public", "union",
                           "cte", "subquery", "nested", "where join"])
        self.shape = shape
        f = self.flavour
        kind = (lambda t: "text" if t.startswith("VARCHAR") else "int")
        if f is not None and ((shape == "join reviews" and kind(f.score_type) != kind(f.review_type)) or (
                shape in ("join flags", "where join") and kind(f.score_type) != kind(f.flag_type))):
            self.mismatch = True   # ids of different types joined: the audit must refuse the comparison
        w, t = self.weight("s"), self.theme("s")
        if shape == "project":
            body = f"SELECT s.review_id, {t} AS theme, {w} AS score FROM {base} s"
            if self.chance(0.6):
                body += f" WHERE {self.score_filter('s')}"
        elif shape == "join flags":      # fan-out: several flags rows per record
            body = (f"SELECT s.review_id, {t} AS theme, {w} AS score FROM {base} s "
                    f"JOIN {USER}.main.flags f ON s.review_id = f.review_id WHERE f.flag <> 'x'")
        elif shape == "join reviews":
            body = (f"SELECT s.review_id, {t} AS theme, {w} AS score FROM {base} s "
                    f"JOIN {USER}.main.reviews r USING (review_id) WHERE r.lang IN ('en', 'fr')")
        elif shape == "public":
            body = (f"SELECT s.review_id, p.label AS theme, {w} * p.factor AS score FROM {base} s "
                    f"JOIN {USER}.main.themes p ON s.theme = p.theme")
        elif shape == "left public":
            body = (f"SELECT s.review_id, coalesce(p.label, s.theme) AS theme, {w} AS score FROM {base} s "
                    f"LEFT JOIN {USER}.main.themes p ON s.theme = p.theme")
        elif shape == "union":
            body = (f"SELECT s.review_id, {t} AS theme, {w} AS score FROM {base} s UNION ALL "
                    f"SELECT s.review_id, s.theme, s.score * 0.5 FROM {USER}.main.scores s WHERE s.n > 2")
        elif shape == "cte":
            body = (f"WITH kept AS (SELECT * FROM {base} WHERE {self.score_filter(base.split('.')[-1])}) "
                    f"SELECT s.review_id, {t} AS theme, {w} AS score FROM kept s")
            if base.startswith("read_parquet"):
                body = f"WITH kept AS (SELECT * FROM {base}) SELECT s.review_id, {t} AS theme, {w} AS score FROM kept s"
        elif shape == "subquery":
            body = (f"SELECT x.review_id, x.theme, x.score FROM (SELECT s.review_id, {t} AS theme, {w} AS score "
                    f"FROM {base} s) x WHERE x.score IS NOT NULL")
        elif shape == "where join":
            body = (f"SELECT s.review_id, {t} AS theme, {w} AS score FROM {base} s, {USER}.main.flags f "
                    f"WHERE s.review_id = f.review_id AND f.flag = 'f1'")
        else:   # nested: a view over a view
            inner = self._name("iv")
            ddl.append(f"CREATE VIEW {inner} AS SELECT s.review_id, {t} AS theme, {w} AS score FROM {base} s")
            body = f"SELECT * FROM {inner} WHERE score > 0"
        ddl.append(f"CREATE VIEW {name} AS {body}")
        return name

    def records_relation(self, ddl: list[str]) -> str:
        if self.chance(0.5):
            return f"{USER}.main.reviews"
        name = self._name("rv")
        body = self.pick([f"SELECT * FROM {USER}.main.reviews WHERE lang <> 'de'",
                          f"SELECT r.review_id, r.author FROM {USER}.main.reviews r JOIN {USER}.main.flags f "
                          "USING (review_id)",
                          f"SELECT review_id, lower(author) AS author FROM {USER}.main.reviews WHERE stars >= 2"])
        ddl.append(f"CREATE VIEW {name} AS {body}")
        return name

    def case(self) -> Case:
        ddl: list[str] = []
        self.cases += 1
        self.mismatch = False
        near = None
        if self.rng.random() < self.near_miss:
            near = self.classes[self.misses % len(self.classes)]
            self.misses += 1
        a = self.assignments_view(ddl, near)
        if self.mismatch:
            near = "ids of different types joined"
        unit = self.pick(["record", "record", "user"])
        adjacency = self.pick(["add_drop", "add_drop", "replace"])
        opts = f"epsilon = 1, mechanism = 'laplace', adjacency = '{adjacency}', max_atoms_per_record = {self.pick([1, 3])}"
        one = unit == "record" and self.chance(0.3)
        if one:
            sql = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({opts}, record_id_column = review_id) theme, "
                   f"DPSPIN_MASS(score) FROM {a} GROUP BY theme")
            shape = f"{self.shape}, one relation"
        else:
            r = self.records_relation(ddl)
            if unit == "user":
                opts += f", privacy_unit_column = author, contribution_bound = {self.pick([1, 2.5])}"
            sql = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({opts}) theme, DPSPIN_MASS(score) "
                   f"FROM {a} JOIN {r} USING (review_id) GROUP BY theme")
            shape = f"{self.shape}, joined"
        return Case(ddl, sql, unit, adjacency, near, shape)


# -- neighbours ---------------------------------------------------------------------------------------

PROTECTED = ("reviews", "scores", "flags")   # every protected base table has its record id in review_id


def _delete_record(s, rid: str) -> None:
    for table in PROTECTED:
        s.execute(f'DELETE FROM {USER}.main.{table} WHERE CAST(review_id AS VARCHAR) COLLATE "binary" = ?', [rid])


def _insert_record(s, rid: str, author: str, rng: random.Random, flavour: Flavour, rows: int) -> None:
    """A base record with `rows` score rows (duplicates, hostile weights) and fan-out flags."""
    def cast(kind: str) -> str:
        return "CAST(? AS VARCHAR)" if kind.startswith("VARCHAR") else "TRY_CAST(? AS BIGINT)"

    s.execute(f"INSERT INTO {USER}.main.reviews VALUES ({cast(flavour.review_type)}, ?, 'en', 4)", [rid, author])
    for _ in range(rows):
        w = rng.choice([1.0, 0.9, 1e9, float("inf"), 0.5])
        s.execute(f"INSERT INTO {USER}.main.scores VALUES ({cast(flavour.score_type)}, ?, ?, ?)",
                  [rid, rng.choice(THEMES), w, rng.randint(1, 9)])
    for _ in range(rng.choice([1, 5])):
        s.execute(f"INSERT INTO {USER}.main.flags VALUES ({cast(flavour.flag_type)}, 'f1')", [rid])


def neighbours(case: Case, facts: dict, flavour: Flavour, rng: random.Random):
    """(name, adjacency, apply(s)) for the neighbouring base databases of one case."""
    fresh = "r9999" if flavour.review_type.startswith("VARCHAR") else "9999"
    out = []
    picks = [facts["heavy_record"], facts["fanout_record"], rng.choice(facts["ids"])]
    for rid in dict.fromkeys(picks):
        out.append((f"drop record {rid}", "add_drop", lambda s, r=rid: _delete_record(s, r)))
    out.append(("add a record with 30 rows", "add_drop",
                lambda s: _insert_record(s, fresh, facts["heavy_author"], rng, flavour, 30)))
    rid = facts["heavy_record"]
    out.append((f"replace record {rid}", "replace",
                lambda s, r=rid: (_delete_record(s, r), _insert_record(s, r, "a1", rng, flavour, 12))))
    if case.unit == "user":
        def drop_unit(s, author=facts["heavy_author"]):
            ids = [r[0] for r in s.execute(f"SELECT DISTINCT CAST(review_id AS VARCHAR) COLLATE \"binary\" FROM "
                                           f"{USER}.main.reviews WHERE author = ?", [author]).fetchall()]
            for r in ids:
                if r is not None:
                    _delete_record(s, r)
        out.append(("drop the heavy unit", "add_drop", drop_unit))

        def add_unit(s):
            for i in range(6):
                _insert_record(s, f"{fresh}{i}", "newcomer", rng, flavour, 8)
        out.append(("add a unit of 6 records", "add_drop", add_unit))
    return [(name, adj, fn) for name, adj, fn in out if adj == case.adjacency or case.adjacency == "replace"]


# -- the run ------------------------------------------------------------------------------------------

@dataclass
class Report:
    statements: int = 0
    accepted: int = 0
    refused: int = 0
    pairs: int = 0
    databases: int = 0
    false_refusals: list = field(default_factory=list)     # accepted-grammar statements the audit refused
    near_miss_accepted: list = field(default_factory=list)
    violations: list = field(default_factory=list)
    classes: Counter = field(default_factory=Counter)       # (class, "attempted"/"held")
    worst: float = 0.0                                      # largest L1 change / charged L1 seen

    def to_dict(self) -> dict:
        table = {}
        for (cls, what), count in sorted(self.classes.items()):
            table.setdefault(cls, {"attempted": 0, "held": 0})[what] = count
        return {"statements": self.statements, "accepted": self.accepted, "refused": self.refused,
                "neighbour_pairs": self.pairs, "databases": self.databases, "worst_l1_ratio": round(self.worst, 4),
                "violation_count": len(self.violations),
                "false_refusals": self.false_refusals[:5], "near_misses_accepted": self.near_miss_accepted[:5],
                "violations": self.violations[:5], "classes": table}


def _session(work: Path):
    import dpspin_sql
    from tests.helpers.core import install_atoms

    con = duckdb.connect(":memory:")
    con.execute(f"ATTACH ':memory:' AS {USER}")
    dpspin_sql.install(con, work / "store.duckdb")
    with dpspin_sql.session(con) as s:
        have = s.execute("SELECT count(*) FROM atoms").fetchall()[0][0]
        if not have:
            install_atoms(s, list(range(len(THEMES))), THEMES)
    return con


def run(seed: int, n_statements: int, *, databases: int = 2, n_reviews: int = 24, deadline: float | None = None,
        stop_after: int | None = None, near_miss: float = 0.35, classes: tuple[str, ...] | None = None) -> Report:
    """Fuzz `n_statements` statements over `databases` random user databases."""
    import numpy as np

    import dpspin_sql
    from dpspin_sql.errors import AuditRefusal
    from dpspin_sql.sensitivity import fixed_point_d_in
    from dpspin_sql.sketch.engines.own import OwnEngine
    from dpspin_sql.sql.audit import audit_statement

    report = Report()
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="dpspin-neighbours-") as tmp:
        work = Path(tmp)
        con = _session(work)
        per_db = max(1, math.ceil(n_statements / databases))
        try:
            for d in range(databases):
                flavour = Flavour(review_type=rng.choice(["BIGINT", "INTEGER", "VARCHAR"]),
                                  score_type=rng.choice(["BIGINT", "VARCHAR"]), flag_type=rng.choice(["BIGINT", "INTEGER"]),
                                  nocase=rng.random() < 0.5, n_reviews=n_reviews, seed=seed * 1000 + d)
                if flavour.review_type == "VARCHAR":
                    flavour.flag_type = "VARCHAR"
                with dpspin_sql.session(con) as s:
                    for (view,) in s.execute("SELECT view_name FROM duckdb_views() WHERE database_name = ? "
                                             "AND NOT internal", [USER]).fetchall():
                        s.execute(f"DROP VIEW {USER}.main.{view}")
                    facts = build(s, flavour)
                    parquet = work / "scores.parquet"
                    s.execute(f"COPY {USER}.main.scores TO '{parquet}' (FORMAT parquet)")
                report.databases += 1
                gen = Generator(seed * 7919 + d, files=work, near_miss=near_miss, flavour=flavour, classes=classes)
                for _ in range(per_db):
                    if report.statements >= n_statements or (deadline is not None and time.monotonic() > deadline):
                        break
                    if stop_after is not None and len(report.violations) >= stop_after:
                        return report
                    case = gen.case()
                    report.statements += 1
                    cls = f"near miss: {case.near_miss}" if case.near_miss else \
                        f"row-wise: {case.shape.split(',')[0]}"
                    report.classes[(cls, "attempted")] += 1
                    with dpspin_sql.session(con) as s:
                        for stmt in case.ddl:
                            s.execute(stmt)
                        try:
                            audited = audit_statement(case.sql, s, user_catalog=USER, files_root=work,
                                                      public=(f"{USER}.main.themes",))
                        except AuditRefusal as refusal:
                            report.refused += 1
                            if case.near_miss is None:
                                report.false_refusals.append((case.sql, case.ddl, str(refusal)))
                            else:
                                report.classes[(cls, "held")] += 1
                            continue
                        report.accepted += 1
                        if case.near_miss is not None:
                            report.near_miss_accepted.append((case.near_miss, case.ddl[-1]))
                        bounds = audited.request.bounds
                        engine = OwnEngine(audited.filters, source=audited.source)
                        base = engine.sketch(s, bounds).mass.astype(object)
                        held = True
                        reads_file = "read_parquet" in " ".join([case.sql, *case.ddl])
                        for name, adjacency, apply in neighbours(case, facts, flavour, rng):
                            s.execute("BEGIN TRANSACTION")
                            try:
                                apply(s)
                                if reads_file:   # the file holds the same base records: the neighbour changes it too
                                    s.execute(f"COPY {USER}.main.scores TO '{parquet}' (FORMAT parquet)")
                                other = engine.sketch(s, bounds).mass.astype(object)
                            finally:
                                s.execute("ROLLBACK")
                                if reads_file:
                                    s.execute(f"COPY {USER}.main.scores TO '{parquet}' (FORMAT parquet)")
                            report.pairs += 1
                            d_in = fixed_point_d_in(bounds.unit, adjacency, bounds.bound_fix)
                            diff = base - other
                            l1 = int(np.abs(diff).sum())
                            l2_squared = int(sum(int(x) * int(x) for x in diff))
                            report.worst = max(report.worst, l1 / d_in.l1)
                            if l1 > d_in.l1 or l2_squared > int(d_in.l2) ** 2:
                                held = False
                                report.violations.append({"case": case.near_miss or case.shape, "neighbour": name,
                                                          "l1_ratio": round(l1 / d_in.l1, 3), "sql": case.sql,
                                                          "views": case.ddl})
                        if held:
                            report.classes[(cls, "held")] += 1
        finally:
            con.close()
    return report
