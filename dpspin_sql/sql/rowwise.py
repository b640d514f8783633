"""Row-wise by construction: every relation a DP statement reads, expanded and checked
(docs/SQL.md, "Views, CTEs and subqueries"; the argument is docs/DESIGN.md §10).

The sketch bounds what one *record* of the rows it reads can change. A statement over a view
reads the view's rows, and the guarantee is owed to the base records under it: so every
relation a statement reads — views (recursively, as DuckDB stores them), their CTEs and
subqueries, the statement's own CTEs and FROM subqueries — is expanded to its definition and
accepted only when each of its rows is a function of one row of each protected base relation
(a table of the user's that the curator has not declared public, or a file):

- a SELECT of total per-row values (the filter grammar of sql/totality.py, plus a searched
  CASE and a CAST that cannot fail) FROM base relations, views, CTEs and subqueries that are
  themselves row-wise, joined INNER, CROSS or LEFT, filtered by a total per-row WHERE;
- a UNION ALL of such relations;
- read_parquet/read_csv of one literal path under the files root;
- any query at all over public tables alone (aggregates over a lookup table are fine): it is
  run once in full while the statement is audited, reading public rows only.

Everything whose rows can depend on other rows is refused with one line naming the relation
and the construct: window functions, aggregates and GROUP BY, DISTINCT, scalar/EXISTS/IN
subqueries, LIMIT/OFFSET/QUALIFY, ORDER BY, set operations other than UNION ALL, sampling,
nondeterministic or unknown functions (macros among them), table functions other than the
file readers, recursive CTEs, LATERAL, PIVOT.

Row-wise is not enough when a join can pair one row with rows of *other* records, so each
relation also says, per output column, whether the column can be the record id
(`Derived.keys`): a column can when it is a base column passed through unchanged, and every
protected relation joined in is tied to it by equality on its own key column (int = int, text
= text compared binary, uuid = uuid — no conversion can make two ids equal). Then every row
of the relation carries one base record's id, in every protected relation it reads, and the
sketch's per-record enforcement (keyed on that id) bounds the record's whole contribution,
however many rows a join fans it out to. The statement refuses a record id that cannot be
one, saying why.

The relation is then *emitted*: our own SQL, with every name fully qualified as resolved,
every value in its total form (sql/totality.py), key equalities raw, stars expanded, USING
written as ON. The sketch runs exactly what was audited; DuckDB never runs the view's own
text. `resolve.py` cross-checks with DuckDB's binder that the original and the emitted SQL
scan the same tables (sql/binder.py).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import NoReturn

from sqlglot import exp

from dpspin_sql.errors import AuditRefusal
from dpspin_sql.sketch.totality import BOOL, DATE, DOUBLE, INT, JSON, NULL, NUMERIC, TEXT, total_form
from dpspin_sql.sql import totality as t
from dpspin_sql.sql.delta import is_delta_scan
from dpspin_sql.sql.errors import refuse, snippet

ROWWISE = True      # the row-wise rule; tests/test_sql_views.py switches it off to show the fuzzer catches that
MAX_DEPTH = 16      # views, CTEs and subqueries nested in one another
MAX_RELATIONS = 256  # relations expanded for one statement
KEY_KINDS = ("int", "text", "uuid")


def kind_of(dtype: str) -> str:
    """A DuckDB column type's class: int, float, text, bool, date, json, uuid or other."""
    import re

    t = str(dtype).upper().strip()
    if re.fullmatch(r"TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT", t):
        return "int"
    if re.fullmatch(r"FLOAT|DOUBLE|REAL|DECIMAL(\(\d+,\s*\d+\))?", t):
        return "float"
    return {"VARCHAR": "text", "BOOLEAN": "bool", "DATE": "date", "JSON": "json", "UUID": "uuid"}.get(t, "other")


_CHECKER_KIND = {"int": INT, "float": DOUBLE, "text": TEXT, "bool": BOOL, "date": DATE, "json": JSON}


def checker_kind(dtype: str | None) -> str:
    """The type sql/totality.py's checker sees a column of DuckDB type `dtype` as."""
    if dtype is None:
        return NULL
    return _CHECKER_KIND.get(kind_of(dtype), str(dtype).upper())


@dataclass
class Derived:
    """One relation as the audit read it: its emitted SQL and, per output column, its name,
    type, and whether it can be the record id (`keys`: {base id: base column} of every
    protected base relation it reads, or None with the reason in `why`)."""

    sql: exp.Expr                 # a qualified Table (base, file) or a query
    columns: list[str]
    kinds: list[str]                    # the checker's types
    physical: list[str | None]          # DuckDB types where the column passes a base column through
    public: bool
    keys: list[dict[str, str] | None]
    why: list[str | None]
    label: str
    bases: dict[str, str] = field(default_factory=dict)    # protected base id -> label

    def from_item(self, alias: str) -> exp.Expr:
        if isinstance(self.sql, exp.Table):
            out = self.sql.copy()
            out.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
            return out
        return exp.Subquery(this=self.sql.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))

    def as_query(self) -> exp.Expr:
        if isinstance(self.sql, exp.Table):
            return exp.select(*[_q(c) for c in self.columns]).from_(self.sql.copy())
        return self.sql.copy()

    def renamed(self, names: list[str], label: str | None = None) -> Derived:
        if [n for n in names] == self.columns:
            return replace(self, label=label or self.label)
        sel = exp.select(*[exp.alias_(exp.column(_id(old), table=_id("s")), _id(new))
                           for old, new in zip(self.columns, names)]).from_(self.from_item("s"))
        return replace(self, sql=sel, columns=list(names), label=label or self.label)

    def index(self, name: str) -> list[int]:
        return [i for i, c in enumerate(self.columns) if c.lower() == name.lower()]


