"""Where the enforced sketch is computed: one interface, one engine per system.

Every engine takes the request's contribution bounds (and, for a DP SQL statement, its
audited filters), runs the same enforced sketch query (`queries/sketch_*.sql`, rewritten
and transpiled by `sketch.transpile`) where the data lives, and returns a `Sketch`: the
int64 m-vector and the target split's counts. Nothing else leaves the engine.

    engine = DuckDBEngine()                      # the store's own tables
    engine = DuckDBEngine(audited.filters)       # a DP statement's WHERE terms
    engine = SparkEngine(audited.filters)        # on a Spark session
    engine = PostgresEngine(audited.filters, dsn="host=…")
"""
from __future__ import annotations

from dpspin_sql.sketch.engines.base import ENGINES, Engine, make_engine
from dpspin_sql.sketch.engines.duckdb import DuckDBEngine

__all__ = ["ENGINES", "Engine", "DuckDBEngine", "make_engine"]
