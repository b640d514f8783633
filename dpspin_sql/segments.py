"""Segmented sketches: one enforced sketch over (segment, atom) (docs/DESIGN.md §11).

A segmented release declares a public segment domain (`request.Segments`) and, for the
engine, a `SegmentPlacement`: one per-record predicate per segment, over the records
relation's columns, in the domain's order. A record is in the first segment whose
predicate is TRUE, and in none when no predicate is (it is then left out of the
release, like a record a WHERE filter drops).

The sketch is the DP-SPIN sketch of the *product dictionary* Seg × A: a record's vector
is placed in its segment's row, so each (segment, atom) pair is one coordinate. The
query is the core's own (queries/sketch_record.sql, queries/sketch_user.sql) with two
additions made by `place`, exactly where the rewrite puts a statement's WHERE terms:

- `target` gains a column `dpspin_segment`: the index of the record's segment (a CASE over the
  predicates, each in its total form, so no record can make the query fail), NULL when
  none holds;
- `cleaned` reads the row's atom as the key `segment · 2^32 + atom_id` (the dictionary's
  own integer id) and drops the rows of records in no segment.

Everything after `cleaned` is unchanged: per record, the top K and Σ ≤ 2^24; per user,
one clip of the whole vector — every segment's coordinates together — to Σ ≤ ⌊B·2^24⌋.
So one record, or one user, still moves the sketch by a non-negative vector of L1 ≤ b,
whatever segments its records are in, and the sensitivity table of §2 holds unchanged.
The engine decodes the keys back into (segment, atom) positions (`decode_key`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dpspin_sql.errors import BadInput

if TYPE_CHECKING:   # sqlglot is imported only where a segmented query is rendered
    from sqlglot import exp

# A (segment, atom) key: segment · 2^32 + atom_id. Atom ids are INTEGER (−2^31 .. 2^31 − 1),
# so the segment is recovered as (key + 2^31) >> 32 and the atom as key − segment · 2^32.
KEY_STRIDE = 1 << 32
_HALF = 1 << 31
# The column `place` adds to `target` (a name no records relation of the project's has).
SEGMENT_COLUMN = "dpspin_segment"


def encode_key(segment: int, atom_id: int) -> int:
    return int(segment) * KEY_STRIDE + int(atom_id)


def decode_key(key: int) -> tuple[int, int]:
    """(segment index, atom id) of a key the segmented query returned."""
    key = int(key)
    segment = (key + _HALF) >> 32
    return segment, key - segment * KEY_STRIDE


@dataclass(frozen=True)
class SegmentPlacement:
    """Where each record goes: `terms[i]` is the per-record predicate of segment `labels[i]`
    (a sqlglot expression over the records relation's unqualified columns, already audited:
    deterministic, one row, total — sql/totality.py). `types` are the columns' types when
    the records relation is not the store's (as `SketchFilters.types`)."""

    labels: tuple[str, ...]
    terms: tuple[exp.Expr, ...]
    types: tuple[tuple[str, str], ...] | None = None

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.terms) or not self.labels:
            raise ValueError("a segment placement needs one predicate per segment label")

    @property
    def names(self) -> dict | None:
        return dict(self.types) if self.types is not None else None


