"""Golden transpilation: input statement → the enforced sketch query per engine.

tests/golden/<case>.input.sql is a DP statement; tests/golden/<case>.<dialect>.sql is what
`dpspin sql --dialect <dialect> --emit-sketch` prints for it. Each golden file is also
checked by round trip: the engine's own sqlglot parser and generator give it back
unchanged. Regenerate after an intended change with DPSPIN_UPDATE_GOLDEN=1.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from dpspin_sql.sketch.rewrite import core_query
from dpspin_sql.sketch.transpile import DBL_MAX, DIALECTS, bind, inline_macros, sketch_sql
from dpspin_sql.sql import audit_statement, emit_sketch

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p.name.removesuffix(".input.sql") for p in GOLDEN.glob("*.input.sql"))
UPDATE = os.environ.get("DPSPIN_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case", CASES)
def test_golden(case: str, dialect: str):
    statement = (GOLDEN / f"{case}.input.sql").read_text(encoding="utf-8")
    got = emit_sketch(statement, dialect)
    path = GOLDEN / f"{case}.{dialect}.sql"
    if UPDATE or not path.exists():
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case", CASES)
def test_golden_round_trip(case: str, dialect: str):
    text = (GOLDEN / f"{case}.{dialect}.sql").read_text(encoding="utf-8")
    again = sqlglot.parse_one(text, read=dialect).sql(dialect=dialect, pretty=True) + ";\n"
    assert again == text


def test_golden_cases_exist():
    assert {"example_user", "example_record", "filters"} <= set(CASES)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("case", CASES)
def test_no_filter_is_emitted_twice(case: str, dialect: str):
    """A statement's term that the sketch query already holds (split = 'target'), or that the
    statement repeats, is ANDed in once."""
    tree = sqlglot.parse_one((GOLDEN / f"{case}.{dialect}.sql").read_text(encoding="utf-8"), read=dialect)
    for where in tree.find_all(exp.Where):
        terms = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
        assert len({t.sql(dialect) for t in terms}) == len(terms), where.sql(dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_nothing_engine_specific_leaks(dialect: str):
    sql = emit_sketch((GOLDEN / "example_user.input.sql").read_text(), dialect)
    for word in ("DPSPIN_FIX", "DPSPIN_CLIP", "DPSPIN_MASS", "$K", "$scale", "$bound"):
        assert word.lower() not in sql.lower()
    if dialect != "duckdb":
        assert "INT128" not in sql and "HUGEINT" not in sql and "ISFINITE" not in sql.upper()
        assert "//" not in sql and DBL_MAX in sql
    if dialect in ("trino", "snowflake"):
        assert "DOUBLE" not in sql.upper().replace("1.7976931348623157E308", "")


@pytest.mark.parametrize("unit", ["record", "user"])
def test_rewrite_without_where_is_the_core_query(unit: str):
    opts = "privacy_unit_column = user_id, " if unit == "user" else ""
    audited = audit_statement(f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, {opts}mechanism = 'laplace') "
                              "atom_id, DPSPIN_MASS(weight) FROM assignments GROUP BY atom_id")
    expected = bind(inline_macros(core_query(unit)), {"K": 3, "scale": 1 << 24, "bound": 1 << 24})
    assert sketch_sql(audited.request.bounds, audited.filters, "duckdb") == expected.sql("duckdb", pretty=True)


def test_inlined_macros_match_the_registered_macros():
    import duckdb

    from dpspin_sql import udfs

    con = duckdb.connect()
    udfs.register(con)
    values = "(VALUES (0.3::DOUBLE, 5::BIGINT, 7::BIGINT), ('NaN', 3, 3), ('inf', 9, 4), (-1, 100, 10), " \
             "(2.5, 2, 1), (1e-9, 123456789, 100000000), (NULL, 1, 1)) AS t(w, u, total)"
    with_macros = "SELECT dpspin_fix(w, 16777216), dpspin_clip(u, total, 4) FROM " + values
    inlined = inline_macros(sqlglot.parse_one(with_macros, read="duckdb")).sql("duckdb")
    assert "dpspin" not in inlined.lower()
    assert con.execute(inlined).fetchall() == con.execute(with_macros).fetchall()


def test_portable_isfinite_agrees_with_duckdb():
    import duckdb

    from dpspin_sql.sketch.transpile import for_engine

    tree = sqlglot.parse_one("SELECT isfinite(w) FROM (VALUES (1.0::DOUBLE), ('NaN'), ('inf'), ('-inf'), "
                             "(-3.5), (1.7976931348623157e308), (NULL)) AS t(w)", read="duckdb")
    portable = for_engine(tree.copy(), "spark")
    assert not list(portable.find_all(exp.Anonymous))
    con = duckdb.connect()
    assert con.execute(portable.sql("duckdb")).fetchall() == con.execute(tree.sql("duckdb")).fetchall()
