"""One vocabulary of the release parameters: how each is spelled in Python (the
`ReleaseRequest` field), on the command line (`dpspin release`), in DP SQL's
`WITH DIFFERENTIAL_PRIVACY OPTIONS (...)`, in an experiment grid, and its nearest BigQuery
differential-privacy counterpart.

The CLI's error names (`dpspin_sql.cli.common.FLAGS`), the SQL option names
(`dpspin_sql.sql.options.OPTIONS`) and the grid keys (`dpspin_sql.experiment.grid.GRID_KEYS`)
are read from TABLE. docs/OPTIONS.md is generated from it:

    python -m dpspin_sql.names --markdown > docs/OPTIONS.md

This module imports nothing of the package (everything else may import it).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class Name:
    field: str                          # the ReleaseRequest field (or the SQL-only setting's name)
    flags: tuple[str, ...] = ()         # `dpspin release` flags, the one errors name first
    said: str | None = None             # how errors name a field no flag sets
    sql: str | None = None              # the DP SQL OPTIONS key
    grid: tuple[str, ...] = ()          # experiment grid keys, the canonical one first
    bigquery: tuple[str, ...] = ()      # BigQuery DIFFERENTIAL_PRIVACY OPTIONS counterpart(s)
    bigquery_note: str = ""             # how the counterpart differs, when it is not the same thing
    meaning: str = ""

    @property
    def named(self) -> str:
        """How an error names it on the command line."""
        return self.flags[0] if self.flags else (self.said or self.field)


TABLE: tuple[Name, ...] = (
    # the DP SQL options first, in the parser's order
    Name("epsilon", ("--epsilon",), sql="epsilon", grid=("epsilon",), bigquery=("epsilon",),
         meaning="ε > 0 charged to the ledger (required)"),
    Name("delta", ("--delta",), sql="delta", grid=("delta",), bigquery=("delta",),
         meaning="0 < δ < 1 for gaussian and private_topL (default 1e-6); laplace ignores it"),
    Name("mechanism", ("--mechanism",), sql="mechanism", grid=("mechanism",),
         meaning="laplace | gaussian | private_topL (required)"),
    Name("unit", ("--unit",), sql="privacy_unit_column", grid=("units", "unit"), bigquery=("privacy_unit_column",),
         meaning="record | user: the protected unit (SQL: user_id → user; record_id or omitted → record)"),
    Name("record_id", sql="record_id_column",
         meaning="the record id of a statement over one relation of your own (DP SQL only)"),
    Name("B", ("-B",), sql="contribution_bound", grid=("B",), bigquery=("max_rows_contributed",),
         bigquery_note="BigQuery bounds the rows a unit contributes; dpspin bounds a user's L1 total of mass",
         meaning="B > 0, the per-user L1 bound (user level only; default 1)"),
    Name("K", ("-K",), sql="max_atoms_per_record", grid=("K",), bigquery=("max_groups_contributed", "kappa"),
         bigquery_note="BigQuery bounds the groups a unit contributes to; dpspin bounds the atoms a record keeps",
         meaning="K ≥ 1 atoms kept per record (default 3)"),
    Name("L", ("-L",), sql="top", grid=("L",), meaning="L ≥ 1 atoms admitted to the plan (default 10)"),
    Name("adjacency", ("--adjacency",), sql="adjacency", grid=("adjacency",),
         meaning="add_drop | replace (default add_drop)"),
    Name("selection_fraction", ("--selection-fraction",), sql="selection_fraction", grid=("selection_fraction",),
         meaning="0 < ε_sel/ε < 1 (private_topL only; default 0.5)"),
    Name("public_denominator", ("--public-denominator",), sql="public_denominator", grid=("public_denominator",),
         meaning="d_public ≥ 1 for support = mass / d_public"),
    Name("calibration", ("--calibration",), sql="calibration", grid=("calibration",),
         meaning="zcdp (default, any ε) | classical (ε < 1 only)"),
    # the command line's alone
    Name("comparison_margin", ("--comparison-margin",), meaning="public margin for comparisons (default: from the noise)"),
    Name("interval_confidence", ("--confidence",), meaning="confidence of the plan's accuracy intervals (default 0.95)"),
    Name("comparison_confidence", said="comparison confidence", meaning="confidence of the plan's comparisons"),
    Name("bins", said="bins", meaning="the plan's support bins"),
    Name("segments", ("--segments",), meaning="the segments of a segmented release"),
    Name("segment_admission", ("--segment-top",), meaning="atoms admitted per segment"),
    Name("boundaries", ("--boundaries",), meaning="period boundaries of a segmented release"),
    Name("segment_name", ("--segment-by",), meaning="the column a release is segmented by"),
    Name("segment_kind", said="segment kind", meaning="how segments are formed"),
)

BY_FIELD = {n.field: n for n in TABLE}
SQL_KEYS = {n.sql: n for n in TABLE if n.sql}
GRID = {key: n for n in TABLE for key in n.grid}
BIGQUERY = {key: n for n in TABLE for key in n.bigquery}


def suggestion(name: str, known, *, where: str = "sql") -> str:
    """ "; did you mean X?" for the nearest known name (difflib), and for a BigQuery option
    that dpspin spells otherwise, its dpspin name; "" when nothing is near."""
    key = name.lower()
    if where == "grid" and key in SQL_KEYS and SQL_KEYS[key].grid:
        return f"; {name} is the DP SQL option: in a grid it is {SQL_KEYS[key].grid[0]}"
    counterpart = BIGQUERY.get(key)
    if counterpart is not None:
        ours = counterpart.sql if where == "sql" else (counterpart.grid[0] if counterpart.grid else None)
        if ours and ours != key:
            note = f" ({counterpart.bigquery_note})" if counterpart.bigquery_note else ""
            return f"; {name} is BigQuery's option: in dpspin it is {ours}{note}"
    near = difflib.get_close_matches(key, [str(k) for k in known], n=1, cutoff=0.6)
    return f"; did you mean {near[0]}?" if near else ""


def markdown() -> str:
    """docs/OPTIONS.md."""
    def cell(values) -> str:
        values = [v for v in values if v]
        return ", ".join(f"`{v}`" for v in values) if values else "—"

    lines = ["# Release parameters: one name each, everywhere", "",
             "Generated from `dpspin_sql/names.py` by `python -m dpspin_sql.names --markdown > docs/OPTIONS.md`; "
             "do not edit by hand.", "",
             "A release parameter is the `ReleaseRequest` field (Python), a `dpspin release` flag (CLI), an option "
             "of `WITH DIFFERENTIAL_PRIVACY OPTIONS (...)` (DP SQL, docs/SQL.md) and a key of an experiment grid "
             "(docs/EXPERIMENTS.md). The last column is BigQuery's differential-privacy option nearest to it; "
             "a BigQuery name given in DP SQL is refused with its dpspin name.", "",
             "| Python field | CLI flag | DP SQL option | grid key | BigQuery | meaning |",
             "|---|---|---|---|---|---|"]
    for n in TABLE:
        bq = cell(n.bigquery) + (f" ({n.bigquery_note})" if n.bigquery_note else "")
        flags = cell(n.flags) if n.flags else (f"({n.said})" if n.said else "—")
        meaning = n.meaning.replace("|", "\\|")   # a table cell
        lines.append(f"| `{n.field}` | {flags} | {cell([n.sql])} | {cell(n.grid)} | {bq} | {meaning} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import sys

    args = sys.argv[1:] if argv is None else argv
    if args != ["--markdown"]:
        print("usage: python -m dpspin_sql.names --markdown > docs/OPTIONS.md", file=sys.stderr)
        return 2
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
