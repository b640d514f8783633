"""`dpspin warehouse push`: put the store's tables where the warehouse query runs.

The two-phase release (docs/WAREHOUSE.md) is `dpspin sql --emit-sketch` → run in the
warehouse → `dpspin release --from-sketch`. A warehouse that does not hold the tables yet
gets them here; for now PostgreSQL (the `postgres` extra).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import store
from dpspin_sql.cli.common import DB, example, out

app = typer.Typer(help="Two-phase warehouse release: put the store's tables in a warehouse "
                       "(then: dpspin sql --emit-sketch, run it there, dpspin release --from-sketch).",
                  no_args_is_help=True, epilog=example("dpspin sql --dialect postgres --emit-sketch -f query.sql"))


@app.command("push", epilog=example("dpspin warehouse push --db tickets.duckdb --pg-dsn 'host=localhost dbname=dpspin'"))
def push(db: Path = DB,
         pg_dsn: Optional[str] = typer.Option(None, "--pg-dsn", envvar="DPSPIN_PG_DSN",
                                              help="PostgreSQL connection string, e.g. 'host=… dbname=…'.")) -> None:
    """Copy the store's records, assignments and atoms to a PostgreSQL server (replacing them there)."""
    from dpspin_sql.warehouse import push_postgres

    con = store.connect(db, read_only=True)
    counts = push_postgres(con, pg_dsn)
    out.print(f"pushed {counts['records']} records, {counts['assignments']} assignment rows and "
              f"{counts['atoms']} atoms to PostgreSQL")