def place(tree: exp.Select, placement: SegmentPlacement, dialect: str = "duckdb") -> exp.Select:
    """The portable sketch query `tree` (after the rewrite: sources bound, filters injected)
    made segmented, in place: a `dpspin_segment` column in `target`, (segment, atom) keys in
    `cleaned` (see the module docstring). Refused (BadInput) for a query whose rows carry
    their own user and have no records relation: a segment is a fact about a record."""
    from sqlglot import exp

    from dpspin_sql.sketch.rewrite import cte
    from dpspin_sql.sketch.totality import total_form

    names = [c.alias_or_name for c in tree.args["with_"].expressions]
    if "target" not in names:
        raise BadInput("a segmented release reads each record's segment from the records: give the records "
                       "(a records file or the store's records), not an assignments file alone")
    target, cleaned = cte(tree, "target"), cte(tree, "cleaned")
    case = exp.Case(ifs=[exp.If(this=total_form(term.copy(), dialect, placement.names),
                                true=exp.Literal.number(i)) for i, term in enumerate(placement.terms)])
    target.select(exp.alias_(case, SEGMENT_COLUMN), append=True, copy=False)
    t = _alias_of(cleaned, "target")
    d = _alias_of(cleaned, "atoms")
    projections = []
    replaced = False
    for item in cleaned.expressions:
        if item.alias_or_name == "atom_id":
            key = exp.Add(this=exp.Mul(this=exp.Cast(this=exp.column(SEGMENT_COLUMN, t), to=exp.DataType.build("BIGINT")),
                                       expression=exp.Literal.number(KEY_STRIDE)),
                          expression=exp.Cast(this=exp.column("atom_id", d), to=exp.DataType.build("BIGINT")))
            projections.append(exp.alias_(key, "atom_id"))
            replaced = True
        else:
            projections.append(item)
    if not replaced:
        raise AssertionError("the core sketch query's `cleaned` CTE projects no atom_id")  # a broken core file
    cleaned.set("expressions", projections)
    cleaned.where(exp.Not(this=exp.Is(this=exp.column(SEGMENT_COLUMN, t), expression=exp.Null())), append=True,
                  copy=False)
    return tree


def _alias_of(select: exp.Select, table: str) -> str:
    from sqlglot import exp

    for node in select.find_all(exp.Table):
        if node.name == table and not node.args.get("db"):
            return node.alias_or_name
    raise AssertionError(f"the core sketch query's `cleaned` CTE reads no {table!r}")  # a broken core file


# -- the predicates of the two kinds of segment domain ------------------------------------

def value_terms(expression: exp.Expr, labels: Sequence[str]) -> tuple[exp.Expr, ...]:
    """`TRY_CAST((expression) AS VARCHAR) = 'label'` for each label: a record is in the
    segment its value, as text, equals (NULL and unparseable values are in none)."""
    from sqlglot import exp

    text = exp.TryCast(this=exp.Paren(this=expression.copy()), to=exp.DataType.build("VARCHAR"))
    return tuple(exp.EQ(this=text.copy(), expression=exp.Literal.string(label)) for label in labels)


def period_terms(expression: exp.Expr, boundaries: Sequence[str]) -> tuple[exp.Expr, ...]:
    """Half-open periods of `TRY_CAST(expression AS DATE)` cut at the public boundaries:
    before the first, [b_i, b_{i+1}) between, from the last on. A record with no date, or
    one that does not parse, is in none."""
    from sqlglot import exp

    day = exp.TryCast(this=exp.Paren(this=expression.copy()), to=exp.DataType.build("DATE"))

    def date(b: str) -> exp.Expr:
        return exp.TryCast(this=exp.Literal.string(b), to=exp.DataType.build("DATE"))

    cuts = list(boundaries)
    terms: list[exp.Expr] = [exp.LT(this=day.copy(), expression=date(cuts[0]))]
    for lo, hi in zip(cuts, cuts[1:]):
        terms.append(exp.And(this=exp.GTE(this=day.copy(), expression=date(lo)),
                             expression=exp.LT(this=day.copy(), expression=date(hi))))
    terms.append(exp.GTE(this=day.copy(), expression=date(cuts[-1])))
    return tuple(terms)


def period_labels(boundaries: Sequence[str]) -> tuple[str, ...]:
    """Readable labels of the periods cut at `boundaries`: 'before 2017-01-01',
    '2017-01-01 to 2017-12-31', 'from 2018-01-01'."""
    import datetime

    days = [datetime.date.fromisoformat(b) for b in boundaries]
    labels = [f"before {days[0].isoformat()}"]
    for lo, hi in zip(days, days[1:]):
        labels.append(f"{lo.isoformat()} to {(hi - datetime.timedelta(days=1)).isoformat()}")
    labels.append(f"from {days[-1].isoformat()}")
    return tuple(labels)
