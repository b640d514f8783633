"""Views, CTEs and names a DP statement reads through (issue 21, docs/SQL.md "Views").

The guarantee is for the user's *base* records: whatever a statement reads through, removing
one base record (every row of every protected base table with its record id) may move the
exact integer sketch by at most the sensitivity the release is charged for. Views whose rows
depend on other rows (a window, a rank, a scalar/EXISTS subquery, an aggregate CTE) broke
that by 49-200x before the row-wise rule; they are refused now, naming the view and the
construct.
"""
from __future__ import annotations

import re

import duckdb
import numpy as np
import pytest

import dpspin_sql
from dpspin_sql.embed import user_catalog
from dpspin_sql.errors import AuditRefusal
from dpspin_sql.sensitivity import fixed_point_d_in
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql.audit import audit_statement
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


# -- the accepted grammar: row-wise views read exactly what DuckDB's own view holds ------------------

@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    """A user database with protected tables, a public lookup, a file, and the store attached."""
    work = tmp_path_factory.mktemp("lake")
    con = duckdb.connect(str(work / "lake.duckdb"))
    con.execute("""
        CREATE TABLE reviews AS SELECT i::BIGINT AS review_id, 'a' || (i % 9) AS author,
               CASE WHEN i % 3 = 0 THEN 'fr' ELSE 'en' END AS lang, (i % 5)::INTEGER AS stars FROM range(60) t(i);
        CREATE TABLE scores AS SELECT (i % 60)::BIGINT AS review_id, ['refund', 'crash', 'charge', 'fee'][1 + i % 4]
               AS theme, ((i * 7) % 10 + 1) / 10.0 AS score, (i % 7 + 1)::INTEGER AS n FROM range(150) t(i);
        CREATE TABLE flags AS SELECT (i % 60)::INTEGER AS review_id, 'f' || (i % 3) AS flag FROM range(100) t(i);
        CREATE TABLE themes (theme VARCHAR, label VARCHAR, factor DOUBLE);
        INSERT INTO themes VALUES ('refund', 'refund', 1.0), ('crash', 'crash', 0.5), ('charge', 'charge', 2.0),
                                  ('fee', 'fee', 1.5);
        CREATE TABLE sreviews AS SELECT CAST(review_id AS VARCHAR) AS review_id, author FROM reviews;
        CREATE SCHEMA mine;
        CREATE TABLE mine.scores AS SELECT * FROM scores WHERE review_id < 30;
    """)
    con.execute(f"COPY scores TO '{work / 'scores.parquet'}' (FORMAT parquet)")
    dpspin_sql.install(con, work / "store.duckdb")
    with dpspin_sql.session(con) as s:
        install_atoms(s, range(4), ["refund", "crash", "charge", "fee"])
    yield con, work
    con.close()


def _sql(relation: str, unit: str = "record", join: str = "JOIN lake.main.reviews USING (review_id)") -> str:
    opts = "privacy_unit_column = author, contribution_bound = 1, " if unit == "user" else ""
    if not join:
        opts += "record_id_column = review_id, "
    return (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, {opts}mechanism = 'laplace', top = 2) theme, "
            f"DPSPIN_MASS(score) FROM {relation} {join} GROUP BY theme")


def _sketch(con, statement: str, public=(), files_root=None):
    with dpspin_sql.session(con) as s:
        audited = audit_statement(statement, s, user_catalog="lake", public=public, files_root=files_root)
        return OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds).mass, audited


