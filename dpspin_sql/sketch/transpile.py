"""The enforced sketch query for another engine (`dpspin sql --dialect D --emit-sketch`).

sqlglot does the dialect work; this module does what it cannot know:

- the DuckDB macros `dpspin_fix` / `dpspin_clip` (udfs/macros.sql) are inlined: their
  definitions are parsed and every call is replaced by the body with its arguments;
- the named parameters ($K, $scale, $bound) are bound to integer literals;
- HUGEINT (INT128) exists only in DuckDB: elsewhere it becomes an exact 38-digit
  decimal (BIGNUMERIC in BigQuery);
- `isfinite(w)` becomes `w >= -DBL_MAX AND w <= DBL_MAX`, false for NaN and ±inf both
  where NaN compares false (Trino, BigQuery) and where NaN sorts above everything
  (Spark, Postgres, Snowflake);
- integer division `//` is floor division of non-negative integers: DIV in Spark,
  BigQuery and Postgres; `(a - MOD(a, b)) / b` (an exact division) in Trino and
  Snowflake, whose decimal `/` would round and whose sqlglot output goes through DOUBLE.
"""
from __future__ import annotations

from functools import cache
from importlib.resources import files

import sqlglot
from sqlglot import exp

from dpspin_sql.request import Bounds
from dpspin_sql.sketch.flags import STORE_FLAGS
from dpspin_sql.sketch.rewrite import BASE_DIALECT, SketchFilters, rewrite

DIALECTS = ("duckdb", "spark", "bigquery", "snowflake", "trino", "postgres")
DBL_MAX = "1.7976931348623157e308"
_WIDE = {"bigquery": "BIGNUMERIC"}
_EXACT_DIV = ("trino", "snowflake")


@cache
def _macros() -> dict[str, tuple[list[str], exp.Expr]]:
    text = files("dpspin_sql.udfs").joinpath("macros.sql").read_text(encoding="utf-8")
    found = {}
    for statement in sqlglot.parse(text, read=BASE_DIALECT):
        if isinstance(statement, exp.Create) and str(statement.args.get("kind")).upper() == "MACRO":
            udf = statement.this
            found[udf.this.name.lower()] = ([p.name.lower() for p in udf.expressions], statement.expression)
    return found


def inline_macros(tree: exp.Expr) -> exp.Expr:
    """Replace every call of a package macro by its body (arguments parenthesised)."""
    macros = _macros()

    def substitute(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous) and node.name.lower() in macros:
            names, body = macros[node.name.lower()]
            if len(names) != len(node.expressions):
                raise ValueError(f"macro {node.name} takes {len(names)} arguments")
            args = {n: _atom(a) for n, a in zip(names, node.expressions)}
            return body.copy().transform(
                lambda n: args[n.name.lower()].copy()
                if isinstance(n, exp.Column) and not n.table and n.name.lower() in args else n)
        return node

    return tree.transform(substitute)


def _atom(node: exp.Expr) -> exp.Expr:
    simple = (exp.Column, exp.Literal, exp.Placeholder, exp.Parameter, exp.Paren, exp.Cast, exp.Func)
    return node if isinstance(node, simple) else exp.Paren(this=node)


def bind(tree: exp.Expr, values: dict[str, int | bool]) -> exp.Expr:
    """Replace named placeholders ($K, ..., and the store query's $canonical / $keyed) with
    integer or boolean literals."""
    def sub(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Placeholder) and node.name in values:
            value = values[node.name]
            if isinstance(value, bool):
                return exp.true() if value else exp.false()
            return exp.Literal.number(int(value))
        return node

    tree = tree.transform(sub)
    left = [n.name for n in tree.find_all(exp.Placeholder)]
    if left:
        raise ValueError(f"unbound parameters in the sketch query: {left}")
    return tree


def _bind_flags(tree: exp.Expr, flags: dict[str, bool | int]) -> exp.Expr:
    def literal(value: bool | int) -> exp.Expr:
        if isinstance(value, bool):
            return exp.true() if value else exp.false()
        return exp.Literal.number(int(value))

    tree = tree.transform(lambda n: literal(flags[n.name])
                          if isinstance(n, exp.Placeholder) and n.name in flags else n)
    return fold_constants(tree)


