"""DP statements over the user's own tables, views and files (dpspin_sql/sql/own.py, docs/SQL.md).

- a user database with its own names (reviews, theme_scores, and a `records` table of its
  own) is left exactly as it was — table list and content checksums — by install and by
  user- and record-level statements, and each statement charges the ledger once;
- read_parquet / read_csv sources;
- the sketch over a hostile user table equals, bit for bit, the sketch over the same rows
  loaded into the store;
- refusals of disallowed shapes through `dpspin sql`: one line, nothing charged, no plan.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pytest

import dpspin_sql
from dpspin_sql import ledger
from dpspin_sql.embed import resolve, user_catalog
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import run_sketch
from dpspin_sql.sketch.engines.own import OwnEngine
from dpspin_sql.sql.audit import audit_statement
from tests.helpers.core import assert_one_line_error, cli, install_atoms, put_assignments, put_records

THEMES = ["refund delay", "app crash", "double charge", "password reset", "late delivery"]
USER = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author, "
        "contribution_bound = 1, mechanism = 'gaussian', top = 3) theme AS atom, DPSPIN_MASS(score) "
        "FROM theme_scores JOIN reviews USING (review_id) GROUP BY theme")
RECORD = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25, mechanism = 'laplace', top = 3) "
          "s.theme, DPSPIN_MASS(s.score) FROM theme_scores AS s JOIN reviews AS r ON s.review_id = r.review_id "
          "WHERE r.body LIKE '%refund%' AND s.score > 0.1 AND r.review_id >= 3 GROUP BY s.theme")


def make_user_db(con) -> None:
    con.execute("""
        CREATE TABLE reviews AS
        SELECT i AS review_id, 'author-' || (i % 60) AS author,
               ['my refund is late', 'the app crashes', 'charged twice', 'reset email missing'][1 + i % 4] AS body
        FROM range(400) AS t(i);
        CREATE TABLE theme_scores AS
        SELECT i AS review_id, ['refund delay', 'app crash', 'double charge', 'password reset'][1 + i % 4] AS theme,
               0.8 AS score FROM range(400) AS t(i)
        UNION ALL SELECT i, 'late delivery', 0.4 FROM range(0, 400, 3) AS t(i)
        UNION ALL SELECT i, 'not an atom', 1.0 FROM range(0, 400, 5) AS t(i);
        CREATE TABLE records (note VARCHAR);
        INSERT INTO records VALUES ('mine, not the store''s');
        CREATE VIEW strong AS SELECT * FROM theme_scores WHERE score > 0.5;
    """)


def user_state(con) -> dict:
    """The user's catalog (tables, views, schemas, macros) and a checksum of every table."""
    cur = con.cursor()
    db = cur.execute("SELECT current_database()").fetchall()[0][0]
    names = cur.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = ? ORDER BY 1", [db]).fetchall()
    state = {
        "tables": names,
        "views": cur.execute("SELECT view_name, sql FROM duckdb_views() WHERE database_name = ? AND NOT internal "
                             "ORDER BY 1", [db]).fetchall(),
        "schemas": cur.execute("SELECT schema_name FROM duckdb_schemas() WHERE database_name = ? ORDER BY 1",
                               [db]).fetchall(),
        "functions": cur.execute("SELECT count(*) FROM duckdb_functions() WHERE database_name = ? AND NOT internal",
                                 [db]).fetchall(),
    }
    for (name,) in names:
        state[name] = cur.execute("SELECT count(*), md5(coalesce(string_agg(t::VARCHAR, '|' ORDER BY t::VARCHAR), '')) "
                                  f'FROM "{name}" AS t').fetchall()
    cur.close()
    return state


