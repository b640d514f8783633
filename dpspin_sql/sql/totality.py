"""Totality of WHERE filters: admit only filters that provably cannot fail on any row.

A filter runs on every protected record. If some record could make it raise (a failed
cast, an overflow, an invalid LIKE escape reached only on some inputs, malformed JSON),
then whether `dpspin sql` succeeds would answer a question about that record without
spending budget — the zero-budget error oracle of the security issue. Catching errors at
run time (DuckDB's TRY) is not enough: some errors escape TRY, and a row that raises
inside TRY makes DuckDB re-run its chunk row by row, which shows in the running time.

So the audit proves totality statically, before any data is read:

1. **Types.** A small type checker over the filter with the store's column types
   (`COLUMN_TYPES`). Every node must be on the list below, and each has a typing rule
   whose preconditions make it total; a comparison/IN/BETWEEN/COALESCE whose operands
   would need an implicit conversion (which DuckDB performs per row, and which fails on
   some values: `text = 5` casts every text to a number) is refused — conversions are
   explicit TRY_CASTs to a short list of target types, which return NULL on failure.
2. **Arithmetic in DOUBLE.** Integer arithmetic can overflow (an oracle on atom ids and
   lengths: abs(INT_MIN), INT_MAX + 1). The rewrite casts every numeric operand to
   DOUBLE (`total_form`), where DuckDB follows IEEE 754 and never raises; `/` and `%`
   divide by NULLIF(divisor, 0), so x/0 is NULL on every engine (DuckDB alone would give
   ±inf/NaN, Spark NULL). `//` is refused: it raises on a zero divisor even in DOUBLE.
3. **Literal arguments, validated twice.** Arguments that make a function raise when
   they are wrong — LIKE/ILIKE patterns and ESCAPE, regular expressions and their
   flags, JSON paths, SUBSTRING positions — must be literals. Each is validated
   structurally (a LIKE pattern may not end with its escape character, the escape may
   precede only %, _ or itself, an ESCAPE is exactly one ASCII character; a JSON path is
   `$` followed by keys and non-negative indexes) *and* by evaluating the exact SQL the
   rewrite will run on constants in a private in-memory DuckDB (`_verify_on_constants`):
   a LIKE on the pattern's own expansion, which drives matching to the end of the
   pattern (DuckDB raises a trailing escape only when matching gets that far, i.e.
   depending on the input), a JSON path on a document that has it, every string
   literal back through DuckDB's parser.
4. **JSON.** The JSON column can hold malformed JSON (an Arrow `json` extension column
   is stored unchecked), and `->>` raises on it per row. On DuckDB the rewrite reads
   `CASE WHEN json_valid(metadata) THEN metadata END ->> path` instead.
5. **Memory and size.** No function whose output can be longer than a constant factor
   of its input: string construction from columns (`||`, concat) is refused, so memory
   cannot grow with a record's length beyond what reading it costs. The filter's depth,
   node count, IN-list length, number of pattern matches and pattern lengths are bounded
   (`LIMITS`; regular expressions: at most 4, 64 characters, no {n,m}), so the per-row work
   is at most a small constant times the row's size (the residual timing channel,
   docs/THREAT_MODEL.md).

docs/THREAT_MODEL.md gives, for every admitted function and operator, why it is total.
The total form the engines run (`sketch.totality.total_form`), the vocabulary both halves
share (column types, `LIMITS`, number literals, LIKE tokens, JSON paths) and the
engine-specific rules (Spark: no regular expressions, LIKE shapes that Java's regex engine
matches in linear time, `sketch.totality.check_engine`; PostgreSQL: comparisons of columns
with literals only, `sketch.engines.postgres`) are the sketch wing's: sketch/totality.py.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable

from sqlglot import exp

from dpspin_sql.sketch.totality import (
    ANY,
    ARITHMETIC,
    BOOL,
    CAST_TARGETS,
    CHAR,
    COLUMN_TYPES,
    COMPARISONS,
    DATE,
    DOUBLE,
    INT,
    JSON,
    LIMITS,
    NULL,
    NUMERIC,
    TEXT,
    Limits,
    json_path,
    like_parts,
    like_tokens,
    node_name,
    number,
    total_form,
)
from dpspin_sql.sql.dialect import tree_depth
from dpspin_sql.sql.errors import refuse

# TRY_CAST pairs DuckDB and Spark both bind (DATE <-> numbers do not bind at all)
_CASTABLE = {TEXT: {TEXT, BOOL, INT, DOUBLE, DATE}, INT: {TEXT, BOOL, INT, DOUBLE},
             DOUBLE: {TEXT, BOOL, INT, DOUBLE}, BOOL: {TEXT, BOOL, INT, DOUBLE}, DATE: {TEXT, DATE},
             NULL: {TEXT, BOOL, INT, DOUBLE, DATE}}


_REGEX_FLAGS = set("cilmnps")      # DuckDB's regexp options (g is for regexp_replace only)


# -- structure: size and depth (tree_depth is iterative: a deep tree would overflow recursion) -----

def check_size(predicate: exp.Expr, limits: Limits = LIMITS) -> None:
    if tree_depth(predicate) > limits.depth:
        refuse(f"the WHERE filter is nested more than {limits.depth} levels deep", predicate)
    nodes = operations = 0
    for node in predicate.walk():
        nodes += 1
        if not isinstance(node, (exp.Column, exp.Identifier, exp.Literal, exp.Paren, exp.Null, exp.Boolean)):
            operations += 1
    if nodes > limits.nodes:
        refuse(f"the WHERE filter has {nodes} syntax nodes, more than {limits.nodes}", predicate)
    if operations > limits.operations:
        refuse(f"the WHERE filter has {operations} operations, more than {limits.operations}", predicate)


# -- literals -------------------------------------------------------------------------------------

def string(literal: exp.Literal, limits: Limits = LIMITS) -> str:
    value = literal.this
    if len(value) > limits.literal_length:
        refuse(f"a string literal of {len(value)} characters, more than {limits.literal_length}", literal)
    if "\x00" in value:
        refuse("a string literal with a NUL character", literal)
    return value


# -- the type checker -----------------------------------------------------------------------------

Resolve = Callable[[exp.Column], tuple[str, str]]

# arguments a node may have set; anything else is refused by name
_ARGS: dict[type[exp.Expr], set[str]] = {
    exp.Like: {"this", "expression", "negate"}, exp.ILike: {"this", "expression", "negate"},
    exp.Escape: {"this", "expression"}, exp.RegexpLike: {"this", "expression", "flag"},
    exp.TryCast: {"this", "to", "safe"}, exp.Length: {"this"}, exp.Lower: {"this"}, exp.Upper: {"this"},
    exp.Trim: {"this", "expression", "position"}, exp.Substring: {"this", "start", "length"},
    exp.Coalesce: {"this", "expressions", "is_nvl", "is_null"}, exp.StartsWith: {"this", "expression"},
    exp.JSONExtract: {"this", "expression", "only_json_types"},
    exp.JSONExtractScalar: {"this", "expression", "only_json_types"},
    exp.In: {"this", "expressions"}, exp.Between: {"this", "low", "high"},
    exp.Is: {"this", "expression", "negate"},
    exp.Div: {"this", "expression"}, exp.Column: {"this", "table"},
}


# Every node type a filter may contain (docs/THREAT_MODEL.md says why each is total); || and
# concat only of literals. Anything else is refused by name.
ADMITTED = (exp.Paren, exp.Column, exp.Literal, exp.Boolean, exp.Null, exp.And, exp.Or, exp.Not, *COMPARISONS,
            exp.In, exp.Between, exp.Is, exp.Like, exp.ILike, exp.Escape, exp.RegexpLike, *ARITHMETIC, exp.Neg,
            exp.Abs, exp.TryCast, exp.Lower, exp.Upper, exp.Length, exp.Trim, exp.Substring, exp.StartsWith,
            exp.Coalesce, exp.JSONExtract, exp.JSONExtractScalar, exp.DPipe, exp.Concat)


class Checker:
    """Types a filter (VARCHAR, INTEGER, DOUBLE, BOOLEAN, DATE, JSON, NULL), refusing what could fail."""

    def __init__(self, resolve: Resolve, limits: Limits = LIMITS, types: dict | None = None, *,
                 values: bool = False, context: str = "WHERE", grammar: str = "a WHERE filter"):
        self.resolve = resolve
        self.limits = limits
        self.types = types      # {(table, column): type} for a statement over its own tables
        self.patterns = 0
        self.regexes = 0
        # in a row-wise relation's projections (sql/rowwise.py) a value may also be a searched CASE
        # and a CAST that cannot fail (to DOUBLE from a number, to VARCHAR from anything)
        self.values = values
        self.context = context      # where the expression is, for messages
        self.grammar = grammar      # whose list of operations it is checked against

    def predicate(self, node: exp.Expr) -> None:
        check_size(node, self.limits)
        self._boolean(node, "the WHERE filter")

    def _boolean(self, node: exp.Expr, where: str) -> None:
        kind = self.type(node)
        if kind not in (BOOL, NULL):
            refuse(f"{where} is {kind}, not a condition; the engine would convert it to BOOLEAN per row, "
                   "which fails on some values (compare it with something instead)", node)

    def type(self, node: exp.Expr) -> str:
        allowed = _ARGS.get(type(node))
        if allowed is not None:
            for key, value in node.args.items():
                if value not in (None, False, []) and key not in allowed:
                    refuse(f"{node_name(node)} with {key} is not allowed in {self.context}", node)
        if isinstance(node, exp.Paren):
            return self.type(node.this)
        if isinstance(node, exp.Column):
            table, name = self.resolve(node)
            return self.types[(table, name)] if self.types is not None else COLUMN_TYPES[table][name]
        if isinstance(node, exp.Literal):
            if node.is_string:
                string(node, self.limits)
                return TEXT
            return INT if isinstance(number(node, self.limits), int) else DOUBLE
        if isinstance(node, exp.Boolean):
            return BOOL
        if isinstance(node, exp.Null):
            return NULL
        if isinstance(node, (exp.And, exp.Or)):  # a chain a OR b OR c ... iteratively, not by recursion
            for operand in node.flatten():
                self._boolean(operand, f"an operand of {node_name(node)}")
            return BOOL
        if isinstance(node, exp.Not):
            self._boolean(node.this, "the operand of NOT")
            return BOOL
        if isinstance(node, COMPARISONS):
            self._unify([node.this, node.expression], node, compare=True)
            return BOOL
        if isinstance(node, exp.In):
            items = node.expressions
            if not items:
                refuse("IN needs a list of values", node)
            if len(items) > self.limits.in_list:
                refuse(f"an IN list of {len(items)} items, more than {self.limits.in_list}", node)
            self._unify([node.this, *items], node, compare=True)
            return BOOL
        if isinstance(node, exp.Between):
            self._unify([node.this, node.args["low"], node.args["high"]], node, compare=True)
            return BOOL
        if isinstance(node, exp.Is):
            target = node.expression
            if isinstance(target, exp.Null):
                self.type(node.this)
            elif isinstance(target, exp.Boolean):
                self._boolean(node.this, "the operand of IS TRUE/FALSE")
            else:
                refuse("IS may only test NULL, TRUE or FALSE", node)
            return BOOL
        if isinstance(node, (exp.Like, exp.ILike, exp.Escape)):
            return self._like(node)
        if isinstance(node, exp.RegexpLike):
            return self._regexp(node)
        if isinstance(node, ARITHMETIC):
            if isinstance(node, exp.Div) and (node.args.get("typed") or node.args.get("safe")):
                refuse("only the plain division / is allowed in WHERE", node)
            self._numeric(node.this, node)
            self._numeric(node.expression, node)
            return DOUBLE
        if isinstance(node, (exp.Neg, exp.Abs)):
            self._numeric(node.this, node)
            return DOUBLE
        if isinstance(node, exp.TryCast):
            return self._try_cast(node)
        if isinstance(node, exp.Cast) and self.values:
            return self._cast(node)
        if isinstance(node, exp.Cast):
            refuse("CAST can fail on a record's value and reveal it; use TRY_CAST", node)
        if isinstance(node, exp.Case) and self.values:
            return self._case(node)
        if isinstance(node, (exp.Lower, exp.Upper)):
            self._text(node.this, node)
            return TEXT
        if isinstance(node, exp.Length):
            self._text(node.this, node)
            return INT
        if isinstance(node, exp.Trim):
            self._text(node.this, node)
            chars = node.args.get("expression")
            if chars is not None:
                if not (isinstance(chars, exp.Literal) and chars.is_string):
                    refuse("the characters TRIM removes must be a string literal", chars)
                if len(string(chars, self.limits)) > self.limits.pattern_length:
                    refuse(f"TRIM of more than {self.limits.pattern_length} characters", chars)
            position = node.args.get("position")
            if position is not None and str(position).upper() not in ("LEADING", "TRAILING", "BOTH"):
                refuse("TRIM's position must be LEADING, TRAILING or BOTH", node)
            return TEXT
        if isinstance(node, exp.Substring):
            return self._substring(node)
        if isinstance(node, exp.StartsWith):
            self._text(node.this, node)
            self._text(node.expression, node)
            return BOOL
        if isinstance(node, exp.Coalesce):
            return self._unify([node.this, *(node.expressions or [])], node, compare=False)
        if isinstance(node, (exp.JSONExtract, exp.JSONExtractScalar)):
            return self._json(node)
        if isinstance(node, (exp.DPipe, exp.Concat)):
            if node.find(exp.Column):
                refuse(f"{node_name(node)} builds a string from a record's value: its size grows with the record, "
                       "so memory (and failing for lack of it) would depend on the record's length; "
                       "compare parts with LIKE/starts_with/substring instead", node)
            for part in ([node.this, node.expression] if isinstance(node, exp.DPipe) else node.expressions):
                self._text(part, node)
            return TEXT
        if isinstance(node, (exp.Subquery, exp.Select, exp.Exists)):
            refuse(f"a subquery in {self.context} could read other rows or tables; a filter reads one row", node)
        refuse(f"{node_name(node)} is not on the list of per-row operations {self.grammar} may use (docs/SQL.md)",
               node)

    # -- rules ---------------------------------------------------------------------------------------
    def _text(self, node: exp.Expr, parent: exp.Expr) -> None:
        kind = self.type(node)
        if kind not in (TEXT, NULL):
            refuse(f"{node_name(parent)} takes text, not {kind}; the engine would convert it per row "
                   f"(use TRY_CAST(… AS VARCHAR))", node)

    def _numeric(self, node: exp.Expr, parent: exp.Expr) -> None:
        kind = self.type(node)
        if kind not in NUMERIC and kind != NULL:
            refuse(f"{node_name(parent)} takes numbers, not {kind}; the engine would convert it per row, "
                   f"which fails on some values (use TRY_CAST(… AS DOUBLE))", node)

    def _unify(self, nodes: list[exp.Expr], parent: exp.Expr, *, compare: bool) -> str:
        kinds = [self.type(n) for n in nodes]
        known = {k for k in kinds if k != NULL}
        if not known:
            return NULL
        if JSON in known:
            refuse(f"{node_name(parent)} of a JSON value: JSON is not comparable; extract a field as text "
                   "with ->> '$.key'", parent)
        if known <= NUMERIC:
            return DOUBLE if DOUBLE in known else INT
        if len(known) == 1:
            return known.pop()
        a, b = sorted(known)[:2]
        verb = "compares" if compare else "mixes"
        refuse(f"{node_name(parent)} {verb} {a} with {b}: the engine would convert one side on every row, and the "
               "conversion fails on some values, which would make the query's success depend on them; "
               "convert explicitly with TRY_CAST", parent)

    def _like(self, node: exp.Expr) -> str:
        if isinstance(node, exp.Escape) and not isinstance(node.this, (exp.Like, exp.ILike)):
            refuse("ESCAPE goes with LIKE or ILIKE only", node)
        like, pattern, escape = like_parts(node)  # type: ignore[misc]
        self._text(like.this, like)
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            refuse(f"the pattern of {node_name(like)} must be a string literal: a pattern read from the data could be "
                   "invalid on some records, and the query's success would answer a question about them", pattern)
        text = string(pattern, self.limits)
        if len(text) > self.limits.pattern_length:
            refuse(f"a {node_name(like)} pattern of {len(text)} characters, more than {self.limits.pattern_length}",
                   pattern)
        esc = None
        if escape is not None:
            if not (isinstance(escape, exp.Literal) and escape.is_string):
                refuse(f"the ESCAPE of {node_name(like)} must be a string literal", escape)
            esc = escape.this or None
            if esc is not None and (len(esc) != 1 or not (" " <= esc <= "~") or esc in "%_"):
                refuse(f"ESCAPE {esc!r}: an escape must be exactly one ASCII character other than % and _ "
                       "(DuckDB raises on any other, row by row)", escape)
        like_tokens(text, esc, pattern)
        self._count_pattern(node)
        return BOOL

    def _regexp(self, node: exp.RegexpLike) -> str:
        self._text(node.this, node)
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            refuse("the pattern of regexp_matches must be a string literal: one read from the data could be "
                   "invalid on some records", pattern)
        text = string(pattern, self.limits)
        # RE2 matches in linear time, but the constant grows with the pattern: a counted repetition
        # (a.{20}b) makes its DFA blow up and fall back to simulating the NFA, ~1 us per character
        # of text (84 ms on a 100 kB record), and how often it does depends on the text: a timing
        # channel. Short patterns without {n,m} stay fast (docs/THREAT_MODEL.md, measured).
        if len(text) > self.limits.regex_length:
            refuse(f"a regular expression of {len(text)} characters, more than {self.limits.regex_length}", pattern)
        if "{" in text:
            refuse("a counted repetition {n,m} in a regular expression: its matching time can grow a "
                   "thousandfold with the text's content; write the repetition out or use LIKE", pattern)
        self.regexes += 1
        if self.regexes > self.limits.regexes:
            refuse(f"more than {self.limits.regexes} regexp_matches in one filter", node)
        flag = node.args.get("flag")
        if flag is not None and (not (isinstance(flag, exp.Literal) and flag.is_string)
                                 or not set(flag.this) <= _REGEX_FLAGS):
            refuse(f"regexp_matches options must be a string literal of {''.join(sorted(_REGEX_FLAGS))}", flag)
        self._count_pattern(node)
        return BOOL

    def _count_pattern(self, node: exp.Expr) -> None:
        self.patterns += 1
        if self.patterns > self.limits.patterns:
            refuse(f"more than {self.limits.patterns} LIKE/ILIKE/regexp_matches in one filter", node)

    def _try_cast(self, node: exp.TryCast) -> str:
        to = node.args["to"]
        target = CAST_TARGETS.get(to.this) if isinstance(to, exp.DataType) else None
        if target is None or to.expressions or to.args.get("nested") or to.args.get("values"):
            refuse(f"TRY_CAST to {to.sql() if isinstance(to, exp.Expression) else to} is not allowed; "
                   "use VARCHAR, BOOLEAN, INTEGER, BIGINT, DOUBLE or DATE", node)
        source = self.type(node.this)
        if source == JSON:
            refuse("TRY_CAST of a JSON value; extract a field as text first (metadata ->> '$.key')", node)
        if target not in _CASTABLE.get(source, set()):
            refuse(f"TRY_CAST from {source} to {target} is not a conversion the engines have", node)
        return target

    def _cast(self, node: exp.Cast) -> str:
        """CAST in a row-wise relation's values: only the conversions that cannot fail."""
        to = node.args["to"]
        target = CAST_TARGETS.get(to.this) if isinstance(to, exp.DataType) else None
        source = self.type(node.this)
        if target == TEXT and not to.expressions and source != JSON:
            return TEXT
        if target == DOUBLE and source in (INT, DOUBLE, BOOL, NULL):
            return DOUBLE
        refuse(f"CAST from {source} to {to.sql('duckdb') if isinstance(to, exp.Expression) else to} can fail on a "
               "record's value; a CAST may only make a number DOUBLE or anything VARCHAR (use TRY_CAST)", node)

    def _case(self, node: exp.Case) -> str:
        """A searched CASE: BOOLEAN conditions, values of one type."""
        if node.args.get("this") is not None:
            refuse("CASE x WHEN …: write the searched form, CASE WHEN x = … THEN …", node)
        values = []
        for branch in node.args.get("ifs") or []:
            self._boolean(branch.this, "a CASE condition")
            values.append(branch.args["true"])
        if node.args.get("default") is not None:
            values.append(node.args["default"])
        return self._unify(values, node, compare=False)

    def _substring(self, node: exp.Substring) -> str:
        self._text(node.this, node)
        for key, low in (("start", -self.limits.substring), ("length", 0)):
            arg = node.args.get(key)
            if arg is None:
                if key == "start":
                    refuse("SUBSTRING needs a start position", node)
                continue
            value = _int_literal(arg)
            if value is None or not low <= value <= self.limits.substring:
                refuse(f"the {key} of SUBSTRING must be an integer literal in [{low}, {self.limits.substring}]: "
                       "a position computed from the data could be out of range on some records", arg)
        return TEXT

    def _json(self, node: exp.Expr) -> str:
        source = self.type(node.this)
        if source not in (JSON, NULL):
            refuse(f"JSON extraction from {source}; only the metadata column (or a field extracted with ->) "
                   "is JSON", node)
        json_path(node.expression, self.limits)
        return TEXT if isinstance(node, exp.JSONExtractScalar) else JSON


