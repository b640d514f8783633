"""Loaders for the paper's three corpora: a preset is a SQL file that shapes the raw
export into (record_id, [user_id,] text, metadata columns…), read by DuckDB only.

The SQL lives in `queries/preset_<name>.sql`; this module only finds the files,
checks them, and hands the shaped relation to `store.load_records`.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from dpspin_sql import queries, tabular
from dpspin_sql.db import first_line
from dpspin_sql.errors import BadInput
from dpspin_sql.store import LoadReport, load_records

PRESETS = ("cfpb", "amazon", "yelp")
USER_COL = {"cfpb": None, "amazon": "user_id", "yelp": "user_id"}
YELP_BUSINESS_NAMES = ("businesses.jsonl.gz", "businesses.jsonl", "business.jsonl.gz", "business.jsonl",
                       "yelp_academic_dataset_business.json")


def preset_relation(con: duckdb.DuckDBPyConnection, preset: str, path: str | Path,
                    businesses: str | Path | None = None) -> duckdb.DuckDBPyRelation:
    """The shaped relation a preset loads (useful to inspect before loading)."""
    if preset not in PRESETS:
        raise BadInput(f"--preset must be one of {', '.join(PRESETS)}, not {preset!r}")
    path = Path(path)
    if not path.exists():
        raise BadInput(f"input file not found: {path}")
    if preset == "yelp":
        bpath = Path(businesses) if businesses else _find_businesses(path)
        if not bpath.exists():
            raise BadInput(f"Yelp businesses file not found: {bpath}")
        params = {"reviews": str(path), "businesses": str(bpath)}
    elif businesses is not None:
        raise BadInput("--businesses is only for --preset yelp")
    else:
        params = {"path": str(path)}
    if preset == "cfpb":   # any of the CFPB's own exports, read as every file is read
        _register_cfpb_export(con, path)
        params = {}
    for given in params.values():   # one header rule for every file (dpspin_sql.tabular)
        tabular.header(con, tabular.table_file(given, formats=("jsonl",)))
    try:
        rel = con.sql(queries.load(f"preset_{preset}"), params=params)
        rel.limit(0).fetchall()          # surface missing columns / unreadable files here
    except duckdb.Error as exc:
        # the binder's line names a missing column; anything else may quote a record
        first = first_line(exc) if isinstance(exc, duckdb.BinderException) else \
            tabular.read_error(path, "jsonl", exc)
        raise BadInput(f"cannot read {path} as a {preset} export: {first}") from None
    return rel


# The CFPB publishes its database as CSV (the field reference's names: "Consumer complaint
# narrative", ...), as JSON (the API's names: complaint_what_happened, sub_product, ...), and
# the project's samples are JSON Lines in snake_case (narrative, ...): each preset column is the
# first of these names the file has.
CFPB_COLUMNS = {
    "complaint_id": ("complaint_id", "Complaint ID"),
    "narrative": ("narrative", "complaint_what_happened", "Consumer complaint narrative"),
    "product": ("product", "Product"),
    "sub_product": ("sub_product", "Sub-product"),
    "issue": ("issue", "Issue"),
    "sub_issue": ("sub_issue", "Sub-issue"),
    "company": ("company", "Company"),
    "state": ("state", "State"),
    "date_received": ("date_received", "Date received"),
}
CFPB_VIEW = "cfpb_export"


def _register_cfpb_export(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """The export (CSV, JSON or JSON Lines, gzip or not) as the view `cfpb_export` with the
    preset's column names, for queries/preset_cfpb*.sql."""
    got = tabular.read(con, tabular.table_file(path))
    have = set(got.columns)
    chosen = {}
    for name, candidates in CFPB_COLUMNS.items():
        found = next((c for c in candidates if c in have), None)
        if found is None:
            raise BadInput(f"cannot read {path} as a cfpb export: it has no {' / '.join(map(repr, candidates))} "
                           f"column (it has: {', '.join(got.columns)})")
        chosen[name] = found
    con.register(CFPB_VIEW, got.relation.select(*[duckdb.ColumnExpression(col).alias(name)
                                                   for name, col in chosen.items()]))


WHY_REJECTED = {"cfpb": "complaints without a narrative", "amazon": "exact duplicate reviews",
                "yelp": "reviews of businesses that are not restaurants"}


def load_preset(con: duckdb.DuckDBPyConnection, preset: str, path: str | Path, split: str = "target",
                **opts) -> LoadReport:
    """Load one of the corpora; the report counts records loaded and rows the preset's
    rules rejected (and says which rule).

    Options: `businesses=PATH` for yelp (default: the businesses file beside the reviews).
    """
    unknown = set(opts) - {"businesses"}
    if unknown:
        raise BadInput(f"unknown preset option(s): {', '.join(sorted(unknown))}")
    rel = preset_relation(con, preset, path, opts.get("businesses"))
    report = load_records(con, path, id_col="record_id", user_col=USER_COL[preset], text_col="text",
                          split=split, relation=rel)
    params = {"reviews": str(path)} if preset == "yelp" else {} if preset == "cfpb" else {"path": str(path)}
    source = con.execute(queries.load(f"preset_{preset}_source_rows"), params).fetchall()[0][0]
    if preset == "cfpb":
        con.unregister(CFPB_VIEW)
    rejected = max(int(source) - report.loaded, 0)
    if report.loaded == 0:
        raise BadInput(f"{path}: no records to load" + (f"; all {rejected} rows were rejected ({WHY_REJECTED[preset]})"
                                                         if rejected else " (the file has no rows)"))
    return LoadReport(report.loaded, rejected, WHY_REJECTED[preset] if rejected else "")


def _find_businesses(reviews: Path) -> Path:
    for name in YELP_BUSINESS_NAMES:
        candidate = reviews.parent / name
        if candidate.exists():
            return candidate
    raise BadInput(f"no Yelp businesses file beside {reviews} (looked for {', '.join(YELP_BUSINESS_NAMES)}); "
                   "pass it with --businesses")
