"""The declared tables of a two-phase warehouse release checked against the warehouse's own
catalog (dpspin_sql/sql/warehouse_catalog.py): `dpspin sql --catalog-query` prints the
information_schema query, a real DuckDB database file (the warehouse) runs it and exports
its rows with COPY, and both phases take the file with `--catalog`. Matching declarations
give the same sketch as without; a lying declaration is refused in both phases before any
charge; without declarations the catalog gives them; a catalog file that is ambiguous or
lacks a column is one line of bad input. PostgreSQL's own information_schema is read on
the real server when its binaries are installed."""
from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import duckdb
import numpy as np
import pytest
import sqlglot
from sqlglot import exp

from dpspin_sql import cli
from dpspin_sql.errors import AuditRefusal, BadInput
from dpspin_sql.sketch.transpile import DIALECTS
from dpspin_sql.sql.catalog import catalog_query_for
from dpspin_sql.sql.warehouse_catalog import Catalog, CatalogColumn, CatalogTable, identifier, same_type, stored
from dpspin_sql.warehouse import check_vector, read_result
from tests.helpers.core import assert_one_line_error
from tests.helpers.postgres import pg_dsn  # noqa: F401  (the fixture)
from tests.test_warehouse_own import (  # noqa: F401
    DECLARE,
    LIKE,
    THEMES,
    USER,
    fill,
    ledger_rows,
    release,
    run_duckdb,
    setup,
    warehouse,
)


def sql_cli(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.run(["sql", *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def catalog_csv(capsys, wh: Path, query: Path, out: Path) -> Path:
    """Phase 0: print the catalog query, run it in the warehouse, export its rows (COPY … CSV)."""
    rc, sql, err = sql_cli(capsys, "--dialect", "duckdb", "--catalog-query", "-f", str(query))
    assert rc == 0 and err == "", err
    con = duckdb.connect(str(wh))
    con.execute(f"COPY ({sql.strip().rstrip(';')}) TO '{out}' (FORMAT csv, HEADER)")
    con.close()
    return out


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_matching_declarations_give_the_same_sketch_and_the_ledger_names_the_catalog(setup, tmp_path, capsys):
    store_path, reference = setup
    wh = warehouse(store_path, tmp_path / "wh.duckdb")
    query = write(tmp_path / "query.sql", DECLARE + LIKE + ";\n")
    cols = catalog_csv(capsys, wh, query, tmp_path / "cols.csv")
    assert len(cols.read_text().splitlines()) == 1 + 6          # the two tables' six columns, not atoms/records
    rc, unchecked, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(query))
    assert rc == 0 and "--catalog-query" in err and "--catalog FILE" in err and len(err.splitlines()) == 1
    rc, checked, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(query), "--catalog", str(cols))
    assert rc == 0 and err == "" and checked == unchecked
    result = run_duckdb(wh, checked, tmp_path / "result.csv")
    np.testing.assert_array_equal(check_vector(read_result(result), list(range(len(THEMES))), 1 << 24),
                                  reference["like"])
    rc, _, err = release(capsys, store_path, query, result, tmp_path, "duckdb", "--catalog", str(cols))
    assert rc == 0, err
    (row,) = ledger_rows(store_path)
    assert row["params"]["catalog_sha256"] == "sha256:" + hashlib.sha256(cols.read_bytes()).hexdigest()
    assert row["params"]["sketch_sql_sha256"] == "sha256:" + hashlib.sha256(checked.encode()).hexdigest()


@pytest.mark.parametrize("table, column, real", [("theme_scores", "score", "VARCHAR"),
                                                  ("reviews", "review_id", "VARCHAR")])
def test_a_lying_declaration_is_refused_in_both_phases(setup, tmp_path, capsys, table, column, real):
    store_path, _ = setup
    honest = warehouse(store_path, tmp_path / "wh.duckdb")
    query = write(tmp_path / "query.sql", DECLARE + USER + ";\n")
    _, sketch, _ = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(query))
    result = run_duckdb(honest, sketch, tmp_path / "result.csv")     # a vector to hand to phase 2
    lying = warehouse(store_path, tmp_path / "lying.duckdb")
    con = duckdb.connect(str(lying))
    con.execute(f"ALTER TABLE {table} ALTER {column} TYPE {real}")    # the warehouse really has text there
    con.close()
    cols = catalog_csv(capsys, lying, query, tmp_path / "cols.csv")
    declared = "DOUBLE" if column == "score" else "BIGINT"
    rc, out, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(query), "--catalog", str(cols))
    assert_one_line_error(rc, out, err, 1)
    assert out == "" and f"{table}.{column} is {declared}" in err and f"catalog has {real}" in err
    rc, out, err = release(capsys, store_path, query, result, tmp_path, "duckdb", "--catalog", str(cols))
    assert_one_line_error(rc, out, err, 1)
    assert f"{table}.{column} is {declared}" in err
    assert not (tmp_path / "plan.json").exists() and ledger_rows(store_path) == []


