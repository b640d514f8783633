"""The audit: accept only statements it can prove release nothing but the DP plan.

The accepted shape (docs/SQL.md) is narrow on purpose:

    SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (...)
           atom_id [AS x], DPSPIN_MASS(weight) [AS y]          -- in either order
    FROM assignments [AS a] [[INNER] JOIN records [AS r] USING (record_id)]
    [WHERE <per-record predicate>]
    GROUP BY atom_id

The audit is a whitelist over the syntax tree: every clause, node type and column is
checked against what is allowed, and anything else is refused with the offending part
of the statement. A WHERE predicate may only be a deterministic function of one row
(no subqueries, aggregates, windows, parameters or unknown functions), and it must be
*total*: `totality.py` types it and validates every argument that could make it raise,
so no record can make an accepted statement fail (the zero-budget error oracle). Each
of its top-level AND terms must read either records columns (it then selects which
target records enter the sketch) or assignments columns (it selects assignment rows
before the enforced clip). Either way it runs before the bounds are imposed, so it
cannot raise a unit's contribution above the bound the release is charged for.

Every check is static: the audit reads the statement only, never the store, so a
refusal can never depend on the data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from dpspin_sql.errors import BadInput
from dpspin_sql.request import ReleaseRequest
from dpspin_sql.sketch.rewrite import SketchFilters
from dpspin_sql.source import STORE, SketchSource
from dpspin_sql.sql.dialect import DifferentialPrivacy, DpspinMass
from dpspin_sql.sql.errors import refuse
from dpspin_sql.sql.options import DPOptions, read_options, to_request
from dpspin_sql.sql.totality import check_predicate, unqualified

ASSIGNMENTS = "assignments"
RECORDS = "records"
COLUMNS = {
    ASSIGNMENTS: ("record_id", "atom_id", "weight"),
    RECORDS: ("record_id", "user_id", "text", "split", "metadata"),
}

# Select clauses a DP statement may have; every other one is refused by name.
_ALLOWED_SELECT_ARGS = {"hint", "expressions", "from_", "joins", "where", "group"}
_CLAUSE_NAMES = {
    "with_": "WITH (a common table expression)", "order": "ORDER BY", "limit": "LIMIT", "offset": "OFFSET",
    "having": "HAVING", "qualify": "QUALIFY", "distinct": "DISTINCT", "windows": "WINDOW",
    "laterals": "LATERAL", "into": "SELECT INTO", "kind": "SELECT AS STRUCT/VALUE", "exclude": "EXCLUDE",
    "sample": "TABLESAMPLE", "locks": "FOR UPDATE", "settings": "SETTINGS", "prewhere": "PREWHERE",
    "connect": "CONNECT BY", "match": "MATCH_RECOGNIZE", "cluster": "CLUSTER BY",
    "distribute": "DISTRIBUTE BY", "sort": "SORT BY", "operation_modifiers": "a SELECT modifier",
}
_EXPOSING = {"order", "limit", "offset", "having", "qualify", "distinct"}

@dataclass
class Audited:
    """What an accepted statement asks for: the release request and the sketch's filters."""

    options: DPOptions
    request: ReleaseRequest
    records_filter: exp.Expr | None       # columns unqualified, over `records`
    assignments_filter: exp.Expr | None   # columns unqualified, over `assignments`
    statement: exp.Select
    source: SketchSource = field(default=STORE)  # the store's tables, or the user's own (sql/own.py)
    filter_types: tuple[tuple[str, str], ...] | None = None   # the filters' column types (own relations)
    # what one base record is: {protected base relation: its record id column} (sql/rowwise.py);
    # empty for the store's tables, whose record is the records table's row
    record_key: dict[str, str] = field(default_factory=dict)

    @property
    def unit(self) -> str:
        return self.request.unit

    @property
    def filters(self) -> SketchFilters:
        return SketchFilters(self.records_filter, self.assignments_filter, self.filter_types)