def _int_literal(node: exp.Expr) -> int | None:
    sign = 1
    while isinstance(node, (exp.Neg, exp.Paren)):
        if isinstance(node, exp.Neg):
            sign = -sign
        node = node.this
    if isinstance(node, exp.Literal) and not node.is_string and re.fullmatch(r"[0-9_]+", node.this):
        return sign * int(node.this.replace("_", ""))
    return None


def check_predicate(predicate: exp.Expr, resolve: Resolve, limits: Limits = LIMITS, *,
                    types: dict | None = None, names: dict | None = None) -> None:
    """Refuse (AuditRefusal) a WHERE predicate that could fail on some row; see the module docstring.
    Over the user's own tables (sql/own.py), `types` gives each resolved (table, column) its
    type and `names` each unqualified column name its type (default: the store's columns)."""
    Checker(resolve, limits, types).predicate(predicate)
    _verify_on_constants(predicate, names)


# -- evaluation on constants ------------------------------------------------------------------------

_LOCK = threading.Lock()
_CON = None
_SAMPLE_TEXT = ("", "a", "%", "_", "\\", "!", "ab%_\\!'\"", "é€𝄞", "\n", "2020-01-01", "1e308", "{\"a\": 1}")


def _constants():
    global _CON
    if _CON is None:
        import duckdb

        _CON = duckdb.connect(":memory:")
    return _CON