@pytest.fixture
def user_db(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    con = duckdb.connect(str(tmp_path / "analytics.duckdb"))
    make_user_db(con)
    yield con
    con.close()


def releases(con) -> list:
    with dpspin_sql.session(con) as s:
        return ledger.status(s).releases


def test_own_tables_leave_the_users_database_unchanged_and_charge_once(user_db, tmp_path):
    before = user_state(user_db)
    dpspin_sql.install(user_db, tmp_path / "store.duckdb", epsilon_budget=5.0, delta_budget=1e-5)
    with dpspin_sql.session(user_db) as s:
        install_atoms(s, list(range(len(THEMES))), THEMES)
    assert user_state(user_db) == before

    plan = dpspin_sql.run_sql(user_db, USER, tmp_path / "user.json")
    assert plan.to_dict()["unit"] == "user" and len(plan.to_dict()["atoms"]) == 3
    assert len(releases(user_db)) == 1
    plan = dpspin_sql.run_sql(user_db, RECORD, tmp_path / "record.json")
    assert plan.to_dict()["unit"] == "record"
    # a view, one relation with record_id_column, an integer atom column from a view
    one = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.25, mechanism = 'laplace', top = 2, "
           "record_id_column = review_id) theme, DPSPIN_MASS(score) FROM strong GROUP BY theme")
    dpspin_sql.run_sql(user_db, one, tmp_path / "view.json")
    rows = releases(user_db)
    assert len(rows) == 3 and sum(r["epsilon"] for r in rows) == pytest.approx(1.0)
    assert rows[0]["params"]["source_assignments"] == "analytics.main.theme_scores"
    assert rows[0]["params"]["source_records"] == "analytics.main.reviews"
    assert user_state(user_db) == before          # nothing written to the user's tables or schema
    with dpspin_sql.session(user_db) as s:        # the store's own records are untouched as well
        assert s.execute("SELECT count(*) FROM dpspin.main.records").fetchall() == [(0,)]


def test_own_tables_user_level_counts_each_author_once_and_drops_unknown_atoms(user_db, tmp_path):
    dpspin_sql.install(user_db, tmp_path / "store.duckdb", epsilon_budget=5.0)
    with dpspin_sql.session(user_db) as s:
        install_atoms(s, list(range(len(THEMES))), THEMES)
        audited = audit_statement(USER, s, user_catalog=user_catalog(user_db))
        sketch = OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds)
    # 60 authors, each clipped to L1 <= 1: the total mass is at most 60 (in 2^-24 units)
    assert 0 < sketch.mass.sum() <= 60 * 2 ** 24 and sketch.m == len(THEMES)


def test_read_parquet_and_read_csv_sources(user_db, tmp_path):
    dpspin_sql.install(user_db, tmp_path / "store.duckdb", epsilon_budget=5.0)
    with dpspin_sql.session(user_db) as s:
        install_atoms(s, list(range(len(THEMES))), THEMES)
    user_db.execute("COPY theme_scores TO 'scores.parquet' (FORMAT parquet)")
    user_db.execute("COPY reviews TO 'reviews.csv' (HEADER)")
    before = user_state(user_db)
    parquet = USER.replace("FROM theme_scores", "FROM read_parquet('scores.parquet')")
    dpspin_sql.run_sql(user_db, parquet, tmp_path / "parquet.json")
    both = USER.replace("FROM theme_scores JOIN reviews", "FROM read_parquet('scores.parquet') AS s "
                        "JOIN read_csv('reviews.csv') AS r")
    dpspin_sql.run_sql(user_db, both, tmp_path / "both.json")
    rows = releases(user_db)
    assert len(rows) == 2 and rows[1]["params"]["source_records"].startswith("csv:")
    # the same rows as tables or as files: the same sketch
    with dpspin_sql.session(user_db) as s:
        sketches = []
        for statement in (USER, parquet, both):
            audited = audit_statement(statement, s, user_catalog=user_catalog(user_db))
            sketches.append(OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds).mass)
    assert np.array_equal(sketches[0], sketches[1]) and np.array_equal(sketches[0], sketches[2])
    assert user_state(user_db) == before


