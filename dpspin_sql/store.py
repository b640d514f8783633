"""The DuckDB store: records, the public dictionary, assignments and the ledger in one file.

Files are read with DuckDB's own readers (no Python row loops), so loading a million
records costs what DuckDB costs. Every load runs in one transaction: bad input changes
nothing.
"""
from __future__ import annotations

import functools
import re
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from dpspin_sql import queries
from dpspin_sql.db import first_line, only_row, transaction, waiting_for_lock
from dpspin_sql.errors import BadInput

FORMATS = ("csv", "jsonl", "json", "parquet")
_OPEN: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
SPLITS = ("aux", "target")
_SETUP_LOCK = threading.Lock()   # DDL from several connections at once conflicts in DuckDB


def connect(path: str | Path, *, create: bool = False, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open a store. Without `create`, a missing file is bad input, not a new empty store.

    The path must be a DuckDB database or a new file: DuckDB opens any other existing file
    (a CSV, say) as an empty in-memory database, where every write would silently vanish.
    When another process holds the file, this waits up to `lock_timeout()` seconds.
    Safe from many threads at once: the schema and macros are set up once per process.
    """
    path = Path(path)
    check_store_path(path, create=create)
    con = _open_waiting(path, read_only)
    if not read_only:  # a read-only store can't take the schema or the macros (auditing needs neither)
        set_up(con)
    _OPEN.add(con)
    return con


def check_store_path(path: Path, *, create: bool, option: str = "--db") -> None:
    """A store path is a DuckDB database or (with `create`) a new file in an existing directory."""
    from dpspin_sql.outputs import is_duckdb_file

    if path.is_dir():
        raise BadInput(f"{option} {path} is a directory, not a dpspin store")
    if not path.exists():
        if not create:
            raise BadInput(f"no dpspin store at {path} (create it with: dpspin init --db {path})")
        if not path.parent.exists():
            raise BadInput(f"{option}: directory does not exist: {path.parent}")
    elif path.stat().st_size > 0 and not is_duckdb_file(path):
        raise BadInput(f"{option} {path} is not a DuckDB database (a dpspin store); give a store or a new path")
    elif path.stat().st_size == 0:
        raise BadInput(f"{option} {path} is an empty file, not a DuckDB database; remove it or give a new path")


def _open_waiting(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    return waiting_for_lock(lambda: duckdb.connect(str(path), read_only=read_only), path, "open")


def set_up(con: duckdb.DuckDBPyConnection) -> None:
    """Create or migrate the schema and the macros in the connection's default database,
    unless they are already there (a read-only check, so many connections opening a set-up
    store write nothing and cannot conflict)."""
    from dpspin_sql import ledger, udfs

    if _schema_present(con):
        return
    with _SETUP_LOCK:
        if _schema_present(con):
            return
        found = ledger.before_set_up(con)   # a store whose ledger was removed is refused, never re-created
        with transaction(con):   # all or nothing: a store is never left without its chain's first row
            con.execute(queries.load("schema"))
            con.execute(queries.load("schema_migrate"))
            udfs.register(con)
            ledger.migrate(con, found)


def _schema_present(con: duckdb.DuckDBPyConnection) -> bool:
    from dpspin_sql import udfs

    present, database = only_row(con.execute(queries.load("schema_present")))
    if not present:
        return False
    try:
        con.execute(udfs.probe(database)).fetchall()
    except duckdb.Error:
        return False
    return True


def path_of(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The file behind a connection's default database (None when it is in memory); for an
    embedded session (`dpspin_sql.install`) that is the attached store."""
    rows = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    return Path(rows[0][0]) if rows and rows[0][0] else None


def cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A second connection on the same database that sees what `con` sees: the same default
    catalog and search path (so it works on an embedded session too). The caller closes it."""
    db, search_path = only_row(con.execute("SELECT current_database(), current_setting('search_path')"))
    cur = con.cursor()
    cur.execute('USE "' + db.replace('"', '""') + '"')
    if search_path:
        cur.execute("SET search_path = ?", [search_path])
    return cur


@contextmanager
def staged(con: duckdb.DuckDBPyConnection, name: str, columns: dict) -> Iterator[None]:
    """Register Python columns as the view `name` for one statement's use (no pyarrow:
    DuckDB scans a dict of NumPy arrays directly). `columns` maps a column name to a list
    and its NumPy dtype (`object` for text), e.g. {"record_id": (ids, object)}."""
    import numpy as np

    con.register(name, {col: np.array(values, dtype=dtype) for col, (values, dtype) in columns.items()})
    try:
        yield
    finally:
        con.unregister(name)


def mark_step(con: duckdb.DuckDBPyConnection, step: str) -> None:
    """Record that a pipeline step ran for the current dictionary (a release checks these
    facts about what the curator did, never the protected records)."""
    con.execute(queries.load("pipeline_mark"), {"step": step,
                                               "done_at": datetime.now(UTC).replace(tzinfo=None)})


def step_done(con: duckdb.DuckDBPyConnection, step: str) -> bool:
    """Whether `step` ran for the current dictionary."""
    return bool(only_row(con.execute(queries.load("pipeline_step"), {"step": step}))[0])


def open_connections() -> set:
    return set(_OPEN)


def close_all(except_for: set | frozenset = frozenset()) -> None:
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


def read_file(con: duckdb.DuckDBPyConnection, path: str | Path, fmt: str | None = None, *,
              all_varchar: bool = False) -> duckdb.DuckDBPyRelation:
    """A relation over a user's file, read by DuckDB, strictly: a CSV is read as RFC 4180
    (comma, or tab for .tsv; double quotes) and a malformed row is an error with its line
    number, never a row silently re-shaped by the dialect sniffer."""
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"input file not found: {path}")
    fmt = detect_format(path, fmt)
    try:
        if fmt == "csv":
            delimiter = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
            return con.read_csv(str(path), delimiter=delimiter, quotechar='"', escapechar='"', header=True,
                                strict_mode=True, all_varchar=all_varchar)
        if fmt == "jsonl":
            return con.read_json(str(path), format="newline_delimited")
        return con.read_parquet(str(path))
    except duckdb.Error as exc:
        raise BadInput(f"cannot read {path} as {fmt}: {read_error(path, fmt, exc)}") from None


def read_error(path: Path, fmt: str, exc: BaseException) -> str:
    """One line for a file DuckDB could not read: the line number of the first malformed
    row, never the row's content (it may be protected text)."""
    text = str(exc)
    match = re.search(r"CSV Error on Line: (\d+)", text) or re.search(r"line (\d+)", text, re.I)
    if fmt == "csv" and match is None:
        line = _first_bad_csv_line(path)
        if line is not None:
            return f"malformed CSV row at line {line} (an unterminated quote or the wrong number of fields)"
    if match is not None:
        return f"malformed {fmt.upper()} at line {match.group(1)}"
    return _first_line(exc).split(":")[0] if "Original Line" in text else _first_line(exc)


