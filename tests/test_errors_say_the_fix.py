"""Errors that say the fix: the refusals an analyst meets first — collected from the README,
docs/SQL.md and the tests of the audit and the CLI — are one line that names the cause and
the way out, exit 2 for bad input and 1 for a refusal, and charge nothing.

Each row: the command (a DP statement alone is run as `dpspin sql --db STORE STATEMENT`),
the exit code, what the message must say is wrong, and what it must say to do.
"""
from __future__ import annotations

import duckdb
import pytest

from dpspin_sql.cli import run
from tests.helpers.core import assert_one_line_error, cli

OPTS = "epsilon = 0.1, mechanism = 'laplace'"
HEAD = f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS})"
MASS = "atom_id, DPSPIN_MASS(weight) FROM assignments"
OWN = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, delta = 1e-6, privacy_unit_column = author, "
       "contribution_bound = 1, mechanism = 'gaussian', top = 2) theme AS atom, DPSPIN_MASS(score) "
       "FROM read_parquet('scores.parquet') AS s JOIN read_parquet('reviews.parquet') AS r USING (review_id) "
       "GROUP BY theme")

CASES = [
    # (id, argv or statement, exit code, the cause, the way out)
    ("no DP clause", f"SELECT {MASS} GROUP BY atom_id", 1,
     "no WITH DIFFERENTIAL_PRIVACY OPTIONS", "write SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1"),
    ("no mechanism", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1) {MASS} GROUP BY atom_id", 1,
     "option mechanism is required", "add mechanism = 'laplace'"),
    ("no epsilon", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (mechanism = 'laplace') {MASS} GROUP BY atom_id", 1,
     "option epsilon is required", "add epsilon = 1"),
    ("a mistyped mechanism",
     f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, mechanism = 'gausian') {MASS} GROUP BY atom_id", 1,
     "is not one of", "did you mean gaussian?"),
    ("a mistyped option", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, tpo = 3) {MASS} GROUP BY atom_id", 1,
     "unknown option 'tpo'", "did you mean top?"),
    ("BigQuery's option", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, max_groups_contributed = 2) {MASS} "
     "GROUP BY atom_id", 1, "max_groups_contributed is BigQuery's option", "in dpspin it is max_atoms_per_record"),
    ("no GROUP BY", f"{HEAD} {MASS}", 1, "GROUP BY atom_id is required", "end the statement with GROUP BY atom_id"),
    ("ORDER BY", f"{HEAD} {MASS} GROUP BY atom_id ORDER BY 2 DESC", 1, "ORDER BY exposes", "leave it out"),
    ("LIMIT", f"{HEAD} {MASS} GROUP BY atom_id LIMIT 3", 1, "LIMIT exposes", "leave it out"),
    ("SUM for the mass", f"{HEAD} atom_id, SUM(weight) FROM assignments GROUP BY atom_id", 1,
     "SUM is not the DP mass", "DPSPIN_MASS(weight)"),
    ("JOIN ON", f"{HEAD} atom_id, DPSPIN_MASS(weight) FROM assignments AS a JOIN records AS r "
     "ON a.record_id = r.record_id GROUP BY atom_id", 1, "JOIN ... ON", "USING (record_id)"),
    ("a LEFT JOIN", f"{HEAD} {MASS} LEFT JOIN records USING (record_id) GROUP BY atom_id", 1,
     "a LEFT join", "[INNER] JOIN records USING (record_id)"),
    ("top over m", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({OPTS}, top = 99) {MASS} GROUP BY atom_id", 1,
     "exceeds the number of atoms m=30", "ask for at most 30"),
    ("a table that is not there", f"{HEAD} {MASS.replace('assignments', 'asignments')} GROUP BY atom_id", 1,
     "there is no table or view", "read_parquet('FILE')"),
    ("two relations of one name", OWN.replace(" AS s ", " ").replace(" AS r ", " "), 1,
     "'read_parquet' names two relations", "give each its own alias"),
    ("a WHERE term over both tables", f"{HEAD} {MASS} JOIN records USING (record_id) "
     "WHERE weight > length(text) GROUP BY atom_id", 1, "mixes records and assignments columns",
     "split it into AND-ed terms"),
    ("a comparison that may fail", f"{HEAD} {MASS} JOIN records USING (record_id) WHERE text = 5 GROUP BY atom_id",
     1, "compares INTEGER with VARCHAR", "TRY_CAST"),
    ("over the budget", f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 50, mechanism = 'laplace') {MASS} "
     "GROUP BY atom_id", 1, "does not fit", "ask for a smaller epsilon (dpspin budget shows what is left)"),
    ("own files on PostgreSQL", ["sql", "--db", "{db}", "--engine", "postgres", "--pg-dsn", "host=127.0.0.1 port=1",
                                 OWN, "--out", "{tmp}/p.json"], 2,
     "runs on the duckdb engine, not postgres", "--emit-sketch --dialect postgres"),
    ("own tables on Spark", ["sql", "--db", "{db}", "--engine", "spark",
                             OWN.replace("read_parquet('scores.parquet')", "mine.scores"), "--out", "{tmp}/p.json"], 2,
     "tables of your DuckDB database cannot be read by Spark", "read_parquet('FILE') or read_csv('FILE')"),
    ("a warehouse file run here", ["sql", "--db", "{db}", "-f", "{tmp}/warehouse.sql", "--out", "{tmp}/p.json"], 1,
     "CREATE TABLE declarations describe a warehouse's tables", "leave them out"),
    ("release without its options", ["release", "--db", "{db}", "--out", "{tmp}/p.json"], 2,
     "missing options --mechanism, --epsilon, --unit", "for example dpspin release --db"),
    ("release -L over m", ["release", "--db", "{db}", "--mechanism", "laplace", "--epsilon", "0.1", "--unit",
                           "record", "-L", "40", "--out", "{tmp}/p.json"], 2,
     "exceeds the number of atoms m=30", "ask for at most 30"),
    ("an output that exists", ["release", "--db", "{db}", "--mechanism", "laplace", "--epsilon", "0.1", "--unit",
                               "record", "--out", "{tmp}/earlier.json"], 2, "already exists", "pass --force to replace it"),
    ("sql without a store", ["sql", f"{HEAD} {MASS} GROUP BY atom_id"], 2,
     "--db is required", "only --emit-sketch works without a store"),
    ("load: a column that is not there", ["load", "--db", "{db}", "--input", "{tmp}/tickets.csv",
                                          "--text-col", "text"], 2,
     "column 'text' (from --text-col) not in", "it has: id, body, who"),
]


