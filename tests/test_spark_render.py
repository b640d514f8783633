"""The Spark engines' parts that need no Spark (dpspin_sql/sketch/engines/spark_files.py, spark_tables.py): the
audited projections rendered as Spark SQL over views of the files, never a file read by name in the SQL;
which sources Spark can read in place; Spark's column types as DuckDB's."""
from __future__ import annotations

import duckdb
import pytest

from dpspin_sql.sketch.engines.spark_files import files_only, render
from dpspin_sql.sketch.engines.spark_tables import duckdb_type
from tests.helpers.core import synthetic_store

STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, privacy_unit_column = author, "
             "contribution_bound = 1, mechanism = 'gaussian', top = 2) theme AS atom, DPSPIN_MASS(score) "
             "FROM read_parquet('scores.parquet') AS s JOIN read_parquet('reviews.parquet') AS r USING (review_id) "
             "WHERE r.body LIKE '%refund%' GROUP BY theme")


@pytest.fixture
def audited(tmp_path, monkeypatch):
    from dpspin_sql.embed import resolve, user_catalog
    from dpspin_sql.sql.audit import audit_statement

    monkeypatch.chdir(tmp_path)
    w = duckdb.connect()
    w.execute("COPY (SELECT i AS review_id, 'theme a0' AS theme, 0.5 AS score FROM range(20) t(i)) "
              "TO 'scores.parquet' (FORMAT parquet)")
    w.execute("COPY (SELECT i AS review_id, 'a' || (i % 5) AS author, 'my refund' AS body FROM range(20) t(i)) "
              "TO 'reviews.parquet' (FORMAT parquet)")
    w.close()
    con = synthetic_store(tmp_path / "s.duckdb", close=False)
    try:
        with resolve(con) as c:
            yield audit_statement(STATEMENT, c, user_catalog=user_catalog(c), files_root=tmp_path)
    finally:
        con.close()


def test_the_projections_read_views_of_the_files_not_the_files(audited):
    assert files_only(audited.source) is None
    r = render(audited.source)
    assert [f.format for f in r.files] == ["parquet", "parquet"]
    assert {f.path[0].rsplit("/", 1)[-1] for f in r.files} == {"scores.parquet", "reviews.parquet"}
    for sql in (r.assignments, r.records):
        assert "read_parquet" not in sql.lower() and "parquet`" not in sql.lower()
        assert any(f.view in sql for f in r.files)
    assert r.reads_aux   # user level: the store's auxiliary users are left out, as on DuckDB


@pytest.mark.parametrize("spark, duck", [
    ("string", "VARCHAR"), ("bigint", "BIGINT"), ("int", "INTEGER"), ("double", "DOUBLE"), ("boolean", "BOOLEAN"),
    ("decimal(10,2)", "DECIMAL(10,2)"), ("varchar(20)", "VARCHAR"), ("array<string>", "Spark array<string>"),
])
def test_spark_types_as_duckdb_types(spark, duck):
    assert duckdb_type(spark) == duck
