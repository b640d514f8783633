"""Accepted SQL statements are total: the issue's oracle, the DuckDB facts the design rests on,
the parse limits, the engines' extra rules, and the audit's own checks of itself.

The security issue: a filter that makes the sketch query fail only when one chosen record's
text matches a guess turned `dpspin sql`'s exit code into a zero-budget answer. Every test
here compares outcomes on two stores that differ only in that record (the guess true on one,
false on the other) or checks a claim of sql/totality.py on DuckDB 2.0.1 itself.
"""
from __future__ import annotations

import duckdb
import pytest
import sqlglot

from dpspin_sql.errors import AuditRefusal, BadInput
from dpspin_sql.sketch import totality as total
from dpspin_sql.sql import audit_statement, totality
from dpspin_sql.sql.dialect import DPSpin
from tests.helpers import sql_fuzz as sql_fuzz

SECRET = "my secret complaint about a refund"
DP = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1e-9, mechanism = 'laplace', top = 3) atom_id, "
      "DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) WHERE {} GROUP BY atom_id")
ISSUE = ("COALESCE(TRY_CAST(concat('1', substring(text, 1, TRY_CAST(record_id = 'X' AND text ILIKE '%{g}%' "
         "AS INTEGER))) AS INTEGER) > 0, text LIKE 'a%' ESCAPE 'ab')")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """(guess true, guess false): the same store but for record X's text."""
    from dpspin_sql import store

    work = tmp_path_factory.mktemp("total")
    base = sql_fuzz.build_base(work / "base.duckdb", n_users=15)
    out = []
    for name, text in (("true", SECRET), ("false", "my other complaint about a refund")):
        path = work / f"{name}.duckdb"
        path.write_bytes(base.read_bytes())
        con = store.connect(path)
        sql_fuzz.add_record(con, dict(text=text, metadata=("raw", "{not json")))   # malformed JSON too
        con.close()
        out.append(path)
    return tuple(out)


def outcomes(stores, where: str, tmp_path) -> tuple[sql_fuzz.Outcome, sql_fuzz.Outcome]:
    sql = DP.format(where)
    return tuple(sql_fuzz.run_cli(db, sql, tmp_path / "plan.json") for db in stores)


# -- the issue ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("guess", ["secret", "wrong"])
def test_the_issue_statement_is_refused_for_a_true_and_a_false_guess(stores, tmp_path, guess):
    on_true, on_false = outcomes(stores, ISSUE.format(g=guess), tmp_path)
    assert on_true == on_false
    assert on_true.code == 1 and on_true.stderr.startswith("SQL audit refused: ") and on_true.stderr.count("\n") == 1
    assert not on_true.plan_written and not on_true.ledger


# the same oracle in other forms: each part of it (data-dependent positions, an invalid ESCAPE,
# a trailing escape, an overflow, malformed JSON, an implicit cast) refused or made total
GENERAL_FORM = [
    ("COALESCE(TRY_CAST(substring(text, 1, TRY_CAST(record_id = 'X' AND text ILIKE '%secret%' AS INTEGER)) "
     "AS INTEGER) > 0, FALSE)", 1),
    ("COALESCE(NOT (record_id = 'X' AND text ILIKE '%secret%'), text LIKE 'a%' ESCAPE 'ab')", 1),
    ("COALESCE(NOT (record_id = 'X' AND text ILIKE '%secret%'), text LIKE 'my!' ESCAPE '!')", 1),
    ("NOT (record_id = 'X' AND text ILIKE '%secret%') OR text LIKE 'my secret complaint about a refund!' "
     "ESCAPE '!'", 1),
    ("abs(-2147483647 - TRY_CAST(record_id = 'X' AND text ILIKE '%secret%' AS INTEGER)) > 0", 0),
    ("TRY_CAST(record_id = 'X' AND text ILIKE '%secret%' AS BIGINT) * 9223372036854775807 * 2 > 0", 1),
    ("TRY_CAST(record_id = 'X' AND text ILIKE '%secret%' AS BIGINT) * 4503599627370496 * 4096 * 4096 > 0", 0),
    ("(record_id = 'X' AND text ILIKE '%secret%') OR metadata ->> '$.product' = 'x'", 0),
    ("record_id = 'X' AND text ILIKE '%secret%' AND 1 / (length(text) - length(text)) > 0", 0),
    ("record_id = 'X' AND text ILIKE '%secret%' AND text > 5", 1),
    ("record_id = 'X' AND text ILIKE '%secret%' AND TRY_CAST(text AS DATE) > TRY_CAST('2020-01-01' AS DATE)", 0),
    ("record_id = 'X' AND regexp_matches(text, 'secret') AND length(text) * 1e300 * 1e300 > 0", 0),
    ("text ILIKE '%secret%' AND substring(text, 4294967296, 1) = ''", 1),
    ("record_id = 'X' AND (text || text || text) LIKE '%secret%'", 1),
    ("record_id = 'X' AND metadata ->> TRY_CAST(text ILIKE '%secret%' AS VARCHAR) = 'x'", 1),
]


