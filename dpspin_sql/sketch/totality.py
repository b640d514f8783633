"""The total form the engines run, and what an engine adds to the audit's totality rules.

The DP SQL audit (sql/totality.py) proves before any data is read that a WHERE filter
cannot fail on any row; the sketch wing runs the accepted filter in its *total form*
(`total_form`), with the same truth value wherever the filter does not raise:

- **Arithmetic in DOUBLE.** Integer arithmetic can overflow (an oracle on atom ids and
  lengths: abs(INT_MIN), INT_MAX + 1). Every numeric operand is cast to DOUBLE, where DuckDB
  follows IEEE 754 and never raises; `/` and `%` divide by NULLIF(divisor, 0), so x/0 is NULL
  on every engine (DuckDB alone would give ±inf/NaN, Spark NULL).
- **Canonical LIKE patterns**, JSON paths in the engine's syntax, and on DuckDB a json_valid
  guard on the JSON column (an Arrow `json` extension column is stored unchecked, and `->>`
  raises on malformed JSON per row).

The vocabulary both halves share lives here: the column types (`COLUMN_TYPES`), the bounds
(`LIMITS`), number literals, LIKE tokens and JSON paths. The engine-specific rules (Spark: no
regular expressions, LIKE shapes that Java's regex engine matches in linear time) are in
`check_engine`; docs/THREAT_MODEL.md says why each admitted construct is total.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from dpspin_sql.sketch.errors import refuse

BOOL, INT, DOUBLE, TEXT, JSON, DATE, NULL = "BOOLEAN", "INTEGER", "DOUBLE", "VARCHAR", "JSON", "DATE", "NULL"
NUMERIC = frozenset({INT, DOUBLE})

COLUMN_TYPES = {
    "records": {"record_id": TEXT, "user_id": TEXT, "text": TEXT, "split": TEXT, "metadata": JSON},
    "assignments": {"record_id": TEXT, "atom_id": INT, "weight": DOUBLE},
}
# record_id is VARCHAR in both tables, so an unqualified (rewritten) column's type is its name's
_TYPE_BY_NAME = {name: kind for columns in COLUMN_TYPES.values() for name, kind in columns.items()}

_T = exp.DataType.Type
CAST_TARGETS = {_T.VARCHAR: TEXT, _T.TEXT: TEXT, _T.BOOLEAN: BOOL, _T.INT: INT, _T.BIGINT: INT,
                _T.DOUBLE: DOUBLE, _T.DATE: DATE}
@dataclass(frozen=True)
class Limits:
    depth: int = 32                 # nesting of the filter's syntax tree
    nodes: int = 2000               # all nodes, IN-list items included
    operations: int = 256           # nodes other than columns, literals and parentheses
    in_list: int = 1000             # items of one IN (...)
    patterns: int = 16              # LIKE / ILIKE / regexp_matches in one filter
    pattern_length: int = 256       # characters of one LIKE pattern
    regexes: int = 4                # regexp_matches in one filter (of the 16 patterns)
    regex_length: int = 64          # characters of one regular expression; no {n,m} repetition
    literal_length: int = 4096      # characters of one string literal
    json_path_parts: int = 16
    json_key_length: int = 64
    substring: int = 1 << 20        # |start| and length of SUBSTRING
    exact_integer: int = 1 << 53    # integer literals are compared exactly in DOUBLE
    double: float = 1e300           # |x| of a numeric literal (no overflow, no underflow)


LIMITS = Limits()
_SIMPLE_KEY = re.compile(r"[A-Za-z0-9_\-]+")
_BAD_KEY_CHARS = re.compile(r"[\"'\\\x00-\x1f\x7f]")


def node_name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name
    return _NAMES.get(node.key, node.key.upper())


_NAMES = {"dpipe": "||", "neg": "unary -", "paren": "( )", "eq": "=", "neq": "<>", "gt": ">", "gte": ">=",
          "lt": "<", "lte": "<=", "nullsafeeq": "IS NOT DISTINCT FROM", "nullsafeneq": "IS DISTINCT FROM",
          "add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "regexplike": "regexp_matches",
          "jsonextract": "->", "jsonextractscalar": "->>", "trycast": "TRY_CAST", "startswith": "starts_with"}


# -- literals -------------------------------------------------------------------------------------

def number(literal: exp.Literal, limits: Limits = LIMITS) -> int | float:
    """The value of a numeric literal in the range where every engine holds it exactly
    (integers) or without overflow/underflow (others); else a refusal."""
    text = literal.this.replace("_", "")
    if re.fullmatch(r"[0-9]+", text):
        value: int | float = int(text)
        if value > limits.exact_integer:
            refuse(f"the integer literal {text} is above 2^53; filters compute in DOUBLE, where it is not exact",
                   literal)
        return value
    try:
        value = float(text)
    except ValueError:
        refuse(f"{text!r} is not a number literal", literal)
    underflow = value == 0 and re.search(r"[1-9]", text.lower().split("e")[0])
    if not math.isfinite(value) or abs(value) > limits.double or underflow or \
            (value != 0 and abs(value) < 1 / limits.double):
        refuse(f"the number literal {text} is outside ±[1e-300, 1e300]: converting it could fail on some engines",
               literal)
    return value


# -- LIKE patterns --------------------------------------------------------------------------------

ANY, ONE, CHAR = "%", "_", "char"


def like_tokens(pattern: str, escape: str | None, node: exp.Expr | None = None) -> list[tuple[str, str]]:
    """A LIKE pattern as (ANY|ONE|CHAR, character) tokens under `escape`, or a refusal when
    DuckDB could raise on it: an escape must precede %, _ or itself, never end the pattern."""
    tokens, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if escape is not None and c == escape:
            if i + 1 == len(pattern):
                refuse("the LIKE pattern ends with its escape character: DuckDB raises on that, but only "
                       "for records that match up to the end, so the query's success would depend on them", node)
            nxt = pattern[i + 1]
            if nxt not in (ANY, ONE, escape):
                refuse(f"in the LIKE pattern the escape character {escape!r} precedes {nxt!r}; it may precede "
                       "only %, _ or itself", node)
            tokens.append((CHAR, nxt))
            i += 2
            continue
        tokens.append((ANY, c) if c == ANY else (ONE, c) if c == ONE else (CHAR, c))
        i += 1
    return tokens


def canonical_like(tokens: list[tuple[str, str]]) -> tuple[str, str | None]:
    """(pattern, escape) meaning the tokens on DuckDB and Spark alike: no ESCAPE when no
    character needs one (DuckDB has no default escape; Spark's default `\\` is then unused),
    otherwise the escape `\\` written explicitly."""
    out, escaped = [], False
    for kind, c in tokens:
        if kind != CHAR:
            out.append(kind)
        elif c in "%_\\":
            out.append("\\" + c)
            escaped = True
        else:
            out.append(c)
    return "".join(out), ("\\" if escaped else None)


def non_trailing_wildcards(tokens: list[tuple[str, str]]) -> int:
    """How many % are followed by something other than %: Java's regex engine (Spark's LIKE)
    backtracks polynomially in the text length with more than one of them."""
    last = max((i for i, (kind, _) in enumerate(tokens) if kind != ANY), default=-1)
    return sum(1 for i, (kind, _) in enumerate(tokens) if kind == ANY and i < last)


def like_parts(node: exp.Expr) -> tuple[exp.Expr, exp.Literal, exp.Literal | None] | None:
    """(LIKE/ILIKE node, pattern literal, escape literal) of a LIKE or ESCAPE node, else None."""
    escape = None
    if isinstance(node, exp.Escape):
        node, escape = node.this, node.expression
    if isinstance(node, (exp.Like, exp.ILike)):
        return node, node.expression, escape
    return None


# -- JSON paths -----------------------------------------------------------------------------------

def json_path(node: exp.Expr, limits: Limits = LIMITS) -> list[str | int]:
    """A JSON path (sqlglot JSONPath or string literal) as keys and non-negative indexes."""
    if isinstance(node, exp.JSONPath):
        parts: list[str | int] = []
        for i, part in enumerate(node.expressions):
            if isinstance(part, exp.JSONPathRoot) and i == 0:
                continue
            key = isinstance(part, exp.JSONPathKey) and isinstance(part.this, str)
            index = (isinstance(part, exp.JSONPathSubscript) and isinstance(part.this, int)
                     and not isinstance(part.this, bool))
            if key or index:
                parts.append(part.this)
            else:
                refuse("a JSON path may only name keys and non-negative array indexes ($.key[0].other), "
                       "not wildcards, slices, filters or negative indexes", node)
    elif isinstance(node, exp.Literal) and node.is_string:
        parts = _parse_path_text(node.this, node)
    else:
        refuse("the JSON path must be a string literal ('$.key'): a path read from the data could be "
               "invalid on some records", node)
    if len(parts) > limits.json_path_parts:
        refuse(f"a JSON path of more than {limits.json_path_parts} steps", node)
    for part in parts:
        if isinstance(part, int):
            if not 0 <= part <= 10**6:
                refuse("a JSON array index must be in [0, 10^6]", node)
        elif not part or len(part) > limits.json_key_length or _BAD_KEY_CHARS.search(part) \
                or part != part.strip():
            refuse(f"the JSON key {part!r} is empty, longer than {limits.json_key_length} characters or has "
                   "quotes, backslashes, control characters or surrounding spaces", node)
    return parts


def _parse_path_text(text: str, node: exp.Expr) -> list[str | int]:
    match = re.fullmatch(r"\$((?:\.(?:[^.\[\]\"]+|\"[^\"]*\")|\[[0-9]+\])*)", text)
    if not match:
        refuse(f"the JSON path {text!r} is not of the form $.key[0].\"other key\"", node)
    parts: list[str | int] = []
    for key, quoted, index in re.findall(r"\.(?:([^.\[\]\"]+)|\"([^\"]*)\")|\[([0-9]+)\]", match.group(1)):
        parts.append(int(index) if index else (quoted if quoted or not key else key))
    return parts


def path_text(parts: list[str | int], dialect: str) -> str:
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _SIMPLE_KEY.fullmatch(part):
            out.append(f".{part}")
        else:
            out.append(f"['{part}']" if dialect == "spark" else f'."{part}"')
    return "".join(out)


# -- node kinds the total form treats alike ---------------------------------------------------

COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


# -- the total form the engines run ----------------------------------------------------------------

_DOUBLE = exp.DataType.build("DOUBLE")


def total_form(term: exp.Expr, dialect: str = "duckdb", names: dict | None = None, *,
               column_kind: Callable[[exp.Column], str] | None = None,
               needs_double: Callable[[exp.Column], bool] | None = None) -> exp.Expr:
    """An accepted (audited, unqualified) filter term as the engine runs it: numbers in DOUBLE,
    division by NULLIF(d, 0), canonical LIKE patterns, JSON paths in the engine's syntax, and
    on DuckDB a json_valid guard on the JSON column. Same truth value as the term wherever the
    term does not raise. `names` types the unqualified columns (default: the store's); a
    row-wise relation's qualified columns are typed by `column_kind`, and `needs_double` says
    which numeric columns are not DOUBLE already (sql/rowwise.py)."""
    return _Normaliser(dialect, names, column_kind, needs_double).run(term.copy())[0]


class _Normaliser:
    def __init__(self, dialect: str, names: dict | None = None, column_kind=None, needs_double=None):
        self.dialect = dialect
        self.names = names if names is not None else _TYPE_BY_NAME
        self.column_kind = column_kind
        self.needs_double = needs_double

    def run(self, node: exp.Expr) -> tuple[exp.Expr, str]:
        if isinstance(node, exp.Paren):
            inner, kind = self.run(node.this)
            node.set("this", inner)
            return node, kind
        if isinstance(node, exp.Column):
            return node, (self.column_kind(node) if self.column_kind is not None else self.names[node.name.lower()])
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node, TEXT
            value = number(node)
            return (exp.Literal.number(str(value)), INT) if isinstance(value, int) \
                else (exp.Literal.number(repr(float(value))), DOUBLE)
        if isinstance(node, exp.Boolean):
            return node, BOOL
        if isinstance(node, exp.Null):
            return node, NULL
        if isinstance(node, (exp.And, exp.Or)):  # a chain a OR b OR c ... iteratively, not by recursion
            for operand in list(node.flatten()):
                new, _ = self.run(operand)
                if new is not operand:
                    operand.replace(new)
            return node, BOOL
        if like_parts(node) is not None:
            return self._like(node), BOOL
        if isinstance(node, (exp.JSONExtract, exp.JSONExtractScalar)):
            return self._json(node)
        if isinstance(node, exp.Substring):  # positions stay integer literals
            this, _ = self.run(node.this)
            node.set("this", this)
            return node, TEXT
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
            inner, kind = self.run(node.this)
            target = CAST_TARGETS[node.args["to"].this]
            node.set("this", self._double_if_numeric(inner) if target == DOUBLE and kind in NUMERIC else inner)
            return node, target
        kinds: dict[str, str | list[str]] = {}   # an argument's kind, or a list argument's kinds
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expression) and key != "to":
                new, kinds[key] = self.run(value)
                node.set(key, new)
            elif isinstance(value, list) and value and isinstance(value[0], exp.Expression):
                done = [self.run(v) for v in value]
                node.set(key, [n for n, _ in done])
                kinds[key] = [k for _, k in done]
        if isinstance(node, (*ARITHMETIC, exp.Neg, exp.Abs, *COMPARISONS, exp.In, exp.Between, exp.Coalesce)):
            flat = [k for v in kinds.values() for k in (v if isinstance(v, list) else [v])]
            if isinstance(node, (*ARITHMETIC, exp.Neg, exp.Abs)) or \
                    ({k for k in flat if k != NULL} <= NUMERIC and any(k in NUMERIC for k in flat)):
                self._doubles(node)
            if isinstance(node, (exp.Div, exp.Mod)):
                node.set("expression", exp.Nullif(this=node.expression, expression=_double(exp.Literal.number(0))))
            if isinstance(node, (*ARITHMETIC, exp.Neg, exp.Abs)):
                return node, DOUBLE
            if isinstance(node, exp.Coalesce):
                known = {k for k in flat if k != NULL}
                return node, (DOUBLE if known and known <= NUMERIC else known.pop() if known else NULL)
            return node, BOOL
        if isinstance(node, exp.TryCast):
            return node, CAST_TARGETS[node.args["to"].this]
        if isinstance(node, exp.Length):
            return node, INT
        if isinstance(node, (exp.Lower, exp.Upper, exp.Trim, exp.DPipe, exp.Concat)):
            return node, TEXT
        return node, BOOL  # AND, OR, NOT, IS, StartsWith, RegexpLike

    def _doubles(self, node: exp.Expr) -> None:
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expression):
                node.set(key, self._double_if_numeric(value))
            elif isinstance(value, list):
                node.set(key, [self._double_if_numeric(v) if isinstance(v, exp.Expression) else v for v in value])

    def _double_if_numeric(self, node: exp.Expr) -> exp.Expr:
        probe = node.this if isinstance(node, exp.Paren) else node
        if self.needs_double is not None and isinstance(probe, exp.Column):
            return _double(node) if self.needs_double(probe) else node
        return _double_if_numeric(node)

    def _case(self, node: exp.Case) -> tuple[exp.Expr, str]:
        values = []
        for branch in node.args.get("ifs") or []:
            cond, _ = self.run(branch.this)
            branch.set("this", cond)
            value, kind = self.run(branch.args["true"])
            branch.set("true", value)
            values.append((branch, "true", kind))
        if node.args.get("default") is not None:
            value, kind = self.run(node.args["default"])
            node.set("default", value)
            values.append((node, "default", kind))
        known = {k for _, _, k in values if k != NULL}
        if known and known <= NUMERIC:   # every branch DOUBLE: no engine unifies INT and DOUBLE differently
            for holder, key, _ in values:
                holder.set(key, self._double_if_numeric(holder.args[key]))
            return node, DOUBLE
        return node, (known.pop() if len(known) == 1 else NULL)

    def _like(self, node: exp.Expr) -> exp.Expr:
        like, pattern, escape = like_parts(node)  # type: ignore[misc]
        subject, _ = self.run(like.this)
        esc = (escape.this or None) if escape is not None else None
        text, canonical_escape = canonical_like(like_tokens(pattern.this, esc))
        out = type(like)(this=subject, expression=exp.Literal.string(text), negate=like.args.get("negate"))
        if canonical_escape is not None:
            out = exp.Escape(this=out, expression=exp.Literal.string(canonical_escape))
        return out

    def _json(self, node: exp.Expr) -> tuple[exp.Expr, str]:
        source, _ = self.run(node.this)
        if self.dialect == "duckdb" and isinstance(source, exp.Column):  # the JSON column itself
            source = exp.Paren(this=exp.Case(ifs=[exp.If(this=exp.func("json_valid", source.copy()),
                                                          true=source)]))
        parts = json_path(node.expression)
        if self.dialect in ("duckdb", "spark"):  # the engines we run: a path text verified on DuckDB
            path: exp.Expr = exp.Literal.string(path_text(parts, self.dialect))
        else:  # --emit-sketch for other engines: sqlglot writes the path in their syntax
            path = exp.JSONPath(expressions=[exp.JSONPathRoot(), *(
                exp.JSONPathSubscript(this=p) if isinstance(p, int) else exp.JSONPathKey(this=p) for p in parts)])
        out = type(node)(this=source, expression=path)
        return out, (TEXT if isinstance(node, exp.JSONExtractScalar) else JSON)


def _double(node: exp.Expr) -> exp.Expr:
    return exp.Cast(this=node, to=_DOUBLE.copy())


def _double_if_numeric(node: exp.Expr) -> exp.Expr:
    """Cast an operand to DOUBLE unless it already is one (a column or computation typed DOUBLE)."""
    probe = node.this if isinstance(node, exp.Paren) else node
    if isinstance(probe, exp.Literal) and not probe.is_string:
        return _double(node)
    if isinstance(probe, exp.Column) and _TYPE_BY_NAME.get(probe.name.lower()) == INT:
        return _double(node)
    if isinstance(probe, exp.Length) or (isinstance(probe, exp.TryCast) and CAST_TARGETS.get(
            probe.args["to"].this) == INT):
        return _double(node)
    return node


# -- engine-specific rules ------------------------------------------------------------------------------

def check_engine(terms: list[exp.Expr | None], engine: str) -> None:
    """Refuse (before any data is read) what the audit admits for DuckDB but `engine` could
    fail on or take super-linear time over: Spark evaluates LIKE and RLIKE with java.util.regex."""
    if engine != "spark":
        return
    for term in terms:
        for node in term.walk() if term is not None else ():
            if isinstance(node, exp.RegexpLike):
                refuse("regexp_matches on the spark engine: Java's regex engine backtracks, so its running time "
                       "(and stack) can explode on some records' text; use LIKE, or the duckdb engine", node)
            parts = like_parts(node)
            if parts is not None and not isinstance(node.parent, exp.Escape):
                like, pattern, escape = parts
                tokens = like_tokens(pattern.this, (escape.this or None) if escape is not None else None, pattern)
                if non_trailing_wildcards(tokens) > 1:
                    refuse(f"the {node_name(like)} pattern {pattern.this!r} on the spark engine: with more than one % "
                           "before its last character Spark's regex matching backtracks (time polynomial in the "
                           "text length); split it into AND-ed LIKEs", node)
