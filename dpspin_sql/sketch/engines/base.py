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

    @staticmethod
    def admit(filters: Any) -> None:
        """Refuse (AuditRefusal), before the engine or the data is touched, the audited filters this
        engine could fail on or take super-linear time over; the one place each engine says so."""
        ...

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        """The enforced sketch of the store's target split (`con` is the curator's store)."""
        ...

    def details(self) -> dict:
        ...


def engine_class(name: str) -> Any:
    """The engine class of `--engine NAME` (not constructed: nothing is connected)."""
    if name == "duckdb":
        from dpspin_sql.sketch.engines.duckdb import DuckDBEngine

        return DuckDBEngine
    if name == "spark":
        from dpspin_sql.sketch.engines.spark import SparkEngine

        return SparkEngine
    if name == "postgres":
        from dpspin_sql.sketch.engines.postgres import PostgresEngine

        return PostgresEngine
    raise BadInput(f"--engine must be one of {', '.join(ENGINES)}, not {name!r}")


def admit(name: str, filters) -> None:
    """The filter admission of engine `name` (its `Engine.admit`): the front end and the engine ask the same."""
    engine_class(name).admit(filters)


def make_engine(name: str, filters=None, **options) -> Engine:
    """An engine by name (`--engine`): duckdb | spark | postgres."""
    cls = engine_class(name)
    if name == "spark":
        return cls(filters, session=options.get("spark"), assign=options.get("spark_assign", "auto"),
                   master=options.get("spark_master"))
    if name == "postgres":
        return cls(filters, pg=options.get("pg"), dsn=options.get("pg_dsn"))
    return cls(filters)
