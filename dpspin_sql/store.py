"""The DuckDB store: records, the public dictionary, assignments and the ledger in one file.

Files are read with DuckDB's own readers (no Python row loops), so loading a million
records costs what DuckDB costs. Every load runs in one transaction: bad input changes
nothing.
"""
from __future__ import annotations

import contextlib
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

from dpspin_sql import queries, tabular
from dpspin_sql.db import bad_input, duckdb_error_line, first_line, only_row, transaction, waiting_for_lock
from dpspin_sql.errors import BadInput

_OPEN: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
SPLITS = ("aux", "target")
_SETUP_LOCK = threading.Lock()   # DDL from several connections at once conflicts in DuckDB


def connect(path: str | Path, *, create: bool = False, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open a store. Without `create`, a missing file is bad input, not a new empty store,
    and so is a DuckDB database that is not a dpspin store (an empty one included: only
    `dpspin init` makes a store). With `create`, a new path or an empty DuckDB database
    becomes a store; a database that holds anything else is refused and left as it was
    (a user's own database is used through `dpspin_sql.install`, docs/EMBEDDING.md).

    The path must be a DuckDB database or a new file: DuckDB opens any other existing file
    (a CSV, say) as an empty in-memory database, where every write would silently vanish.
    When another process holds the file, this waits up to `lock_timeout()` seconds.
    Safe from many threads at once: the schema and macros are set up once per process,
    in one transaction (a failure leaves no table behind).
    """
    path = Path(path)
    check_store_path(path, create=create)
    con = _open_waiting(path, read_only)
    try:
        kind = store_kind(con)
        if kind == "foreign":
            raise BadInput(f"{path} is a DuckDB database but not a dpspin store; nothing was added to it (to use "
                           "your own database, attach a store to it with dpspin_sql.install(con, STORE): "
                           "docs/EMBEDDING.md)")
        if kind == "empty" and not create:
            raise BadInput(f"{path} is not an initialised dpspin store (an empty DuckDB database); "
                           f"create the store with: dpspin init --db {path}")
        if not read_only:  # a read-only store can't take the schema or the macros (auditing needs neither)
            set_up(con)
    except BaseException:
        con.close()
        raise
    _OPEN.add(con)
    return con


STORE_TABLES = ("ledger", "ledger_head", "budget", "dictionary", "pipeline")
"""Tables only a dpspin store has: one of them marks a database as a store (perhaps one
an earlier version wrote, which `set_up` migrates, or a damaged one the ledger's checks
refuse); the other tables' names (records, atoms, users, ...) are common words."""


def store_kind(con: duckdb.DuckDBPyConnection) -> str:
    """'store' (it has a table only a store has), 'empty' (no table, view or sequence in
    its main schema) or 'foreign' (anything else: someone's own database)."""
    n_objects, n_marks = only_row(con.execute(queries.load("store_kind"), {"marks": list(STORE_TABLES)}))
    if n_marks:
        return "store"
    return "empty" if n_objects == 0 else "foreign"


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
    store write nothing and cannot conflict). The tables, views and macros are created in
    one transaction: a failure halfway leaves none of them behind."""
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
    """Open or create a store for one command (`dpspin init`); a store this command created
    is removed again if the command fails — the file, or, in a DuckDB database that was
    empty, everything set up in it — so bad input leaves nothing behind."""
    path = Path(path)
    existed = path.exists()
    was_empty = existed and _is_empty_database(path)
    con = connect(path, create=True)
    try:
        yield con
    except BaseException:
        if was_empty:
            with contextlib.suppress(duckdb.Error):
                _empty_again(con)
        con.close()
        if not existed:
            for leftover in (path, path.with_name(path.name + ".wal")):
                leftover.unlink(missing_ok=True)
        raise
    con.close()


def _is_empty_database(path: Path) -> bool:
    check_store_path(path, create=True)
    con = _open_waiting(path, read_only=True)
    try:
        return store_kind(con) == "empty"
    finally:
        con.close()


def _empty_again(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what `set_up` made in a database that was empty (views, then tables in an order
    their foreign keys allow, then macros), in one transaction."""
    with transaction(con):
        for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE database_name = current_database() "
                                   "AND schema_name = 'main' AND NOT internal AND NOT temporary").fetchall():
            con.execute(f'DROP VIEW "{name}"')
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                            "current_database() AND schema_name = 'main' AND NOT temporary "
                                            "ORDER BY has_primary_key, table_name").fetchall()]
        for _ in range(len(tables) + 1):
            left = []
            for name in tables:
                try:
                    con.execute(f'DROP TABLE "{name}"')
                except duckdb.Error:
                    left.append(name)
            tables = left
            if not tables:
                break
        for name in udfs_names():
            con.execute(f"DROP MACRO IF EXISTS {name}")


