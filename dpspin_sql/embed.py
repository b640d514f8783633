"""dpspin-sql on a DuckDB connection the user already has (`dpspin_sql.install(con, STORE)`).

DuckDB's own convention for adding capabilities to a connection is a function that takes
the connection (`duckdb.install_extension` / `load_extension`, an extension's
`load(con)`); this module follows it:

    con = duckdb.connect("analytics.duckdb")         # the user's database, left as it is
    dpspin_sql.install(con, "dpspin_store.duckdb")    # attaches the store as catalog `dpspin`
    with dpspin_sql.session(con) as s:                # a cursor whose default catalog is the store
        ...                                           # load records, atoms, assignments into the store
    dpspin_sql.run_sql(con, statement, "plan.json")    # audited, charged, released

What `install` creates, and where:

- the store is a separate DuckDB file ATTACHed to the connection's database instance as
  the catalog `dpspin` (docs/EMBEDDING.md); the dpspin schema (records, atoms,
  assignments, dictionary, budget, ledger, ledger_head, pipeline) and the macros
  `dpspin_fix`, `dpspin_clip`, `dpspin_unit_hash` are created *in that file*. Nothing is
  created in the user's database: no table, view, macro or schema, and the
  connection's default catalog and search path are not changed.
- every library call on such a connection runs on its own cursor (`session`) whose
  default catalog is `dpspin` and whose search path is `dpspin.main, <user db>.main`, so
  the dpspin tables win over a user table of the same name and the user's tables can be
  read unqualified (`s.table("reviews")`).

Idempotent: a second `install` with the same store does nothing (the schema check is
read-only); another store under the same name is bad input. Thread-safe: attaching and
creating cursors is serialised by one lock per process, each call works on its own
cursor (a DuckDB connection object must not be shared by threads), and ledger charges
from several threads are serialised and retried by `dpspin_sql.ledger`.
"""
from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from dpspin_sql.errors import BadInput

CATALOG = "dpspin"
# the tables that make a database a dpspin store (queries/schema.sql)
STORE_TABLES = ("records", "atoms", "assignments", "dictionary", "budget", "ledger", "ledger_head", "pipeline")
_LOCK = threading.RLock()
_SESSIONS: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()

__all__ = ["CATALOG", "install", "session", "installed", "resolve", "user_catalog"]


def install(con: duckdb.DuckDBPyConnection, store: str | Path, *, epsilon_budget: float | None = None,
            delta_budget: float | None = None, dataset: str | None = None,
            witness: str | Path | None = None, accountant: str | None = None) -> None:
    """Make `con` able to run DP statements, with the dpspin store in the file `store`.

    The store is created when `store` does not exist (with the default total budget, or
    `epsilon_budget` / `delta_budget`); an existing store is opened as it is (a given
    budget then changes its total, never below what is spent, like `dpspin init`).
    `witness` is a file kept outside the store (docs/EMBEDDING.md, "The ledger on your
    connection"): every charge and budget change checks the ledger against it first and
    appends the new head; it is started with the current head when it does not exist.
    `accountant` ("basic" | "zcdp"; new stores: zcdp) is how its releases compose, chosen
    before the first release (docs/DESIGN.md §4, "Accountants").
    Idempotent and thread-safe (see the module docstring).
    """
    from dpspin_sql import anchors, ledger
    from dpspin_sql import store as store_lib

    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise BadInput(f"install() takes a duckdb connection (duckdb.connect(...)), not {type(con).__name__}")
    path = Path(store)
    dataset = dataset or ledger.DEFAULT_DATASET
    with _LOCK:
        cur = con.cursor()
    try:
        attached = _attached_path(cur)
        if attached is None:
            store_lib.check_store_path(path, create=True, option="store")
            _attach(cur, path)
        elif not attached or os.path.realpath(attached) != os.path.realpath(path):
            raise BadInput(f"this connection already has a catalog named {CATALOG!r} "
                           f"({attached or 'in memory'}), not the store {path}")
        _use_store(cur)
        store_lib.set_up(cur)
        if witness is not None:
            anchors.probe_witness_directory(witness)
            anchors.register(path, witness)
            if not Path(witness).exists():
                head = ledger.head(cur)
                anchors.append_witness(witness, path, head.chain_id or head.row_hash, head.seq, head.row_hash)
        if accountant is not None:
            ledger.set_accountant(cur, accountant)
        if epsilon_budget is not None or delta_budget is not None:
            current = _budget(cur, dataset)
            ledger.set_budget(cur, epsilon_budget if epsilon_budget is not None else current[0],
                              delta_budget if delta_budget is not None else current[1], dataset)
        else:
            ledger.ensure_budget(cur, dataset)
    finally:
        cur.close()