ACCEPTED = [
    ("projection and filter", "SELECT review_id, theme, score FROM scores WHERE score > 0.3"),
    ("star", "SELECT * FROM scores"),
    ("star EXCLUDE", "SELECT * EXCLUDE (n) FROM scores"),
    ("total expressions", "SELECT review_id, lower(theme) AS theme, abs(score - 0.5) * 2 AS score FROM scores"),
    ("integer arithmetic (in DOUBLE)", "SELECT review_id, theme, n * 0.1 AS score FROM scores"),
    ("CASE", "SELECT review_id, theme, CASE WHEN score > 0.5 THEN 1 ELSE score END AS score FROM scores"),
    ("CAST that cannot fail", "SELECT review_id, theme, CAST(n AS DOUBLE) / 8 AS score FROM scores"),
    ("TRY_CAST", "SELECT review_id, theme, TRY_CAST(CAST(n AS VARCHAR) AS DOUBLE) / 8 AS score FROM scores"),
    ("LIKE, IN, BETWEEN", "SELECT * FROM scores WHERE theme LIKE '%r%' AND n IN (1, 2, 3) AND score BETWEEN 0 AND 1"),
    ("join on the record id", "SELECT s.review_id, s.theme, s.score FROM scores s JOIN reviews r USING (review_id) "
                              "WHERE r.lang = 'en'"),
    ("join in WHERE", "SELECT s.review_id, s.theme, s.score FROM scores s, reviews r "
                      "WHERE s.review_id = r.review_id AND r.stars > 1"),
    ("join fan-out on the record id (INTEGER = BIGINT)", "SELECT s.review_id, s.theme, s.score FROM scores s "
                                                         "JOIN flags f ON s.review_id = f.review_id"),
    ("LEFT join on the record id", "SELECT s.review_id, s.theme, s.score FROM scores s LEFT JOIN flags f "
                                   "ON s.review_id = f.review_id AND f.flag = 'f1'"),
    ("self join on the record id", "SELECT a.review_id, b.theme, a.score FROM scores a JOIN scores b "
                                   "USING (review_id)"),
    ("UNION ALL", "SELECT review_id, theme, score FROM scores UNION ALL SELECT review_id, theme, score / 2 "
                  "FROM mine.scores"),
    ("CTE", "WITH en AS (SELECT * FROM reviews WHERE lang = 'en') SELECT s.* FROM scores s JOIN en USING (review_id)"),
    ("subquery in FROM", "SELECT x.review_id, x.theme, x.score FROM (SELECT * FROM scores WHERE n > 2) x"),
    ("column aliases", "SELECT x.a AS review_id, x.b AS theme, x.c AS score FROM "
                       "(SELECT review_id, theme, score FROM scores) AS x(a, b, c)"),
    ("another schema", "SELECT * FROM mine.scores"),
    ("a file under the files root", "SELECT * FROM read_parquet('{work}/scores.parquet')"),
]


@pytest.mark.parametrize("name, body", ACCEPTED, ids=[a for a, _ in ACCEPTED])
def test_a_row_wise_view_is_accepted_and_reads_what_duckdb_reads(lake, name, body):
    """The sketch through the view (the audit's emitted relation) equals the sketch over a table
    holding the rows DuckDB's own view returns: the expansion reads what the view means."""
    con, work = lake
    view = f"lake.main.ok_{abs(hash(name))}"
    con.execute(f"CREATE OR REPLACE VIEW {view} AS {body.format(work=work)}")
    con.execute(f"CREATE OR REPLACE TABLE lake.main.materialised AS SELECT * FROM {view}")
    for unit in ("record", "user"):
        through_view, audited = _sketch(con, _sql(view, unit), files_root=work)
        over_rows, _ = _sketch(con, _sql("lake.main.materialised", unit))
        assert np.array_equal(through_view, over_rows), (name, unit)
        assert audited.record_key and set(audited.record_key.values()) == {"review_id"}
    con.execute(f"DROP VIEW {view}")


def test_a_public_lookup_may_be_joined_and_aggregated_and_is_recorded(lake):
    con, _ = lake
    con.execute("CREATE OR REPLACE VIEW lake.main.weighted AS SELECT s.review_id, p.label AS theme, "
                "s.score * p.factor / m.top AS score FROM scores s JOIN themes p USING (theme), "
                "(SELECT max(factor) AS top FROM themes) m")
    mass, audited = _sketch(con, _sql("lake.main.weighted"), public=("themes",))
    assert mass.sum() > 0 and audited.source.details()["public_tables"] == "lake.main.themes"
    assert audited.source.details()["record_key"] == "lake.main.reviews.review_id, lake.main.scores.review_id"
    with pytest.raises(AuditRefusal, match="the aggregate MAX reads other rows"):   # undeclared: protected
        _sketch(con, _sql("lake.main.weighted"))
    from dpspin_sql.errors import BadInput

    with pytest.raises(BadInput, match="is a view"):
        _sketch(con, _sql("lake.main.weighted"), public=("weighted",))
    with pytest.raises(BadInput, match="does not exist"):
        _sketch(con, _sql("lake.main.weighted"), public=("nothing",))