def udfs_names() -> tuple[str, ...]:
    from dpspin_sql import udfs

    return udfs.NAMES


def read_file(con: duckdb.DuckDBPyConnection, path: str | Path, fmt: str | None = None, *,
              all_varchar: bool = False, delimiter: str | None = None) -> duckdb.DuckDBPyRelation:
    """A relation over a user's file (or folder), read by `dpspin_sql.tabular`'s rules: its
    header checked, its unnamed index columns left out, every CSV value text."""
    return tabular.read(con, tabular.table_file(path, fmt, delimiter=delimiter)).relation


def require_columns(rel: duckdb.DuckDBPyRelation | tabular.TableRead, wanted: dict[str, str | None],
                    source: str) -> None:
    columns = list(rel.columns)
    for option, col in wanted.items():
        if col is not None and col not in columns:
            near = [c for c in columns if c.lower() == col.lower()]
            hint = f" (did you mean {near[0]!r}? names are matched exactly)" if near else ""
            raise BadInput(f"column {col!r} (from {option}) not in {source}{hint}; it has: {', '.join(columns)}")


def require_distinct_roles(wanted: dict[str, str | None]) -> None:
    """One column cannot play two roles (the id and the text, say): the record would be
    keyed by its own protected text."""
    seen: dict[str, str] = {}
    for option, col in wanted.items():
        if col is None:
            continue
        if col.lower() in seen:
            raise BadInput(f"{seen[col.lower()]} and {option} name the same column {col!r}; each role needs its own "
                           "column")
        seen[col.lower()] = option


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
    delimiter: str | None = None,
) -> LoadReport:
    """Load records with the user's column names mapped onto the store's schema.

    Columns other than id/user/text are kept as JSON metadata. All or nothing: a malformed
    row, a missing or duplicate id, an id/user/text column that is not a scalar castable
    to text, or a file without rows changes nothing. `relation` lets a preset pass an
    already-shaped relation. The file is read by `dpspin_sql.tabular` (every CSV value is
    text; the header must be unambiguous).
    """
    if split not in SPLITS:
        raise BadInput(f"--split must be aux or target, not {split!r}")
    dropped: tuple[str, ...] = ()
    if relation is None:
        tf = tabular.table_file(path, fmt, delimiter=delimiter)
        fmt = tf.format
        got = tabular.read(con, tf)
        rel, note = got.relation, got.note()
        dropped = got.dropped
    else:
        fmt, rel, note = "preset", relation, None
    if id_col is None and "record_id" in rel.columns:
        id_col = "record_id"
    require_distinct_roles({"--id-col": id_col, "--user-col": user_col, "--text-col": text_col})
    require_columns(rel, {"--id-col": id_col, "--user-col": user_col, "--text-col": text_col}, str(path))
    types = dict(zip(rel.columns, (str(t) for t in rel.types)))
    for option, col, allowed in (("--id-col", id_col, _ID_TYPES), ("--user-col", user_col, _ID_TYPES),
                                 ("--text-col", text_col, _TEXT_TYPES)):
        if col is not None and not _type_ok(types[col], allowed):
            raise BadInput(f"column {col!r} ({option}) is {types[col]}; it must hold "
                           + ("text" if allowed is _TEXT_TYPES else "scalar ids (text or integers)"))
    mapped = [c for c in (id_col, user_col, text_col) if c]
    rid = _column(id_col) if id_col else duckdb.SQLExpression("CAST(row_number() OVER () AS VARCHAR)")
    uid = _column(user_col) if user_col else duckdb.ConstantExpression(None)
    staged = rel.select(
        rid.alias("__record_id"),
        uid.alias("__user_id"),
        _column(text_col).alias("__text"),
        duckdb.StarExpression(exclude=mapped),
    )
    con.register("staging", staged)
    try:
        try:
            nulls = only_row(con.execute(queries.load("staging_null_ids")))[0]
        except duckdb.Error as exc:
            raise BadInput(f"cannot load {path}: {_read_error(path, fmt, exc)}") from None
        if nulls:
            raise BadInput(f"{path}: {nulls} record(s) have no id in column {id_col!r}")
        before = _count(con, "records")
        with transaction(con):
            try:
                con.execute(queries.load("insert_users"))
                con.execute(queries.load("insert_records"), {"split": split})
            except duckdb.ConstraintException:
                raise BadInput(f"{path} repeats a record id (or an id already in the store); "
                               "ids must be unique") from None
            except duckdb.Error as exc:
                raise BadInput(f"cannot load {path}: {_read_error(path, fmt, exc)}") from None
            loaded = _count(con, "records") - before
            if relation is None:
                tabular.require_rows(loaded, Path(path), "records")
        return LoadReport(loaded, 0, notes=(note,) if note else (), dropped_columns=dropped)
    finally:
        con.unregister("staging")