def audit_statement(sql: str, con=None, *, user_catalog: str | None = None, files_root=None,
                    public=(), spark_tables=None) -> Audited:
    """Parse (BadInput if unparseable) and audit (AuditRefusal if unsafe) one statement.

    With `con` (the connection the release runs on), a statement may read the user's own
    tables, views and files (sql/own.py); the audit then reads their names and column types
    from the catalog, never their rows (except those of the tables in `public`, which the
    curator declares public: a lookup table, a dictionary). `user_catalog` is the catalog
    unqualified names are looked up in (default: `con`'s own). `spark_tables` (on --engine spark:
    sketch/engines/spark_tables.py `SparkCatalog.columns`) gives the columns of a `spark_table('db.table')`
    from the Spark session's catalog; without it such a relation is refused."""
    from dpspin_sql.sql.dialect import MoreThanOneStatement, parse

    try:
        statement = parse(sql)
    except MoreThanOneStatement as many:
        if any(isinstance(st, exp.Create) for st in many.statements):
            refuse(f"more than one statement (found {len(many.statements)}): CREATE TABLE declarations describe a "
                   "warehouse's tables for --emit-sketch (docs/WAREHOUSE.md); to run the statement here, leave "
                   "them out (it reads the tables of --db and files), or print its sketch with --emit-sketch "
                   "--dialect D", next(st for st in many.statements if isinstance(st, exp.Create)))
        refuse(f"more than one statement (found {len(many.statements)}); run one DP statement at a time",
               many.statements[1])
    return audit(statement, con, user_catalog=user_catalog, files_root=files_root, public=public,
                 spark_tables=spark_tables)


def audit(statement: exp.Expr, con=None, *, user_catalog: str | None = None, files_root=None,
          public=(), spark_tables=None) -> Audited:
    try:
        return _audit(statement, con, user_catalog, files_root, public, spark_tables)
    except RecursionError:  # parse() bounds the depth; this is the last line of defence
        raise BadInput("the SQL statement is nested too deeply to audit") from None


def _audit(statement: exp.Expr, con=None, user_catalog=None, files_root=None, public=(),
           spark_tables=None) -> Audited:
    """One audit over one catalog model (sql/resolve.py): the statement's relations are resolved
    by one resolver, whether they are the store's tables or the user's own, and the rules on
    GROUP BY, the projection and WHERE are written once; `own` only says which names they take."""
    from dpspin_sql.sql.resolve import Catalog, Resolver, check_macros, reads_own_relations

    select = _check_root(statement, with_allowed=con is not None)
    own = con is not None and reads_own_relations(select)
    if con is not None:
        check_macros(con)
        if not own and select.args.get("with_"):
            refuse("WITH (a common table expression) is not allowed in a DP statement over the store's tables",
                   select.args["with_"])
    resolver = Resolver(Catalog(con, user_catalog, files_root, public if own else (), spark_tables), select)
    rels, join = _relations(select, resolver, own)
    scope = _scope(rels, join, own)
    if own:
        atom = _check_group(select, scope, own)
        weight = _check_projections(select, scope, atom, own)
    else:
        atom = (rels[0], "atom_id")
        weight = _check_projections(select, scope, atom, own)
        _check_group(select, scope, own)
    options = read_options(select.args["hint"])
    if own:
        from dpspin_sql.sql.own import audit_own

        return Audited(**audit_own(select, scope, join, atom, weight, options, resolver.cat, _check_where_nodes))
    records_filter, assignments_filter = _check_where(select, scope)
    if "record_id_column" in options.values:
        refuse("record_id_column names the record id of a relation of your own; the store's record id is "
               "record_id", options.nodes["record_id_column"])
    unit = _privacy_unit(options, scope)
    return Audited(options, to_request(options, unit, select.args["hint"]), records_filter, assignments_filter,
                   select)


# -- statement and clauses ---------------------------------------------------------------