# -- refused: rows that depend on other rows, joins off the record id, ids of different types ----------

REFUSED = [
    ("window", "SELECT review_id, theme, score / max(score) OVER () AS score FROM scores", "a window function"),
    ("rank", "SELECT review_id, theme, score FROM scores QUALIFY rank() OVER (ORDER BY score) > 1", "QUALIFY"),
    ("aggregate", "SELECT review_id, theme, avg(score) AS score FROM scores GROUP BY ALL", "GROUP BY"),
    ("ungrouped aggregate", "SELECT max(review_id) AS review_id, 'fee' AS theme, 1.0 AS score FROM scores",
     "the aggregate MAX"),
    ("DISTINCT", "SELECT DISTINCT review_id, theme, score FROM scores", "DISTINCT"),
    ("scalar subquery", "SELECT review_id, theme, score / (SELECT max(score) FROM scores) AS score FROM scores",
     "a scalar subquery"),
    ("EXISTS", "SELECT * FROM scores WHERE EXISTS (SELECT 1 FROM flags WHERE flag = 'f9')", "an EXISTS subquery"),
    ("IN subquery", "SELECT * FROM scores WHERE review_id IN (SELECT review_id FROM flags)", "an IN/ANY subquery"),
    ("correlated subquery", "SELECT * FROM scores s WHERE s.score > (SELECT avg(t.score) FROM scores t "
                            "WHERE t.theme = s.theme)", "subquery"),
    ("LIMIT", "SELECT * FROM scores LIMIT 10", "LIMIT"),
    ("OFFSET", "SELECT * FROM scores OFFSET 10", "OFFSET"),
    ("ORDER BY", "SELECT * FROM scores ORDER BY score", "ORDER BY"),
    ("UNION", "SELECT * FROM scores UNION SELECT * FROM scores", "UNION (without ALL"),
    ("INTERSECT", "SELECT * FROM scores INTERSECT SELECT * FROM mine.scores", "INTERSECT"),
    ("EXCEPT", "SELECT * FROM scores EXCEPT SELECT * FROM mine.scores", "EXCEPT"),
    ("sampling", "SELECT * FROM scores USING SAMPLE 50 PERCENT (bernoulli)", "TABLESAMPLE"),
    ("random()", "SELECT review_id, theme, score * random() AS score FROM scores", "not on the list"),
    ("now()", "SELECT * FROM scores WHERE current_date > DATE '2020-01-01'", "not on the list"),
    ("a CAST that can fail", "SELECT review_id, theme, CAST(theme AS DOUBLE) AS score FROM scores", "can fail"),
    ("integer division", "SELECT review_id, theme, n // 2 AS score FROM scores", "not on the list"),
    ("recursive CTE", "WITH RECURSIVE c AS (SELECT * FROM scores UNION ALL SELECT * FROM c WHERE false) "
                      "SELECT * FROM c", "recursive"),
    ("range()", "SELECT i AS review_id, 'fee' AS theme, 1.0 AS score FROM range(5) t(i)", "table function"),
    ("UNNEST", "SELECT review_id, unnest(['fee', 'crash']) AS theme, score FROM scores", "not on the list"),
    ("file outside the root", "SELECT * FROM read_csv('/etc/hostname')", "outside the files root"),
    ("a CTE named like a table", "SELECT * FROM scores WHERE n IN (WITH scores AS (SELECT 1 AS n) "
                                 "SELECT n FROM scores)", "subquery"),
]


