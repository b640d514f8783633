"""The sketch on DuckDB, in the curator's process: the store's own tables, or files.

A store source runs queries/sketch_store_*.sql (the fast path for proven-canonical
vectors, the full enforcement for the rest). A file source (`dpspin_sql.source.files`)
runs the portable query over DuckDB's readers of the files: the rows are untrusted, so
every record is checked, and only the irregular ones pay for deduplication, ranking and
renormalisation. Either way the atoms, the dictionary and the ledger are the store's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpspin_sql import queries, store
from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import (
    Sketch,
    TargetFacts,
    assemble,
    canonical_facts,
    dictionary_atoms,
    execute_sketch,
    run_sketch,
    snapshot,
    target_facts,
)
from dpspin_sql.sketch.engines.settings import EngineSettings
from dpspin_sql.source import ASSIGNMENT_COLUMNS, STORE, UNIT_COLUMN, Relation, SketchSource

if TYPE_CHECKING:   # the rewrite (sqlglot) is imported only where a query is rendered
    from dpspin_sql.segments import SegmentPlacement
    from dpspin_sql.sketch.rewrite import SketchFilters

# The store's logical rows (the `assignment_rows` view: raw rows and canonical vectors) with
# its records: what the portable query reads for a segmented release over a store.
STORE_ROWS = SketchSource(Relation(table="assignment_rows", available=ASSIGNMENT_COLUMNS), STORE.records)


def require_assignments(con: Any) -> None:
    """Nothing to release: refuse (before anything is charged) when no assignment step ran
    for the current dictionary. This is a fact about what the curator did (the `pipeline`
    table), never a count of the protected records, so it cannot tell neighbouring
    datasets apart."""
    if not store.step_done(con, "assignments"):
        raise BadInput("nothing to release: the current dictionary has no assignments; run dpspin assign "
                       "(or dpspin assignments load) first")


class DuckDBEngine:
    name = "duckdb"

    @staticmethod
    def admit(filters: SketchFilters | None) -> None:
        """Every filter the audit admits runs totally on DuckDB (the audit's own engine): nothing to refuse."""

    def __init__(self, filters: SketchFilters | None = None, *, source: SketchSource | None = None,
                 settings: EngineSettings | None = None, segments: SegmentPlacement | None = None):
        self.filters, self.source = filters, source or STORE
        self.settings = settings
        self.segments = segments

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        if self.segments is not None:
            return segmented_sketch(con, bounds, self.filters, self.segments, self.source, self.settings)
        if self.source.store:
            require_assignments(con)
            # a release uses the checks, never the number of users (experiments count them)
            return run_sketch(con, bounds, self.filters, settings=self.settings, count_users=False)
        return file_sketch(con, bounds, self.filters, self.source, self.settings)

    def details(self) -> dict:
        return {"engine": self.name} | self.source.details() | (self.settings.details() if self.settings else {})


def file_sketch(con: Any, bounds: Bounds, filters: SketchFilters | None, source: SketchSource,
                settings: EngineSettings | None = None) -> Sketch:
    """The enforced sketch of a file (or table) source, with the store's dictionary.

    The public-shape counts are not computed (counting distinct ids would cost a pass as
    large as the sketch); n_records / n_users are None. Refused, as for a store: an empty
    source, and at user level rows without a user id or users who have auxiliary records
    in the store (the dictionary and scorer were shaped by those)."""
    from dpspin_sql.sketch.transpile import sketch_sql

    source.check_unit(bounds.unit)
    atom_ids = dictionary_atoms(con)
    _check_file_units(con, bounds.unit, source)
    sql = sketch_sql(bounds, filters, "duckdb", pretty=False, bind_params=False, source=source)
    rows = execute_sketch(con, sql, bounds.params(), settings, "the sketch query failed on the source files")
    return assemble(TargetFacts(atom_ids, None, None), rows, bounds)


def segmented_sketch(con: Any, bounds: Bounds, filters: SketchFilters | None, placement: SegmentPlacement,
                     source: SketchSource = STORE, settings: EngineSettings | None = None) -> Sketch:
    """The enforced sketch over (segment, atom) (dpspin_sql.segments, docs/DESIGN.md §11): the
    portable query with the placement's predicates, over the store's logical rows
    (`STORE_ROWS`, read in one snapshot with the store's checks) or a file source with a
    records file. S·m coordinates, segment-major."""
    if source.store:
        require_assignments(con)
        with snapshot(con):
            facts = target_facts(con, bounds.unit, keyed=canonical_facts(con).keyed, count_users=False)
            rows = execute_sketch(con, segmented_sql(bounds, filters, placement, STORE_ROWS), bounds.params(),
                                  settings, "the sketch query failed on this store")
    else:
        source.check_unit(bounds.unit)
        if source.records is None:
            raise BadInput("a segmented release reads each record's segment from the records: give --records")
        facts = TargetFacts(dictionary_atoms(con), None, None)
        _check_file_units(con, bounds.unit, source)
        rows = execute_sketch(con, segmented_sql(bounds, filters, placement, source), bounds.params(), settings,
                              "the sketch query failed on the source files")
    return assemble(facts, rows, bounds, placement.labels)


def segmented_sql(bounds: Bounds, filters: SketchFilters | None, placement: SegmentPlacement,
                  source: SketchSource, dialect: str = "duckdb") -> str:
    """The segmented sketch query: the core query as `sketch.transpile.sketch_sql` renders it
    (sources bound and filters injected by the rewrite, macros inlined, engine rewrites),
    with `segments.place` applied right after the rewrite. Its parameters ($K, $scale,
    $bound) stay unbound."""
    import sqlglot

    from dpspin_sql.segments import place
    from dpspin_sql.sketch.rewrite import rewrite
    from dpspin_sql.sketch.sqlglot_log import quiet
    from dpspin_sql.sketch.transpile import for_engine, inline_macros

    rendered = for_engine(inline_macros(place(rewrite(bounds.unit, filters, dialect, source), placement, dialect)),
                          dialect)
    with quiet():
        return rendered.sql(dialect=dialect, pretty=False, unsupported_level=sqlglot.ErrorLevel.RAISE)


def _check_file_units(con: Any, unit: str, source: SketchSource) -> None:
    import duckdb

    from dpspin_sql.db import only_row

    users = source.records if source.records is not None else source.assignments
    rows = source.assignments.relation().sql("duckdb")
    try:
        n_rows = only_row(con.execute(f"SELECT count(*) FROM {rows} AS a"))[0]
        if n_rows == 0:
            raise BadInput(f"the assignments file {source.assignments.path} has no rows")
        if source.records is not None and not con.execute(
                f"SELECT 1 FROM {source.records.relation().sql('duckdb')} AS r LIMIT 1").fetchall():
            raise BadInput(f"the records file {source.records.path} has no rows")
        if unit != "user":
            return
        relation = users.relation().sql("duckdb")
        col = users.physical(UNIT_COLUMN)
        ident = f'"{col}"'
        without = only_row(con.execute(f"SELECT count(*) FROM {relation} AS s WHERE s.{ident} IS NULL"))[0]
        if without:
            raise BadInput(f"some rows of the source have no {UNIT_COLUMN}; user-level releases need one "
                           "for every record")   # whether, not how many (sketch._check_user_facts)
        n_aux, aux_without_user = only_row(con.execute(queries.load("aux_users")))
        if aux_without_user:
            raise BadInput(f"{aux_without_user} auxiliary record(s) have no user id; a user-level release cannot "
                           "tell whether their authors are among the protected users")
        if n_aux:
            shared = only_row(con.execute(
                f"SELECT count(DISTINCT CAST(s.{ident} AS VARCHAR)) FROM {relation} AS s "
                "WHERE CAST(s." + ident + " AS VARCHAR) IN (SELECT user_id FROM records WHERE split = 'aux')"))[0]
            if shared:
                raise BadInput(f"{shared} user(s) of the source have auxiliary records in the store; a user-level "
                               "release needs users disjoint from those that shaped the dictionary")
    except duckdb.Error as exc:
        from dpspin_sql.db import duckdb_error_line

        raise BadInput(f"cannot read the source files: {duckdb_error_line(exc)}") from None