def fold_constants(tree: exp.Expr) -> exp.Expr:
    """Fold NOT / AND / OR over the TRUE and FALSE literals the flags became, so that a branch
    a flag turns off is not in the query DuckDB plans (it plans a subquery before it folds
    constants: `NOT FALSE OR x NOT IN (SELECT ...)` would still read x for every row).
    Exact in SQL's three-valued logic: TRUE OR x = TRUE, FALSE AND x = FALSE, TRUE AND x = x,
    FALSE OR x = x, whatever x is (NULL included)."""
    def value(node: exp.Expr) -> bool | None:
        while isinstance(node, exp.Paren):
            node = node.this
        return node.this if isinstance(node, exp.Boolean) else None

    def fold(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Not) and value(node.this) is not None:
            return exp.false() if value(node.this) else exp.true()
        if isinstance(node, (exp.And, exp.Or)):
            absorbing = isinstance(node, exp.Or)          # TRUE absorbs OR, FALSE absorbs AND
            left, right = value(node.left), value(node.right)
            if absorbing in (left, right):
                return exp.true() if absorbing else exp.false()
            if left is not None:
                return node.right
            if right is not None:
                return node.left
        if isinstance(node, exp.Paren) and value(node) is not None:
            return exp.true() if value(node) else exp.false()
        return node

    # bottom-up (children first), in place: a folded child can fold its parent
    for node in list(tree.walk(bfs=False))[::-1]:
        if isinstance(node, (exp.Not, exp.And, exp.Or, exp.Paren)):
            folded = fold(node)
            if folded is not node:
                if node is tree:
                    tree = folded
                else:
                    node.replace(folded)
    return tree