@pytest.mark.parametrize("name, body, fragment", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_view_that_is_not_row_wise_is_refused_naming_it_and_the_construct(lake, name, body, fragment):
    con, work = lake
    try:
        con.execute(f"CREATE OR REPLACE VIEW lake.main.bad AS {body}")
    except duckdb.Error:
        return   # DuckDB itself refuses to create the view: no statement can read through it
    with pytest.raises(AuditRefusal) as refusal:
        _sketch(con, _sql("lake.main.bad"), files_root=work)
    message = str(refusal.value)
    assert "view lake.main.bad" in message and fragment in message, message
    assert len(message.splitlines()) == 1


KEYS = [
    ("a protected table joined off the record id", "SELECT s.review_id, s.theme, s.score FROM scores s "
     "JOIN flags f ON s.theme = f.flag", "flags (as f) is not joined to it by its own record id"),
    ("a cross join of protected tables", "SELECT s.review_id, s.theme, s.score FROM scores s, flags f",
     "not joined to it by its own record id"),
    ("a lookup not declared public", "SELECT s.review_id, p.label AS theme, s.score FROM scores s JOIN themes p "
     "USING (theme)", "themes (as p) is not joined to it"),
    ("ids of different types compared", "SELECT s.review_id, s.theme, s.score FROM scores s JOIN sreviews r "
     "ON s.review_id = r.review_id", "compares INTEGER with VARCHAR"),
    ("ids joined through a conversion", "SELECT s.review_id, s.theme, s.score FROM scores s JOIN sreviews r "
     "ON CAST(s.review_id AS VARCHAR) = r.review_id", "not joined to it by its own record id"),
    ("a computed record id", "SELECT CAST(review_id AS VARCHAR) || '' AS review_id, theme, score FROM scores",
     "builds a string"),
    ("a record id of the public side", "SELECT p.label AS review_id, s.theme, s.score FROM scores s, themes p "
     "WHERE p.factor > 1", "scores (as s) is not joined to it"),
]


@pytest.mark.parametrize("name, body, fragment", KEYS, ids=[k[0] for k in KEYS])
def test_a_record_id_that_does_not_name_one_base_record_is_refused(lake, name, body, fragment):
    con, _ = lake
    con.execute(f"CREATE OR REPLACE VIEW lake.main.keyed AS {body}")
    public = ("themes",) if "public side" in name else ()
    with pytest.raises(AuditRefusal, match=None) as refusal:
        _sketch(con, _sql("lake.main.keyed", join=""), public=public)
    assert fragment in str(refusal.value), str(refusal.value)


def test_one_base_table_has_one_record_id(lake):
    con, _ = lake
    statement = _sql("(SELECT n AS review_id, theme, score FROM lake.main.scores) AS s",
                     join="JOIN (SELECT review_id, theme AS t, author FROM lake.main.scores JOIN lake.main.reviews "
                          "USING (review_id)) AS r USING (review_id)")
    with pytest.raises(AuditRefusal, match="with two record ids"):
        _sketch(con, statement)


# -- names: every way of naming the store is refused, as DuckDB binds it -------------------------------

STORE_NAMES = [
    ("two parts", "CREATE OR REPLACE VIEW lake.main.n AS SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS score "
                  "FROM dpspin.records"),
    ("three parts", "CREATE OR REPLACE VIEW lake.main.n AS SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS score "
                    "FROM dpspin.main.assignments"),
    ("query_table", "CREATE OR REPLACE VIEW lake.main.n AS SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS score "
                    "FROM query_table('dpspin.main.records')"),
    ("query", "CREATE OR REPLACE VIEW lake.main.n AS SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS score "
              "FROM query('SELECT * FROM dpspin.records')"),
    ("a table macro", "CREATE OR REPLACE MACRO lake.main.leak() AS TABLE SELECT record_id AS review_id, 'fee' AS theme, "
                      "1.0 AS score FROM dpspin.main.records; CREATE OR REPLACE VIEW lake.main.n AS SELECT * FROM leak()"),
    ("a scalar macro with a subquery", "CREATE OR REPLACE MACRO lake.main.peek() AS (SELECT count(*) FROM dpspin.records); "
                                       "CREATE OR REPLACE VIEW lake.main.n AS SELECT review_id, theme, score * peek() "
                                       "AS score FROM scores"),
    ("the search path (a view of the store's view, unqualified)", None),
    ("a view through another view", "CREATE OR REPLACE VIEW lake.main.n0 AS SELECT * FROM dpspin.main.records; "
                                    "CREATE OR REPLACE VIEW lake.main.n AS SELECT record_id AS review_id, 'fee' AS theme, "
                                    "1.0 AS score FROM n0"),
    ("a system table", "CREATE OR REPLACE VIEW lake.main.n AS SELECT table_oid AS review_id, 'fee' AS theme, 1.0 AS "
                       "score FROM duckdb_tables()"),
    # the attached store's catalog is the store's as a whole, not only the relations its schema defines
    ("a table of the store's catalog the schema does not define",
     "CREATE OR REPLACE TABLE dpspin.main.stash AS SELECT * FROM dpspin.records; CREATE OR REPLACE VIEW lake.main.n AS "
     "SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS score FROM dpspin.main.stash"),
    ("a schema of the store's catalog other than main",
     "CREATE SCHEMA IF NOT EXISTS dpspin.stash; CREATE OR REPLACE TABLE dpspin.stash.records AS SELECT * FROM "
     "dpspin.records; CREATE OR REPLACE VIEW lake.main.n AS SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS "
     "score FROM dpspin.stash.records"),
]


@pytest.mark.parametrize("name, ddl", STORE_NAMES, ids=[n for n, _ in STORE_NAMES])
def test_every_way_of_naming_the_store_is_refused(lake, name, ddl):
    con, _ = lake
    with dpspin_sql.session(con) as s:
        if ddl is None:   # created on a session, whose search path starts with the store
            s.execute("CREATE OR REPLACE VIEW lake.main.n AS SELECT record_id AS review_id, 'fee' AS theme, "
                      "1.0 AS score FROM assignment_rows")
        else:
            for stmt in ddl.split("; "):
                s.execute(stmt)
    with pytest.raises(AuditRefusal) as refusal:
        _sketch(con, _sql("lake.main.n", join=""))
    message = str(refusal.value)
    assert "view lake.main.n" in message and ("store" in message or "table function" in message
                                              or "not on the list" in message), message


@pytest.mark.parametrize("from_item", [
    "(SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS score FROM dpspin.records) AS x",
    "dpspin.main.assignments", "temp.main.anything", "system.main.duckdb_tables"])
def test_the_statement_cannot_name_the_store_either(lake, from_item):
    con, _ = lake
    with pytest.raises(AuditRefusal, match=r"store|temp|system"):
        _sketch(con, _sql(from_item, join=""))
    statement = ("WITH a AS (SELECT record_id AS review_id, 'fee' AS theme, 1.0 AS score FROM dpspin.records) "
                 + _sql("a", join=""))
    with pytest.raises(AuditRefusal, match="store"):
        _sketch(con, statement)


def test_duckdb_binds_what_the_audit_read_or_the_statement_is_refused(lake, monkeypatch):
    """If the audit's own name resolution were wrong, DuckDB's binder says otherwise: with a
    lookup that binds `scores` in a view to another table, the cross-check refuses."""
    from dpspin_sql.sql import resolve

    con, _ = lake
    con.execute("CREATE OR REPLACE VIEW lake.main.plain AS SELECT * FROM scores")
    real = resolve.Catalog.lookup

    def wrong(self, table, ctx):
        found = real(self, table, ctx)
        if found is not None and found.name == "scores" and not ctx.statement:
            return resolve.Found(found.catalog, "mine", "scores", False)
        return found

    monkeypatch.setattr(resolve.Catalog, "lookup", wrong)
    with pytest.raises(AuditRefusal, match=re.escape("DuckDB binds view lake.main.plain to lake.main.scores, the "
                                                     "audit read lake.mine.scores")):
        _sketch(con, _sql("lake.main.plain"))


def test_a_macro_named_like_a_built_in_is_refused_for_every_statement(lake):
    """`least` is what the sketch's own clip calls: a user macro of that name would change it on the
    installed connection (its search path reaches the user's catalog), for store statements too."""
    con, _ = lake
    con.execute("CREATE MACRO lake.main.least(a, b) AS 999")
    try:
        with pytest.raises(AuditRefusal, match=re.escape("the macro lake.main.least is named like DuckDB's built-in")):
            _sketch(con, _sql("lake.main.scores"))
        store = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace') atom_id, "
                 "DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) GROUP BY atom_id")
        with dpspin_sql.session(con) as s, pytest.raises(AuditRefusal, match="least"):
            audit_statement(store, s, user_catalog="lake")
    finally:
        con.execute("DROP MACRO lake.main.least")