def test_a_declared_column_or_table_missing_from_the_catalog_is_refused(setup, tmp_path, capsys):
    store_path, _ = setup
    wh = warehouse(store_path, tmp_path / "wh.duckdb")
    query = write(tmp_path / "query.sql", DECLARE + USER + ";\n")
    cols = catalog_csv(capsys, wh, query, tmp_path / "cols.csv")
    extra = write(tmp_path / "extra.sql", DECLARE.replace("body VARCHAR", "body VARCHAR, lang VARCHAR") + USER)
    rc, out, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(extra), "--catalog", str(cols))
    assert_one_line_error(rc, out, err, 1)
    assert "reviews.lang (VARCHAR) is not in the warehouse's catalog" in err
    other = write(tmp_path / "other.sql", "CREATE TABLE posts (review_id BIGINT);\n" + DECLARE + USER)
    rc, out, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(other), "--catalog", str(cols))
    assert_one_line_error(rc, out, err, 1)
    assert "the declared table posts is not in the warehouse's catalog" in err


def test_without_declarations_the_catalog_gives_them_end_to_end(setup, tmp_path, capsys):
    store_path, reference = setup
    wh = warehouse(store_path, tmp_path / "wh.duckdb")
    declared = write(tmp_path / "declared.sql", DECLARE + USER + ";\n")
    bare = write(tmp_path / "query.sql", USER + ";\n")
    cols = catalog_csv(capsys, wh, bare, tmp_path / "cols.csv")   # the tables the statement reads
    assert {line.split(",")[2] for line in cols.read_text().splitlines()[1:]} == {"reviews", "theme_scores"}
    _, from_declarations, _ = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(declared))
    rc, sketch, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(bare), "--catalog", str(cols))
    assert rc == 0 and err == "", err
    assert sketch == from_declarations                       # the same query the true declarations give
    result = run_duckdb(wh, sketch, tmp_path / "result.csv")
    np.testing.assert_array_equal(check_vector(read_result(result), list(range(len(THEMES))), 1 << 24),
                                  reference["user"])
    rc, _, err = release(capsys, store_path, bare, result, tmp_path, "duckdb", "--catalog", str(cols),
                         "--max-units", "60")
    assert rc == 0, err
    (row,) = ledger_rows(store_path)
    assert row["params"]["catalog_sha256"] == "sha256:" + hashlib.sha256(cols.read_bytes()).hexdigest()
    rc, out, err = release(capsys, store_path, bare, result, tmp_path, "duckdb", "--force")   # no catalog, no tables
    assert_one_line_error(rc, out, err, 1)
    assert len(ledger_rows(store_path)) == 1


def test_a_parquet_catalog_reads_as_the_csv(setup, tmp_path, capsys):
    store_path, _ = setup
    wh = warehouse(store_path, tmp_path / "wh.duckdb")
    bare = write(tmp_path / "query.sql", USER + ";\n")
    rc, sql, _ = sql_cli(capsys, "--dialect", "duckdb", "--catalog-query", "-f", str(bare))
    con = duckdb.connect(str(wh))
    con.execute(f"COPY ({sql.strip().rstrip(';')}) TO '{tmp_path / 'cols.parquet'}' (FORMAT parquet)")
    con.close()
    rc, sketch, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(bare),
                              "--catalog", str(tmp_path / "cols.parquet"))
    assert rc == 0, err
    _, declared, _ = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f",
                             str(write(tmp_path / "d.sql", DECLARE + USER)))
    assert sketch == declared