@pytest.fixture(scope="module")
def where(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("errors")
    db = tmp / "demo.duckdb"
    assert run(["demo", "--db", str(db)]) == 0
    con = duckdb.connect()
    con.execute(f"COPY (SELECT i AS review_id, ['refund delay', 'app crash'][1 + i % 2] AS theme, 0.8 AS score "
                f"FROM range(100) t(i)) TO '{tmp / 'scores.parquet'}' (FORMAT parquet)")
    con.execute(f"COPY (SELECT i AS review_id, 'a' || (i % 30) AS author FROM range(100) t(i)) "
                f"TO '{tmp / 'reviews.parquet'}' (FORMAT parquet)")
    con.close()
    con = duckdb.connect(str(db))   # a table of the curator's own, beside the store's
    con.execute(f"CREATE SCHEMA mine; CREATE TABLE mine.scores AS SELECT * FROM read_parquet('{tmp / 'scores.parquet'}')")
    con.close()
    (tmp / "warehouse.sql").write_text(
        "CREATE TABLE theme_scores (review_id BIGINT, theme VARCHAR, score DOUBLE);\n"
        "CREATE TABLE reviews (review_id BIGINT, author VARCHAR);\n"
        + OWN.replace("read_parquet('scores.parquet')", "theme_scores")
             .replace("read_parquet('reviews.parquet')", "reviews") + ";\n", encoding="utf-8")
    (tmp / "earlier.json").write_text("{}", encoding="utf-8")
    (tmp / "tickets.csv").write_text("id,body,who\n1,my refund is late,a\n", encoding="utf-8")
    return tmp, db


def _ledger_rows(db) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM ledger").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("name, command, code, cause, way_out", CASES, ids=[c[0] for c in CASES])
def test_the_refusal_names_the_cause_and_the_way_out(where, capsys, monkeypatch, name, command, code, cause,
                                                     way_out):
    tmp, db = where
    monkeypatch.chdir(tmp)   # read_parquet('FILE') is read under the current directory
    argv = (["sql", "--db", str(db), command, "--out", str(tmp / "p.json")] if isinstance(command, str)
            else [a.format(db=db, tmp=tmp) for a in command])
    before = _ledger_rows(db)
    rc, out, err = cli(capsys, *argv)
    assert_one_line_error(rc, out, err, code=code)
    assert cause in err, err
    assert way_out in err, err
    assert _ledger_rows(db) == before and not (tmp / "p.json").exists()


def test_every_case_has_a_way_out_apart_from_its_cause():
    assert len({c[0] for c in CASES}) == len(CASES)
    assert all(way_out not in cause for _, _, _, cause, way_out in CASES)
