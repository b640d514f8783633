"""The engine interface and the registry of engines by name."""
from __future__ import annotations

from typing import Any, Protocol

from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import Sketch

ENGINES = ("duckdb", "spark", "postgres")


class Engine(Protocol):
    """Computes the enforced sketch; `name` and `details()` go into the ledger entry."""

    name: str

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        """The enforced sketch of the store's target split (`con` is the curator's store)."""
        ...

    def details(self) -> dict:
        ...


def make_engine(name: str, filters=None, **options) -> Engine:
    """An engine by name (`--engine`): duckdb | spark | postgres."""
    if name == "duckdb":
        from dpspin_sql.sketch.engines.duckdb import DuckDBEngine

        return DuckDBEngine(filters)
    if name == "spark":
        from dpspin_sql.sketch.engines.spark import SparkEngine

        return SparkEngine(filters, session=options.get("spark"), assign=options.get("spark_assign", "auto"),
                           master=options.get("spark_master"))
    if name == "postgres":
        from dpspin_sql.sketch.engines.postgres import PostgresEngine

        return PostgresEngine(filters, pg=options.get("pg"), dsn=options.get("pg_dsn"))
    raise BadInput(f"--engine must be one of {', '.join(ENGINES)}, not {name!r}")