def _verify_on_constants(predicate: exp.Expr, names: dict | None = None) -> None:
    """Run the exact SQL the rewrite will run for each pattern, path, position and literal on
    sample values in a private in-memory DuckDB: any error there is a refusal (nothing of the
    store is read). The samples come from a column (unnest of a parameter), not from literals,
    so that DuckDB's optimizer treats the expression as it does over a table (rewriting LIKE
    and regexp into prefix/contains matches) instead of folding it to a constant."""
    original = unqualified(predicate)
    literals = [n for n in total_form(original, "duckdb", names).walk() if isinstance(n, exp.Literal) and n.is_string]
    # (what, the rewritten expression over t.s, samples, their type, {sample index: expected result});
    # the expected results come from the audit's reading of the *original* node, the expression
    # from the rewrite, so a rewrite that changed the meaning is caught too
    checks: list[tuple[str, exp.Expr, list[str], str, dict]] = []
    subject = exp.column("s", table="t")
    for node in list(original.walk()):
        parts = like_parts(node)
        if parts is not None and not isinstance(node.parent, exp.Escape):
            like, pattern, escape = parts
            tokens = like_tokens(pattern.this, (escape.this or None) if escape is not None else None)
            full = "".join(c if k == CHAR else "" if k == ANY else "x" for k, c in tokens)
            wide = "".join(c if k == CHAR else "yy" if k == ANY else "é" for k, c in tokens)
            probe = total_form(node, "duckdb", names)
            (probe.this if isinstance(probe, exp.Escape) else probe).set("this", subject.copy())
            expected: dict[int, object] = {0: not like.args.get("negate")}   # sample 0, the pattern's expansion, must match
            checks.append((f"the {node_name(like)} pattern {pattern.this!r}", probe,
                           [full, wide, full[:-1], full + "z", *_SAMPLE_TEXT], "VARCHAR", expected))
        elif isinstance(node, exp.RegexpLike):
            probe = total_form(node, "duckdb", names)
            probe.set("this", subject.copy())
            checks.append((f"the regular expression {node.expression.this!r}", probe,
                           [node.expression.this, *_SAMPLE_TEXT], "VARCHAR", {}))
        elif isinstance(node, (exp.JSONExtract, exp.JSONExtractScalar)):
            import json

            doc: object = "ok"
            for part in reversed(json_path(node.expression)):
                doc = [None] * part + [doc] if isinstance(part, int) else {part: doc}
            probe = total_form(node, "duckdb", names)
            probe.set("this", subject.copy())
            expected = {0: "ok" if isinstance(node, exp.JSONExtractScalar) else '"ok"'}
            checks.append((f"the JSON path {node.expression.sql('duckdb')}", probe,
                           [json.dumps(doc), "{}", "[]", "1", "null", '"ok"'], "JSON", expected))
        elif isinstance(node, exp.Substring):
            probe = total_form(node, "duckdb", names)
            probe.set("this", subject.copy())
            checks.append(("SUBSTRING", probe, list(_SAMPLE_TEXT), "VARCHAR", {}))
    with _LOCK:
        con = _constants()
        if literals:
            sql = "SELECT " + ", ".join(lit.sql("duckdb") for lit in literals)
            try:
                got = con.execute(sql).fetchall()[0]
            except Exception:
                refuse("a string literal does not read back through DuckDB's parser", predicate)
            for lit, value in zip(literals, got):
                if value != lit.this:
                    refuse(f"the string literal {lit.this!r} does not read back through DuckDB's parser", lit)
        for what, probe, samples, kind, expected in checks:
            sql = (f"SELECT t.i, {probe.sql('duckdb')} FROM (SELECT CAST(unnest($samples) AS {kind}) AS s, "
                   "generate_subscripts($samples, 1) - 1 AS i) AS t")
            try:
                rows = dict(con.execute(sql, {"samples": samples}).fetchall())
            except Exception:
                refuse(f"{what} raises in DuckDB on sample values; it could raise on records too", predicate)
            if any(rows.get(i) != value for i, value in expected.items()):
                refuse(f"{what} does not mean in DuckDB what the audit read it as", predicate)


def unqualified(term: exp.Expr) -> exp.Expr:
    """The term with its columns unqualified and lower-cased (how the rewrite injects it)."""
    term = term.copy()
    for column in term.find_all(exp.Column):
        column.set("table", None)
        column.this.set("quoted", False)
        column.this.set("this", column.name.lower())
    return term


verify_on_constants = _verify_on_constants   # the public name (sql/rowwise.py checks a relation's values with it)