def _check_root(statement: exp.Expr, with_allowed: bool = False) -> exp.Select:
    if isinstance(statement, exp.SetOperation):
        refuse(f"{statement.key.upper()}: a DP statement is one SELECT; a set operation could append "
               "rows the plan does not account for", statement.expression)
    if isinstance(statement, exp.Subquery):
        refuse("a parenthesised statement; write the DP SELECT at top level", statement)
    if not isinstance(statement, exp.Select):
        refuse(f"only SELECT WITH DIFFERENTIAL_PRIVACY statements are run, not {statement.key.upper()}",
               statement)
    hint = statement.args.get("hint")
    if not isinstance(hint, DifferentialPrivacy):
        if hint is not None:
            refuse("query hints are not allowed", hint)
        refuse("the statement has no WITH DIFFERENTIAL_PRIVACY OPTIONS (...) clause after SELECT; write "
               "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace') atom_id, "
               "DPSPIN_MASS(weight) FROM assignments GROUP BY atom_id (docs/SQL.md)", statement)
    for key, value in statement.args.items():
        if key in _ALLOWED_SELECT_ARGS or not value or (key == "with_" and with_allowed):
            continue
        clause = _CLAUSE_NAMES.get(key, key.upper())
        if key in _EXPOSING:
            why = (f"{clause} exposes something other than the released plan; leave it out "
                   "(the plan's atoms, order and length are set by the mechanism and the option top)")
        else:
            why = f"{clause} is not allowed in a DP statement"
        refuse(why, value if isinstance(value, exp.Expression) else statement)
    if statement.comments or any(n.comments for n in statement.walk() if n is not statement):
        _strip_comments(statement)
    if not statement.args.get("from_"):
        refuse("the statement has no FROM assignments", statement)
    return statement


def _strip_comments(node: exp.Expr) -> None:
    """Comments never reach generated SQL (a comment can hold `*/`)."""
    for sub in node.walk():
        sub.comments = None


def _relations(select: exp.Select, resolver, own: bool) -> tuple[list, exp.Join | None]:
    """The statement's relations (FROM, and its one JOIN), through the one resolver."""
    joins = select.args.get("joins") or []
    if own:
        if len(joins) > 1:
            refuse("more than one JOIN; a DP statement joins one records-like relation at most once", joins[1])
        rels = [resolver.relation(select.args["from_"].this, "FROM")]
        if joins:
            rels.append(resolver.relation(joins[0].this, "JOIN"))
        return rels, (joins[0] if joins else None)
    rels = [_store_table(select.args["from_"].this, ASSIGNMENTS, "FROM", resolver)]
    if len(joins) > 1:
        refuse("more than one JOIN; a DP statement joins records USING (record_id) at most once", joins[1])
    for join in joins:
        for key, value in join.args.items():
            if key in ("this", "using") or not value:
                continue
            if key == "kind" and str(value).upper() == "INNER":
                continue
            if key == "on":
                refuse("JOIN ... ON; join records with USING (record_id)", value)
            refuse(f"a {str(value).upper() if isinstance(value, str) else key.upper()} join; "
                   "only [INNER] JOIN records USING (record_id) is allowed", join)
        rels.append(_store_table(join.this, RECORDS, "JOIN", resolver))
        using = join.args.get("using") or []
        if len(using) != 1 or not isinstance(using[0], (exp.Identifier, exp.Column)) \
                or using[0].name.lower() != "record_id":
            refuse("join records with USING (record_id) exactly", join)
    return rels, (joins[0] if joins else None)


def _store_table(table: exp.Expr, expected: str, where: str, resolver):
    """The store's `expected` table as the resolver models it, or the refusal that says why not."""
    if isinstance(table, (exp.Subquery, exp.Select)):
        refuse(f"a subquery in {where}; a DP statement reads the tables {ASSIGNMENTS} and {RECORDS} only", table)
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        refuse(f"{where} reads something other than a table ({ASSIGNMENTS}/{RECORDS} only)", table)
    name = table.name.lower()
    if table.args.get("db") or table.args.get("catalog"):
        refuse(f"a qualified table name in {where}; use {expected}", table)
    if name != expected:
        if name in (ASSIGNMENTS, RECORDS):
            refuse(f"{where} must read {expected}, not {name}", table)
        refuse(f"reads table {table.name!r}, which is not allowed; a DP statement reads "
               f"{ASSIGNMENTS} and {RECORDS} only (or, run on a connection, tables of your own)", table)
    for key, value in table.args.items():
        if key not in ("this", "alias") and value:
            refuse(f"table modifiers ({key}) are not allowed in {where}", table)
    alias = table.args.get("alias")
    if alias is not None and (alias.args.get("columns") or not alias.name):
        refuse("column aliases on a table are not allowed", table)
    return resolver.store_relation(table, expected)