def test_ids_are_compared_binary_whatever_the_collation(tmp_path):
    """A NOCASE record id joins 'A' to 'a' in DuckDB; the sketch compares ids binary, so one base
    record's rows feed one record's bound: dropping record 'A' moves the sketch by at most 1."""
    con = duckdb.connect(str(tmp_path / "nc.duckdb"))
    con.execute("CREATE TABLE posts (post_id VARCHAR COLLATE NOCASE, writer VARCHAR); "
                "INSERT INTO posts VALUES ('A', 'u1'), ('a', 'u2');"
                "CREATE TABLE tags (post_id VARCHAR, topic VARCHAR, w DOUBLE); "
                "INSERT INTO tags VALUES ('A', 't0', 1.0), ('a', 't1', 1.0), ('A', 't2', 1.0)")
    dpspin_sql.install(con, tmp_path / "store.duckdb")
    with dpspin_sql.session(con) as s:
        install_atoms(s, range(3), ["t0", "t1", "t2"])
        statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace', "
                     "max_atoms_per_record = 3) topic, DPSPIN_MASS(w) FROM tags JOIN posts USING (post_id) GROUP BY topic")
        audited = audit_statement(statement, s, user_catalog=user_catalog(con))
        engine = OwnEngine(audited.filters, source=audited.source)
        base = engine.sketch(s, audited.request.bounds).mass.astype(object)
        s.execute("BEGIN")
        s.execute("DELETE FROM nc.main.posts WHERE post_id COLLATE \"binary\" = 'A'")
        s.execute("DELETE FROM nc.main.tags WHERE post_id = 'A'")
        after = engine.sketch(s, audited.request.bounds).mass.astype(object)
        s.execute("ROLLBACK")
    con.close()
    assert int(np.abs(base - after).sum()) <= 2 ** 24
    assert list(after) == [0, 2 ** 24, 0]    # 'a' is still its own record, whole