QUALIFIED = ("CREATE TABLE shop.reviews (review_id BIGINT, author VARCHAR, body VARCHAR);\n"
             "CREATE TABLE shop.theme_scores (review_id BIGINT, theme VARCHAR, score DOUBLE);\n")


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("declare", [DECLARE, QUALIFIED])
def test_the_catalog_query_parses_in_its_dialect(dialect, declare):
    text = declare + USER.replace("FROM theme_scores JOIN reviews", "FROM shop.theme_scores JOIN shop.reviews"
                                  if declare == QUALIFIED else "FROM theme_scores JOIN reviews")
    if dialect == "spark" or (dialect == "bigquery" and declare == DECLARE):
        with pytest.raises(BadInput, match="--catalog" if dialect == "spark" else "dataset"):
            catalog_query_for(text, dialect)
        return
    query = catalog_query_for(text, dialect)
    (tree,) = sqlglot.parse(query, read=dialect)
    views = {".".join(p for p in (t.catalog, t.db, t.name) if p).lower() for t in tree.find_all(exp.Table)}
    assert views == {"shop.information_schema.columns" if dialect == "bigquery" else "information_schema.columns"}
    names = {n.name for n in tree.find_all(exp.Column)}
    assert {"table_catalog", "table_schema", "table_name", "column_name", "data_type", "ordinal_position"} <= names
    literals = {lit.name for lit in tree.find_all(exp.Literal) if lit.is_string}
    want = {"REVIEWS", "THEME_SCORES"} if dialect == "snowflake" else {"reviews", "theme_scores"}
    assert want <= literals
    if declare == QUALIFIED and dialect != "bigquery":
        assert ("SHOP" if dialect == "snowflake" else "shop") in literals


def test_the_catalog_query_on_spark_names_the_alternative(tmp_path, capsys):
    query = write(tmp_path / "query.sql", DECLARE + USER)
    rc, out, err = sql_cli(capsys, "--dialect", "spark", "--catalog-query", "-f", str(query))
    assert_one_line_error(rc, out, err, 2)
    assert "DESCRIBE TABLE" in err and "--catalog" in err


GOOD = ("table_catalog,table_schema,table_name,column_name,data_type,ordinal_position\n"
        "wh,main,reviews,review_id,BIGINT,1\nwh,main,reviews,author,VARCHAR,2\nwh,main,reviews,body,VARCHAR,3\n"
        "wh,main,theme_scores,review_id,BIGINT,1\nwh,main,theme_scores,theme,VARCHAR,2\n"
        "wh,main,theme_scores,score,DOUBLE,3\n")


@pytest.mark.parametrize("text, match", [
    (GOOD + "wh,shop,reviews,review_id,BIGINT,1\n", "has the table reviews twice"),
    (GOOD + "wh,main,reviews,Author,VARCHAR,4\n", "lists the column Author of wh.main.reviews twice"),
    ("table_name,column_name,type\nreviews,review_id,BIGINT\n", "has no column data_type"),
    ("table_name,column_name,data_type\n", "no catalog rows"),
    ("table_name,column_name,data_type\nreviews,,BIGINT\n", "row 1 has no column_name"),
    ('table_name,column_name,data_type\nreviews,"review_id,BIGINT\n', "malformed CSV"),
])
def test_an_ambiguous_or_incomplete_catalog_file_is_bad_input(tmp_path, capsys, text, match):
    query = write(tmp_path / "query.sql", DECLARE + USER)
    cols = write(tmp_path / "cols.csv", text)
    rc, out, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(query), "--catalog", str(cols))
    assert_one_line_error(rc, out, err, 2)
    assert match in err, err