# -- hostile tables: the same integer sketch as the same rows in the store ----------------------------

HOSTILE = [0.0, -0.0, -1.0, 1e308, float("nan"), float("inf"), -float("inf"), 5e-324, 2.0 ** -25, 1.0, 0.5,
           1 / 3, 2.0, 1e6, None, 0.3, 0.7, 0.25]
ATOMS = [0, 1, 2, 5, 7, 11, 40]


def hostile_rows(seed: int):
    rng = np.random.default_rng(seed)
    records = [(f"r{i}", f"u{rng.integers(0, 5)}", "target") for i in range(30)]
    rows = []
    for rid, _, _ in records:
        for _ in range(rng.integers(0, 9)):                       # up to 8 atoms per record (K is 1 or 3)
            row = (rid, int(rng.choice([*ATOMS, 999, -1, 3])), HOSTILE[rng.integers(0, len(HOSTILE))])
            rows += [row] * int(rng.integers(1, 3))                  # duplicates
    rows += [(None, 1, 1.0), ("ghost", 2, 1.0), ("r1", None, 1.0), ("r2", 2147483647, 1.0)]
    return records, rows


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("unit, K, B", [("record", 3, None), ("record", 1, None), ("user", 3, 1.0),
                                        ("user", 2, 2.5)])
def test_the_sketch_over_a_hostile_user_table_equals_the_store_sketch(tmp_path, seed, unit, K, B):
    records, rows = hostile_rows(seed)
    con = duckdb.connect(str(tmp_path / "user.duckdb"))
    con.execute("CREATE TABLE posts (post_id VARCHAR, writer VARCHAR, body VARCHAR)")
    con.executemany("INSERT INTO posts VALUES (?, ?, 'text')", [r[:2] for r in records])
    con.execute("INSERT INTO posts VALUES (NULL, 'u1', 'no id'), ('r3', NULL, 'no user')")   # NULL ids
    con.execute("CREATE TABLE scores (post_id VARCHAR, topic BIGINT, w DOUBLE)")
    con.executemany("INSERT INTO scores VALUES (?, ?, ?)", rows)
    dpspin_sql.install(con, tmp_path / "store.duckdb")
    unit_opts = f"privacy_unit_column = writer, contribution_bound = {B}, " if unit == "user" else ""
    statement = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, {unit_opts}max_atoms_per_record = {K}, "
                 "mechanism = 'laplace') topic, DPSPIN_MASS(w) FROM scores JOIN posts USING (post_id) GROUP BY topic")
    with dpspin_sql.session(con) as s:
        install_atoms(s, ATOMS)
        audited = audit_statement(statement, s, user_catalog=user_catalog(con))
        own = OwnEngine(audited.filters, source=audited.source).sketch(s, audited.request.bounds)
        # the same rows in the store (the NULL-id records are not representable there; they add nothing)
        put_records(s, records)
        put_assignments(s, rows)
        stored = run_sketch(s, Bounds(unit, K, B))
    con.close()
    assert own.mass.dtype == np.int64 and np.array_equal(own.mass, stored.mass)
    assert np.array_equal(own.atom_ids, stored.atom_ids)


# -- refusals through the CLI -----------------------------------------------------------------------

