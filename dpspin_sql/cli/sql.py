"""`dpspin sql`: run a DP-SPIN SQL statement, or print its enforced sketch for another engine.

    dpspin sql --db FILE "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) ..." --out PLAN.json
    dpspin sql --db FILE -f query.sql [--engine duckdb|spark|postgres --pg-dsn DSN]
    dpspin sql --db FILE --public mine.themes "… FROM mine.scored_view JOIN mine.reviews USING (review_id) …"
    dpspin sql --dialect spark|bigquery|snowflake|trino|postgres|duckdb --emit-sketch "…"
    dpspin sql --dialect D --catalog-query -f query.sql      # the warehouse's column types, to export
    dpspin sql --dialect D --emit-sketch -f query.sql --catalog cols.csv

Refusals (audit, budget) exit 1 and write no plan; unparseable SQL and bad options exit 2.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import ledger
from dpspin_sql.cli.common import SQL_SETTINGS, budget_line, defaults_line, err, example, out
from dpspin_sql.errors import BadInput

app = typer.Typer()


@app.command("sql", rich_help_panel="Release", epilog=example(
    "dpspin sql --db tickets.duckdb -f query.sql --out sql_plan.json",
    "dpspin sql --dialect bigquery --emit-sketch -f query.sql"))
def sql(query: Optional[str] = typer.Argument(None, help="The statement (or use -f FILE.sql)."),
        db: Optional[Path] = typer.Option(None, "--db", help="The dpspin store (not needed with --emit-sketch)."),
        file: Optional[Path] = typer.Option(None, "-f", "--file", help="Read the statement from a .sql file."),
        out_path: Path = typer.Option(Path("private_plan.json"), "--out", help="Where to write the plan."),
        force: bool = typer.Option(False, "--force/--no-force", help="Replace an existing plan at --out."),
        dialect: Optional[str] = typer.Option(None, "--dialect",
                                              help="duckdb|spark|bigquery|snowflake|trino|postgres (with --emit-sketch)."),
        emit: bool = typer.Option(False, "--emit-sketch/--no-emit-sketch",
                                  help="Print the enforced sketch query; run nothing."),
        catalog_query: bool = typer.Option(
            False, "--catalog-query/--no-catalog-query",
            help="Print the information_schema query (in --dialect) that lists the column types of the tables "
                 "the file declares or reads; export its rows and pass them with --catalog. Runs nothing."),
        catalog: Optional[Path] = typer.Option(
            None, "--catalog", metavar="FILE",
            help="With --emit-sketch: the warehouse's catalog rows (CSV, JSON, Parquet) as --catalog-query "
                 "lists them; every declared column must be there with the same type, or, with no CREATE "
                 "TABLE in the file, the declarations are made from it (docs/WAREHOUSE.md)."),
        engine: str = typer.Option("duckdb", "--engine", help="duckdb | spark | postgres: where the sketch is computed."),
        pg_dsn: Optional[str] = typer.Option(None, "--pg-dsn", envvar="DPSPIN_PG_DSN",
                                             help="PostgreSQL connection string (engine postgres)."),
        spark_assign: str = typer.Option("auto", "--spark-assign",
                                         help="auto | scorer | table: assign on Spark with the saved scorer, "
                                              "or read the stored assignments (auto: scorer if one is saved)."),
        spark_master: Optional[str] = typer.Option(
            None, "--spark-master", metavar="URL",
            help="With --engine spark: the cluster to run on, e.g. spark://127.0.0.1:7077 (default local[2]), "
                 "or a Spark Connect server, sc://HOST:15002. Files a statement reads (read_parquet / read_csv / "
                 "delta_scan) are read there in place."),
        dataset: str = typer.Option(ledger.DEFAULT_DATASET, "--dataset", help="Budget to charge."),
        public: Optional[list[str]] = typer.Option(
            None, "--public", metavar="TABLE", help="A table of yours whose rows are public (a lookup table, a dictionary): a view "
                                   "may aggregate over public tables alone, and join them freely. Repeatable; "
                                   "recorded in the ledger."),
        quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="Print only the plan path.")) -> None:
    """Run a DP-SPIN SQL statement (docs/SQL.md): audit, rewrite to the enforced sketch, release, charge.

    Two-phase over the warehouse's own tables, with the declared column types checked against
    the warehouse's catalog (docs/WAREHOUSE.md):
    dpspin sql --dialect postgres --catalog-query -f query.sql > catalog.sql   (run it; save its rows as cols.csv)
    dpspin sql --dialect postgres --emit-sketch -f query.sql --catalog cols.csv > sketch.sql
    """
    from dpspin_sql.sql import run as sql_run

    text = _statement(query, file)
    if catalog_query:
        if emit or catalog is not None:
            raise BadInput("--catalog-query prints the catalog query alone; run it, then give its rows with "
                           "--emit-sketch --catalog FILE")
        from dpspin_sql.sql.catalog import catalog_query_for

        typer.echo(catalog_query_for(text, dialect or "duckdb"), nl=False)
        return
    if emit:
        from dpspin_sql.sql.catalog import split_statement

        sketch = sql_run.emit_sketch(text, dialect or "duckdb", catalog)
        if catalog is None and split_statement(text, dialect or "duckdb")[0]:
            err.print("the column types were taken from the file's CREATE TABLE declarations, unchecked: check them "
                      "against the warehouse with --catalog-query, then --catalog FILE in both phases", markup=False)
        typer.echo(sketch, nl=False)
        return
    if catalog is not None:
        raise BadInput("--catalog goes with --emit-sketch (a statement run here reads its tables' own types)")
    if dialect is not None:
        raise BadInput("--dialect goes with --emit-sketch (the statement itself runs on --engine)")
    if db is None:
        raise BadInput("--db is required to run a statement (only --emit-sketch works without a store)")
    from dpspin_sql import store
    from dpspin_sql.outputs import Outputs

    if spark_master is not None and engine != "spark":
        raise BadInput("--spark-master goes with --engine spark (add --engine spark, or drop --spark-master)")
    con = store.connect(db)
    outputs = Outputs(inputs=[file] if file else [], store=db, force=force)
    audited: list = []
    plan = sql_run.run_sql(con, text, out_path, engine=engine, spark_assign=spark_assign, pg_dsn=pg_dsn,
                           spark_master=spark_master, dataset=dataset, outputs=outputs,
                           public_tables=tuple(public or ()), on_audit=audited.append)
    said = defaults_line(audited[0].request, SQL_SETTINGS)
    if said:                      # privacy-relevant: said on stderr even with --quiet
        err.print(said, markup=False)
    from dpspin_sql.relevance import release_warning

    if warned := release_warning(plan.assignment):   # the masses may not mean what their labels say: one line
        err.print(warned, markup=False)
    if quiet:
        typer.echo(str(out_path))
        return
    from dpspin_sql.report import plan_table

    out.print(plan_table(plan))
    out.print(budget_line(con, dataset))
    out.print(f"plan written to {out_path}")


def _statement(query: str | None, file: Path | None) -> str:
    if file is not None and query is None:
        return read_statement(file)
    if query is not None and file is None:
        return query
    raise BadInput("give the statement as an argument or with -f FILE.sql (one of the two)")


def read_statement(file: Path) -> str:
    """A DP statement from a .sql file (UTF-8)."""
    if not file.is_file():
        raise BadInput(f"SQL file not found: {file}")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"SQL file {file} is not UTF-8 text") from None
