"""The `dpspin` command line: thin wrappers over the library (SPEC §9).

Exit codes: 0 success; 1 a refusal (over budget, SQL audit, verifier); 2 bad input or
usage. Errors and refusals are one line on stderr, never a traceback (set
DPSPIN_DEBUG=1 to see one for an unexpected failure).
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from dpspin_sql import ledger, store
from dpspin_sql.errors import BadInput, DpspinError

app = typer.Typer(help="Differentially private semantic plans (DP-SPIN) over DuckDB, with OpenDP "
                       "releases, a budget ledger and a verifier.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
atoms_app = typer.Typer(help="The public atom dictionary: load a taxonomy or build one from the auxiliary split.",
                        no_args_is_help=True)
assignments_app = typer.Typer(help="Bring-your-own-classifier assignments (record_id, atom_id, weight).",
                              no_args_is_help=True)
app.add_typer(atoms_app, name="atoms")
app.add_typer(assignments_app, name="assignments")

out = Console(soft_wrap=True)  # ids and paths stay on one line for scripts

DB = typer.Option(..., "--db", help="The dpspin store (a DuckDB file).")


@app.command()
def init(db: Path = DB,
         epsilon_budget: float = typer.Option(ledger.DEFAULT_EPSILON_BUDGET, help="Total ε the data owner allows."),
         delta_budget: float = typer.Option(ledger.DEFAULT_DELTA_BUDGET, help="Total δ the data owner allows."),
         dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget name (one per dataset).")) -> None:
    """Create a store (or update its total budget, never below what is spent)."""
    with store.opened(db) as con:
        ledger.set_budget(con, epsilon_budget, delta_budget, dataset)
        st = ledger.status(con, dataset)
    out.print(f"store {db}: budget ε={st.epsilon_total:g}, δ={st.delta_total:g}; "
              f"spent ε={st.epsilon_spent:g}, δ={st.delta_spent:g}", soft_wrap=True)


@app.command()
def load(db: Path = DB,
         input: Path = typer.Option(..., "--input", help="CSV, JSONL or Parquet file (gzip is fine)."),
         format: Optional[str] = typer.Option(None, "--format", help="csv|jsonl|parquet (default: from the name)."),
         preset: Optional[str] = typer.Option(None, "--preset", help="cfpb|amazon|yelp: the paper's corpora."),
         id_col: Optional[str] = typer.Option(None, "--id-col", help="Column with the record id."),
         user_col: Optional[str] = typer.Option(None, "--user-col", help="Column with the user id (user level)."),
         text_col: str = typer.Option("text", "--text-col", help="Column with the text."),
         split: str = typer.Option("target", "--split", help="aux (public/auxiliary) or target (protected)."),
         businesses: Optional[Path] = typer.Option(None, "--businesses", help="Yelp businesses file (preset yelp).")
         ) -> None:
    """Load records into the store with DuckDB's readers; other columns become metadata."""
    with store.opened(db) as con:
        if preset:
            from dpspin_sql import presets

            opts = {"businesses": businesses} if businesses else {}
            n = presets.load_preset(con, preset, input, split=split, **opts)
        else:
            n = store.load_records(con, input, fmt=format, id_col=id_col, user_col=user_col, text_col=text_col,
                                   split=split)
        ledger.ensure_budget(con)
    out.print(f"loaded {n} records into the {split} split of {db}", soft_wrap=True)


@atoms_app.command("load")
def atoms_load(db: Path = DB,
               input: Path = typer.Option(..., "--input", help="Taxonomy: CSV/JSONL/JSON/YAML with label[, description][, atom_id].")
               ) -> None:
    """Install a public taxonomy as the atom dictionary (atom ids 0..m-1 in file order when absent)."""
    from dpspin_sql import atoms

    con = store.connect(db)
    dictionary_id = atoms.load_taxonomy(con, input)
    out.print(f"installed {len(atoms.current_atoms(con))} atoms, dictionary {dictionary_id}", soft_wrap=True)


@assignments_app.command("load")
def assignments_load(db: Path = DB,
                     input: Path = typer.Option(..., "--input", help="CSV/Parquet with record_id, atom_id, weight.")
                     ) -> None:
    """Load your own classifier's assignments. Bounds are enforced later by the sketch, not trusted here."""
    con = store.connect(db)
    n = store.load_assignments(con, input)
    out.print(f"loaded {n} assignment rows", soft_wrap=True)


