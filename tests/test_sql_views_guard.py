"""A view of one's own is read whole, whatever the statement's filter (dpspin_sql/sql/own.py).

Two guarantees a statement over a view relies on, tested by behaviour:

- every row of the view reaches the sketch: over a view of many rows the sketch is the
  sketch over the table it shows;
- a filter cannot choose which rows the view's own expressions run on: over a view whose
  expression raises on one row, statements whose filters keep or drop that row have one
  outcome (DuckDB would otherwise push the filter below the expression, so that whether
  the statement fails would tell whether the filter matches that row: an oracle outside
  the budget).
"""
from __future__ import annotations

import pytest

from dpspin_sql import ledger, store
from dpspin_sql.errors import DpspinError
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql.audit import audit_statement
from tests.helpers.core import install_atoms

pytestmark = pytest.mark.guard

THEMES = ["refund delay", "app crash", "double charge"]
N = 2_500


@pytest.fixture
def con(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = store.connect(tmp_path / "store.duckdb", create=True)
    ledger.set_budget(c, 5.0, 1e-5)
    install_atoms(c, list(range(len(THEMES))), THEMES)
    c.execute("CREATE SCHEMA mine")
    c.execute(f"""CREATE TABLE mine.scores AS
                  SELECT i AS review_id, ['refund delay', 'app crash', 'double charge'][1 + i % 3] AS theme,
                         0.25 + (i % 7) / 10 AS score, i % 4 AS grp,
                         CASE WHEN i = 1001 THEN 'not a number' ELSE '0.5' END AS score_text,
                         CASE WHEN i = 1001 THEN 0 ELSE 1 END::INTEGER AS k,
                         CASE WHEN i = 1001 THEN 2 ELSE 1 END::INTEGER AS m
                  FROM range({N}) AS t(i)""")
    c.execute("CREATE VIEW mine.all_scores AS SELECT * FROM mine.scores")
    c.execute("CREATE VIEW mine.parsed AS SELECT review_id, theme, CAST(score_text AS DOUBLE) AS score, grp "
              "FROM mine.scores")
    yield c
    c.close()


def statement(relation: str, where: str = "") -> str:
    return ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, mechanism = 'laplace', top = 2, "
            f"record_id_column = review_id) theme, DPSPIN_MASS(score) FROM {relation} "
            f"{'WHERE ' + where if where else ''} GROUP BY theme")


def sketch(con, sql: str):
    audited = audit_statement(sql, con)
    return OwnEngine(audited.filters, source=audited.source).sketch(con, audited.request.bounds)


@pytest.mark.parametrize("where", ["", "grp = 1", "score > 0.5"])
def test_a_view_is_read_whole(con, where):
    via_table = sketch(con, statement("mine.scores", where)).mass.tolist()
    assert sketch(con, statement("mine.all_scores", where)).mass.tolist() == via_table
    assert sum(via_table) > 0


def outcome(con, sql: str) -> str:
    try:
        sketch(con, sql)
    except DpspinError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def test_a_filter_cannot_choose_the_rows_a_views_expressions_run_on(con):
    """Row 1001 (grp 1) does not parse; the statements that keep it and those that drop it end
    the same way (here: the view itself fails, for every statement)."""
    outcomes = {where: outcome(con, statement("mine.parsed", where))
                for where in ("grp = 1", "grp = 0", "grp <> 1", "review_id = 1001", "review_id = 5")}
    assert len(set(outcomes.values())) == 1, outcomes


@pytest.mark.parametrize("expression", ["score + 1 % k", "score + (m * 2147483647) / 1e10"],
                         ids=["modulo by zero", "INTEGER overflow"])
def test_a_views_expression_runs_in_its_total_form_whatever_rows_the_filter_keeps(con, expression):
    """An accepted expression that DuckDB would raise on for row 1001 alone, as written (1 % 0;
    2 * 2147483647 in INTEGER): the sketch runs it in its total form (NULLIF, DOUBLE), so the
    statements that keep that row and those that drop it all succeed, with sketches of one shape."""
    con.execute(f"CREATE VIEW mine.computed AS SELECT review_id, theme, {expression} AS score, grp FROM mine.scores")
    wheres = ("grp = 1", "grp = 0", "grp <> 1", "review_id = 1001", "review_id = 5")
    outcomes = {where: outcome(con, statement("mine.computed", where)) for where in wheres}
    assert set(outcomes.values()) == {"ok"}, outcomes
    shapes = {where: sketch(con, statement("mine.computed", where)).mass.shape for where in wheres}
    assert len(set(shapes.values())) == 1, shapes
