"""The curator's segment domain from the command line: `--segment-by` / `--period-col`.

    dpspin release ... --segment-by product --segments "Mortgage,Credit card"
    dpspin release ... --segment-by "lower(metadata ->> '$.state')" --segments-file states.txt
    dpspin release ... --period-col date_received --boundaries 2017-01-01

A value is a store records column (`record_id`, `user_id`, `text`, `split`, `metadata`),
a bare name, which is a key of the record's metadata (`product` is
`metadata ->> '$.product'`), or any other text, read as a SQL expression over the records
columns. Each segment's predicate (`segments.value_terms` / `period_terms`) is audited
exactly as a WHERE term of a DP SQL statement (dpspin_sql/sql/audit.py: one row,
deterministic, total — no record can make the query fail), so the CLI admits nothing the
SQL audit would refuse; a refusal exits 1, as there.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dpspin_sql.errors import AuditRefusal, BadInput
from dpspin_sql.request import Segments
from dpspin_sql.segments import SegmentPlacement, period_labels, period_terms, value_terms

if TYPE_CHECKING:
    from sqlglot import exp

RECORD_COLUMNS = ("record_id", "user_id", "text", "split", "metadata")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace') "
              "atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) "
              "WHERE {} GROUP BY atom_id")


def expression_of(text: str, flag: str = "--segment-by") -> exp.Expr:
    """The records expression a --segment-by / --period-col value names (module docstring)."""
    import sqlglot
    from sqlglot import exp

    if not isinstance(text, str) or not text.strip():
        raise BadInput(f"{flag} needs a column, a metadata key or an expression")
    text = text.strip()
    if text in RECORD_COLUMNS:
        return exp.column(text)
    if _NAME.match(text):
        return exp.JSONExtractScalar(this=exp.column("metadata"), expression=exp.Literal.string(f"$.{text}"))
    from dpspin_sql.sketch.sqlglot_log import quiet

    try:
        with quiet():
            return sqlglot.parse_one(text, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        raise BadInput(f"{flag} {text!r} is not a column, a metadata key or a SQL expression") from None


def audited(terms: Sequence[exp.Expr]) -> tuple[exp.Expr, ...]:
    """Each predicate through the DP SQL audit as the WHERE of a statement over the store's
    records; refused (exit 1) as a statement with that WHERE would be."""
    from dpspin_sql.sql.audit import audit_statement

    out = []
    for term in terms:
        statement = _STATEMENT.format(term.sql(dialect="duckdb"))
        checked = audit_statement(statement)
        if checked.assignments_filter is not None:
            raise AuditRefusal("a segment is a fact about a record: the segment expression may read records "
                               "columns only (record_id, user_id, text, split, metadata), not assignment columns")
        if checked.records_filter is None:
            raise AuditRefusal("the segment expression reads no records column, so it would put every record in "
                               "the same segment")
        out.append(checked.records_filter)
    return tuple(out)


def by_values(text: str, labels: Sequence[str], *, admission: str = "per_segment") -> tuple[Segments, SegmentPlacement]:
    """Segments by the value of a records column, metadata key or expression (compared as text)."""
    expression = expression_of(text)
    segments = Segments(labels=tuple(labels), name=text.strip(), admission=admission,
                        definition=f"TRY_CAST(({expression.sql(dialect='duckdb')}) AS VARCHAR) = <segment label>")
    return segments, SegmentPlacement(segments.labels, audited(value_terms(expression, segments.labels)))


def by_periods(column: str, boundaries: Sequence[str], *,
               admission: str = "per_segment") -> tuple[Segments, SegmentPlacement]:
    """Segments by a date (a records column, metadata key or expression, read with
    TRY_CAST(… AS DATE)) cut at public boundary dates (ISO, increasing)."""
    expression = expression_of(column, "--period-col")
    cuts = tuple(b.strip() for b in boundaries)
    try:
        labels = period_labels(cuts)
    except (ValueError, IndexError):   # not ISO dates: the Segments check below says so
        labels = tuple(f"period {i}" for i in range(len(cuts) + 1))
    segments = Segments(labels=labels, name=column.strip(), kind="periods", boundaries=cuts, admission=admission,
                        definition=f"TRY_CAST(({expression.sql(dialect='duckdb')}) AS DATE), cut at "
                                   + ", ".join(cuts) + " (each period starts on its first day)")
    return segments, SegmentPlacement(segments.labels, audited(period_terms(expression, segments.boundaries)))


def read_labels(text: str | None = None, path: Path | None = None) -> tuple[str, ...]:
    """The segment labels from `--segments a,b,c` or `--segments-file FILE` (one a line,
    UTF-8, blank lines skipped)."""
    if (text is None) == (path is None):
        raise BadInput("give the segment domain with --segments a,b,c or --segments-file FILE (one of them)")
    if path is not None:
        if not path.is_file():
            raise BadInput(f"segments file not found: {path}")
        try:
            body = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            raise BadInput(f"cannot read {path} as UTF-8 text") from None
        labels = [line.strip() for line in body.splitlines() if line.strip()]
    else:
        assert text is not None
        labels = [part.strip() for part in text.split(",")]
        if any(not p for p in labels):
            raise BadInput("--segments has an empty label (a label with a comma goes in --segments-file)")
    if not labels:
        raise BadInput(f"{path} declares no segment")
    return tuple(labels)


def read_boundaries(text: str) -> tuple[str, ...]:
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(not p for p in parts):
        raise BadInput("--boundaries needs dates such as 2017-01-01[,2018-01-01]")
    return tuple(parts)