def _scope(rels: list, join: exp.Join | None, own: bool):
    from dpspin_sql.sql.resolve import Scope

    if own:
        u = (join.args.get("using") or []) if join is not None else []
        using = u[0].name.lower() if len(u) == 1 and isinstance(u[0], (exp.Identifier, exp.Column)) else None
        return Scope(rels, using)

    def hint(column: exp.Column) -> None:
        if column.name.lower() in COLUMNS[RECORDS]:
            refuse(f"column {column.name!r} is in records; JOIN records USING (record_id) to use it", column)

    return Scope(rels, "record_id", noun="table", hint=hint)


def _check_projections(select: exp.Select, scope, atom, own: bool):
    """The projection is the atom column and DPSPIN_MASS of a weight column, each exactly once;
    returns the weight (relation, column). Over the store both are fixed: atom_id and weight."""
    plan = "the atom column and DPSPIN_MASS(weight)" if own else "atom_id, DPSPIN_MASS(weight)"
    n_atom = n_mass = 0
    weight = None
    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(item, exp.Alias) and not isinstance(item.args.get("alias"), exp.Identifier):
            refuse("a projection alias must be a plain name", item)
        if isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star)):
            refuse(f"SELECT * would expose rows; project {plan}", item)
        if isinstance(node, exp.Column):
            rel, name = scope.resolve(node, "the projection")
            if rel is not atom[0] or name != atom[1]:
                shown = node.sql() if own else f"{rel.label}.{name}"
                refuse(f"column {shown} would reach the output; the output is the released plan only "
                       f"({'the GROUP BY atom column and DPSPIN_MASS of a weight' if own else plan})", item)
            n_atom += 1
            continue
        if isinstance(node, DpspinMass):
            arg = node.this
            if set(k for k, v in node.args.items() if v) != {"this"} or not isinstance(arg, exp.Column):
                refuse(f"DPSPIN_MASS takes {'one weight column' if own else 'the weight column'} only", node)
            weight = scope.resolve(arg, "DPSPIN_MASS")
            if not own and (weight[0].store, weight[1]) != (ASSIGNMENTS, "weight"):
                refuse("DPSPIN_MASS takes the assignments' weight column only", arg)
            n_mass += 1
            continue
        _refuse_projection(item, node)
    if n_atom != 1 or n_mass != 1:
        exactly = "the atom column (the GROUP BY column) and DPSPIN_MASS(weight)" if own else \
            "atom_id and DPSPIN_MASS(weight)"
        refuse(f"the projection must be exactly {exactly}", select.expressions[0] if select.expressions else select)
    return weight


def _refuse_projection(item: exp.Expr, node: exp.Expr) -> None:
    if isinstance(node, exp.Window):
        refuse("a window function in the projection; the only aggregate is DPSPIN_MASS(weight)", item)
    if node.find(exp.Subquery, exp.Select, exp.Exists):
        refuse("a subquery in the projection could smuggle a unit's data into the output", item)
    if isinstance(node, exp.AggFunc):
        refuse(f"aggregate {node.key.upper()} is not the DP mass; the only aggregate is DPSPIN_MASS(weight)", item)
    if node.find(DpspinMass):
        refuse("an expression over DPSPIN_MASS; the plan carries the mass as released", item)
    if node.find(exp.AggFunc):
        refuse("an aggregate other than DPSPIN_MASS(weight)", item)
    refuse("projection exposes something other than the released plan (atom_id, DPSPIN_MASS(weight))", item)