def for_engine(tree: exp.Expr, dialect: str) -> exp.Expr:
    """The engine-specific rewrites of the module docstring (none for DuckDB)."""
    if dialect == BASE_DIALECT:
        return tree
    wide = exp.DataType.build(_WIDE.get(dialect, "DECIMAL(38, 0)"), dialect=dialect)

    def types(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.INT128:
            return wide.copy()
        if isinstance(node, exp.Anonymous) and node.name.lower() == "isfinite":
            (x,) = node.expressions
            return exp.Paren(this=exp.and_(
                exp.GTE(this=_atom(x).copy(), expression=exp.Neg(this=exp.Literal.number(DBL_MAX))),
                exp.LTE(this=_atom(x).copy(), expression=exp.Literal.number(DBL_MAX))))
        return node

    def division(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.IntDiv):
            a, b = exp.Paren(this=node.this), _atom(node.expression)
            remainder = exp.Paren(this=exp.Mod(this=a.copy(), expression=b))
            exact = exp.Div(this=exp.Paren(this=exp.Sub(this=a, expression=remainder)), expression=b.copy(),
                            typed=True, safe=False)
            return exp.Cast(this=exact, to=wide.copy())
        return node

    tree = try_casts(tree.transform(types), dialect)
    return tree.transform(division) if dialect in _EXACT_DIV else tree


def try_casts(tree: exp.Expr, dialect: str) -> exp.Expr:
    """TRY_CAST where the engine's form is not total: PostgreSQL has none (sqlglot would write a
    CAST, which fails on a record's value: refused, one line); Snowflake's TRY_CAST takes text
    only (sqlglot writes a CAST for anything else), so its argument is made text first."""
    if dialect == "postgres" and tree.find(exp.TryCast) is not None:
        from dpspin_sql.errors import BadInput

        raise BadInput("the statement cannot be written totally in postgres: it has no TRY_CAST, and a CAST fails "
                       "on some values (compare the column with literals, or emit for another dialect)")
    for node in list(tree.find_all(exp.TryCast)):
        node.set("safe", True)   # sqlglot writes a TryCast without it as CAST in Spark
        inner = node.this
        if dialect != "snowflake":
            continue
        if not (isinstance(inner, exp.Cast) and inner.to.is_type(*exp.DataType.TEXT_TYPES)) and not (
                isinstance(inner, exp.Literal) and inner.is_string):
            node.set("this", exp.Cast(this=inner.copy(), to=exp.DataType.build("VARCHAR")))
    return tree


def guard_int_casts(tree: exp.Expression, dialect: str) -> exp.Expression:
    """Off DuckDB, the atom's TRY_CAST(x AS INTEGER) of an integer column as a range-guarded CAST:
    NULL outside INTEGER's range, as DuckDB's TRY_CAST, on every engine (total everywhere)."""
    def guards(node: exp.Expression) -> exp.Expression:
        if dialect != "duckdb" and isinstance(node, exp.TryCast) and node.to.this == exp.DataType.Type.INT:
            x = node.this
            guard = exp.and_(exp.GTE(this=x.copy(), expression=exp.Literal.number(-2147483648)),
                             exp.LTE(this=x.copy(), expression=exp.Literal.number(2147483647)))
            return exp.Case(ifs=[exp.If(this=guard, true=exp.Cast(this=x.copy(), to=node.to.copy()))])
        return node

    return tree.transform(guards)


_FULL_VECTOR = ("SELECT d.atom_id, CAST(COALESCE(s.mass, 0) AS HUGEINT) AS mass "
                "FROM atoms AS d LEFT JOIN sketch_mass AS s ON s.atom_id = d.atom_id ORDER BY d.atom_id")


def full_vector(tree: exp.Select) -> exp.Select:
    """The sketch as the whole m-vector: one (atom_id, mass) row per atom of the `atoms`
    table, zeros included. The core query returns only atoms some record hit; a warehouse
    hands back all m rows, so the release can check the vector's length and atom ids
    against the store's dictionary (`dpspin_sql.warehouse`)."""
    core = tree.copy()
    with_ = core.args.get("with_")
    core.set("with_", None)
    core.set("order", None)
    outer = sqlglot.parse_one(_FULL_VECTOR, read=BASE_DIALECT).assert_is(exp.Select)
    ctes = [*(with_.expressions if with_ else []), exp.CTE(this=core, alias=exp.TableAlias(
        this=exp.to_identifier("sketch_mass")))]
    outer.set("with_", exp.With(expressions=ctes))
    return outer


def sketch_sql(bounds: Bounds, filters: SketchFilters | None = None, dialect: str = BASE_DIALECT, *,
               pretty: bool = True, bind_params: bool = True, complete: bool = False, source=None,
               store_flags: dict[str, bool | int] | None = None) -> str:
    """The enforced sketch query for `bounds` (and an audited statement's filters) in `dialect`,
    over `source` (default: the store's tables); with `complete`, as the whole m-vector
    (`full_vector`), as a warehouse runs it. `store_flags` ({"canonical": …, "keyed": …, …:
    `STORE_FLAGS`}, DuckDB only) asks for the DuckDB store query (queries/sketch_store_*.sql)
    instead of the portable one; its flags are always bound as literals."""
    if dialect not in DIALECTS:
        from dpspin_sql.errors import BadInput

        raise BadInput(f"--dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    store = store_flags is not None
    if store and dialect != BASE_DIALECT:
        raise ValueError("the store query is DuckDB's own; other engines run the portable one")
    select = rewrite(bounds.unit, filters, dialect, source, store=store,
                     fast=bool(store_flags is not None and store_flags.get("all_fast")))
    tree = inline_macros(full_vector(select) if complete else select)
    if store_flags is not None:
        unknown = set(store_flags) - set(STORE_FLAGS)
        if unknown:
            raise ValueError(f"unknown store flags: {sorted(unknown)}")
        flags = {name: type(default)(store_flags.get(name, default)) for name, default in STORE_FLAGS.items()}
        tree = fold_constants(bind(tree, flags | bounds.params())) if bind_params else _bind_flags(tree, flags)
    elif bind_params:
        tree = bind(tree, bounds.params())
    tree = for_engine(tree, dialect)
    from dpspin_sql.sketch.sqlglot_log import quiet

    try:
        with quiet():
            return tree.sql(dialect=dialect, pretty=pretty, unsupported_level=sqlglot.ErrorLevel.RAISE)
    except sqlglot.errors.UnsupportedError as exc:  # e.g. regexp flags Postgres' ~ cannot express
        from dpspin_sql.errors import BadInput

        raise BadInput(f"the statement cannot be written in {dialect}: {str(exc).splitlines()[0]}") from None
