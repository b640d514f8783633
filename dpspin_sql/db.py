"""Small DuckDB helpers every module that talks to a store shares (no store logic here)."""
from __future__ import annotations

import contextlib
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
    if not ((isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)) or no_space(exc)):
        return None
    match = re.search(r'write (?:to )?(?:file )?"([^"]+)"', text)
    filename = match.group(1) if match else getattr(exc, "filename", None)
    where = f" writing {filename}" if filename else ""
    return BadInput(f"no space left on device{where}; nothing was changed")


def is_lock_conflict(exc: BaseException) -> bool:
    """DuckDB's "another process holds the file" (not any message that contains "lock":
    a full disk's "could not write block" is not a lock)."""
    text = str(exc).lower()
    return "could not set lock" in text or "conflicting lock" in text


def no_space(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "no space left" in text or "disk full" in text or "disk quota exceeded" in text


def duckdb_error_line(exc: BaseException) -> str:
    """A DuckDB (or Arrow, or OS) error as one line that quotes no value: the kind of
    failure, never the engine's text about a row (it can quote protected values). The
    one place commands turn an engine's conversion, constraint and I/O errors into the
    line of a `BadInput`."""
    if no_space(exc):
        return "no space left on device"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    kind = type(exc).__name__
    if kind in ("ConversionException", "OutOfRangeException"):
        return "a value does not fit the type its column needs (out of range, or not a number)"
    if kind == "ConstraintException":
        return "a value breaks a constraint of the store (a repeated id, or a missing one)"
    if kind in ("IOException", "HTTPException", "PermissionException"):
        line = first_line(exc)
        return line[:300]   # paths and the OS's reason, no row content
    if kind == "OutOfMemoryException":
        return "out of memory (set --memory-limit / DPSPIN_MEMORY_LIMIT and a spill directory)"
    if kind in ("InvalidInputException", "ParserException", "SerializationException"):
        return "the input is malformed"
    return kind


def bad_input(exc: BaseException, context: str) -> BadInput:
    """`context: <duckdb_error_line(exc)>` as bad input (exit 2)."""
    return BadInput(f"{context}: {duckdb_error_line(exc)}")


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
            if not is_lock_conflict(exc):
                raise bad_input(exc, f"cannot {verb} {path}") from None
            if time.monotonic() >= deadline:
                raise StoreBusy(f"store busy: another process has held {path} for {lock_timeout():g} s "
                                "(DPSPIN_LOCK_TIMEOUT); nothing was done") from None
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
        except duckdb.Error as exc:   # about the file, not its rows: DuckDB's own line says most
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
    try:
        con.execute("COMMIT")
    except duckdb.Error as exc:
        if not no_space(exc):
            raise   # (a write-write conflict: the ledger retries those)
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise storage_error(exc) or BadInput("no space left on device writing the store; nothing was changed") from None


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