def _check_group(select: exp.Select, scope, own: bool):
    """GROUP BY the atom column alone (over the store: atom_id); returns it (relation, column)."""
    group = select.args.get("group")
    what = "the atom column" if own else "atom_id"
    if group is None:
        refuse("GROUP BY <atom column> is required: end the statement with GROUP BY the column that names the atom"
               if own else "GROUP BY atom_id is required: end the statement with GROUP BY atom_id", select)
    for key, value in group.args.items():
        if key != "expressions" and value:
            refuse(f"GROUP BY {key.upper()} is not allowed; GROUP BY {what} only", group)
    keys = group.expressions
    if own:
        if len(keys) != 1 or not isinstance(keys[0], exp.Column):
            refuse("GROUP BY must be one column, the atom; grouping by anything else releases other groups", group)
        return scope.resolve(keys[0], "GROUP BY")
    if len(keys) != 1:
        refuse("GROUP BY must be atom_id alone", group)
    key = keys[0]
    if not isinstance(key, exp.Column) or _store_column(scope.resolve(key, "GROUP BY")) != (ASSIGNMENTS, "atom_id"):
        refuse("GROUP BY must be atom_id alone; grouping by anything else releases other groups", key)
    return scope.resolve(key, "GROUP BY")


def _store_column(resolved) -> tuple[str, str]:
    rel, name = resolved
    return rel.store, name


def _check_where(select: exp.Select, scope) -> tuple[exp.Expr | None, exp.Expr | None]:
    """The store's filters: the checks every filter gets (`_check_where_nodes`, totality with the
    columns' types), then each AND term to the table it reads (unqualified, as the store query
    names its columns)."""
    where = select.args.get("where")
    if where is None:
        return None, None
    _check_where_nodes(where)
    for node in where.this.walk():
        if isinstance(node, exp.Column):
            scope.resolve(node, "WHERE")
    # totality: the filter is typed and every argument that could make it raise is checked,
    # so that no record can make the query fail (sql/totality.py)
    check_predicate(where.this, lambda column: _store_column(scope.resolve(column, "WHERE")))
    on_records, on_assignments = [], []
    for term in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        tables = {scope.resolve(c, "WHERE")[0].store for c in term.find_all(exp.Column)}
        names = {scope.resolve(c, "WHERE")[1] for c in term.find_all(exp.Column)}
        if tables <= {RECORDS} or names <= {"record_id"}:
            on_records.append(unqualified(term))
        elif tables == {ASSIGNMENTS}:
            on_assignments.append(unqualified(term))
        else:
            refuse("a WHERE term mixes records and assignments columns; split it into AND-ed terms "
                   "that each read one table", term)
    return _conjoin(on_records), _conjoin(on_assignments)


def _check_where_nodes(where: exp.Where) -> None:
    """What no filter may hold, whatever it reads: subqueries, windows, aggregates, parameters."""
    for node in where.this.walk():  # the reasons that name a construct come first, whatever holds it
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists, exp.SetOperation)):
            refuse("a subquery in WHERE could read other rows or tables; a filter reads one row", node)
    for node in where.this.walk():
        if isinstance(node, exp.Window):
            refuse("a window function in WHERE reads other rows; a filter reads one row", node)
        if isinstance(node, exp.AggFunc):
            refuse(f"aggregate {node.key.upper()} in WHERE reads other rows; a filter reads one row", node)
        if isinstance(node, (exp.Placeholder, exp.Parameter)):
            refuse("parameters are not allowed in WHERE", node)


def _conjoin(terms: list[exp.Expr]) -> exp.Expr | None:
    if not terms:
        return None
    return exp.and_(*terms, copy=False) if len(terms) > 1 else terms[0]


def _privacy_unit(options: DPOptions, scope) -> str:
    column = options.get("privacy_unit_column")
    if column is None:
        return "record"
    node = options.nodes["privacy_unit_column"]
    if column.table:
        table = next((r.store for r in scope.rels if r.qualifier == column.table.lower()), None)
        if table is None:
            refuse(f"privacy_unit_column {column.sql()}: {column.table!r} is not a table of this statement", node)
    else:
        table = RECORDS if column.name.lower() in COLUMNS[RECORDS] else ASSIGNMENTS
    name = column.name.lower()
    if name == "user_id" and table == RECORDS:
        return "user"
    if name == "record_id":
        return "record"
    refuse(f"privacy_unit_column = {column.sql()} is not a privacy unit of the store: use user_id "
           "(user level) or record_id / omit it (record level)", node)
