"""Where the sketch's rows come from: a `SketchSource` names the relations and their columns.

The enforced sketch (queries/sketch_*.sql) reads two logical relations:

    assignments (record_id, atom_id, weight [, user_id])
    records     (record_id [, user_id] [, split] [, any column a statement's filter reads])

A source says which relation plays each part and which of its columns carries each
logical name. Three kinds exist today:

- `STORE`: the store's own tables. On DuckDB the engine then runs the store queries
  (queries/sketch_store_*.sql), which may skip the per-record work for canonical vectors
  the catalog proves canonical; other engines read the store's logical rows.
- `files(...)`: a Parquet or CSV assignments file, with or without a records file. With a
  records file, its records are the target records (those with split = 'target' when it
  has a split column) and it gives each record its user; without one, every record in the
  assignments file is a target record and the row's own user_id is its user, a record
  being (user_id, record_id).
- a table source (`Relation(table=...)` with column renames): the same shapes over a
  user's own tables; nothing else in the pipeline changes (the rewrite reads `relation()`).

Only the atoms, the dictionary and the ledger always come from the store.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:   # sqlglot is imported where a relation is built: a store release needs none
    from sqlglot import exp

from dpspin_sql.errors import BadInput

FILE_FORMATS = ("parquet", "csv")
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

    def physical(self, logical: str) -> str:
        return dict(self.columns).get(logical, logical)

    def has(self, logical: str) -> bool:
        return logical in self.available

    def scan(self) -> exp.Expression:
        """The FROM item: the table, or DuckDB's reader of the file (a literal path)."""
        from sqlglot import exp

        if self.table is not None:
            return exp.to_table(self.table)
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
        star = exp.Star(**({"rename": [exp.Alias(this=exp.column(p), alias=exp.to_identifier(lg))
                                        for p, lg in renames]} if renames else {}))
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
    """parquet or csv, from --format or the file name (gzip/zstd CSV is fine)."""
    from dpspin_sql.store import detect_format

    found = detect_format(Path(path), fmt)
    if found not in FILE_FORMATS:
        raise BadInput(f"{path}: a sketch source must be Parquet or CSV, not {found}")
    return found


def file_relation(con: Any, path: str | Path, fmt: str | None, required: tuple[str, ...], role: str) -> Relation:
    """A file as a relation; its header is read now (by DuckDB) to check the columns."""
    import duckdb

    path = Path(path)
    if not path.is_file():
        raise BadInput(f"{role} file not found: {path}")
    rel = Relation(path=str(path.resolve()), format=file_format(path, fmt))
    try:
        names = [c[0] for c in con.execute(
            f"DESCRIBE SELECT * FROM {rel.scan().sql('duckdb')}").fetchall()]
    except duckdb.Error:
        raise BadInput(f"cannot read {path} as {rel.format}") from None
    missing = [c for c in required if c not in names]
    if missing:
        raise BadInput(f"{role} file {path} has no column {missing[0]!r}; it has: {', '.join(names)}")
    return replace(rel, available=tuple(names))


def files(con: Any, assignments: str | Path, records: str | Path | None = None, *, fmt: str | None = None,
          records_fmt: str | None = None) -> SketchSource:
    """A source over an assignments file (record_id, atom_id, weight [, user_id]) and,
    optionally, a records file (record_id [, user_id] [, split] ...)."""
    a = file_relation(con, assignments, fmt, ASSIGNMENT_COLUMNS, "assignments")
    r = file_relation(con, records, records_fmt, ("record_id",), "records") if records is not None else None
    return SketchSource(a, r)
