"""Where the sketch's rows come from: a `SketchSource` names the relations and their columns.

The enforced sketch (queries/sketch_*.sql) reads two logical relations:

    assignments (record_id, atom_id, weight [, user_id])
    records     (record_id [, user_id] [, split] [, any column a statement's filter reads])

A source says which relation plays each part and which of its columns carries each
logical name. Three kinds exist today:

- `STORE`: the store's own tables. On DuckDB the engine then runs the store queries
  (queries/sketch_store_*.sql), which may skip the per-record work for canonical vectors
  the catalog proves canonical; other engines read the store's logical rows.
- `files(...)`: an assignments file (Parquet, CSV or JSON Lines, or a folder of them, read
  by `dpspin_sql.tabular`'s rules as every command reads files), with or without a records file. With a
  records file, its records are the target records (those with split = 'target' when it
  has a split column) and it gives each record its user; without one, every record in the
  assignments file is a target record and the row's own user_id is its user, a record
  being (user_id, record_id).
- a table source (`Relation(table=...)` with column renames): the same shapes over a
  user's own tables; nothing else in the pipeline changes (the rewrite reads `relation()`).

Only the atoms, the dictionary and the ledger always come from the store.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:   # sqlglot is imported where a relation is built: a store release needs none
    from sqlglot import exp

    from dpspin_sql.tabular import TableFile

from dpspin_sql.errors import BadInput

FILE_FORMATS = ("parquet", "csv", "jsonl")
# a CSV's values are text (dpspin_sql.tabular): these logical columns are read as numbers,
# a value that is not one being NULL (the sketch drops such a row, as it drops NaN)
CSV_NUMBERS = (("atom_id", "BIGINT"), ("weight", "DOUBLE"))
ASSIGNMENT_COLUMNS = ("record_id", "atom_id", "weight")
UNIT_COLUMN = "user_id"


@dataclass(frozen=True)
class Relation:
    """One relation: a table (or view) or a file, and its columns by logical name.

    `columns` maps a logical name to the relation's own column name where they differ;
    `available` lists the relation's columns by logical name (what a file's header or a
    table's catalog showed), so the rewrite knows what it can select.
    """

    table: str | None = None
    path: str | None = None
    format: str | None = None
    columns: tuple[tuple[str, str], ...] = ()
    available: tuple[str, ...] = ()
    reader: TableFile | None = None   # a user's file, read as dpspin_sql.tabular reads every file

    def physical(self, logical: str) -> str:
        return dict(self.columns).get(logical, logical)

    def has(self, logical: str) -> bool:
        return logical in self.available

    def scan(self) -> exp.Expression:
        """The FROM item: the table, or DuckDB's reader of the file (a literal path)."""
        from sqlglot import exp

        if self.table is not None:
            return exp.to_table(self.table)
        if self.reader is not None:
            import sqlglot

            return exp.Table(this=sqlglot.parse_one(self.reader.scan(), read="duckdb"))
        path = exp.Literal.string(str(self.path))
        if self.format == "csv":
            return exp.Table(this=exp.Anonymous(this="read_csv", expressions=[
                path, _named("header", exp.true()), _named("strict_mode", exp.true()),
                _named("delimiter", exp.Literal.string("\t" if _is_tsv(self.path) else ","))]))
        return exp.Table(this=exp.Anonymous(this="read_parquet", expressions=[path]))

    def relation(self, extra: dict[str, exp.Expression] | None = None) -> exp.Expression:
        """A subquery with every column under its logical name (renamed ones renamed, the
        others as they are) plus `extra` constant columns, e.g. split = 'target'."""
        from sqlglot import exp

        renames = [(phys, logical) for logical, phys in self.columns if logical != phys]
        typed = [(self.physical(lg), t) for lg, t in CSV_NUMBERS
                 if self.reader is not None and self.reader.format == "csv" and self.has(lg)]
        star = exp.Star(**({"rename": [exp.Alias(this=exp.column(p), alias=exp.to_identifier(lg))
                                        for p, lg in renames]} if renames else {}),
                        **({"replace": [exp.alias_(exp.TryCast(this=exp.column(p), to=exp.DataType.build(t)), p)
                                        for p, t in typed]} if typed else {}))
        items = [star] + [exp.alias_(value, name) for name, value in (extra or {}).items()]
        return exp.select(*items).from_(self.scan()).subquery()