def installed(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `install` attached a dpspin store to this connection's database."""
    with _LOCK:
        cur = con.cursor()
    try:
        return bool(_attached_path(cur)) and _is_store(cur, CATALOG)
    finally:
        cur.close()


@contextmanager
def session(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor on `con`'s database whose default catalog is the installed dpspin store.

    Every dpspin library function takes it in place of a store connection; the user's
    own tables stay readable unqualified (the store's tables come first). Closed on exit.
    """
    with _LOCK:
        cur = con.cursor()
    try:
        if not _attached_path(cur):
            raise BadInput(_NOT_INSTALLED)
        if not _is_store(cur, CATALOG):
            from dpspin_sql import ledger

            _use_store(cur)
            ledger.check_schema(cur)   # a store whose ledger was dropped on this connection: tampered (exit 1)
            raise BadInput(_NOT_INSTALLED)
        _use_store(cur)
        _SESSIONS.add(cur)
        yield cur
    finally:
        _SESSIONS.discard(cur)
        cur.close()


@contextmanager
def resolve(con) -> Iterator:
    """The connection the library should run on: `con` itself when it is a store connection
    (`store.connect`, a session, or any connection whose database is a dpspin store), an
    installed store's session, or a one-line error naming `install` for a plain DuckDB
    connection. `con` itself runs no query here: another thread may be using it."""
    from dpspin_sql.store import open_connections

    if not isinstance(con, duckdb.DuckDBPyConnection) or con in _SESSIONS or con in open_connections():
        yield con
        return
    with _LOCK:
        probe = con.cursor()   # a fresh cursor sees the database's default catalog
    try:
        own_store = _is_store(probe, None)
    finally:
        probe.close()
    if own_store:
        yield con
        return
    with session(con) as cur:
        yield cur


def user_catalog(con) -> str | None:
    """The catalog a DP statement's own (unqualified) table names are looked up in: the
    default database of `con`'s database instance (the user's, for an installed
    connection; the store itself for a store connection). None for a non-DuckDB object."""
    if not isinstance(con, duckdb.DuckDBPyConnection):
        return None
    with _LOCK:   # a fresh cursor sees the instance's default database (a session's own is the store)
        cur = con.cursor()
    try:
        return cur.execute("SELECT current_database()").fetchall()[0][0]
    finally:
        cur.close()


_NOT_INSTALLED = ("this DuckDB connection has no dpspin store: call dpspin_sql.install(con, 'STORE.duckdb') "
                  "first (it attaches the store as the catalog dpspin and adds nothing to your database), "
                  "or open a store with dpspin_sql.store.connect")


def _attached_path(cur) -> str | None:
    """The file of the catalog `dpspin` ('' when in memory), or None when there is none."""
    rows = cur.execute("SELECT coalesce(path, '') FROM duckdb_databases() WHERE database_name = ?",
                       [CATALOG]).fetchall()
    return rows[0][0] if rows else None


def _is_store(cur, catalog: str | None) -> bool:
    """Whether `catalog` (None: the connection's default) holds the dpspin schema."""
    rows = cur.execute(
        "SELECT count(DISTINCT table_name) FROM duckdb_tables() "
        "WHERE database_name = coalesce(?, current_database()) AND schema_name = 'main' "
        "AND table_name IN (SELECT unnest(?::VARCHAR[]))", [catalog, list(STORE_TABLES)]).fetchall()
    return rows[0][0] == len(STORE_TABLES)


def _attach(cur, path: Path) -> None:
    """ATTACH the store, waiting (like store.connect) while another process holds the file."""
    from dpspin_sql.db import waiting_for_lock

    literal = "'" + str(path).replace("'", "''") + "'"

    def attach() -> None:
        with _LOCK:   # two threads attaching at once: the second finds it attached
            if _attached_path(cur) is None:
                cur.execute(f"ATTACH {literal} AS {CATALOG}")

    waiting_for_lock(attach, path, "attach")


def _use_store(cur) -> None:
    user_db = cur.execute("SELECT current_database()").fetchall()[0][0]
    cur.execute(f"USE {CATALOG}")
    path = [f"{CATALOG}.main"]
    if user_db != CATALOG:
        path.append('"' + user_db.replace('"', '""') + '".main')
    cur.execute("SET search_path = ?", [",".join(path)])


def _budget(cur, dataset: str) -> tuple[float, float]:
    from dpspin_sql import ledger, queries
    from dpspin_sql.db import first_row

    row = first_row(cur.execute(queries.load("ledger_budget"), {"dataset": dataset}))
    return (row[0], row[1]) if row else (ledger.DEFAULT_EPSILON_BUDGET, ledger.DEFAULT_DELTA_BUDGET)



