"""Small DuckDB helpers every module that talks to a store shares (no store logic here)."""
from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import duckdb

from dpspin_sql.errors import BadInput, StoreBusy

T = TypeVar("T")


def lock_timeout() -> float:
    """Seconds a command waits for a store another process holds, or for the ledger
    (DPSPIN_LOCK_TIMEOUT, default 60); then it refuses with "store busy" (exit 1)."""
    try:
        return max(float(os.environ.get("DPSPIN_LOCK_TIMEOUT", "60")), 0.0)
    except ValueError:
        return 60.0


def first_line(exc: BaseException) -> str:
    """An exception as one line (DuckDB's messages run over several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def storage_error(exc: BaseException) -> BadInput | None:
    """A full disk, said as such ("no space left on device writing FILE"), for a DuckDB
    error or an OSError; None for any other failure."""
    text = str(exc)
    if not ((isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "no space left on device" in text.lower()):
        return None
    match = re.search(r'write (?:to )?(?:file )?"([^"]+)"', text)
    filename = match.group(1) if match else getattr(exc, "filename", None)
    where = f" writing {filename}" if filename else ""
    return BadInput(f"no space left on device{where}; nothing was changed")


def _is_lock_error(exc: BaseException) -> bool:
    """DuckDB's "Could not set lock on file ...: Conflicting lock is held" (not any message
    that merely contains the letters, such as "Could not write block")."""
    text = str(exc).lower()
    return "could not set lock" in text or "conflicting lock" in text


def waiting_for_lock(action: Callable[[], T], path: Any, verb: str) -> T:
    """Run `action` (open or ATTACH the store file `path`), retrying while another process
    holds the file's lock, up to lock_timeout(); then "store busy" (exit 1). Any other
    failure is bad input, "cannot <verb> <path>: ..." (exit 2)."""
    deadline, delay = time.monotonic() + lock_timeout(), 0.02
    while True:
        try:
            return action()
        except duckdb.IOException as exc:
            full = storage_error(exc)
            if full is not None:
                raise full from None
            if not _is_lock_error(exc):
                raise BadInput(f"cannot {verb} {path}: {first_line(exc)}") from None
            if time.monotonic() >= deadline:
                raise StoreBusy(f"store busy: another process has held {path} for {lock_timeout():g} s "
                                "(DPSPIN_LOCK_TIMEOUT); nothing was done") from None
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
        except duckdb.Error as exc:
            raise storage_error(exc) or BadInput(f"cannot {verb} {path}: {first_line(exc)}") from None


@contextmanager
def transaction(con: Any, *, join: bool = False) -> Iterator[Any]:
    """All-or-nothing: a failure inside rolls back and re-raises. With `join`, a transaction
    the caller already has open is used as it is (DuckDB refuses a nested BEGIN)."""
    try:
        con.execute("BEGIN TRANSACTION")
    except duckdb.TransactionException:
        if not join:
            raise
        yield con
        return
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