def _id(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def _q(name: str, table: str | None = None) -> exp.Column:
    return exp.column(_id(name), table=_id(table) if table is not None else None)


@dataclass
class Context:
    """Where a query is read: the catalog and schema its unqualified names bind in first (a
    view's own; None for the statement), its visible CTEs, and its name for messages."""

    catalog: str | None
    schema: str | None
    label: str
    statement: bool = False
    ctes: dict = field(default_factory=dict)    # lower name -> (tree, Context, column aliases)
    depth: int = 0

    def under(self, label: str) -> Context:
        if self.depth >= MAX_DEPTH:
            refuse(f"{self.label}: views, CTEs and subqueries nested more than {MAX_DEPTH} deep", None)
        return replace(self, label=label, depth=self.depth + 1)


# what a SELECT may have in a row-wise relation; every other clause is named
_SELECT_ARGS = {"expressions", "from_", "joins", "where", "with_", "hint"}
_CLAUSES = {
    "group": "GROUP BY (an aggregate)", "having": "HAVING", "distinct": "DISTINCT", "order": "ORDER BY",
    "limit": "LIMIT", "offset": "OFFSET", "qualify": "QUALIFY", "windows": "WINDOW", "sample": "TABLESAMPLE",
    "laterals": "LATERAL", "pivots": "PIVOT", "kind": "SELECT AS STRUCT", "into": "SELECT INTO",
    "locks": "FOR UPDATE", "connect": "CONNECT BY", "match": "MATCH_RECOGNIZE", "prewhere": "PREWHERE",
    "settings": "SETTINGS", "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "sort": "SORT BY",
}
_WHY = "reads other rows"
_RULE = "a relation a DP statement reads must be row-wise (docs/SQL.md, Views)"


class Expander:
    """Expands, checks and emits the relations of one statement over `cat` (resolve.Catalog)."""

    def __init__(self, cat):
        self.cat = cat
        self.relations = 0
        self.tables: set[tuple[str, str, str]] = set()   # every base table the emitted SQL scans
        self._views: dict[tuple[str, str, str], Derived] = {}
        self._active: set[tuple[str, str, str]] = set()
        self._public_views: dict[tuple[str, str, str], bool] = {}

    # -- refusals -----------------------------------------------------------------------------------
    @staticmethod
    def refuse(ctx: Context, reason: str, node: exp.Expr | None = None) -> NoReturn:
        if ctx.statement or node is None:
            refuse(f"{ctx.label}: {reason}", node if ctx.statement else None)
        refuse(f"{ctx.label}: {reason} ({snippet(node)})", None)

    def _construct(self, ctx: Context, what: str, node: exp.Expr) -> NoReturn:
        self.refuse(ctx, f"{what} {_WHY}; {_RULE}", node)

    @staticmethod
    @contextmanager
    def labelled(ctx: Context, names: dict[str, str], node: exp.Expr):
        """A refusal of the type checker, said of the relation it is in: its name first, the
        emitted column names (s0."x") as the query wrote them, the view's own position dropped."""
        try:
            yield
        except AuditRefusal as refusal:
            text = str(refusal).removeprefix("SQL audit refused: ")
            for emitted, alias in names.items():
                text = text.replace(f'"{emitted}".', f"{alias}.")
            if not ctx.statement:
                reason, _, where = text.partition(" [at")
                text = f"{reason} ({where.split(': ', 1)[-1].rstrip(']')})" if where else reason
                raise AuditRefusal(f"SQL audit refused: {ctx.label}: {text}") from None
            raise AuditRefusal(f"SQL audit refused: {ctx.label}: {text}") from None

    # -- relations ----------------------------------------------------------------------------------
    def relation(self, item: exp.Expr, ctx: Context) -> Derived:
        """One FROM/JOIN item (without its joins)."""
        self.relations += 1
        if self.relations > MAX_RELATIONS:
            self.refuse(ctx, f"more than {MAX_RELATIONS} relations to expand")
        alias = item.args.get("alias")
        if isinstance(item, exp.Table):
            for key, value in item.args.items():
                if key not in ("this", "db", "catalog", "alias", "joins") and value and ROWWISE:
                    self.refuse(ctx, f"a table modifier ({_CLAUSES.get(key, key)}) is not allowed", item)
            if isinstance(item.this, exp.Identifier):
                derived = self._named(item, ctx)
            elif isinstance(item.this, (exp.ReadParquet, exp.ReadCSV)) or is_delta_scan(item.this):
                derived = self._file(item.this, ctx)
            else:
                name = item.this.sql("duckdb").split("(")[0] if isinstance(item.this, exp.Expr) else "?"
                self.refuse(ctx, f"reads the table function {name}; the only table functions a DP statement may "
                                 "read are read_parquet('path'), read_csv('path') and delta_scan('path') (query, "
                                 "query_table and table macros included)", item)
        elif isinstance(item, exp.Subquery):
            for key, value in item.args.items():
                if key not in ("this", "alias") and value:
                    self._construct(ctx, _CLAUSES.get(key, key.upper()), item)
            derived = self.query(item.this, ctx.under(f"{ctx.label}, a subquery in FROM"))
        elif isinstance(item, exp.Values):
            derived = self._public_relation(exp.select("*").from_(item.copy()), ctx)
            alias = None
        else:
            what = {"lateral": "LATERAL", "unnest": "UNNEST", "pivot": "PIVOT"}.get(item.key, item.key.upper())
            self.refuse(ctx, f"reads {what}, which is not a table, a view, a file or a row-wise subquery", item)
        if alias is not None and alias.args.get("columns"):
            names = [c.name for c in alias.args["columns"]]
            if len(names) > len(derived.columns):
                self.refuse(ctx, f"{len(names)} column aliases for a relation of {len(derived.columns)} columns", item)
            derived = derived.renamed(names + derived.columns[len(names):])
        return derived

    def _named(self, item: exp.Table, ctx: Context) -> Derived:
        name = item.name
        if not item.args.get("db") and not item.args.get("catalog") and name.lower() in ctx.ctes:
            tree, cte_ctx, names = ctx.ctes[name.lower()]
            derived = self.query(tree, cte_ctx.under(f"{ctx.label}, CTE {name}"))
            return derived.renamed(names + derived.columns[len(names):]) if names else derived
        found = self.cat.lookup(item, ctx)
        if found is None:
            self.refuse(ctx, f"there is no table or view {item.sql('duckdb')}", item)
        reason = self.cat.forbidden(found)
        if reason:
            self.refuse(ctx, f"reads {reason}; a DP statement reads the store's assignments and records "
                             "unqualified, or tables of your own", item)
        if found.is_view:
            return self.view(found, ctx)
        return self._base(found)

    def _base(self, found) -> Derived:
        cols = self.cat.columns(found)
        key = found.key
        self.tables.add(key)
        public = self.cat.is_public(found)
        names = [c for c, _ in cols]
        ident = found.label
        return Derived(sql=found.table(), columns=names, kinds=[checker_kind(t) for _, t in cols],
                       physical=[t for _, t in cols], public=public,
                       keys=[{} if public else {ident: c} for c in names], why=[None] * len(names),
                       label=f"table {found.label}", bases={} if public else {ident: f"table {found.label}"})

    def _file(self, fn: exp.Expr, ctx: Context) -> Derived:
        scan, cols, label = self.cat.file(fn, ctx)
        names = [c for c, _ in cols]
        return Derived(sql=scan, columns=names, kinds=[checker_kind(t) for _, t in cols], physical=[t for _, t in cols],
                       public=False, keys=[{label: c} for c in names], why=[None] * len(names), label=label,
                       bases={label: label})

    def view(self, found, ctx: Context | None = None) -> Derived:
        """A view of the user's, read from DuckDB's catalog and expanded."""
        key = found.key
        if key in self._views:
            return self._views[key]
        if key in self._active:
            refuse(f"view {found.label} reads itself", None)
        label = f"view {found.label}"
        depth = ctx.depth + 1 if ctx is not None else 0
        if depth > MAX_DEPTH:
            refuse(f"{label}: views nested more than {MAX_DEPTH} deep", None)
        self._active.add(key)
        try:
            query = self.cat.view_query(found)
            vctx = Context(catalog=found.catalog, schema=found.schema, label=label, depth=depth)
            derived = self.query(query, vctx)
        finally:
            self._active.discard(key)
        names = [c for c, _ in self.cat.columns(found)]
        if len(names) != len(derived.columns):
            refuse(f"{label}: DuckDB reads it with {len(names)} columns, the audit with {len(derived.columns)}", None)
        derived = derived.renamed(names, label)
        self._views[key] = derived
        return derived

    # -- queries ------------------------------------------------------------------------------------
    def query(self, tree: exp.Expr, ctx: Context) -> Derived:
        if isinstance(tree, exp.Subquery):
            for key, value in tree.args.items():
                if key not in ("this", "alias") and value and ROWWISE:
                    self._construct(ctx, _CLAUSES.get(key, key.upper()), tree)
            return self.query(tree.this, ctx)
        with_ = tree.args.get("with_")
        if with_ is not None:
            if with_.args.get("recursive"):
                self.refuse(ctx, "a recursive CTE (WITH RECURSIVE) reads the rows it produces; " + _RULE, with_)
            ctes = dict(ctx.ctes)
            for cte in with_.expressions:
                alias = cte.args.get("alias")
                names = [c.name for c in alias.args.get("columns") or []] if alias is not None else []
                ctes[cte.alias_or_name.lower()] = (cte.this, replace(ctx, ctes=dict(ctes)), names)
            tree = tree.copy()
            tree.set("with_", None)
            ctx = replace(ctx, ctes=ctes)
        if self.is_public(tree, ctx):
            return self._public_relation(tree, ctx)
        if not ROWWISE:
            return self._unchecked(tree, ctx)
        if isinstance(tree, exp.Union):
            if tree.args.get("distinct"):
                self._construct(ctx, "UNION (without ALL, which removes duplicates across rows)", tree)
            for key in ("by_name", "side", "kind", "on"):
                if tree.args.get(key):
                    self.refuse(ctx, f"UNION ALL {key.upper().replace('_', ' ')} is not allowed; {_RULE}", tree)
            for key, value in tree.args.items():
                if key not in ("this", "expression", "distinct", "by_name", "side", "kind", "on") and value:
                    self._construct(ctx, f"{_CLAUSES.get(key, key.upper())} on a UNION ALL", tree)
            return self._union(self.query(tree.this, ctx), self.query(tree.expression, ctx), ctx, tree)
        if isinstance(tree, exp.SetOperation):
            self._construct(ctx, f"{tree.key.upper()} (a set operation other than UNION ALL)", tree)
        if not isinstance(tree, exp.Select):
            self.refuse(ctx, f"{tree.key.upper()} is not a query a DP statement can read", tree)
        return self.select(tree, ctx)

    def _union(self, left: Derived, right: Derived, ctx: Context, node) -> Derived:
        if len(left.columns) != len(right.columns):
            self.refuse(ctx, f"UNION ALL of {len(left.columns)} and {len(right.columns)} columns", node)
        kinds, physical, keys, why = [], [], [], []
        for i, name in enumerate(left.columns):
            a, b = left.kinds[i], right.kinds[i]
            if a == b or NULL in (a, b):
                kinds.append(b if a == NULL else a)
            elif {a, b} <= NUMERIC:
                kinds.append(DOUBLE)
            else:
                self.refuse(ctx, f"UNION ALL of {a} and {b} in column {name!r}: DuckDB would convert one side on "
                                 "every row; convert explicitly", node)
            physical.append(left.physical[i] if left.physical[i] == right.physical[i] else None)
            k, w = _merge([left.keys[i], right.keys[i]])
            keys.append(k)
            why.append(left.why[i] or right.why[i] or w)
        sql = exp.union(left.as_query(), right.as_query(), distinct=False)
        return Derived(sql=sql, columns=list(left.columns), kinds=kinds, physical=physical,
                       public=left.public and right.public, keys=keys, why=why, label=ctx.label,
                       bases=left.bases | right.bases)

    # -- public relations ---------------------------------------------------------------------------
    def is_public(self, tree: exp.Expr, ctx: Context) -> bool:
        """Whether every relation `tree` reads is a public table (or reads public tables only)."""
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                return False            # a file or a table function
            name = table.name.lower()
            if not table.args.get("db") and not table.args.get("catalog") and (name in ctes or name in ctx.ctes):
                if name in ctes and self.cat.lookup(table, ctx) is not None:
                    return False        # a CTE named like a table: which one a reference means is not proven
                if name in ctx.ctes and name not in ctes:
                    sub, sub_ctx, _ = ctx.ctes[name]
                    if not self.is_public(sub, sub_ctx):
                        return False
                continue
            found = self.cat.lookup(table, ctx)
            if found is None or self.cat.forbidden(found):
                return False
            if found.is_view:
                if not self._view_public(found):
                    return False
            elif not self.cat.is_public(found):
                return False
        return True

    def _view_public(self, found) -> bool:
        if found.key not in self._public_views:
            self._public_views[found.key] = False   # a cycle is not public
            self._public_views[found.key] = self.is_public(
                self.cat.view_query(found), Context(catalog=found.catalog, schema=found.schema, label=found.label))
        return self._public_views[found.key]

    def _public_relation(self, tree: exp.Expr, ctx: Context) -> Derived:
        """A query over public tables only: qualified, run once in full, typed by DuckDB."""
        sql = self._qualified(tree.copy(), ctx)
        cols = self.cat.run_public(sql, ctx)
        names = [c for c, _ in cols]
        return Derived(sql=sql, columns=names, kinds=[checker_kind(t) for _, t in cols],
                       physical=[t for _, t in cols], public=True, keys=[{} for _ in names], why=[None] * len(names),
                       label=ctx.label)

    def _qualified(self, tree: exp.Expr, ctx: Context) -> exp.Expr:
        """`tree` with every table name fully qualified as the audit resolved it (views of the
        user's by their qualified name); CTEs of an enclosing query it reads are prepended."""
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        outer: dict[str, exp.Expr] = {}
        for table in list(tree.find_all(exp.Table)):
            if not isinstance(table.this, exp.Identifier):
                continue
            name = table.name.lower()
            if not table.args.get("db") and not table.args.get("catalog") and (name in ctes or name in ctx.ctes):
                if name in ctx.ctes and name not in ctes and name not in outer:
                    sub, sub_ctx, names = ctx.ctes[name]
                    derived = self._public_relation(sub, sub_ctx)
                    if names:
                        derived = derived.renamed(names + derived.columns[len(names):])
                    outer[name] = derived.as_query()
                continue
            found = self.cat.lookup(table, ctx)
            if found is None:
                self.refuse(ctx, f"there is no table or view {table.sql('duckdb')}", table)
            if found.is_view:
                self._collect_view_tables(found)
            else:
                self.tables.add(found.key)
            if table.args.get("alias") is None:
                table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
            qualified = found.table()   # in place: the table keeps its joins, sample, ... (in a DuckDB-stored
            for key in ("this", "db", "catalog"):   # view a table holds the joins of its parenthesised join)
                table.set(key, qualified.args[key])
        if outer:
            if not isinstance(tree, exp.Query):
                tree = exp.select("*").from_(exp.Subquery(this=tree))
            with_ = tree.args.get("with_")
            defined = [exp.CTE(this=q, alias=exp.TableAlias(this=exp.to_identifier(n))) for n, q in outer.items()]
            tree.set("with_", exp.With(expressions=defined + (list(with_.expressions) if with_ is not None else [])))
        return tree

    def _collect_view_tables(self, found) -> None:
        query = self.cat.view_query(found)
        self._qualified(query, Context(catalog=found.catalog, schema=found.schema, label=found.label))

    # -- SELECT -------------------------------------------------------------------------------------
    def select(self, sel: exp.Select, ctx: Context) -> Derived:
        for key, value in sel.args.items():
            if key not in _SELECT_ARGS and value:
                what = _CLAUSES.get(key, key.upper())
                self._construct(ctx, what, value if isinstance(value, exp.Expr) else sel)
        hint = sel.args.get("hint")
        if hint is not None:
            self.refuse(ctx, "query hints are not allowed", hint)
        if not sel.args.get("from_"):
            self.refuse(ctx, "a SELECT without FROM is not a relation over your tables", sel)
        scope = _Scope(self, ctx)
        scope.add(sel.args["from_"].this, None)
        for join in sel.args.get("joins") or []:
            scope.add(join.this, join)
        for node in (*sel.expressions, sel.args.get("where"), *scope.conditions()):
            if node is not None:
                self._row_constructs(node, ctx)
        items = scope.projection(sel.expressions)
        where_terms = _conjuncts(sel.args["where"].this) if sel.args.get("where") is not None else []
        return scope.emit(items, where_terms)

    def _row_constructs(self, node: exp.Expr, ctx: Context) -> None:
        """The constructs that read other rows, named before the type checker sees them."""
        for sub in node.walk():
            if isinstance(sub, (exp.Subquery, exp.Select, exp.Exists)) or (
                    isinstance(sub, (exp.In, exp.Any, exp.All)) and (sub.args.get("query") is not None
                                                                     or sub.find(exp.Subquery, exp.Select))):
                kind = "an EXISTS subquery" if isinstance(sub, exp.Exists) else \
                    "an IN/ANY subquery" if isinstance(sub, (exp.In, exp.Any, exp.All)) else "a scalar subquery"
                self._construct(ctx, kind, sub)
        for sub in node.walk():
            if isinstance(sub, exp.Window):
                self._construct(ctx, "a window function", sub)
            if isinstance(sub, exp.AggFunc):
                self._construct(ctx, f"the aggregate {sub.key.upper()}", sub)
            if isinstance(sub, (exp.Placeholder, exp.Parameter)):
                self.refuse(ctx, "parameters are not allowed", sub)

    def _unchecked(self, tree: exp.Expr, ctx: Context) -> Derived:
        """With the row-wise rule off (the mutation check): the query as written, qualified."""
        sql = self._qualified(tree.copy(), ctx)
        for table in sql.find_all(exp.Table):
            if isinstance(table.this, (exp.ReadParquet, exp.ReadCSV)) or is_delta_scan(table.this):
                scan, _, _ = self.cat.file(table.this, ctx)
                table.set("this", scan.this)
        cols = self.cat.describe(sql)
        names = [c for c, _ in cols]
        bases = {".".join(t): f"table {'.'.join(t)}" for t in self.tables}
        # every column keys every base table it could come from (the rule off believes the text)
        return Derived(sql=sql, columns=names, kinds=[checker_kind(t) for _, t in cols], physical=[t for _, t in cols],
                       public=False, keys=[{} for _ in names], why=[None] * len(names), label=ctx.label, bases=bases)


def _is_group(item: exp.Expr) -> bool:
    """A parenthesised join — (a JOIN b ON …), how DuckDB stores a view's joins: a table holding
    joins, or an unaliased parenthesis around one (which may hold further joins itself)."""
    if isinstance(item, exp.Table):
        return bool(item.args.get("joins"))
    if isinstance(item, exp.Subquery) and not item.args.get("alias"):
        return bool(item.args.get("joins")) or _is_group(item.this)
    return False


def _conjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return [t for part in node.flatten() for t in _conjuncts(part)]
    return [node]


def _merge(maps: list[dict[str, str] | None]) -> tuple[dict[str, str] | None, str | None]:
    out: dict[str, str] = {}
    for m in maps:
        if m is None:
            return None, None
        for base, col in m.items():
            if out.setdefault(base, col).lower() != col.lower():
                return None, f"it reads {base} by two different columns ({out[base]} and {col})"
    return out, None


@dataclass
class _Source:
    alias: str          # as the query names it (lower)
    emitted: str        # s0, s1, ...
    derived: Derived
    join: exp.Join | None
    using: list[str] = field(default_factory=list)
    terms: list[exp.Expr] = field(default_factory=list)
    side: str | None = None


class _Scope:
    """The sources of one SELECT: column resolution, key classes, emission."""

    def __init__(self, expander: Expander, ctx: Context):
        self.x = expander
        self.ctx = ctx
        self.sources: list[_Source] = []
        self.merged: dict[str, tuple[int, int]] = {}   # a USING column, unqualified -> its left source's column
        self.hidden: set[tuple[int, int]] = set()      # a USING column of the right source: not in *
        self.key_terms: list[tuple[tuple[int, int], tuple[int, int]]] = []   # exact equalities of ids

    # -- sources ------------------------------------------------------------------------------------
    def add(self, item: exp.Expr, join: exp.Join | None, *, nested: bool = False) -> None:
        """Add a FROM/JOIN item. A parenthesised join, (a JOIN b ON ...) — how DuckDB stores every
        join of a view — is flattened: in FROM position its joins simply continue the chain; on
        the right of a join (`nested`) only inner joins may be flattened."""
        ctx = self.ctx
        if _is_group(item):
            inner_nested = nested or join is not None
            if join is not None and (join.args.get("side") or join.args.get("using")):
                self.x.refuse(ctx, "a LEFT join or USING onto a parenthesised join is not supported; write the "
                                   "joins one after the other", join)
            first = item.copy()
            first.set("joins", None)
            if isinstance(first, exp.Subquery):
                first = first.this
            self.add(first, join, nested=inner_nested)
            for sub in item.args.get("joins") or []:
                self.add(sub.this, sub, nested=inner_nested)
            return
        derived = self.x.relation(item, ctx)
        alias = (item.alias_or_name if isinstance(item, (exp.Table, exp.Subquery)) else "") or f"_{len(self.sources)}"
        if any(s.alias == alias.lower() for s in self.sources):
            self.x.refuse(ctx, f"the name {alias!r} names two relations; give each its own alias "
                               f"(... AS a JOIN ... AS b)", item)
        src = _Source(alias.lower(), f"s{len(self.sources)}", derived, join)
        if join is not None:
            self._join(src, join, nested)
        self.sources.append(src)

    def _join(self, src: _Source, join: exp.Join, nested: bool) -> None:
        ctx = self.ctx
        side, kind, method = join.args.get("side"), join.args.get("kind"), join.args.get("method")
        what = " ".join(str(v).upper() for v in (method, side, kind) if v)
        if method or kind not in (None, "", "INNER", "CROSS", "OUTER") or side not in (None, "", "LEFT") \
                or (kind == "OUTER" and side != "LEFT"):
            self.x.refuse(ctx, f"a {what} join; {_RULE}: join INNER, CROSS or LEFT", join)
        for key, value in join.args.items():
            if key not in ("this", "on", "using", "side", "kind", "method") and value:
                self.x.refuse(ctx, f"a join with {key} is not allowed", join)
        if side == "LEFT" and nested:
            self.x.refuse(ctx, "a LEFT join inside a parenthesised join is not supported", join)
        src.side = "LEFT" if side == "LEFT" else None
        if kind == "CROSS" and (join.args.get("on") or join.args.get("using")):
            self.x.refuse(ctx, "a CROSS join with a condition", join)
        for ident in join.args.get("using") or []:
            name = ident.name
            right = src.derived.index(name)
            left = [(i, j) for i, s in enumerate(self.sources) for j in s.derived.index(name)]
            if len(right) != 1 or len(left) != 1:
                self.x.refuse(ctx, f"USING ({name}): the column must be in exactly one relation on each side", join)
            src.using.append(name)
            self.merged.setdefault(name.lower(), left[0])
            self.hidden.add((len(self.sources), right[0]))
        if join.args.get("on") is not None:
            src.terms = _conjuncts(join.args["on"])

    def conditions(self) -> list[exp.Expr]:
        return [t for s in self.sources for t in s.terms]

    # -- columns ------------------------------------------------------------------------------------
    def resolve(self, column: exp.Column) -> tuple[int, int]:
        ctx = self.ctx
        if not isinstance(column.this, exp.Identifier):
            self.x.refuse(ctx, f"{column.sql('duckdb')} is not a plain column", column)
        if column.args.get("db") or column.args.get("catalog"):
            self.x.refuse(ctx, f"the column {column.sql('duckdb')} names a table outside the query", column)
        name = column.name
        if column.table:
            hits = [(i, j) for i, s in enumerate(self.sources) if s.alias == column.table.lower()
                    for j in s.derived.index(name)]
            if not any(s.alias == column.table.lower() for s in self.sources):
                self.x.refuse(ctx, f"{column.table!r} is not a relation of this query (a correlated column "
                                   f"{_WHY})", column)
        else:
            if name.lower() in self.merged:
                return self.merged[name.lower()]
            hits = [(i, j) for i, s in enumerate(self.sources) for j in s.derived.index(name)]
        if not hits:
            self.x.refuse(ctx, f"unknown column {column.sql('duckdb')} (a correlated column {_WHY})", column)
        if len(hits) > 1:
            self.x.refuse(ctx, f"the column {column.sql('duckdb')} is ambiguous; qualify it", column)
        return hits[0]

    def canonical(self, node: exp.Expr) -> exp.Expr:
        """`node` with every column as s<i>."name" (the emitted names)."""
        def fix(column: exp.Expr) -> exp.Expr:
            if not isinstance(column, exp.Column):
                return column
            if isinstance(column.this, exp.Star):
                self.x.refuse(self.ctx, "a * inside an expression", column)
            i, j = self.resolve(column)
            return _q(self.sources[i].derived.columns[j], self.sources[i].emitted)

        return node.copy().transform(fix)

    def _at(self, column: exp.Column) -> tuple[int, int]:
        i = int(column.table[1:])
        return i, self.sources[i].derived.index(column.name)[0]

    def kind(self, column: exp.Column) -> str:
        i, j = self._at(column)
        return self.sources[i].derived.kinds[j]

    def needs_double(self, column: exp.Column) -> bool:
        i, j = self._at(column)
        d = self.sources[i].derived
        return d.kinds[j] in NUMERIC and (d.physical[j] or "").upper() not in ("DOUBLE", "FLOAT", "REAL", "FLOAT8")

    def key_class(self, column: exp.Column) -> str | None:
        i, j = self._at(column)
        physical = self.sources[i].derived.physical[j]
        kind = kind_of(physical) if physical is not None else None
        return kind if kind in KEY_KINDS else None

    # -- the projection -----------------------------------------------------------------------------
    def projection(self, expressions: list[exp.Expr]) -> list[tuple[str, exp.Expr]]:
        items: list[tuple[str, exp.Expr]] = []
        for item in expressions:
            node = item.this if isinstance(item, exp.Alias) else item
            star = node.this if isinstance(node, exp.Column) and isinstance(node.this, exp.Star) else \
                node if isinstance(node, exp.Star) else None
            if star is not None:
                for key in ("replace", "rename"):
                    if star.args.get(key):
                        self.x.refuse(self.ctx, f"* {key.upper()} is not supported; write the columns out", item)
                excluded = {c.name.lower() for c in star.args.get("except_") or star.args.get("except") or []}
                table = node.table.lower() if isinstance(node, exp.Column) and node.table else None
                if table is not None and not any(s.alias == table for s in self.sources):
                    self.x.refuse(self.ctx, f"{table!r} is not a relation of this query", item)
                for i, src in enumerate(self.sources):
                    if table is not None and src.alias != table:
                        continue
                    for j, name in enumerate(src.derived.columns):
                        if name.lower() in excluded or (table is None and (i, j) in self.hidden):
                            continue
                        items.append((name, _q(name, src.emitted)))
                continue
            if isinstance(node, exp.Columns) or node.find(exp.Columns):
                self.x.refuse(self.ctx, "COLUMNS(...) is not supported; write the columns out", item)
            if isinstance(item, exp.Alias):
                name = item.alias
            elif isinstance(node, exp.Column):
                name = node.name
            else:
                name = node.sql("duckdb")
            items.append((name, self.canonical(node)))
        return items

    # -- keys and emission ----------------------------------------------------------------------------
    def emit(self, items: list[tuple[str, exp.Expr]], where_terms: list[exp.Expr]) -> Derived:
        ctx = self.ctx
        types = {(s.emitted, c.lower()): s.derived.kinds[j] for s in self.sources
                 for j, c in enumerate(s.derived.columns)}
        names = {c.lower(): k for (_, c), k in types.items()}
        aliases = {s.emitted: s.alias for s in self.sources}

        def checker() -> t.Checker:
            return t.Checker(lambda col: (col.table, col.name.lower()), types=types, values=True,
                             context="a row-wise relation", grammar="a row-wise relation")

        def total(node: exp.Expr) -> exp.Expr:
            return total_form(node, "duckdb", names, column_kind=self.kind, needs_double=self.needs_double)

        # join and WHERE terms: key equalities stay exact; every other term is a total predicate
        def term(node: exp.Expr, where: str) -> exp.Expr:
            canon = self.canonical(node)
            if isinstance(canon, exp.EQ) and isinstance(canon.this, exp.Column) and isinstance(canon.expression,
                                                                                                 exp.Column):
                a, b = canon.this, canon.expression
                ka, kb = self.key_class(a), self.key_class(b)
                if ka is not None and ka == kb:
                    self.key_terms.append((self._at(a), self._at(b)))
                    if ka == "text":   # compared binary, whatever collation the column or the connection has
                        return exp.EQ(this=_binary(a), expression=_binary(b))
                    return canon
            with self.x.labelled(ctx, aliases, node):
                t.check_size(canon)
                c = checker()
                c.context = where
                c.predicate(canon)
                t.verify_on_constants(canon, names)
            return total(canon)

        emitted_terms: list[list[exp.Expr]] = []
        for s in self.sources:
            out = []
            for name in s.using:
                i, j = self.merged[name.lower()]
                left, right = self.sources[i], s.derived.columns[s.derived.index(name)[0]]
                out.append(term(exp.EQ(this=exp.column(_id(left.derived.columns[j]), table=_id(left.alias)),
                                       expression=exp.column(_id(right), table=_id(s.alias))), "USING"))
            for on in s.terms:
                out.append(term(on, "ON"))
            emitted_terms.append(out)
        where = [term(w, "WHERE") for w in where_terms]

        # the projection
        columns, kinds, physical, keys, why = [], [], [], [], []
        select_items = []
        for name, node in items:
            if isinstance(node, exp.Column):
                i, j = self._at(node)
                d = self.sources[i].derived
                kinds.append(d.kinds[j])
                physical.append(d.physical[j])
                value: exp.Expr = node
            else:
                with self.x.labelled(ctx, aliases, node):
                    t.check_size(node)
                    kinds.append(checker().type(node))
                    t.verify_on_constants(node, names)
                physical.append(None)
                value = total(node)
            columns.append(name)
            select_items.append(exp.alias_(value, _id(name)))
        for _, node in items:
            k, w = self._key(node)
            keys.append(k)
            why.append(w)

        # an inner join's condition is a filter of everything joined: it goes to WHERE (the same rows,
        # whatever the order of the joins was); a LEFT join keeps its own condition
        sel = exp.select(*select_items).from_(self.sources[0].derived.from_item(self.sources[0].emitted))
        for s, terms in zip(self.sources[1:], emitted_terms[1:]):
            if s.side == "LEFT":
                sel = sel.join(s.derived.from_item(s.emitted), on=exp.and_(*terms) if terms else exp.true(),
                               join_type="LEFT")
            else:
                sel = sel.join(s.derived.from_item(s.emitted), join_type="CROSS")
                where = terms + where
        where = emitted_terms[0] + where
        if where:
            sel = sel.where(exp.and_(*where))
        bases: dict[str, str] = {}
        for s in self.sources:
            bases |= s.derived.bases
        return Derived(sql=sel, columns=columns, kinds=kinds, physical=physical,
                       public=all(s.derived.public for s in self.sources), keys=keys, why=why, label=ctx.label,
                       bases=bases)

    def _key(self, node: exp.Expr) -> tuple[dict[str, str] | None, str | None]:
        """Can this output column be the record id? (see the module docstring)"""
        if not isinstance(node, exp.Column):
            return None, f"in {self.ctx.label} it is computed ({snippet(node, 40)}), not a column of a protected table"
        i, j = self._at(node)
        offsets = [sum(len(s.derived.columns) for s in self.sources[:k]) for k in range(len(self.sources))]
        classes = self._classes(offsets)
        target = classes.get(offsets[i] + j, offsets[i] + j)
        maps: list[dict[str, str] | None] = []
        for k, s in enumerate(self.sources):
            if s.derived.public:
                continue
            cands = [c for c in range(len(s.derived.columns))
                     if classes.get(offsets[k] + c, offsets[k] + c) == target and s.derived.keys[c] is not None]
            if not cands:
                if k == i:
                    return None, s.derived.why[j] or f"it is not a record id of {s.derived.label}"
                return None, (f"in {self.ctx.label}, {s.derived.label} (as {s.alias}) is not joined to it by its own "
                              "record id, so one of its rows could pair with rows of other records")
            maps.append(s.derived.keys[cands[0]])
        return _merge(maps)

    def _classes(self, offsets: list[int]) -> dict[int, int]:
        parent: dict[int, int] = {}

        def find(a: int) -> int:
            parent.setdefault(a, a)
            while parent[a] != a:
                parent[a] = parent[parent[a]]
                a = parent[a]
            return a

        for a, b in self.key_terms:
            parent[find(offsets[a[0]] + a[1])] = find(offsets[b[0]] + b[1])
        return {k: find(k) for k in list(parent)}


def _binary(column: exp.Expr) -> exp.Expr:
    return exp.Collate(this=column, expression=exp.to_identifier("binary", quoted=True))