def test_the_sql_doc_views_example(tmp_path, capsys, monkeypatch):
    """docs/SQL.md's view example: `scored` runs through `dpspin sql --public themes` (and the
    ledger row says what one record was), `normalised` is refused naming it and the window."""
    from pathlib import Path

    from dpspin_sql import ledger
    from tests.helpers.core import assert_one_line_error, cli

    monkeypatch.chdir(tmp_path)
    doc = (Path(__file__).resolve().parents[1] / "docs" / "SQL.md").read_text(encoding="utf-8")
    section = doc.split("## Views, CTEs and subqueries", 1)[1].split("\n## ", 1)[0]
    (views,) = re.findall(r"```sql\n(.*?)```", section, flags=re.S)
    path = tmp_path / "store.duckdb"
    con = dpspin_sql.store.connect(path, create=True)
    ledger.set_budget(con, 5.0, 1e-5)
    install_atoms(con, range(3), ["refund", "crash", "fee"])
    con.execute("""
        CREATE TABLE reviews AS SELECT i AS review_id, 'a' || (i % 7) AS author,
               CASE WHEN i % 2 = 0 THEN 'en' ELSE 'de' END AS lang FROM range(40) t(i);
        CREATE TABLE theme_scores AS SELECT i % 40 AS review_id, ['refund', 'crash', 'fee'][1 + i % 3] AS theme,
               0.5 AS score FROM range(100) t(i);
        CREATE TABLE themes AS SELECT * FROM (VALUES ('refund', 'refund', 1.0), ('crash', 'crash', 0.5),
               ('fee', 'fee', 2.0)) v(theme, label, factor);
    """)
    for statement in re.sub(r"--[^\n]*", "", views).split(";"):
        if statement.strip():
            con.execute(statement)
    con.close()
    stmt = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, mechanism = 'laplace', top = 2, "
            "privacy_unit_column = author, contribution_bound = 1) theme, DPSPIN_MASS(score) "
            "FROM {} JOIN main.reviews USING (review_id) GROUP BY theme")
    rc, out, err = cli(capsys, "sql", "--db", path, stmt.format("scored"), "--out", tmp_path / "p.json")
    assert_one_line_error(rc, out, err, 1)
    assert "themes (as p) is not joined to it" in err            # the lookup is protected until declared
    rc, _, err = cli(capsys, "sql", "--db", path, stmt.format("scored"), "--public", "themes", "--out",
                     tmp_path / "p.json", "-q")
    assert rc == 0, err
    rc, out, err = cli(capsys, "sql", "--db", path, stmt.format("normalised"), "--public", "themes", "--out",
                       tmp_path / "q.json")
    assert_one_line_error(rc, out, err, 1)
    assert "view store.main.normalised: a window function reads other rows" in err
    con = dpspin_sql.store.connect(path)
    (row,) = ledger.status(con).releases
    con.close()
    assert row["params"]["record_key"] == "store.main.reviews.review_id, store.main.theme_scores.review_id"
    assert row["params"]["public_tables"] == "store.main.themes"


