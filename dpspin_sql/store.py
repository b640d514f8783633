"""The DuckDB store: records, the public dictionary, assignments and the ledger in one file.

Files are read with DuckDB's own readers (no Python row loops), so loading a million
records costs what DuckDB costs. Every load runs in one transaction: bad input changes
nothing.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import duckdb

from dpspin_sql import queries
from dpspin_sql.errors import BadInput

FORMATS = ("csv", "jsonl", "json", "parquet")
_OPEN: "weakref.WeakSet[duckdb.DuckDBPyConnection]" = weakref.WeakSet()
SPLITS = ("aux", "target")


def connect(path: str | Path, *, create: bool = False, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open a store. Without `create`, a missing file is bad input, not a new empty store."""
    path = Path(path)
    if not create and not path.exists():
        raise BadInput(f"no dpspin store at {path} (create it with: dpspin init --db {path})")
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        raise BadInput(f"cannot open {path}: {_first_line(exc)}") from None
    if not read_only:  # a read-only store can't take the schema or the macros (auditing needs neither)
        con.execute(queries.load("schema"))
        from dpspin_sql import udfs

        udfs.register(con)
    _OPEN.add(con)
    return con


def open_connections() -> set:
    return set(_OPEN)


def close_all(except_for: set = frozenset()) -> None:
    """Close the stores opened since `except_for` was taken (the CLI calls it when a command
    ends, so a failed command never leaves a file locked for the next one in the same
    process, while an embedding caller's own connections stay open)."""
    for con in list(_OPEN):
        if con not in except_for:
            con.close()
            _OPEN.discard(con)


@contextmanager
def opened(path: str | Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open or create a store for one command; a store this command created is removed
    again if the command fails, so bad input leaves no file behind."""
    path = Path(path)
    existed = path.exists()
    con = connect(path, create=True)
    try:
        yield con
    except BaseException:
        con.close()
        if not existed:
            for leftover in (path, path.with_name(path.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    con.close()


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All-or-nothing: a failure inside rolls back and re-raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def detect_format(path: Path, fmt: str | None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise BadInput(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
        return "jsonl" if fmt == "json" else fmt
    name = path.name.lower()
    for suffix in (".gz", ".zst"):
        name = name.removesuffix(suffix)
    for ext, found in ((".csv", "csv"), (".tsv", "csv"), (".jsonl", "jsonl"), (".ndjson", "jsonl"),
                       (".json", "jsonl"), (".parquet", "parquet"), (".pq", "parquet")):
        if name.endswith(ext):
            return found
    raise BadInput(f"cannot tell the format of {path}; pass --format csv|jsonl|parquet")


def read_file(con: duckdb.DuckDBPyConnection, path: str | Path, fmt: str | None = None) -> duckdb.DuckDBPyRelation:
    """A relation over a user's file, read by DuckDB."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"input file not found: {path}")
    fmt = detect_format(path, fmt)
    try:
        if fmt == "csv":
            return con.read_csv(str(path))
        if fmt == "jsonl":
            return con.read_json(str(path))
        return con.read_parquet(str(path))
    except duckdb.Error as exc:
        raise BadInput(f"cannot read {path} as {fmt}: {_first_line(exc)}") from None


def require_columns(rel: duckdb.DuckDBPyRelation, wanted: dict[str, str | None], source: str) -> None:
    have = set(rel.columns)
    for option, col in wanted.items():
        if col is not None and col not in have:
            raise BadInput(f"column {col!r} (from {option}) not in {source}; it has: {', '.join(rel.columns)}")


def load_records(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    *,
    fmt: str | None = None,
    id_col: str | None = "record_id",
    user_col: str | None = None,
    text_col: str = "text",
    split: str = "target",
    relation: duckdb.DuckDBPyRelation | None = None,
) -> int:
    """Load records with the user's column names mapped onto the store's schema.

    Columns other than id/user/text are kept as JSON metadata. Returns the number of
    records loaded. `relation` lets a preset pass an already-shaped relation.
    """
    if split not in SPLITS:
        raise BadInput(f"--split must be aux or target, not {split!r}")
    rel = relation if relation is not None else read_file(con, path, fmt)
    if id_col is None and "record_id" in rel.columns:
        id_col = "record_id"
    require_columns(rel, {"--id-col": id_col, "--user-col": user_col, "--text-col": text_col}, str(path))
    mapped = [c for c in (id_col, user_col, text_col) if c]
    rid = duckdb.ColumnExpression(id_col) if id_col else duckdb.SQLExpression("CAST(row_number() OVER () AS VARCHAR)")
    uid = duckdb.ColumnExpression(user_col) if user_col else duckdb.ConstantExpression(None)
    staged = rel.select(
        rid.alias("__record_id"),
        uid.alias("__user_id"),
        duckdb.ColumnExpression(text_col).alias("__text"),
        duckdb.StarExpression(exclude=mapped),
    )
    con.register("staging", staged)
    try:
        nulls = first_row(con.execute(queries.load("staging_null_ids")))[0]
        if nulls:
            raise BadInput(f"{nulls} record(s) have no id in column {id_col!r}")
        before = _count(con, "records")
        with transaction(con):
            try:
                con.execute(queries.load("insert_records"), {"split": split})
            except duckdb.ConstraintException as exc:
                raise BadInput(f"duplicate record id: {_first_line(exc)}") from None
            except duckdb.Error as exc:
                raise BadInput(f"cannot load {path}: {_first_line(exc)}") from None
        return _count(con, "records") - before
    finally:
        con.unregister("staging")


def load_assignments(con: duckdb.DuckDBPyConnection, path: str | Path, *, fmt: str | None = None,
                     replace: bool = True) -> int:
    """Load (record_id, atom_id, weight) rows from the user's own classifier."""
    rel = read_file(con, path, fmt)
    require_columns(rel, {"record_id": "record_id", "atom_id": "atom_id", "weight": "weight"}, str(path))
    con.register("staging_assignments", rel)
    try:
        with transaction(con):
            if replace:
                con.execute(queries.load("clear_assignments"))
            try:
                con.execute(queries.load("insert_assignments"))
            except duckdb.Error as exc:
                raise BadInput(f"cannot load assignments from {path}: {_first_line(exc)}") from None
    finally:
        con.unregister("staging_assignments")
    return _count(con, "assignments")


def counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts a status line needs (aux and target records, atoms, assignments)."""
    row = first_row(con.execute(queries.load("store_counts")))
    return dict(zip(("aux", "target", "excluded", "users_target", "atoms", "assignments"), row))


def first_row(result: duckdb.DuckDBPyConnection) -> tuple | None:
    """The first row of a result, fully fetched: DuckDB refuses register/unregister while
    a result is only partly read (`fetchone` leaves it open)."""
    rows = result.fetchall()
    return rows[0] if rows else None


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return first_row(con.execute(queries.load("count_" + table)))[0]


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