@pytest.mark.parametrize("where, code", GENERAL_FORM)
def test_the_oracle_in_general_form_has_one_outcome(stores, tmp_path, where, code):
    on_true, on_false = outcomes(stores, where, tmp_path)
    assert on_true == on_false, (on_true, on_false)
    assert on_true.code == code, on_true.stderr
    assert on_true.stderr.count("\n") == (0 if code == 0 else 1)
    assert on_true.plan_written == (code == 0) and len(on_true.ledger) == (code == 0)


# -- DuckDB 2.0.1 facts the design rests on (tests/test_sql_total.py re-checks them on upgrades) -----

def _raises(con, sql: str) -> bool:
    try:
        con.execute(sql).fetchall()
    except duckdb.Error:
        return True
    return False


def test_duckdb_facts_the_old_guard_missed():
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('abc'), ('xbc')) v(s)")
    # an invalid ESCAPE raises only when LIKE runs on a row, and TRY does not catch it
    assert _raises(con, "SELECT TRY(s LIKE 'a%' ESCAPE 'ab') FROM t")
    assert not _raises(con, "SELECT TRY(s LIKE 'a%' ESCAPE 'ab') FROM t WHERE s = 'none'")
    # a trailing escape raises only when matching gets that far: it depends on the input
    assert _raises(con, "SELECT 'abc' LIKE 'abc!' ESCAPE '!'")
    assert not _raises(con, "SELECT 'xbc' LIKE 'abc!' ESCAPE '!'")
    # implicit per-row conversions and integer overflow raise on some values only
    assert _raises(con, "SELECT s = 5 FROM t") and not _raises(con, "SELECT s = 5 FROM (VALUES ('5')) v(s)")
    for raising in ("abs((-2147483648)::INTEGER)", "2147483647::INTEGER + 1", "5 // 0", "5 % 0", "5.0::DOUBLE // 0",
                    "12::BIGINT > 1.2345678901234567890123456789012345678", "substring('abc', 4294967296, 1)"):
        assert _raises(con, f"SELECT {raising}"), raising
    # DOUBLE arithmetic follows IEEE 754 and never raises; NULLIF makes x/0 NULL
    assert con.execute("SELECT 1e308::DOUBLE * 10, 1.0::DOUBLE / 0, 1.0::DOUBLE % 0, abs(-2147483648::DOUBLE), "
                       "1.0::DOUBLE / NULLIF(0::DOUBLE, 0)").fetchone()[:4] == (float("inf"), float("inf"),
                                                                                 pytest.approx(float("nan"), nan_ok=True),
                                                                                 2147483648.0)


def test_malformed_json_can_be_stored_and_json_valid_guards_it():
    import pyarrow as pa

    con = duckdb.connect()
    con.execute("CREATE TABLE r (metadata JSON)")
    con.register("x", pa.table({"m": pa.array(["{not json", '{"a": "b"}'], type=pa.json_())}))
    con.execute("INSERT INTO r SELECT m FROM x")   # no validation on this path
    assert _raises(con, "SELECT metadata ->> '$.a' FROM r")
    guarded = total.total_form(sqlglot.parse_one("metadata ->> '$.a' = 'b'", read=DPSpin)).sql("duckdb")
    assert con.execute(f"SELECT count(*) FROM r WHERE {guarded}").fetchone() == (1,)


HOSTILE_TEXT = ["", "abc", "1", "-2147483648", "9223372036854775808", "1e999", "nan", "-inf", "-0.0", "true",
                "2020-01-01", "99999999-01-01", "infinity", "5877642-06-25 (BC)", "2020-02-30", "\x01\x7f",
                "é𝄞", "%_\\", "{\"a\": 1}", " 12 ", "0x10", "1_000", "a" * 100000]