@pytest.fixture
def cli_store(tmp_path, monkeypatch):
    """A store file that also holds the curator's own tables (a store connection reads them)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "store.duckdb"
    con = dpspin_sql.store.connect(path, create=True)
    ledger.set_budget(con, 5.0, 1e-5)
    install_atoms(con, list(range(len(THEMES))), THEMES)
    con.execute("CREATE SCHEMA mine")
    for stmt in ("CREATE TABLE mine.reviews AS SELECT i AS review_id, 'author-' || (i % 9) AS author, 'b' AS body "
                 "FROM range(50) t(i)",
                 "CREATE TABLE mine.theme_scores AS SELECT i AS review_id, 'app crash' AS theme, 0.5 AS score "
                 "FROM range(50) t(i)",
                 # views: over the store's own tables (refused, directly or through another view) and
                 # over the curator's own table (read like it)
                 "CREATE VIEW mine.store_rows AS SELECT record_id AS review_id, atom_id AS theme, weight AS score "
                 "FROM main.assignments",
                 "CREATE VIEW mine.store_rows_again AS SELECT * FROM mine.store_rows",
                 "CREATE VIEW mine.my_scores AS SELECT * FROM mine.theme_scores"):
        con.execute(stmt)
    con.execute("COPY mine.theme_scores TO 'scores.parquet' (FORMAT parquet)")
    con.close()
    return path


def test_dpspin_sql_over_own_tables_runs(cli_store, tmp_path, capsys):
    statement = USER.replace("theme_scores", "mine.theme_scores").replace("reviews", "mine.reviews")
    rc, _, err = cli(capsys, "sql", "--db", cli_store, statement, "--out", tmp_path / "p.json", "-q")
    assert rc == 0, err
    assert (tmp_path / "p.json").exists()


def test_a_view_of_ones_own_tables_is_read_like_them(cli_store, tmp_path, capsys):
    statement = USER.replace("theme_scores", "mine.my_scores").replace("reviews", "mine.reviews")
    rc, _, err = cli(capsys, "sql", "--db", cli_store, statement, "--out", tmp_path / "p.json", "-q")
    assert rc == 0, err


OPTS = "epsilon = 0.5, mechanism = 'laplace'"
REFUSED = [
    # two relations not joined by an equi-key
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(score) FROM mine.theme_scores, "
     "mine.reviews GROUP BY theme", 1, "one equi-join key"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) s.theme, DPSPIN_MASS(s.score) FROM mine.theme_scores s "
     "JOIN mine.reviews r ON s.review_id > r.review_id GROUP BY s.theme", 1, "one equi-join key"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) s.theme, DPSPIN_MASS(s.score) FROM mine.theme_scores s "
     "LEFT JOIN mine.reviews r USING (review_id) GROUP BY s.theme", 1, "join"),
    # a subquery whose rows depend on other rows (a row-wise one is read: tests/test_sql_views.py)
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM (SELECT review_id, theme, score / max(score) OVER () AS score FROM mine.theme_scores) GROUP BY theme", 1,
     "a window function reads other rows"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(score) FROM mine.theme_scores "
     "JOIN mine.reviews USING (review_id) WHERE body IN (SELECT body FROM mine.reviews) GROUP BY theme", 1,
     "subquery"),
    # a non-literal path, a path function other than read_parquet / read_csv, a path outside the root
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM read_parquet('scores' || '.parquet') GROUP BY theme", 1, "literal path"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM read_parquet(['scores.parquet']) GROUP BY theme", 1, "literal path"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM read_json('scores.json') GROUP BY theme", 1, "read_parquet('path'), read_csv('path') and delta_scan('path')"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM read_csv('/etc/passwd') GROUP BY theme", 1, "outside the files root"),
    # a unit column that doesn't exist; a unit on the assignments side of a join
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, privacy_unit_column = writer) theme, DPSPIN_MASS(score) "
     "FROM mine.theme_scores JOIN mine.reviews USING (review_id) GROUP BY theme", 1, "unknown column 'writer'"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, privacy_unit_column = s.theme) s.theme, "
     "DPSPIN_MASS(s.score) FROM mine.theme_scores s JOIN mine.reviews USING (review_id) GROUP BY s.theme", 1,
     "joined records relation"),
    # the store's tables by name, mixed, or a table that does not exist
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(score) FROM mine.theme_scores "
     "JOIN records USING (review_id) GROUP BY theme", 1, "together with a table of your own"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = release_id) mechanism, "
     "DPSPIN_MASS(epsilon) FROM ledger GROUP BY mechanism", 1, "reads table 'ledger', which is not allowed"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM mine.nothing GROUP BY theme", 1, "no table or view"),
    # the store's view of every split's rows, and views of one's own that read the store's tables
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = record_id) atom_id, "
     "DPSPIN_MASS(weight) FROM assignment_rows GROUP BY atom_id", 1, "reads table 'assignment_rows', which is not allowed"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM mine.store_rows GROUP BY theme", 1, "reads the dpspin store's own tables"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, DPSPIN_MASS(score) "
     "FROM mine.store_rows_again GROUP BY theme", 1, "reads the dpspin store's own tables"),
    # the output: another column, a mass of a column of the other relation, no record id
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(score), body FROM mine.theme_scores "
     "JOIN mine.reviews USING (review_id) GROUP BY theme", 1, "would reach the output"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(r.review_id) FROM mine.theme_scores "
     "JOIN mine.reviews AS r USING (review_id) GROUP BY theme", 1, "same relation"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(score) FROM mine.theme_scores "
     "GROUP BY theme", 1, "name the record id"),
    # filters: totality over the user's types, and a term mixing the relations
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(score) FROM mine.theme_scores "
     "JOIN mine.reviews USING (review_id) WHERE body = 5 GROUP BY theme", 1, "reviews.body = 5"),
    (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}) theme, DPSPIN_MASS(score) FROM mine.theme_scores "
     "JOIN mine.reviews USING (review_id) WHERE body = 'b' OR score > 1 GROUP BY theme", 1, "mixes"),
]


@pytest.mark.parametrize("sql, code, reason", REFUSED)
def test_disallowed_shapes_are_one_line_refusals_and_charge_nothing(cli_store, tmp_path, capsys, sql, code, reason):
    rc, out, err = cli(capsys, "sql", "--db", cli_store, sql, "--out", tmp_path / "p.json")
    assert_one_line_error(rc, out, err, code)
    assert reason in err, err
    assert not (tmp_path / "p.json").exists()
    con = dpspin_sql.store.connect(cli_store)
    assert ledger.status(con).releases == []
    con.close()


def test_a_missing_file_is_bad_input(cli_store, tmp_path, capsys):
    sql = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, record_id_column = review_id) theme, "
           "DPSPIN_MASS(score) FROM read_parquet('missing.parquet') GROUP BY theme")
    rc, out, err = cli(capsys, "sql", "--db", cli_store, sql, "--out", tmp_path / "p.json")
    assert_one_line_error(rc, out, err, 2)
    assert "not found" in err and not (tmp_path / "p.json").exists()


def test_emit_sketch_names_the_store_tables_only(capsys):
    rc, out, err = cli(capsys, "sql", "--emit-sketch", USER)
    assert_one_line_error(rc, out, err, 1)
    assert "tables of your own" in err


def test_a_store_statement_is_unchanged_on_an_installed_connection(user_db, tmp_path):
    """FROM assignments JOIN records still means the store's tables, never the user's `records`."""
    dpspin_sql.install(user_db, tmp_path / "store.duckdb")
    with resolve(user_db) as s:
        audited = audit_statement("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace') "
                                  "atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) "
                                  "GROUP BY atom_id", s, user_catalog=user_catalog(user_db))
    assert audited.source.store


def test_the_sql_doc_own_tables_example_runs(user_db, tmp_path):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "SQL.md").read_text(encoding="utf-8")
    section = doc.split("## Your own tables and files", 1)[1].split("\n## ", 1)[0]
    (statement,) = re.findall(r"```sql\n(.*?)```", section, flags=re.S)
    dpspin_sql.install(user_db, tmp_path / "store.duckdb", epsilon_budget=1.0)
    with dpspin_sql.session(user_db) as s:
        install_atoms(s, list(range(len(THEMES))), THEMES)
    plan = dpspin_sql.run_sql(user_db, statement, tmp_path / "doc.json")
    assert plan.to_dict()["unit"] == "user" and len(releases(user_db)) == 1