def _first_bad_csv_line(path: Path) -> int | None:
    """Find the first malformed row with Python's strict CSV reader (only after DuckDB failed)."""
    import csv
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    delimiter = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, quotechar='"', doublequote=True, strict=True)
            width = None
            for row in reader:
                if width is None:
                    width = len(row)
                elif row and len(row) != width:
                    return reader.line_num
    except csv.Error:
        return reader.line_num
    except (OSError, UnicodeDecodeError):
        return None
    return None


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
) -> LoadReport:
    """Load records with the user's column names mapped onto the store's schema.

    Columns other than id/user/text are kept as JSON metadata. All or nothing: a malformed
    row, a missing or duplicate id, or an id/user/text column that is not a scalar castable
    to text changes nothing. `relation` lets a preset pass an already-shaped relation.
    """
    if split not in SPLITS:
        raise BadInput(f"--split must be aux or target, not {split!r}")
    fmt = detect_format(Path(path), fmt) if relation is None else "preset"
    rel = relation if relation is not None else read_file(con, path, fmt, all_varchar=fmt == "csv")
    if id_col is None and "record_id" in rel.columns:
        id_col = "record_id"
    require_columns(rel, {"--id-col": id_col, "--user-col": user_col, "--text-col": text_col}, str(path))
    types = dict(zip(rel.columns, (str(t) for t in rel.types)))
    for option, col, allowed in (("--id-col", id_col, _ID_TYPES), ("--user-col", user_col, _ID_TYPES),
                                 ("--text-col", text_col, _TEXT_TYPES)):
        if col is not None and not _type_ok(types[col], allowed):
            raise BadInput(f"column {col!r} ({option}) is {types[col]}; it must hold "
                           + ("text" if allowed is _TEXT_TYPES else "scalar ids (text or integers)"))
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
        try:
            nulls = only_row(con.execute(queries.load("staging_null_ids")))[0]
        except duckdb.Error as exc:
            raise BadInput(f"cannot load {path}: {read_error(Path(path), fmt, exc)}") from None
        if nulls:
            raise BadInput(f"{nulls} record(s) have no id in column {id_col!r}")
        before = _count(con, "records")
        with transaction(con):
            try:
                con.execute(queries.load("insert_users"))
                con.execute(queries.load("insert_records"), {"split": split})
            except duckdb.ConstraintException:
                raise BadInput(f"{path} repeats a record id (or an id already in the store); "
                               "ids must be unique") from None
            except duckdb.Error as exc:
                raise BadInput(f"cannot load {path}: {read_error(Path(path), fmt, exc)}") from None
        return LoadReport(_count(con, "records") - before, 0)
    finally:
        con.unregister("staging")


@dataclass(frozen=True)
class LoadReport:
    loaded: int
    rejected: int = 0
    why_rejected: str = ""


_ID_TYPES = ("VARCHAR", "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT",
             "UTINYINT", "HUGEINT", "UHUGEINT", '"NULL"', "NULL")