def _column(name: str) -> duckdb.Expression:
    return duckdb.ColumnExpression(name)   # the name as it is (no quoting: spaces, dots and quotes are fine)


def _read_error(path: str | Path, fmt: str | None, exc: BaseException) -> str:
    if fmt == "preset" or fmt is None:
        return duckdb_error_line(exc)
    return tabular.read_error(Path(path), fmt, exc)


@dataclass(frozen=True)
class LoadReport:
    loaded: int
    rejected: int = 0
    why_rejected: str = ""
    notes: tuple[str, ...] = ()              # one line each: input left out, said to the user
    dropped_columns: tuple[str, ...] = ()


_ID_TYPES = ("VARCHAR", "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT",
             "UTINYINT", "HUGEINT", "UHUGEINT", '"NULL"', "NULL")
_TEXT_TYPES = ("VARCHAR", '"NULL"', "NULL")


def _type_ok(type_name: str, allowed: tuple[str, ...]) -> bool:
    return type_name.upper() in allowed


def load_assignments(con: duckdb.DuckDBPyConnection, path: str | Path, *, fmt: str | None = None,
                     replace: bool = False, delimiter: str | None = None) -> int:
    """`load_assignment_file`, returning the number of assignment rows the store holds."""
    return load_assignment_file(con, path, fmt=fmt, replace=replace, delimiter=delimiter).rows


@dataclass(frozen=True)
class AssignmentsReport:
    rows: int                    # assignment rows the store holds now (canonical entries included)
    replaced: int = 0            # rows there were before, with --replace
    notes: tuple[str, ...] = ()  # one line each: input that was left out or can never count


INT32 = (-(1 << 31), (1 << 31) - 1)
_WEIGHT_RESOLUTION = "2^-24"


def load_assignment_file(con: duckdb.DuckDBPyConnection, path: str | Path, *, fmt: str | None = None,
                         replace: bool = False, delimiter: str | None = None, record_col: str = "record_id",
                         atom_col: str = "atom_id", weight_col: str = "weight") -> AssignmentsReport:
    """Load (record_id, atom_id, weight) rows from the user's own classifier. Rows already in
    the store are replaced only with `replace` (they may be another classifier's).

    All or nothing: an atom id that is not an integer of the store's 32-bit range, a weight
    that is not a number, or a file without rows changes nothing. Rows that load but can
    never count in a sketch — an atom not in the dictionary, a record not in the store, a
    weight that is not a positive finite number or is below the fixed-point resolution
    2^-24 (it counts as 0) — are kept as given (the sketch, not this loader, enforces
    the bounds) and counted in one line of the report.

    `record_col`, `atom_col`, `weight_col` name the file's columns (as DP SQL names a
    table's). The atom column holds atom ids, or labels of the store's dictionary as DP SQL
    matches a text column: it is read as labels when one of its values is a label of the
    dictionary that is not an integer; then a row whose value is no label of the
    dictionary is dropped (not loaded) and counted in one line."""

    tf = tabular.table_file(path, fmt, delimiter=delimiter)
    got = tabular.read(con, tf)
    rel = got.relation
    wanted: dict[str, str | None] = {"--record-col": record_col, "--atom-col": atom_col, "--weight-col": weight_col}
    require_distinct_roles(wanted)
    require_columns(got, wanted, str(path))
    notes = [n for n in (got.note(),) if n]
    unused = [c for c in got.columns if c not in wanted.values()]
    if unused:
        notes.append(f"ignored column(s) an assignment row does not have: {', '.join(unused)}")
    existing = _count(con, "assignments")
    if existing and not replace:
        raise BadInput(f"the store already holds {existing} assignment rows; pass --replace to replace them")
    replaced = counts(con)["assignments"] if replace else 0
    mapped = rel.select(*[_column(c).alias(role) for c, role in zip((record_col, atom_col, weight_col),
                                                                    ASSIGNMENT_FILE_COLUMNS)])
    con.register("assignment_raw", mapped)
    try:
        con.register("assignment_file", mapped)
        facts = _file_facts(con, path, tf)
        if facts[-1]:   # the atom column holds labels: the facts of the rows with their labels' ids
            relation, dropped = _atom_labels(con, path, tf, facts[0])
            con.register("assignment_file", relation)
            if dropped:
                notes.append(f"dropped {dropped} row(s) whose atom label is not in the store's dictionary "
                             f"(the atom column {atom_col!r} holds labels)")
            facts = _file_facts(con, path, tf)
        n_rows, not_integer, out_of_range, not_number, unknown_atom, unknown_record, not_positive, tiny, _ = facts
        tabular.require_rows(n_rows, tf, "assignment rows")
        if not_integer:
            raise BadInput(f"{path}: {not_integer} row(s) have an atom_id that is not an integer (column "
                           f"{atom_col!r}: atom ids, or labels of the store's dictionary)")
        if out_of_range:
            raise BadInput(f"{path}: {out_of_range} row(s) have an atom_id outside the range of atom ids "
                           f"({INT32[0]} to {INT32[1]})")
        if not_number:
            raise BadInput(f"{path}: {not_number} row(s) have a weight that is not a number (column {weight_col!r})")
        never = [(unknown_atom, "name an atom not in the dictionary"),
                 (unknown_record, "name a record not in the store"),
                 (not_positive, "have a weight that is not a positive finite number"),
                 (tiny, f"have a weight below the fixed-point resolution {_WEIGHT_RESOLUTION} (it counts as 0)")]
        said = [f"{n} {why}" for n, why in never if n]
        if said:
            notes.append(f"{sum(n for n, _ in never if n)} of {n_rows} row(s) can never count in a release "
                         f"(kept as given): {'; '.join(said)}")
        # checked above: every value converts exactly
        con.register("staging_assignments", con.sql(queries.load("assignments_file_stage")))
        with transaction(con):
            if replace:
                con.execute(queries.load("clear_assignments"))
                clear_vectors(con)
            try:
                write_assignments(con, n_rows)
            except duckdb.Error as exc:
                raise bad_input(exc, f"cannot load assignments from {path}") from None
            mark_step(con, "assignments")
    finally:
        for name in ("staging_assignments", "assignment_file", "assignment_raw"):
            with contextlib.suppress(duckdb.Error):
                con.unregister(name)
    return AssignmentsReport(counts(con)["assignments"], replaced, tuple(notes))