def _named(name: str, value: exp.Expression) -> exp.Expression:
    from sqlglot import exp

    return exp.PropertyEQ(this=exp.to_identifier(name), expression=value)


def _is_tsv(path: str | None) -> bool:
    return bool(path) and str(path).lower().removesuffix(".gz").endswith(".tsv")


@dataclass(frozen=True)
class SketchSource:
    """Which relations and columns feed the sketch (see the module docstring)."""

    assignments: Relation
    records: Relation | None = None
    store: bool = False
    details_: dict = field(default_factory=dict, compare=False)

    @property
    def unit_in(self) -> str:
        """Where a record's user comes from: 'records' or 'assignments'."""
        return "records" if self.records is not None else "assignments"

    def details(self) -> dict:
        """What the ledger records about the source (paths and tables, never contents)."""
        if self.store:
            return {}
        out = {}
        for role, rel in (("assignments", self.assignments), ("records", self.records)):
            if rel is not None:
                out[f"source_{role}"] = rel.table if rel.table is not None else f"{rel.format}:{rel.path}"
        return out | dict(self.details_)

    def check_unit(self, unit: str) -> None:
        """A user-level sketch needs a user column where this source takes users from."""
        if unit != "user":
            return
        rel = self.records if self.records is not None else self.assignments
        if not rel.has(UNIT_COLUMN):
            where = "the records file" if self.records is not None else "the assignments file (or give --records)"
            raise BadInput(f"a user-level release needs a {UNIT_COLUMN} column in {where}")


STORE = SketchSource(Relation(table="assignments", available=ASSIGNMENT_COLUMNS),
                     Relation(table="records", available=("record_id", "user_id", "text", "split", "metadata")),
                     store=True)


def file_format(path: str | Path, fmt: str | None = None) -> str:
    """parquet, csv or jsonl, from --format or the file name (gzip/zstd is fine)."""
    from dpspin_sql import tabular

    return tabular.table_file(path, fmt, formats=FILE_FORMATS).format


def file_relation(con: Any, path: str | Path, fmt: str | None, required: tuple[str, ...], role: str, *,
                  delimiter: str | None = None) -> Relation:
    """A file (or folder) as a relation; its header is read now (dpspin_sql.tabular's rules:
    unambiguous, unnamed index columns left out of `available`) to check the columns."""
    from dpspin_sql import tabular

    tf = tabular.table_file(path, fmt, delimiter=delimiter, what=f"{role} file", formats=FILE_FORMATS)
    header = tabular.header(con, tf)
    names = [n for i, n in enumerate(header) if i not in set(tabular.unnamed(header))]
    missing = [c for c in required if c not in names]
    if missing:
        raise BadInput(f"{role} file {path} has no column {missing[0]!r}; it has: {', '.join(names)}")
    return Relation(path=str(Path(path).resolve()), format=tf.format, available=tuple(names), reader=tf)


def files(con: Any, assignments: str | Path, records: str | Path | None = None, *, fmt: str | None = None,
          records_fmt: str | None = None, delimiter: str | None = None) -> SketchSource:
    """A source over an assignments file (record_id, atom_id, weight [, user_id]) and,
    optionally, a records file (record_id [, user_id] [, split] ...); `delimiter` for CSV."""
    a = file_relation(con, assignments, fmt, ASSIGNMENT_COLUMNS, "assignments", delimiter=delimiter)
    r = (file_relation(con, records, records_fmt, ("record_id",), "records", delimiter=delimiter)
         if records is not None else None)
    return SketchSource(a, r)