@pytest.mark.parametrize("target", ["VARCHAR", "BOOLEAN", "INTEGER", "BIGINT", "DOUBLE", "DATE"])
def test_try_cast_is_total_for_every_admitted_target(target):
    con = duckdb.connect()
    con.execute("CREATE TABLE t (s VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?)", [[v] for v in HOSTILE_TEXT])
    con.execute("INSERT INTO t VALUES (NULL)")
    sources = ["s"]
    if target != "DATE":
        sources += ["TRY_CAST(s AS DOUBLE)", "TRY_CAST(s AS INTEGER)", "TRY_CAST(s AS BOOLEAN)",
                    "x", "-x", "CAST(x AS INTEGER)"]
    con.execute("CREATE TABLE d AS SELECT * FROM (VALUES ('nan'::DOUBLE), ('inf'), ('-inf'), (-0.0), (1e308), "
                "(-1e308), (5e-324), (2147483648), (-2147483649), (NULL)) v(x)")
    for source in sources:
        table = "d" if "x" in source and "s" not in source.replace("AS", "") else "t"
        sql = f"SELECT count(TRY_CAST({source} AS {target})) FROM {table}"
        if "CAST(x AS INTEGER)" in source:
            sql = f"SELECT count(TRY_CAST(TRY_CAST(x AS INTEGER) AS {target})) FROM d"
        con.execute(sql).fetchall()   # never raises


# -- the audit checks its own reading on DuckDB ---------------------------------------------------------------

def test_a_misread_json_path_is_refused(monkeypatch):
    monkeypatch.setattr(total, "path_text", lambda parts, dialect: "$.elsewhere")
    with pytest.raises(AuditRefusal, match="does not mean in DuckDB what the audit read it as"):
        audit_statement(DP.format("metadata ->> '$.product' = 'x'"))


def test_a_misread_like_pattern_is_refused(monkeypatch):
    monkeypatch.setattr(total, "canonical_like", lambda tokens: ("z%", None))
    with pytest.raises(AuditRefusal, match="does not mean in DuckDB"):
        audit_statement(DP.format("text LIKE 'a%'"))


def test_a_pattern_that_raises_on_samples_is_refused(monkeypatch):
    monkeypatch.setattr(total, "canonical_like", lambda tokens: ("a!", "!"))   # a trailing escape
    with pytest.raises(AuditRefusal, match="raises in DuckDB on sample values"):
        audit_statement(DP.format("text LIKE 'a%'"))


def test_the_generator_covers_every_admitted_operation():
    seen, gen = set(), sql_fuzz.Generator(1)
    for _ in range(600):   # seed 1 covers them all by the 207th statement
        try:
            audited = audit_statement(gen.statement())
        except (AuditRefusal, BadInput):
            continue
        for term in (audited.records_filter, audited.assignments_filter):
            seen |= {type(n) for n in term.walk()} if term is not None else set()
    assert set(totality.ADMITTED) <= seen, set(totality.ADMITTED) - seen


# -- every failure is one line on stderr, exit 1 or 2 ------------------------------------------------------

@pytest.mark.parametrize("sql, code, fragment", [
    ("CALL pragma_version()", 1, "not COMMAND"),
    ("SHOW TABLES", 1, "only SELECT"),
    ("PRAGMA database_list", 1, "only SELECT"),
    ("SET memory_limit = '1GB'", 1, "only SELECT"),
    ("ATTACH 'x.db'", 1, "only SELECT"),
    (DP.format("(" * 5000 + "TRUE" + ")" * 5000), 2, "nests brackets"),
    (DP.format("(" * 33 + "TRUE" + ")" * 33), 2, "nests brackets"),
    (DP.format("NOT " * 5000 + "TRUE"), 2, "nested too deeply"),
    (DP.format("- " * 3000 + "weight > 0"), 2, "nested"),
    (DP.format(" AND ".join(["TRUE"] * 11000)), 2, "tokens"),
    (DP.format(" AND ".join(["weight > 0"] * 2000)), 1, "syntax nodes, more than 2000"),
    (DP.format(" AND ".join(["weight > 0"] * 200)), 1, "operations, more than 256"),
    (DP.format("-(" * 31 + "weight" + ")" * 31 + " > 0"), 1, "nested more than 32"),
    (DP.format("- " * 200 + "weight > 0"), 2, "nested more than 128"),
    (DP.format("text = '" + "x" * 100_001 + "'"), 2, "characters"),
    (DP.format("text = 'a\x00'"), 2, "NUL"),
])
def test_every_failure_is_one_line_with_exit_1_or_2(stores, tmp_path, sql, code, fragment):
    outcome = sql_fuzz.run_cli(stores[0], sql, tmp_path / "plan.json")
    assert outcome.code == code, outcome.stderr
    assert outcome.stderr.count("\n") == 1 and fragment in outcome.stderr, outcome.stderr
    assert "sqlglot" not in outcome.stderr and "Traceback" not in outcome.stderr
    assert not outcome.plan_written and not outcome.ledger