def test_the_good_catalog_passes_and_a_missing_file_is_bad_input(tmp_path, capsys):
    query = write(tmp_path / "query.sql", DECLARE + USER)
    rc, _, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(query),
                         "--catalog", str(write(tmp_path / "cols.csv", GOOD)))
    assert rc == 0 and err == ""
    rc, out, err = sql_cli(capsys, "--dialect", "duckdb", "--emit-sketch", "-f", str(query),
                           "--catalog", str(tmp_path / "nope.csv"))
    assert_one_line_error(rc, out, err, 2)
    rc, out, err = sql_cli(capsys, "--db", "x.duckdb", "-f", str(query), "--catalog", str(tmp_path / "cols.csv"))
    assert_one_line_error(rc, out, err, 2)
    rc, out, err = sql_cli(capsys, "--catalog-query", "--emit-sketch", "-f", str(query))
    assert_one_line_error(rc, out, err, 2)


def test_a_store_statement_has_no_catalog_to_check(tmp_path, capsys):
    query = write(tmp_path / "query.sql", "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = "
                  "'laplace') atom_id, DPSPIN_MASS(weight) FROM assignments GROUP BY atom_id")
    rc, out, err = sql_cli(capsys, "--dialect", "trino", "--catalog-query", "-f", str(query))
    assert_one_line_error(rc, out, err, 2)
    rc, out, err = sql_cli(capsys, "--dialect", "trino", "--emit-sketch", "-f", str(query),
                           "--catalog", str(write(tmp_path / "cols.csv", GOOD)))
    assert_one_line_error(rc, out, err, 2)
    rc, _, err = sql_cli(capsys, "--dialect", "trino", "--emit-sketch", "-f", str(query))
    assert rc == 0 and err == ""                      # no declarations: nothing said about them


@pytest.mark.parametrize("dialect, declared, catalog, same", [
    ("postgres", "BIGINT", "int8", True), ("postgres", "INT8", "bigint", True),
    ("postgres", "VARCHAR", "character varying", True), ("postgres", "TEXT", "character varying", True),
    ("postgres", "VARCHAR(20)", "text", True), ("postgres", "DOUBLE PRECISION", "float8", True),
    ("postgres", "FLOAT8", "double precision", True), ("postgres", "NUMERIC(10,2)", "numeric(10,2)", True),
    ("postgres", "NUMERIC(10,2)", "numeric(12,2)", False), ("postgres", "DOUBLE PRECISION", "text", False),
    ("postgres", "BIGINT", "integer", False), ("postgres", "TEXT", "USER-DEFINED", False),
    ("snowflake", "BIGINT", "NUMBER(38,0)", True), ("snowflake", "INT", "NUMBER(38,0)", True),
    ("snowflake", "BIGINT", "NUMBER(38,2)", False), ("snowflake", "VARCHAR", "TEXT", True),
    ("snowflake", "DOUBLE", "FLOAT", True), ("bigquery", "INT64", "INT64", True),
    ("bigquery", "FLOAT64", "STRING", False), ("trino", "varchar", "varchar(20)", True),
    ("duckdb", "TEXT", "VARCHAR", True), ("duckdb", "DOUBLE", "VARCHAR", False),
])
def test_types_compare_as_the_dialect_has_them(dialect, declared, catalog, same):
    assert same_type(exp.DataType.build(declared, dialect=dialect), catalog, dialect) is same


@pytest.mark.parametrize("dialect, written, holds", [
    ("postgres", "Reviews", "reviews"), ("postgres", '"Reviews"', "Reviews"), ("snowflake", "reviews", "REVIEWS"),
    ("snowflake", '"reviews"', "reviews"), ("duckdb", '"Reviews"', "reviews"), ("trino", "Reviews", "reviews"),
])
def test_names_are_matched_as_the_dialect_stores_them(dialect, written, holds):
    ident = sqlglot.parse_one(f"SELECT 1 FROM {written}", read=dialect).find(exp.Table).this
    assert stored(ident, dialect, "table") == holds


