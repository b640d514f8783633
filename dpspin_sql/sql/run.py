"""Run a DP-SPIN statement: parse → audit → the one release path, on the chosen engine.

The audit turns the statement into a `ReleaseRequest` and the sketch's filters; the
engine (DuckDB here, Spark or PostgreSQL) computes the enforced sketch with those
filters; `release.release` calibrates, charges and writes the plan exactly as for
`dpspin release`.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from dpspin_sql import ledger
from dpspin_sql.errors import BadInput
from dpspin_sql.outputs import Outputs
from dpspin_sql.request import RequestError
from dpspin_sql.sketch.engines.base import ENGINES, make_engine
from dpspin_sql.sketch.transpile import sketch_sql
from dpspin_sql.sql.audit import audit_statement
from dpspin_sql.sql.options import refuse_field

__all__ = ["ENGINES", "run_sql", "emit_sketch"]


def run_sql(con: duckdb.DuckDBPyConnection, sql: str, out_path: str | Path | None = None, *,
            engine: str = "duckdb", dataset: str = ledger.DEFAULT_DATASET, outputs: Outputs | None = None,
            spark=None, spark_assign: str = "auto", spark_master: str | None = None, pg=None,
            pg_dsn: str | None = None,
            files_root: str | Path | None = None, public_tables=(), on_audit=None):
    """Audit and run one DP statement; charge the ledger; write and return the plan.

    `con` is a store connection (`dpspin_sql.store.connect`) or any DuckDB connection that
    `dpspin_sql.install(con, STORE)` gave a store. Raises BadInput (unparseable, bad store,
    a plain connection without a store), AuditRefusal (unsafe statement) or
    BudgetExceeded; in every one of those cases no plan is written and nothing is charged.
    `engine="spark"` computes the sketch on Spark (`spark` session, or a new one on `spark_master`:
    local[2] by default, or a cluster's spark://host:port); `spark_assign` is auto | scorer | table
    (see dpspin_sql.sketch.engines.spark). `engine="postgres"`
    computes it on a PostgreSQL server (`pg` connection or `pg_dsn`) holding the tables.

    The statement may read the tables and views of the connection's own database, or
    read_parquet/read_csv files under `files_root` (default: the current directory), in
    place of the store's assignments and records (docs/SQL.md, "Your own tables"); nothing is
    written to the user's database. Files also run on Spark, read there in place
    (dpspin_sql.sketch.engines.spark_files), and so do tables of the Spark session's catalog named
    `spark_table('db.table')` (engine="spark" only; dpspin_sql.sketch.engines.spark_tables); tables of the
    user's DuckDB database run on duckdb only. Views, CTEs and FROM
    subqueries must be row-wise (docs/SQL.md, "Views"); `public_tables` names the tables of
    yours whose rows are public (a lookup table, a dictionary), over which alone a view may
    aggregate. The ledger row records them, and what one base record is (`record_key`).
    `on_audit(audited)`, when given, is called once with the audited statement before anything runs
    (the CLI reads the request's defaults from it instead of auditing the statement again).
    """
    from dpspin_sql.embed import resolve, user_catalog
    from dpspin_sql.release import release

    user_db = user_catalog(con)
    spark_catalog = None
    if engine == "spark":   # spark_table('db.table'): its schema from the Spark session's catalog
        from dpspin_sql.sketch.engines.spark_tables import SparkCatalog

        spark_catalog = SparkCatalog(spark, spark_master)
    with resolve(con) as con:   # a plain connection without install() is one clear error
        audited = audit_statement(sql, con, user_catalog=user_db, files_root=files_root, public=public_tables,
                                  spark_tables=spark_catalog.columns if spark_catalog is not None else None)
        if on_audit is not None:
            on_audit(audited)
        if audited.source.store:
            runner = make_engine(engine, audited.filters, spark=spark, spark_assign=spark_assign, pg=pg,
                                 pg_dsn=pg_dsn, spark_master=spark_master)
        elif engine == "spark":
            from dpspin_sql.sketch.engines.spark_files import SparkFilesEngine

            runner = SparkFilesEngine(audited.filters, source=audited.source, master=spark_master,
                                      session=spark_catalog.session if spark_catalog is not None else spark)
        elif engine != "duckdb":
            raise BadInput(f"a statement over your own tables or files runs on the duckdb engine, not {engine}: "
                           f"drop --engine {engine} to run it here, or for your warehouse print its sketch with "
                           f"--emit-sketch --dialect {engine} and release the result with dpspin release "
                           f"--from-sketch (docs/WAREHOUSE.md)")
        else:
            from dpspin_sql.sketch.engines.own import OwnEngine

            runner = OwnEngine(audited.filters, source=audited.source)
        try:
            return release(con, audited.request, runner, out=out_path, outputs=outputs, dataset=dataset,
                           extra_params={"sql": " ".join(sql.split())})
        except RequestError as exc:   # L > m: the option `top` asked for more atoms than there are
            refuse_field(exc, audited.options, audited.statement.args["hint"])


def emit_sketch(sql: str, dialect: str = "duckdb", catalog=None) -> str:
    """The audited statement's enforced sketch query for `dialect` (nothing is run or charged):
    one (atom_id, mass) row per atom, zeros included, for `dpspin release --from-sketch`.
    The statement reads the store's tables (a warehouse holds them in the store's shape), or
    the warehouse's own tables declared by CREATE TABLE statements before it (sql/catalog.py;
    the warehouse then also holds the store's atoms, and at user level its records).
    `catalog` (a `sql.warehouse_catalog.Catalog` or the path of a catalog file) checks the
    declarations against the warehouse's own column types, or gives them."""
    from dpspin_sql.sql.catalog import audit_for_warehouse, warehouse_source

    audited, declared = audit_for_warehouse(sql, dialect, _catalog(catalog, dialect))
    source = None if declared is None else warehouse_source(audited, declared, dialect)
    return sketch_sql(audited.request.bounds, audited.filters, dialect, complete=True, source=source) + ";\n"


def _catalog(catalog, dialect: str):
    from dpspin_sql.sql.warehouse_catalog import Catalog, read_catalog

    if catalog is None or isinstance(catalog, Catalog):
        return catalog
    return read_catalog(catalog, dialect)