def test_on_a_store_connection_the_store_is_refused_by_any_name_and_other_catalogs_are_yours(tmp_path):
    """A store file that also holds the curator's tables: the store's catalog is named after the
    file (`shop`), a view in another schema binds `records` to main.records (the store's) by the
    search path, and an ATTACHed database of the curator's is theirs to read."""
    path = tmp_path / "shop.duckdb"
    con = dpspin_sql.store.connect(path, create=True)
    install_atoms(con, range(2), ["refund", "crash"])
    other = tmp_path / "other.duckdb"
    side = duckdb.connect(str(other))
    side.execute("CREATE TABLE scores AS SELECT i AS review_id, 'refund' AS theme, 0.5 AS score FROM range(9) t(i)")
    side.close()
    con.execute(f"ATTACH '{other}' AS warehouse")
    con.execute("""
        CREATE SCHEMA mine;
        CREATE TABLE mine.reviews AS SELECT i AS review_id, 'a' || (i % 3) AS author FROM range(9) t(i);
        CREATE VIEW mine.by_file_name AS SELECT record_id AS review_id, 'refund' AS theme, 1.0 AS score
            FROM shop.main.records;
        CREATE VIEW mine.by_search_path AS SELECT record_id AS review_id, 'refund' AS theme, 1.0 AS score FROM records;
        CREATE VIEW mine.attached AS SELECT * FROM warehouse.main.scores;
    """)
    statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace', top = 1) theme, "
                 "DPSPIN_MASS(score) FROM {} JOIN mine.reviews USING (review_id) GROUP BY theme")
    for view in ("mine.by_file_name", "mine.by_search_path"):
        with pytest.raises(AuditRefusal, match="the dpspin store's own tables") as refusal:
            audit_statement(statement.format(view), con, user_catalog=user_catalog(con))
        assert f"view shop.{view}" in str(refusal.value)
    audited = audit_statement(statement.format("mine.attached"), con, user_catalog=user_catalog(con))
    assert audited.record_key == {"warehouse.main.scores": "review_id", "shop.mine.reviews": "review_id"}
    con.close()


@pytest.mark.guard
@pytest.mark.parametrize("body", [
    "SELECT record_id AS review_id, 'refund' AS theme, weight AS score FROM assignment_rows",
    "SELECT release_id AS review_id, 'refund' AS theme, epsilon AS score FROM ledger",
    "SELECT release_id AS review_id, 'refund' AS theme, 1.0 AS score FROM release_plans",
    "SELECT user_id AS review_id, 'refund' AS theme, 1.0 AS score FROM main.users",
], ids=["assignment_rows", "ledger", "release_plans", "users"])
def test_on_a_store_connection_every_relation_of_the_store_is_refused_through_a_view(tmp_path, body):
    """Not only `assignments` and `records`: a view of the curator's over any relation the dpspin
    schema defines (the view of every split's rows, the ledger, the stored plans, the users) is
    the store's, however it is named."""
    con = dpspin_sql.store.connect(tmp_path / "shop.duckdb", create=True)
    install_atoms(con, range(2), ["refund", "crash"])
    con.execute(f"CREATE SCHEMA mine; CREATE VIEW mine.v AS {body}")
    statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace', top = 1, "
                 "record_id_column = review_id) theme, DPSPIN_MASS(score) FROM mine.v GROUP BY theme")
    with pytest.raises(AuditRefusal, match="the dpspin store's own tables"):
        audit_statement(statement, con, user_catalog=user_catalog(con))
    con.close()
