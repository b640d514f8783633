"""Small DuckDB helpers every module that talks to a store shares (no store logic here)."""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def lock_timeout() -> float:
    """Seconds a command waits for a store another process holds, or for the ledger
    (DPSPIN_LOCK_TIMEOUT, default 60); then it refuses with "store busy" (exit 1)."""
    try:
        return max(float(os.environ.get("DPSPIN_LOCK_TIMEOUT", "60")), 0.0)
    except ValueError:
        return 60.0


@contextmanager
def transaction(con: Any) -> Iterator[Any]:
    """All-or-nothing: a failure inside rolls back and re-raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def only_row(result: Any) -> tuple:
    """The one row of a query that always returns exactly one (an aggregate without GROUP
    BY, a scalar SELECT); fully fetched, as `first_row`."""
    rows = result.fetchall()
    if len(rows) != 1:
        raise RuntimeError(f"expected exactly one row, got {len(rows)}")  # a broken query file
    return rows[0]


def first_row(result: Any) -> tuple | None:
    """The first row of a result, fully fetched: DuckDB refuses register/unregister while
    a result is only partly read (`fetchone` leaves it open)."""
    rows = result.fetchall()
    return rows[0] if rows else None
