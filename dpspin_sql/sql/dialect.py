"""The DP-SPIN SQL dialect: DuckDB's grammar plus BigQuery's differential-privacy clause.

    SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1.0, ...) atom_id, DPSPIN_MASS(weight)
    FROM assignments ... GROUP BY atom_id

The clause is parsed right after SELECT (where query hints go) into a
`DifferentialPrivacy` node held in the Select's `hint` slot; `DPSPIN_MASS(x)` is a
`DpspinMass` aggregate. Everything else is DuckDB's grammar; what the statement may
contain is decided by `audit.py`, not here. The grammar is in docs/SQL.md.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.tokens import TokenType

from dpspin_sql.errors import BadInput
from dpspin_sql.sketch.sqlglot_log import quiet  # sqlglot's warnings never reach stderr while we parse

NAME = "dpspin"

# Bounds checked before and right after parsing, so that no statement can exhaust the
# parser's or the generator's recursion (5,000 nested parentheses were an internal error,
# exit 3): a longer or deeper statement is bad input, exit 2, one line.
MAX_STATEMENT_CHARS = 100_000
MAX_TOKENS = 20_000
MAX_BRACKET_DEPTH = 32      # ( [ { nesting; sqlglot's parser recurses ~20 frames per level
MAX_TREE_DEPTH = 128        # the parsed tree (chains like - - - 1 nest without brackets)

class DifferentialPrivacy(exp.Expression):
    """`WITH DIFFERENTIAL_PRIVACY OPTIONS (name = value, ...)`; expressions are Property nodes."""

    arg_types: ClassVar[dict[str, bool]] = {"expressions": False}


class DpspinMass(exp.Expression, exp.AggFunc):
    """`DPSPIN_MASS(weight)`: the enforced, clipped fixed-point sketch mass of an atom."""

    arg_types: ClassVar[dict[str, bool]] = {"this": True}
    _sql_names: ClassVar[list[str]] = ["DPSPIN_MASS"]


class DPSpin(DuckDB):
    # sqlglot declares DuckDB.Parser and DuckDB.Generator as class attributes (variables to mypy)
    class Parser(DuckDB.Parser):  # type: ignore[misc,valid-type]
        FUNCTIONS: ClassVar[dict[str, Callable]] = {**DuckDB.Parser.FUNCTIONS, "DPSPIN_MASS": DpspinMass.from_arg_list}

        def _parse_hint(self):
            if (self._curr and self._curr.token_type == TokenType.WITH and self._next
                    and self._next.text.upper() == "DIFFERENTIAL_PRIVACY"):
                self._advance(2)
                self._match_text_seq("OPTIONS")
                options = self._parse_wrapped_csv(self._parse_dp_option, optional=False)
                return self.expression(DifferentialPrivacy(expressions=options))
            return super()._parse_hint()

        def _parse_dp_option(self) -> exp.Property | None:
            name = self._parse_id_var(any_token=True)
            if not name:
                self.raise_error("expected an option name in OPTIONS (...)")
                return None
            if not self._match(TokenType.EQ):
                self.raise_error(f"expected '=' after option {name.name!r}")
                return None
            value = self._parse_bitwise()
            if value is None:
                self.raise_error(f"expected a value for option {name.name!r}")
                return None
            return self.expression(exp.Property(this=exp.var(name.name.lower()), value=value))

    class Generator(DuckDB.Generator):  # type: ignore[misc,valid-type]
        TRANSFORMS: ClassVar[dict[type[exp.Expr], Callable[..., str]]] = {
            **DuckDB.Generator.TRANSFORMS,
            DifferentialPrivacy: lambda self, e: self.differentialprivacy_sql(e),
        }

        def differentialprivacy_sql(self, expression: DifferentialPrivacy) -> str:
            options = ", ".join(
                f"{p.name} = {self.sql(p, 'value')}" for p in expression.expressions)
            return f" WITH DIFFERENTIAL_PRIVACY OPTIONS ({options})"


def parse(sql: str) -> exp.Expr:
    """Parse exactly one DP-SPIN statement; anything unparseable is BadInput (exit 2)."""
    if not sql or not sql.strip():
        raise BadInput("empty SQL statement")
    _check_shape(sql)
    try:
        with quiet():
            statements = sqlglot.parse(sql, read=DPSpin, error_level=ErrorLevel.RAISE)
    except (ParseError, TokenError) as exc:
        raise BadInput(f"cannot parse the SQL statement: {_first_error(exc)}") from None
    except RecursionError:
        raise BadInput("cannot parse the SQL statement: it is nested too deeply") from None
    parsed = [s for s in statements if s is not None]
    if not parsed:
        raise BadInput("empty SQL statement")
    for statement in parsed:
        if tree_depth(statement) > MAX_TREE_DEPTH:
            raise BadInput(f"the SQL statement is nested more than {MAX_TREE_DEPTH} levels deep")
    if isinstance(parsed[0], _BARE_EXPRESSIONS):
        raise BadInput(f"not a SQL statement: {_snippet(sql)}")
    if len(parsed) > 1:
        raise MoreThanOneStatement(parsed)
    return parsed[0]


def _check_shape(sql: str) -> None:
    """Length, NUL bytes, token count and bracket depth, from the tokens (no recursion)."""
    if len(sql) > MAX_STATEMENT_CHARS:
        raise BadInput(f"the SQL statement has {len(sql)} characters, more than {MAX_STATEMENT_CHARS}")
    if "\x00" in sql:
        raise BadInput("the SQL statement contains a NUL character")
    try:
        with quiet():
            tokens = DPSpin().tokenize(sql)
    except (ParseError, TokenError) as exc:
        raise BadInput(f"cannot parse the SQL statement: {_first_error(exc)}") from None
    if len(tokens) > MAX_TOKENS:
        raise BadInput(f"the SQL statement has {len(tokens)} tokens, more than {MAX_TOKENS}")
    level = deepest = 0
    opening = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE}
    closing = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE}
    for token in tokens:
        if token.token_type in opening:
            level += 1
            deepest = max(deepest, level)
        elif token.token_type in closing:
            level -= 1
    if deepest > MAX_BRACKET_DEPTH:
        raise BadInput(f"the SQL statement nests brackets {deepest} deep, more than {MAX_BRACKET_DEPTH}")


def tree_depth(node: exp.Expr) -> int:
    """Nesting depth of a syntax tree, computed without recursion. A chain of the same AND/OR
    (a OR b OR c ...) counts as one level: sqlglot and the audit walk such chains iteratively."""
    best, stack = 0, [(node, 1)]
    while stack:
        current, level = stack.pop()
        best = max(best, level)
        for child in current.iter_expressions():
            flat = isinstance(child, exp.Connector) and type(child) is type(current)
            stack.append((child, level if flat else level + 1))
    return best


class MoreThanOneStatement(Exception):
    """Parsed, but not one statement: the audit refuses it (a refusal, not bad input)."""

    def __init__(self, statements: list):
        super().__init__(f"{len(statements)} statements")
        self.statements = statements


_BARE_EXPRESSIONS = (exp.Alias, exp.Column, exp.Identifier, exp.Literal, exp.Binary, exp.Unary,
                     exp.Func, exp.Paren, exp.Var)


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        e = errors[0]
        where = f" at line {e.get('line')}, col {e.get('col')}" if e.get("line") else ""
        near = e.get("highlight") or ""
        return f"{e.get('description', 'syntax error')}{where}" + (f" near {near!r}" if near else "")
    return str(exc).strip().splitlines()[0]


def _snippet(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
