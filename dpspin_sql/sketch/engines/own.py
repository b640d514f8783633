"""The DuckDB sketch over the user's own relations (`dpspin sql` over tables and files that are
not the store): the portable sketch query over the audited source, with record and unit ids
compared binary."""
from __future__ import annotations

from sqlglot import exp

from dpspin_sql.source import SketchSource

__all__ = ["OwnEngine", "binary_ids"]


def binary_ids(source: SketchSource) -> SketchSource:
    """The source with its record and unit ids compared binary (COLLATE "binary"), on DuckDB: a
    NOCASE column, or a connection's default_collation, would otherwise join the assignment row
    'A' to the records 'A' and 'a' while the sketch counts them as two records, so that one base
    row fed two records' bounds (docs/DESIGN.md §10)."""
    from dataclasses import replace

    def binary(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Alias) and node.alias in ("record_id", "user_id") and isinstance(node.this, exp.Cast):
            return exp.alias_(exp.Collate(this=node.this.copy(), expression=exp.to_identifier("binary", quoted=True)),
                              node.alias)
        return node

    def fix(rel):
        if rel is None or getattr(rel, "select", None) is None:
            return rel
        sel = rel.select.copy()
        sel.set("expressions", [binary(e) for e in sel.expressions])
        return replace(rel, select=sel)

    return replace(source, assignments=fix(source.assignments), records=fix(source.records))


class OwnEngine:
    """The DuckDB sketch over the user's own relations (the portable query, `bind_source`).

    Nothing here reads or counts the user's rows outside the sketch query, and nothing is
    refused on what they hold: the one store fact checked at user level is the store's own
    (auxiliary records without a user id, which the dictionary was built from)."""

    name = "duckdb"

    @staticmethod
    def admit(filters) -> None:
        """DuckDB runs every filter the audit admits totally: nothing to refuse (`DuckDBEngine.admit`)."""

    def __init__(self, filters, *, source: SketchSource, settings=None):
        self.filters, self.source, self.settings = filters, source, settings
        self._sql: dict = {}    # bounds -> the generated query (the same statement on several databases)

    def sketch(self, con, bounds):
        from dpspin_sql.sketch import TargetFacts, assemble, check_aux_users, dictionary_atoms, execute_sketch
        from dpspin_sql.sketch.transpile import sketch_sql

        atom_ids = dictionary_atoms(con)
        check_aux_users(con, bounds.unit)
        if bounds not in self._sql:
            self._sql[bounds] = sketch_sql(bounds, self.filters, "duckdb", pretty=False, bind_params=False,
                                           source=binary_ids(self.source))
        sql = self._sql[bounds]
        rows = execute_sketch(con, sql, bounds.params(), self.settings,
                              "the sketch query failed on your tables or files")
        return assemble(TargetFacts(atom_ids, None, None), rows, bounds)

    def details(self) -> dict:
        return {"engine": self.name} | self.source.details() | (self.settings.details() if self.settings else {})
