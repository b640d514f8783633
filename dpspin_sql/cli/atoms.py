"""`dpspin atoms load|build`: the public dictionary, from a taxonomy or the auxiliary split."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import store
from dpspin_sql.cli.common import DB, err, out
from dpspin_sql.errors import BadInput

app = typer.Typer(help="The public atom dictionary: load a taxonomy or build one from the auxiliary split.",
                  no_args_is_help=True)


@app.command("load")
def atoms_load(db: Path = DB,
               input: Path = typer.Option(..., "--input",
                                          help="Taxonomy: CSV/JSONL/JSON/YAML with label[, description][, atom_id].")
               ) -> None:
    """Install a public taxonomy as the atom dictionary (atom ids 0..m-1 in file order when absent)."""
    from dpspin_sql import atoms

    con = store.connect(db)
    dictionary_id = atoms.load_taxonomy(con, input)
    out.print(f"installed {len(atoms.current_atoms(con))} atoms, dictionary {dictionary_id}")


@app.command("build")
def atoms_build(db: Path = DB,
                builder: str = typer.Option(..., "--builder", help="metadata | phrases"),
                fields: Optional[str] = typer.Option(None, "--fields",
                                                     help="Metadata columns, e.g. product,issue,sub_issue."),
                profile: Optional[str] = typer.Option(None, "--profile",
                                                      help="Phrase profile: beauty | restaurants | default | PATH."),
                m: Optional[int] = typer.Option(None, "-m",
                                                help="Atoms to keep (metadata default 50; phrases: all above the threshold)."),
                min_support: Optional[int] = typer.Option(None, "--min-support", help="Minimum auxiliary support."),
                manifest_out: Optional[Path] = typer.Option(None, "--manifest-out",
                                                            help="Also write the manifest JSON here.")) -> None:
    """Build the public atom dictionary from the auxiliary split only."""
    from dpspin_sql import builders

    if builder == "metadata" and not fields:
        raise BadInput("--builder metadata needs --fields, e.g. --fields product,issue,sub_issue")
    con = store.connect(db)
    dictionary_id, manifest = builders.build(con, builder, fields=fields.split(",") if fields else None,
                                          profile=profile, m=m, min_support=min_support, manifest_out=manifest_out)
    out.print(f"built {manifest['m']} atoms ({builder}) from {manifest['aux_records']} auxiliary records, "
              f"threshold {manifest['threshold']}; dictionary {dictionary_id}")
    if manifest.get("shortfall"):          # -m could not be met: say so
        err.print(f"warning: {manifest['shortfall']}", markup=False, highlight=False)
    if manifest_out:
        out.print(f"manifest written to {manifest_out}")
