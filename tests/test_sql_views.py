"""Views, CTEs and names a DP statement reads through (issue 21, docs/SQL.md "Views").

The guarantee is for the user's *base* records: whatever a statement reads through, removing
one base record (every row of every protected base table with its record id) may move the
exact integer sketch by at most the sensitivity the release is charged for. Views whose rows
depend on other rows (a window, a rank, a scalar/EXISTS subquery, an aggregate CTE) broke
that by 49-200x before the row-wise rule; they are refused now, naming the view and the
construct.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pytest

import dpspin_sql
from dpspin_sql.embed import user_catalog
from dpspin_sql.errors import AuditRefusal
from dpspin_sql.sensitivity import fixed_point_d_in
from dpspin_sql.sql.audit import audit_statement
from dpspin_sql.sql.own import OwnEngine
from tests.helpers.core import install_atoms

# the classes: each view's rows depend on rows of other records
OTHER_ROWS = {
    "window": ("SELECT review_id, theme, score / max(score) OVER () AS score FROM scores", "window"),
    "rank": ("SELECT review_id, theme, score FROM scores QUALIFY rank() OVER (ORDER BY score DESC) > 1", "QUALIFY"),
    "scalar subquery": ("SELECT review_id, theme, score FROM scores WHERE (SELECT max(score) FROM scores) < 10",
                        "subquery"),
    "EXISTS": ("SELECT review_id, theme, score FROM scores WHERE NOT EXISTS (SELECT 1 FROM scores WHERE score > 10)",
               "subquery"),
    "aggregate CTE": ("WITH m AS (SELECT max(score) AS mx FROM scores) SELECT review_id, theme, score "
                      "FROM scores, m WHERE mx < 10", "aggregate"),
}


@pytest.fixture(scope="module")
def views_db(tmp_path_factory):
    """200 reviews by 50 authors, one score each; review 7 carries a score of 1000."""
    work = tmp_path_factory.mktemp("views")
    con = duckdb.connect(str(work / "user.duckdb"))
    con.execute("""
        CREATE TABLE reviews AS SELECT i AS review_id, 'a' || (i % 50) AS author FROM range(200) t(i);
        CREATE TABLE scores AS SELECT i AS review_id, i % 5 AS theme, 1.0::DOUBLE AS score FROM range(200) t(i);
        INSERT INTO scores VALUES (7, 0, 1000.0);
    """)
    dpspin_sql.install(con, work / "store.duckdb")
    with dpspin_sql.session(con) as s:
        install_atoms(s, range(5))
    yield con
    con.close()


def _statement(view: str, unit: str) -> str:
    unit_opts = "privacy_unit_column = author, contribution_bound = 1, " if unit == "user" else ""
    return (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, {unit_opts}mechanism = 'laplace') theme, "
            f"DPSPIN_MASS(score) FROM {view} JOIN reviews USING (review_id) GROUP BY theme")


@pytest.mark.parametrize("unit", ["record", "user"])
@pytest.mark.parametrize("name", list(OTHER_ROWS))
def test_a_view_whose_rows_depend_on_other_rows_cannot_move_the_sketch_beyond_its_charge(views_db, name, unit):
    """Removing review 7 (its review and its score) moved the sketch by 49-200x the charged L1
    through these views; now each is refused, naming the view and what reads other rows."""
    body, construct = OTHER_ROWS[name]
    views_db.execute(f"CREATE OR REPLACE VIEW v AS {body}")
    with dpspin_sql.session(views_db) as s:
        try:
            audited = audit_statement(_statement("v", unit), s, user_catalog=user_catalog(views_db))
        except AuditRefusal as refusal:
            assert "'v'" in str(refusal) or "view v" in str(refusal) or ".v" in str(refusal), str(refusal)
            assert construct.lower() in str(refusal).lower(), str(refusal)
            return
        engine = OwnEngine(audited.filters, source=audited.source)
        base = engine.sketch(s, audited.request.bounds).mass.astype(object)
        s.execute("BEGIN")
        s.execute("DELETE FROM user.main.scores WHERE review_id = 7")
        s.execute("DELETE FROM user.main.reviews WHERE review_id = 7")
        neighbour = engine.sketch(s, audited.request.bounds).mass.astype(object)
        s.execute("ROLLBACK")
    charged = fixed_point_d_in(unit, "add_drop", audited.request.bounds.bound_fix).l1
    moved = int(np.abs(base - neighbour).sum())
    assert moved <= charged, f"{name} at {unit} level moved the sketch by {moved / charged:.1f}x the charged L1"
