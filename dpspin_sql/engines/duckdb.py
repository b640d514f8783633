"""The sketch on DuckDB: the store's own tables, in the curator's process."""
from __future__ import annotations

from typing import Any

from dpspin_sql import store
from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import Sketch, run_sketch
from dpspin_sql.sql.rewrite import SketchFilters


def require_assignments(con: Any) -> None:
    """Nothing to release: refuse (before anything is charged) when no assignment step ran
    for the current dictionary. This is a fact about what the curator did (the `pipeline`
    table), never a count of the protected records, so it cannot tell neighbouring
    datasets apart."""
    if not store.step_done(con, "assignments"):
        raise BadInput("nothing to release: the current dictionary has no assignments; run dpspin assign "
                       "(or dpspin assignments load) first")


class DuckDBEngine:
    name = "duckdb"

    def __init__(self, filters: SketchFilters | None = None):
        self.filters = filters

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        require_assignments(con)
        return run_sketch(con, bounds, self.filters)

    def details(self) -> dict:
        return {"engine": self.name}
