"""`dpspin init`, `dpspin load`, `dpspin split`: the store and its two splits."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import ledger, store
from dpspin_sql.cli.common import DB, example, out
from dpspin_sql.errors import BadInput

app = typer.Typer()


@app.command(rich_help_panel="Store", epilog=example(
    "dpspin init --db new.duckdb --epsilon-budget 2 --delta-budget 1e-5 --accountant zcdp"))
def init(db: Path = DB,
         epsilon_budget: float = typer.Option(ledger.DEFAULT_EPSILON_BUDGET, help="Total ε the data owner allows."),
         delta_budget: float = typer.Option(ledger.DEFAULT_DELTA_BUDGET, help="Total δ the data owner allows."),
         dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="The store's budget name. A store holds one protected dataset (its target split), so it has one budget."),
         accountant: Optional[str] = typer.Option(
             None, "--accountant", metavar="basic|zcdp",
             help="How releases compose: zcdp (default for new stores: Gaussian releases compose as zCDP, "
                  "pure ones by basic composition too) or basic (ε and δ summed). Chosen before the first "
                  "release; a store from an earlier version composes by basic.")) -> None:
    """Create a store (or change its total budget, never below what is spent).

    A new path, or an empty DuckDB database, becomes a store; a DuckDB database that holds
    anything else is refused and left as it was (use dpspin_sql.install for your own
    database).
    """
    from dpspin_sql import accountant as accountants

    if accountant is not None:
        accountants.check_name(accountant)
    ledger.check_budget_values(epsilon_budget, delta_budget)
    with store.opened(db) as con:
        if accountant is not None:   # first: refused (exit 1) on a store with releases, before anything is written
            ledger.set_accountant(con, accountant)
        ledger.set_budget(con, epsilon_budget, delta_budget, dataset)
        st = ledger.status(con, dataset)
    out.print(f"store {db}: budget ε={st.epsilon_total:g}, δ={st.delta_total:g}; "
              f"spent ε={st.epsilon_spent:g}, δ={st.delta_spent:g}; accountant {st.accountant}", markup=False)


@app.command(rich_help_panel="Store", epilog=example(
    "dpspin load --db tickets.duckdb --input tickets.csv --id-col id --user-col author --text-col body"))
def load(db: Path = DB,
         input: Path = typer.Option(..., "--input", help="CSV, JSON Lines or Parquet file, or a folder of them "
                                                         "(Spark's output; gzip is fine)."),
         format: Optional[str] = typer.Option(None, "--format", help="csv|jsonl|parquet (default: from the name)."),
         delimiter: Optional[str] = typer.Option(None, "--delimiter",
                                                 help="CSV field delimiter (default ',', tab for .tsv; Excel in many "
                                                      "locales writes ';')."),
         preset: Optional[str] = typer.Option(None, "--preset", help="cfpb|amazon|yelp: the paper's corpora."),
         id_col: Optional[str] = typer.Option(None, "--id-col", help="Column with the record id."),
         user_col: Optional[str] = typer.Option(None, "--user-col", help="Column with the user id (user level)."),
         text_col: str = typer.Option("text", "--text-col", help="Column with the text."),
         split: str = typer.Option("target", "--split", help="aux (public/auxiliary) or target (protected)."),
         businesses: Optional[Path] = typer.Option(None, "--businesses", help="Yelp businesses file (preset yelp).")
         ) -> None:
    """Load records with DuckDB's readers; other columns become metadata. All or nothing.

    Into a store made by dpspin init.
    """
    from dpspin_sql.tabular import parse_delimiter

    sep = parse_delimiter(delimiter)
    con = store.connect(db)
    if preset:
        from dpspin_sql import presets

        if sep is not None:
            raise BadInput("--delimiter is for your own CSV files; a preset reads its corpus's own export")
        opts = {"businesses": businesses} if businesses else {}
        report = presets.load_preset(con, preset, input, split=split, **opts)
    else:
        report = store.load_records(con, input, fmt=format, id_col=id_col, user_col=user_col,
                                    text_col=text_col, split=split, delimiter=sep)
    out.print(f"loaded {report.loaded} records into the {split} split of {db}; {report.rejected} rejected"
              + (f" ({report.why_rejected})" if report.rejected else ""), markup=False)
    for note in report.notes:
        out.print(note, markup=False)


@app.command("split", rich_help_panel="Store", epilog=example(
    "dpspin split --db tickets.duckdb --unit user --aux-fraction 0.3 --seed 7"))
def split_cmd(db: Path = DB,
              unit: str = typer.Option(..., "--unit", help="record | user (user level: all of a user's records on one side)."),
              aux_fraction: float = typer.Option(0.5, "--aux-fraction", help="Share of units in the auxiliary split."),
              seed: int = typer.Option(0, "--seed", help="Public seed of the hash rule."),
              n_records: Optional[int] = typer.Option(None, "--n-records", help="Keep this many target records (record level)."),
              n_users: Optional[int] = typer.Option(None, "--n-users", help="Keep this many target users (user level)."),
              strict_sample_size: bool = typer.Option(False, "--strict-sample-size/--no-strict-sample-size",
                                                      help="Fail rather than keep fewer units than asked."),
              as_json: bool = typer.Option(False, "--json/--no-json", help="Print the split report as JSON.")) -> None:
    """Split records into auxiliary (public) and target (protected) by a seeded hash of the unit id."""
    from dpspin_sql import split

    con = store.connect(db)
    report = split.split(con, unit, aux_fraction, seed, n_records=n_records, n_users=n_users,
                         strict_sample_size=strict_sample_size)
    if as_json:
        out.print_json(json.dumps(report.as_dict()))
        return
    out.print(f"aux: {report.aux_records} records; target: {report.target_records} records"
              + (f" ({report.target_users} users)" if unit == "user" else "")
              + f"; excluded: {report.excluded_records}")
    if (report.requested_units is not None and report.sampled_units is not None
            and report.sampled_units < report.requested_units):
        out.print(f"[yellow]only {report.sampled_units} of {report.requested_units} {unit}s available[/yellow]")
    if report.invalidated:
        out.print(f"the aux split changed: the old {report.invalidated} was dropped; rebuild it")
