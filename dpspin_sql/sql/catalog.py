"""The warehouse's table shapes for a two-phase release over the user's own tables.

A statement over the warehouse's own tables (docs/SQL.md, "Your own tables") is audited
against their column types. In the two-phase release (docs/WAREHOUSE.md) the curator has
no DuckDB catalog of the warehouse, so the statement file declares the shapes itself:
CREATE TABLE statements (in the warehouse's dialect, parsed with sqlglot), then the one
DP statement:

    CREATE TABLE reviews (review_id BIGINT, author VARCHAR, body VARCHAR);
    CREATE TABLE theme_scores (review_id BIGINT, theme VARCHAR, score DOUBLE);
    SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...) theme, DPSPIN_MASS(score)
    FROM theme_scores JOIN reviews USING (review_id) GROUP BY theme;

Both phases read the same file, so they audit against the same types and derive the same
request and bounds; the ledger's statement hash covers the declarations too. Only names
and types are read (column definitions; constraints, defaults and options are ignored,
anything else is refused). With the warehouse's catalog file (`--catalog`,
`sql.warehouse_catalog`) the declarations are checked against the warehouse's own column
types, or made from them when the file declares nothing (`audit_for_warehouse`). The declared tables are created, empty, in a private in-memory
DuckDB database, and `sql/own.py` audits the statement against it exactly as against a
user's DuckDB database; the emitted query then names the tables and columns as declared.

The warehouse holds, next to its own tables, the store's `atoms` (the dictionary: the
vector has one row per atom, and text atoms are matched to its labels) and, at user
level, the store's `records` (units with auxiliary records there are left out, as on
DuckDB); `dpspin warehouse push` copies both to PostgreSQL.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import sqlglot
from sqlglot import exp

from dpspin_sql.errors import BadInput
from dpspin_sql.sketch.transpile import guard_int_casts
from dpspin_sql.sql.errors import refuse

MEMORY = "memory"    # the in-memory database's own name (DuckDB's)


@dataclass
class Declared:
    """The declarations: the DuckDB catalog holding them, and the names written unquoted."""

    con: object
    unquoted: set[str]
    tables: dict[tuple[str, str, str], exp.Table]   # (catalog, schema, name) lower -> as declared


def split_statement(text: str, dialect: str) -> tuple[list[exp.Create], str]:
    """(the CREATE TABLE declarations, the DP statement's text). Without declarations the
    text is the statement as it is."""
    from dpspin_sql.sketch.transpile import DIALECTS

    if dialect not in DIALECTS:
        raise BadInput(f"--dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(text)
    except sqlglot.errors.TokenError:
        return [], text
    chunks, start = [], 0
    for token in tokens:
        if token.token_type == sqlglot.tokens.TokenType.SEMICOLON:
            chunks.append(text[start:token.start])
            start = token.end + 1
    chunks.append(text[start:])
    chunks = [c for c in chunks if _code(c, dialect)]
    creates: list[exp.Create] = []
    while chunks and _first_word(chunks[0], dialect) == "CREATE":
        creates.append(_declaration(chunks.pop(0), dialect))
    if not creates:
        return [], text
    if len(chunks) != 1:
        raise BadInput("after the CREATE TABLE declarations the file must hold exactly one DP statement "
                       f"(found {len(chunks)})")
    return creates, chunks[0]


def _code(chunk: str, dialect: str) -> bool:
    try:
        return bool(sqlglot.Dialect.get_or_raise(dialect).tokenize(chunk))
    except sqlglot.errors.TokenError:
        return True


def _first_word(chunk: str, dialect: str) -> str:
    tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(chunk)
    return tokens[0].text.upper() if tokens else ""


def _declaration(chunk: str, dialect: str) -> exp.Create:
    from dpspin_sql.sketch.sqlglot_log import quiet

    try:
        with quiet():
            create = sqlglot.parse_one(chunk, read=dialect)
    except sqlglot.errors.ParseError as exc:
        raise BadInput(f"cannot parse a CREATE TABLE declaration as {dialect}: {str(exc).splitlines()[0]}") from None
    schema = create.this if isinstance(create, exp.Create) else None
    if (not isinstance(create, exp.Create) or str(create.args.get("kind") or "").upper() != "TABLE" or not isinstance(schema, exp.Schema)
            or create.args.get("expression") is not None or not isinstance(schema.this, exp.Table)
            or not all(isinstance(c, exp.ColumnDef) for c in schema.expressions) or not schema.expressions):
        raise BadInput("a declaration must be CREATE TABLE name (column type, ...): the warehouse table's "
                       f"columns and types, nothing else (got: {' '.join(chunk.split())[:80]})")
    return create


def declare(creates: list[exp.Create], dialect: str) -> Declared:
    """The declared tables, empty, in a private in-memory DuckDB database."""
    import duckdb

    con = duckdb.connect(":memory:", config={"enable_external_access": False})   # names and types only
    unquoted: set[str] = set()
    seen: dict[tuple[str, str, str], exp.Table] = {}
    for create in creates:
        schema = create.this
        table = schema.this
        parts = [p for p in (table.args.get("catalog"), table.args.get("db"), table.this) if p is not None]
        for part in parts:
            if not part.args.get("quoted"):
                unquoted.add(part.name)
        catalog = table.catalog or MEMORY
        db = table.db or "main"
        key = (catalog.lower(), db.lower(), table.name.lower())
        if key in seen:
            raise BadInput(f"the table {table.sql(dialect)} is declared twice")
        seen[key] = table

        def q(name: str) -> str:
            return exp.to_identifier(name, quoted=True).sql("duckdb")

        try:
            if catalog != MEMORY and not con.execute("SELECT 1 FROM duckdb_databases() WHERE database_name = ?",
                                                     [catalog]).fetchall():
                con.execute(f"ATTACH ':memory:' AS {q(catalog)}")
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {q(catalog)}.{q(db)}")
            columns = []
            for col in schema.expressions:
                if not col.this.args.get("quoted"):
                    unquoted.add(col.name)
                kind = col.args.get("kind")
                if not isinstance(kind, exp.DataType) or any(
                        not isinstance(n, (exp.DataType, exp.DataTypeParam, exp.Literal, exp.ColumnDef,
                                           exp.Identifier)) for n in kind.walk()):
                    raise BadInput(f"the column {col.name!r} of {table.sql(dialect)} has no plain type")
                columns.append(f"{q(col.name)} {kind.sql('duckdb')}")
            con.execute(f"CREATE TABLE {q(catalog)}.{q(db)}.{q(table.name)} ({', '.join(columns)})")
        except duckdb.Error as exc:
            raise BadInput(f"cannot declare {table.sql(dialect)}: {str(exc).splitlines()[0]}") from None
    return Declared(con, unquoted, seen)


STORE_TABLES = ("assignments", "records", "atoms")   # the store's, in the warehouse under these names


def statement_tables(statement: str) -> tuple[list[exp.Table], set[str]]:
    """(the tables the DP statement reads other than the store's, each once; the lower-case
    names of the columns it names): what a catalog gives declarations for."""
    from dpspin_sql.sql.dialect import parse

    tree = parse(statement)
    seen: dict[tuple[str, str, str], exp.Table] = {}
    for node in tree.find_all(exp.Table):
        if isinstance(node.this, exp.Identifier) and node.name.lower() not in STORE_TABLES:
            key = (node.catalog.lower(), node.db.lower(), node.name.lower())
            seen.setdefault(key, exp.Table(**{k: node.args[k].copy() for k in ("this", "db", "catalog")
                                              if node.args.get(k) is not None}))
    used = {c.name.lower() for c in tree.find_all(exp.Column)} | {
        i.name.lower() for i in tree.find_all(exp.Identifier)}
    return list(seen.values()), used


def catalog_query_for(text: str, dialect: str) -> str:
    """The information_schema query for the tables the file declares (or, without declarations,
    the statement reads): `dpspin sql --catalog-query`."""
    from dpspin_sql.sql.warehouse_catalog import catalog_query

    creates, statement = split_statement(text, dialect)
    tables = [c.this.this for c in creates] if creates else statement_tables(statement)[0]
    if not tables:
        raise BadInput("the statement reads the store's assignments and records and declares no tables; "
                       "--catalog-query lists the columns of the warehouse's own tables")
    return catalog_query(tables, dialect)


def audit_for_warehouse(text: str, dialect: str, catalog=None):
    """(the Audited statement, the declarations or None): the statement audited against the
    declared tables when the text declares any, else as a statement over the store's tables.
    With `catalog` (`sql.warehouse_catalog.Catalog`, the warehouse's own column types) the
    declarations are checked against it, or made from it when the file has none."""
    from dpspin_sql.sql.audit import audit_statement

    creates, statement = split_statement(text, dialect)
    if catalog is not None:
        from dpspin_sql.sql.warehouse_catalog import build_declarations, check_declarations

        if creates:
            check_declarations(creates, catalog, dialect)
        else:
            tables, used = statement_tables(statement)
            if not tables:
                raise BadInput("--catalog checks the warehouse's own tables; the statement reads the store's "
                               "assignments and records (drop --catalog)")
            creates = build_declarations(tables, used, catalog, dialect)
    if not creates:
        return audit_statement(text), None
    declared = declare(creates, dialect)
    from dpspin_sql.sql.dialect import parse

    try:
        tree = parse(statement)
    except Exception:
        tree = None
    if tree is not None:
        for node in tree.walk():
            if isinstance(node, (exp.ReadParquet, exp.ReadCSV)) or (
                    isinstance(node, exp.Table) and not isinstance(node.this, exp.Identifier)):
                refuse("a warehouse statement reads the declared tables; a file or table function is read on "
                       "the duckdb engine only (dpspin sql --db)", node)
            if isinstance(node, exp.With) or (isinstance(node, exp.Subquery) and isinstance(node.parent, (
                    exp.From, exp.Join))):
                refuse("a warehouse statement reads the declared tables themselves; a CTE or a subquery in FROM is "
                       "read on the duckdb engine only (dpspin sql --db)", node)
    audited = audit_statement(statement, declared.con, user_catalog=MEMORY)
    if audited.source.store:
        refuse("the file declares tables but the statement reads the store's assignments and records; "
               "drop the declarations, or read the declared tables", audited.statement)
    return audited, declared


# -- the emitted query over the declared names ------------------------------------------------------

def warehouse_source(audited, declared: Declared, dialect: str):
    """The audited source with the declared names (quoted as declared, the private catalog
    dropped) and, off DuckDB, the atom's TRY_CAST as a range-guarded CAST (total everywhere)."""
    from dpspin_sql.source import SketchSource

    source: SketchSource = audited.source
    if dialect == "postgres":
        if _text_weight(source):
            raise BadInput("the statement cannot be written totally in postgres: the weight column is text, and "
                           "PostgreSQL has no TRY_CAST to read it as a number (declare a numeric weight)")
        from dpspin_sql.errors import AuditRefusal
        from dpspin_sql.sketch.engines.base import admit

        try:
            admit("postgres", audited.filters)
        except AuditRefusal as refusal:   # its location would show the filter's private column names
            raise AuditRefusal(str(refusal).split(" [at ")[0].replace("on the postgres engine", "in postgres")) \
                from None

    def names(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) and node.args.get("catalog"):
            key = (node.catalog.lower(), node.db.lower(), node.name.lower())
            found = declared.tables.get(key)
            if found is None and node.catalog.lower() != MEMORY:
                raise AssertionError(f"the sketch reads an undeclared table {node.sql()}")
            out = found.copy() if found is not None else exp.Table(this=exp.to_identifier(node.name))
            if node.args.get("alias") is not None:
                out.set("alias", node.args["alias"].copy())
            return out   # a declared table as declared; the store's atoms / records unqualified
        if isinstance(node, exp.Identifier) and node.args.get("quoted") and node.name in declared.unquoted:
            return exp.to_identifier(node.name, quoted=False)
        return node

    def fix(rel):
        if rel is None or getattr(rel, "select", None) is None:
            return rel
        return replace(rel, select=guard_int_casts(rel.select.transform(names), dialect))

    return replace(source, assignments=fix(source.assignments), records=fix(source.records))


def _text_weight(source) -> bool:
    for item in source.assignments.select.expressions:
        if item.alias == "weight" and isinstance(item.this, exp.TryCast):
            return True
    return False
