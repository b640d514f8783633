"""How the DuckDB engine runs a sketch query: memory limit, spill directory, progress.

    DPSPIN_MEMORY_LIMIT=4GB dpspin release ...        # or --memory-limit 4GB
    DPSPIN_TEMP_DIRECTORY=/big/disk/tmp                # or --temp-directory (default: DuckDB's,
                                                       # <store>.tmp beside the store file)

Under a memory limit DuckDB spills its hash tables and sorts to the temporary directory
instead of failing, so a release over more rows than fit in memory completes (the
10^8-row run in docs/PERFORMANCE.md). The settings are set for the one query and put back
afterwards: they are DuckDB-instance-wide, and the store connection lives on.

`progress(fraction)` is called from the caller's thread about twice a second with DuckDB's
own estimate of the query's progress (`query_progress()`), while the query runs in a
worker thread; DuckDB's own bar is never printed (stdout carries the plan table).
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from dpspin_sql.errors import BadInput

_SIZE = re.compile(r"^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)?\s*$", re.IGNORECASE)
# Integer group keys up to 2^22 apart (4M users) get DuckDB's perfect hash aggregate: the
# per-user totals over dense user keys (queries/sketch_store_user.sql). DuckDB's default,
# 12 bits, would leave them in the general hash table; beyond 22 bits the perfect table
# (one slot per possible key, per thread) costs more memory than it saves.
PERFECT_HT_BITS = 22


def check_memory_limit(value: str | None, what: str = "--memory-limit") -> str | None:
    if value is None or value == "":
        return None
    if not _SIZE.match(value):
        raise BadInput(f"{what} must be a size such as 4GB or 512MB, not {value!r}")
    return value.strip()


@dataclass(frozen=True)
class EngineSettings:
    memory_limit: str | None = None
    temp_directory: str | None = None
    threads: int | None = None
    progress: Callable[[float], None] | None = None

    @classmethod
    def from_env(cls, **overrides: Any) -> EngineSettings:
        """DPSPIN_MEMORY_LIMIT / DPSPIN_TEMP_DIRECTORY / DPSPIN_THREADS, then `overrides`
        (CLI options; a None override keeps the environment's value)."""
        env = {"memory_limit": check_memory_limit(os.environ.get("DPSPIN_MEMORY_LIMIT"), "DPSPIN_MEMORY_LIMIT"),
               "temp_directory": os.environ.get("DPSPIN_TEMP_DIRECTORY") or None,
               "threads": _threads(os.environ.get("DPSPIN_THREADS"))}
        given = {k: v for k, v in overrides.items() if v is not None}
        if "memory_limit" in given:
            given["memory_limit"] = check_memory_limit(given["memory_limit"])
        chosen = env | given
        spill = chosen.get("temp_directory")
        if spill and os.path.exists(spill) and not os.path.isdir(spill):   # DuckDB creates a missing one
            what = "--temp-directory" if "temp_directory" in given else "DPSPIN_TEMP_DIRECTORY"
            raise BadInput(f"{what} {spill} is a file; DuckDB spills into a directory")
        return cls(**chosen)

    def details(self) -> dict:
        """What the ledger records (public, and only what was set)."""
        return {k: v for k, v in (("memory_limit", self.memory_limit),) if v is not None}

    def run(self, con: Any, sql: str, params: dict | None = None) -> list[tuple]:
        """Execute `sql` under these settings and fetch every row."""
        with self.applied(con):
            return self.fetch(con, sql, params)

    @contextlib.contextmanager
    def applied(self, con: Any) -> Iterator[None]:
        """These settings on `con` for the block, the connection's own restored after it
        (a chunked sketch sets them once for all its queries: reading and restoring them
        took ~10 ms a query)."""
        wanted: dict[str, int | bool | str] = {"perfect_ht_threshold": PERFECT_HT_BITS,
                  "enable_progress_bar": self.progress is not None,
                  "enable_progress_bar_print": False}
        if self.memory_limit:
            wanted["memory_limit"] = self.memory_limit
        if self.temp_directory:
            wanted["temp_directory"] = self.temp_directory
        if self.threads:
            wanted["threads"] = self.threads
        before = _current(con, wanted)
        try:
            for name, value in wanted.items():
                con.execute(f"SET {name} = {_literal(value)}")
            yield
        finally:
            for name, value in before.items():
                with contextlib.suppress(Exception):   # the connection may be closing
                    con.execute(f"SET {name} = {_literal(value)}")

    def fetch(self, con: Any, sql: str, params: dict | None = None) -> list[tuple]:
        """Execute `sql` on a connection these settings are `applied` to; every row."""
        if self.progress is None:
            return con.execute(sql, params or {}).fetchall()
        return _with_progress(con, sql, params or {}, self.progress)


def _threads(value: str | None) -> int | None:
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        raise BadInput(f"DPSPIN_THREADS must be a positive integer, not {value!r}") from None
    if n < 1:
        raise BadInput(f"DPSPIN_THREADS must be a positive integer, not {value!r}")
    return n


def _current(con: Any, wanted: dict) -> dict:
    names = list(wanted)
    rows = con.execute("SELECT name, value FROM duckdb_settings() WHERE name IN (SELECT unnest($n))",
                       {"n": names}).fetchall()
    return {name: value for name, value in rows}


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _with_progress(con: Any, sql: str, params: dict, progress: Callable[[float], None]) -> list[tuple]:
    """Run the query in a worker thread; report DuckDB's progress from this one."""
    result: dict = {}

    def work() -> None:
        try:
            result["rows"] = con.execute(sql, params).fetchall()
        except BaseException as exc:
            result["error"] = exc

    worker = threading.Thread(target=work, name="dpspin-sketch", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
            if worker.is_alive():
                done = con.query_progress()
                if done is not None and done >= 0:
                    progress(min(float(done), 100.0) / 100.0)
    except BaseException:   # Ctrl-C, or the CLI's SIGINT/SIGTERM (dpspin_sql.interrupts): stop the query first
        con.interrupt()
        worker.join()
        raise
    if "error" in result:
        raise result["error"]
    progress(1.0)
    return result["rows"]