def test_catalog_names_are_written_back_as_stored(tmp_path):
    """Declarations made from a catalog name each table and column as the warehouse stores it:
    quoted where the dialect would fold an unquoted name."""
    from dpspin_sql.sql.catalog import audit_for_warehouse
    from dpspin_sql.sql.run import emit_sketch

    cols = lambda case: tuple(CatalogColumn(case(n), t, i) for i, (n, t) in enumerate(
        [("review_id", "NUMBER(38,0)"), ("author", "TEXT"), ("body", "TEXT")], start=1))
    scores = lambda case: tuple(CatalogColumn(case(n), t, i) for i, (n, t) in enumerate(
        [("review_id", "NUMBER(38,0)"), ("theme", "TEXT"), ("score", "FLOAT")], start=1))
    upper = Catalog(tmp_path / "c.csv", "sha256:x", (CatalogTable("DB", "PUBLIC", "REVIEWS", cols(str.upper)),
                                                     CatalogTable("DB", "PUBLIC", "THEME_SCORES", scores(str.upper))))
    sql = emit_sketch(USER, "snowflake", upper)
    assert "FROM THEME_SCORES" in sql and '"THEME_SCORES"' not in sql and '"REVIEWS"' not in sql
    lower = Catalog(tmp_path / "c.csv", "sha256:x", (CatalogTable("DB", "PUBLIC", "reviews", cols(str)),
                                                     CatalogTable("DB", "PUBLIC", "theme_scores", scores(str))))
    with pytest.raises(AuditRefusal, match="reads theme_scores, which the warehouse's catalog"):
        emit_sketch(USER, "snowflake", lower)     # unquoted, Snowflake reads THEME_SCORES: not that table
    quoted = USER.replace("FROM theme_scores JOIN reviews", 'FROM "theme_scores" JOIN "reviews"')
    sql = emit_sketch(quoted, "snowflake", lower)
    assert '"theme_scores"' in sql and '"reviews"' in sql
    assert identifier("Reviews", "postgres").sql("postgres") == '"Reviews"'
    assert identifier("reviews", "postgres").sql("postgres") == "reviews"
    audited, declared = audit_for_warehouse(USER, "snowflake", upper)
    assert declared is not None and audited.request.unit == "user"


def test_postgres_information_schema_checks_the_declarations(tmp_path, capsys, pg_dsn):
    """The printed query run on the real server: its own type names (text, double precision,
    bigint) pass the declarations written with their aliases, and a lie is refused."""
    import psycopg

    pg_declare = ("CREATE TABLE reviews (review_id INT8, author VARCHAR, body CHARACTER VARYING);\n"
                  "CREATE TABLE theme_scores (review_id BIGINT, theme TEXT, score FLOAT8);\n")
    query = write(tmp_path / "query.sql", pg_declare + USER)
    rc, sql, _ = sql_cli(capsys, "--dialect", "postgres", "--catalog-query", "-f", str(query))
    assert rc == 0
    with psycopg.connect(pg_dsn, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS reviews; DROP TABLE IF EXISTS theme_scores")
        pg.execute("CREATE TABLE reviews (review_id bigint, author text, body text, extra numeric(10,2));"
                   "CREATE TABLE theme_scores (review_id bigint, theme text, score double precision)")
        rows = pg.execute(sql.strip().rstrip(";")).fetchall()
        pg.execute("DROP TABLE reviews; DROP TABLE theme_scores")
    assert ("reviews", "extra", "numeric(10,2)") in {(r[2], r[3], r[4]) for r in rows}
    cols = tmp_path / "cols.csv"
    with open(cols, "w", newline="") as fh:        # what psql --csv writes
        writer = csv.writer(fh)
        writer.writerow(["table_catalog", "table_schema", "table_name", "column_name", "data_type", "ordinal_position"])
        writer.writerows(rows)
    rc, checked, err = sql_cli(capsys, "--dialect", "postgres", "--emit-sketch", "-f", str(query), "--catalog", str(cols))
    assert rc == 0 and err == "", err
    _, unchecked, _ = sql_cli(capsys, "--dialect", "postgres", "--emit-sketch", "-f", str(query))
    assert checked == unchecked
    _, bare, _ = sql_cli(capsys, "--dialect", "postgres", "--emit-sketch", "-f",
                         str(write(tmp_path / "bare.sql", USER)), "--catalog", str(cols))
    assert bare == unchecked
    lie = write(tmp_path / "lie.sql", pg_declare.replace("score FLOAT8", "score TEXT") + USER)
    rc, out, err = sql_cli(capsys, "--dialect", "postgres", "--emit-sketch", "-f", str(lie), "--catalog", str(cols))
    assert_one_line_error(rc, out, err, 1)
    assert "theme_scores.score is TEXT, the warehouse's catalog has double precision" in err