_TEXT_TYPES = ("VARCHAR", '"NULL"', "NULL")


def _type_ok(type_name: str, allowed: tuple[str, ...]) -> bool:
    return type_name.upper() in allowed


def load_assignments(con: duckdb.DuckDBPyConnection, path: str | Path, *, fmt: str | None = None,
                     replace: bool = False) -> int:
    """Load (record_id, atom_id, weight) rows from the user's own classifier. Rows already in
    the store are replaced only with `replace` (they may be another classifier's)."""
    rel = read_file(con, path, fmt)
    require_columns(rel, {"record_id": "record_id", "atom_id": "atom_id", "weight": "weight"}, str(path))
    existing = _count(con, "assignments")
    if existing and not replace:
        raise BadInput(f"the store already holds {existing} assignment rows; pass --replace to replace them")
    con.register("staging_assignments", rel)
    try:
        with transaction(con):
            if replace:
                con.execute(queries.load("clear_assignments"))
                clear_vectors(con)
            try:
                write_assignments(con)
            except duckdb.Error as exc:
                raise BadInput(f"cannot load assignments from {path}: {_first_line(exc)}") from None
            mark_step(con, "assignments")
    finally:
        con.unregister("staging_assignments")
    return _count(con, "assignments")


def write_assignments(con: duckdb.DuckDBPyConnection) -> None:
    """Store the registered `staging_assignments` (record_id, atom_id, weight) rows: as
    canonical vectors in `records` for the records whose rows are already canonical
    (queries/canonicalise.sql), as given in `assignments` for the rest. Inside the
    caller's transaction."""
    from dpspin_sql.request import SCALE

    con.execute(queries.load("canonicalise"), {"scale": SCALE})
    store_vectors(con)
    con.execute(queries.load("insert_assignments"))


def store_vectors(con: duckdb.DuckDBPyConnection, *, replace: bool = False) -> None:
    """The canonical vectors in the temporary `staged_vectors` into `records`, in one rewrite
    of the table (queries/update_vectors.sql); with `replace` (a new assignment map), every
    other record's vector is dropped by the same rewrite. Nothing is rewritten when nothing
    would change. Inside the caller's transaction."""
    staged = only_row(con.execute("SELECT count(*) FROM staged_vectors WHERE atom_ids IS NOT NULL"))[0]
    if staged or (replace and _has_vectors(con)):
        rewrite_records(con, queries.load("update_vectors"), {"replace": replace})


def clear_vectors(con: duckdb.DuckDBPyConnection) -> None:
    """Drop every canonical vector (a new assignment map, dictionary or split), inside the
    caller's transaction; nothing to do, and nothing rewritten, when there are none."""
    if _has_vectors(con):
        rewrite_records(con, "SELECT r.* REPLACE (NULL AS atom_ids, NULL AS masses) FROM records AS r")


def _has_vectors(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(only_row(con.execute(
        "SELECT count(*) FROM records WHERE atom_ids IS NOT NULL OR masses IS NOT NULL"))[0])


def rewrite_records(con: duckdb.DuckDBPyConnection, select: str, params: dict | None = None) -> None:
    """Replace the records table with `select`'s rows (every column of `records`, by name),
    in (user_key, record_id) order, under exactly the schema's definition (schema.sql: its
    keys, CHECKs and foreign key, which DuckDB checks on this insert as on any other).

    Why not UPDATE: DuckDB turns an UPDATE of a list column of a table with indexes into a
    delete and an insert per row, checked one by one and again at commit, about 170 µs a
    record (28 minutes for 10^7 records); one bulk insert into a fresh table takes ~1 s per
    10^5 records, and leaves each user's records together, which the chunked user-level
    sketch reads by zone map (docs/PERFORMANCE.md). Inside the caller's transaction."""
    # (a new table renamed to records would keep its old name in users' foreign-key entry)
    con.execute(f"CREATE OR REPLACE TEMP TABLE records_rewrite AS SELECT * FROM ({select}) AS s", params or {})
    con.execute("DROP TABLE records")
    con.execute(_records_ddl("records"))
    con.execute("INSERT INTO records BY NAME SELECT * FROM records_rewrite ORDER BY user_key, record_id")
    con.execute("DROP TABLE records_rewrite")


@functools.cache
def _records_table_body() -> str:
    match = re.search(r"CREATE TABLE IF NOT EXISTS records \((.*?)\n\);", queries.load("schema"), re.S)
    if match is None:
        raise AssertionError("schema.sql has no records table")
    return match.group(1)


def _records_ddl(name: str) -> str:
    return f"CREATE TABLE {name} ({_records_table_body()}\n)"


def counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row counts a status line needs (aux and target records, atoms, assignments)."""
    row = only_row(con.execute(queries.load("store_counts")))
    return dict(zip(("aux", "target", "excluded", "users_target", "atoms", "assignments"), row))


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return only_row(con.execute(queries.load("count_" + table)))[0]


_first_line = first_line
