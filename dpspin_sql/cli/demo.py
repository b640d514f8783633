"""`dpspin demo`: the whole pipeline on a synthetic corpus, no key, no network."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql.cli.common import example, out

app = typer.Typer()


@app.command(rich_help_panel="Try it", epilog=example("dpspin demo --db demo.duckdb"))
def demo(db: Optional[Path] = typer.Option(None, "--db", help="Keep the demo store here (default: a temporary file)."),
         seed: int = typer.Option(7, help="Seed of the synthetic corpus (not of the noise)."),
         card: Optional[Path] = typer.Option(None, "--card", help="Write the release card here (default: beside "
                                                                  "the plan: beside --db, else in a new "
                                                                  "temporary directory that is kept).")) -> None:
    """Make a synthetic corpus, release a user-level plan, print it and write its release card (no key, no network)."""
    from dpspin_sql import demo as demo_mod

    demo_mod.run(db, seed=seed, console=out, card=card)