@app.command()
def release(db: Path = DB,
            mechanism: str = typer.Option(..., help="laplace | gaussian | private_topL"),
            epsilon: float = typer.Option(..., help="ε of this release (> 0)."),
            delta: float = typer.Option(1e-6, help="δ (gaussian, private_topL); laplace is pure ε-DP."),
            unit: str = typer.Option(..., help="record | user: the protected unit."),
            adjacency: str = typer.Option("add_drop", help="add_drop | replace."),
            B: float = typer.Option(1.0, "-B", help="Per-user L1 contribution bound (user level)."),
            K: int = typer.Option(3, "-K", help="Atoms kept per record."),
            L: int = typer.Option(10, "-L", help="Atoms admitted to the plan."),
            selection_fraction: float = typer.Option(0.5, help="Share of ε spent on admission (private_topL)."),
            calibration: str = typer.Option("zcdp", help="Gaussian calibration: zcdp (any ε) | classical (ε < 1)."),
            public_denominator: Optional[int] = typer.Option(None, help="Public count that turns masses into support."),
            comparison_margin: Optional[float] = typer.Option(None, help="Public margin for comparisons (default: from the noise)."),
            dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget to charge."),
            out_path: Path = typer.Option(..., "--out", help="Where to write the plan (private_plan.json)."),
            quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only the plan path.")) -> None:
    """Release a DP plan: charge the ledger, then add OpenDP noise to the enforced sketch."""
    from dpspin_sql.pipeline import release_and_charge
    from dpspin_sql.release import ReleaseConfig

    config = ReleaseConfig(mechanism=mechanism, epsilon=epsilon, delta=delta, unit=unit, adjacency=adjacency,
                           B=B, K=K, L=L, selection_fraction=selection_fraction, calibration=calibration,
                           public_denominator=public_denominator, comparison_margin=comparison_margin).validate()
    con = store.connect(db)
    plan = release_and_charge(con, config, out_path=out_path, dataset=dataset)
    if quiet:
        out.print(str(out_path))
        return
    from dpspin_sql.report import plan_table

    out.print(plan_table(plan))
    _print_budget_line(con, dataset)
    out.print(f"plan written to {out_path}")


@app.command()
def budget(db: Path = DB, dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget name."),
           as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """Show the total budget, what is spent and left, and every release charged."""
    con = store.connect(db, read_only=True)
    st = ledger.status(con, dataset)
    if as_json:
        print(json.dumps(st.to_dict(), indent=2))
        return
    from dpspin_sql.report import budget_table

    out.print(budget_table(st))


@app.command()
def demo(db: Optional[Path] = typer.Option(None, "--db", help="Keep the demo store here (default: a temporary file)."),
         seed: int = typer.Option(7, help="Seed of the synthetic corpus (not of the noise).")) -> None:
    """Make a synthetic corpus, release a user-level plan and print it (no key, no network)."""
    from dpspin_sql import demo as demo_mod

    demo_mod.run(db, seed=seed, console=out)


def _print_budget_line(con, dataset: str) -> None:
    st = ledger.status(con, dataset)
    out.print(f"budget left: ε={st.epsilon_remaining:.4g} of {st.epsilon_total:g}, "
              f"δ={st.delta_remaining:.3g} of {st.delta_total:g}")


# Commands other modules own: each exposes register(app[, atoms_app]).
for _module, _args in (("dpspin_sql.cli_atoms", (app, atoms_app)), ("dpspin_sql.cli_decode", (app,)),
                       ("dpspin_sql.cli_sql", (app,)), ("dpspin_sql.experiment.cli", (app,))):
    try:
        importlib.import_module(_module).register(*_args)
    except ModuleNotFoundError as _exc:
        if not _module.startswith(str(_exc.name)):
            raise


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (for tests and embedding)."""
    already_open = store.open_connections()
    try:
        rc = app(args=argv, prog_name="dpspin", standalone_mode=False)
    except DpspinError as exc:
        _one_line(f"error: {exc}" if isinstance(exc, BadInput) else str(exc))
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        _one_line("aborted")
        return 130
    except Exception as exc:  # click usage errors and unexpected failures
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):  # (typer's) click exception
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            _one_line(f"error: {exc.format_message()}{hint}")
            return exc.exit_code
        if os.environ.get("DPSPIN_DEBUG"):
            raise
        # the type only: an unexpected engine message could quote a protected value
        _one_line(f"internal error: {type(exc).__name__} (set DPSPIN_DEBUG=1 for a traceback)")
        return 3
    finally:
        store.close_all(except_for=already_open)
    return rc if isinstance(rc, int) else 0


def _one_line(message: str) -> None:
    print(" ".join(str(message).split()), file=sys.stderr)


def main() -> None:
    sys.exit(run(sys.argv[1:]))