ASSIGNMENT_FILE_COLUMNS = ("record_id", "atom_id", "weight")


def _file_facts(con: duckdb.DuckDBPyConnection, path: str | Path, tf: tabular.TableFile) -> tuple:
    """queries/assignments_file_facts.sql over the registered `assignment_file` (one pass)."""
    from dpspin_sql.fixed_point import SCALE

    try:
        return only_row(con.execute(queries.load("assignments_file_facts"),
                                    {"scale": SCALE, "lo": INT32[0], "hi": INT32[1]}))
    except duckdb.Error as exc:
        raise BadInput(f"cannot load assignments from {path}: {tabular.read_error(Path(path), tf.format, exc)}") \
            from None


def _atom_labels(con: duckdb.DuckDBPyConnection, path: str | Path, tf: tabular.TableFile,
                 n_rows: int) -> tuple[duckdb.DuckDBPyRelation, int]:
    """The registered `assignment_raw` (`n_rows` rows) whose atom column holds dictionary
    labels (queries/assignments_file_facts.sql counted them): the rows with the label's atom
    id in its place (labels of no atom left out) and how many were left out."""
    join = ("FROM assignment_raw f JOIN (SELECT label, min(atom_id) AS atom_id FROM atoms GROUP BY label) d "
            "ON CAST(f.atom_id AS VARCHAR) = d.label")
    try:
        (n_kept,), = con.execute(f"SELECT count(*) {join}").fetchall()
    except duckdb.Error as exc:
        raise BadInput(f"cannot load assignments from {path}: {tabular.read_error(Path(path), tf.format, exc)}") \
            from None
    return con.sql(f"SELECT f.record_id, d.atom_id, f.weight {join}"), n_rows - n_kept




def write_assignments(con: duckdb.DuckDBPyConnection, n_rows: int | None = None) -> None:
    """Store the registered `staging_assignments` (record_id, atom_id, weight) rows: as
    canonical vectors in `records` for the records whose rows are already canonical
    (queries/canonicalise.sql), as given in `assignments` for the rest. `n_rows`, the
    number of staged rows when the caller counted them, lets the rows be read only once
    when every one of them is a canonical record's. Inside the caller's transaction."""
    from dpspin_sql.fixed_point import SCALE

    con.execute(queries.load("canonicalise"), {"scale": SCALE})
    covered = only_row(con.execute("SELECT COALESCE(sum(n_rows), 0) FROM staged_vectors"))[0]
    store_vectors(con)
    con.execute(queries.load("insert_assignments"), {"any_raw": n_rows is None or covered != n_rows})
    con.execute("DROP TABLE staged_vectors")


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