def test_parsing_logs_nothing_even_with_logging_configured(capfd):
    import logging

    from dpspin_sql.sql.dialect import parse

    logging.basicConfig(level=logging.WARNING)
    try:
        with pytest.raises(AuditRefusal):
            audit_statement("CALL pragma_version()")
        parse("SELECT 1")
    finally:
        for handler in list(logging.getLogger().handlers):
            logging.getLogger().removeHandler(handler)
    assert capfd.readouterr().err == ""


# -- the engines' own rules ----------------------------------------------------------------------------------

@pytest.mark.parametrize("where, spark_ok", [
    ("text LIKE '%refund%'", True),
    ("text LIKE 'a%b%'", True),
    ("text LIKE 'a%b'", True),
    ("text ILIKE '%a_b%'", True),
    ("text LIKE '%a%b'", False),          # .*a.*b: Java's regex engine backtracks in n^2
    ("text LIKE '%a%b%c%'", False),
    ("text LIKE '%%b'", False),
    ("text LIKE 'a!%%b' ESCAPE '!'", True),   # an escaped % is a character
    ("regexp_matches(text, 'a+')", False),
])
def test_spark_refuses_backtracking_patterns_before_touching_data(where, spark_ok):
    from dpspin_sql.sketch.engines.base import admit

    audited = audit_statement(DP.format(where))   # DuckDB admits them all
    admit("duckdb", audited.filters)
    if spark_ok:
        admit("spark", audited.filters)
    else:
        with pytest.raises(AuditRefusal, match="spark engine"):
            admit("spark", audited.filters)


def test_spark_filters_are_written_with_an_explicit_escape():
    from dpspin_sql.sketch.engines.spark import filter_sql

    audited = audit_statement(DP.format("text LIKE 'a\\b!%' ESCAPE '!' AND metadata ->> '$.\"a b\"' = 'x'"))
    sql = filter_sql(audited.records_filter)
    assert "LIKE 'a\\\\\\\\b\\\\%' ESCAPE '\\\\'" in sql, sql      # Spark string escapes: a\\b\% with escape \
    assert "GET_JSON_OBJECT(metadata, '$[\\'a b\\']')" in sql and "JSON_VALID" not in sql


@pytest.mark.parametrize("where, ok", [
    ("atom_id > -1", True),
    ("weight BETWEEN 0.1 AND 0.5", True),
    ("-atom_id > 1", False),
    ("text LIKE 'a%'", False),
])
def test_postgres_admits_column_literal_comparisons_only(where, ok):
    from dpspin_sql.sketch.engines.base import admit

    audited = audit_statement(DP.format(where))
    admit("duckdb", audited.filters)
    if ok:
        admit("postgres", audited.filters)
    else:
        with pytest.raises(AuditRefusal, match="postgres engine"):
            admit("postgres", audited.filters)


def test_the_total_form_computes_in_double_and_never_divides_by_zero():
    term = sqlglot.parse_one("atom_id * 2147483647 + length(text) / (atom_id - atom_id) > 1.25", read=DPSpin)
    sql = total.total_form(term).sql("duckdb")
    assert sql == ("CAST(atom_id AS DOUBLE) * CAST(2147483647 AS DOUBLE) + CAST(LENGTH(text) AS DOUBLE) / "
                   "NULLIF((CAST(atom_id AS DOUBLE) - CAST(atom_id AS DOUBLE)), CAST(0 AS DOUBLE)) > "
                   "CAST(1.25 AS DOUBLE)")


@pytest.mark.spark
@pytest.mark.slow
def test_spark_filters_are_total_on_the_adversarial_records(tmp_path_factory, spark):
    """Generated statements the Spark engine admits run on Spark over the plain store and over
    the union store, which holds every adversarial record at once: none may fail the job."""
    from dpspin_sql import store
    from dpspin_sql.sketch.engines.spark import SparkEngine, check_filters

    work = tmp_path_factory.mktemp("spark-total")
    family = sql_fuzz.build_family(sql_fuzz.build_base(work / "base.duckdb", n_users=10), work / "family")
    report, ran = sql_fuzz.Report(), 0
    for _sql, audited in sql_fuzz.statements(99, report, ("laplace",)):
        if ran == 6:
            break
        if audited is None:
            continue
        try:
            check_filters(audited.filters)
        except AuditRefusal:
            continue
        ran += 1
        for name in ("plain", "union"):
            con = store.connect(family[name], read_only=True)
            try:
                SparkEngine(audited.filters, session=spark, assign="table").sketch(con, audited.request.bounds)   # raises BadInput if the job failed
            finally:
                con.close()
    assert ran == 6
