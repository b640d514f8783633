"""`dpspin atoms load|build`: the public dictionary, from a taxonomy or the auxiliary split."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql import store
from dpspin_sql.cli.common import DB, err, example, out
from dpspin_sql.errors import BadInput

app = typer.Typer(help="The public atom dictionary: load a taxonomy or build one from the auxiliary split.",
                  no_args_is_help=True, epilog=example("dpspin atoms load --db tickets.duckdb --input taxonomy.csv"))


@app.command("load", epilog=example("dpspin atoms load --db tickets.duckdb --input taxonomy.csv"))
def atoms_load(db: Path = DB,
               input: Path = typer.Option(..., "--input",
                                          help="Taxonomy: CSV/JSONL/JSON/YAML/Parquet with label[, description]"
                                               "[, atom_id] (gzip is fine)."),
               delimiter: Optional[str] = typer.Option(None, "--delimiter",
                                                       help="CSV field delimiter (default ','; Excel in many locales "
                                                            "writes ';').")) -> None:
    """Install a public taxonomy as the atom dictionary (atom ids 0..m-1 in file order when absent)."""
    from dpspin_sql import atoms, tabular

    sep = tabular.parse_delimiter(delimiter)
    con = store.connect(db)
    note = _unnamed_note(con, input, sep)
    dictionary_id = atoms.load_taxonomy(con, input, delimiter=sep)
    out.print(f"installed {len(atoms.current_atoms(con))} atoms, dictionary {dictionary_id}", markup=False)
    if note:
        out.print(note, markup=False)


def _unnamed_note(con, path: Path, delimiter: Optional[str]) -> Optional[str]:
    """The line that says which unnamed columns (row names, an index) the reader leaves out."""
    from dpspin_sql import tabular

    if path.suffix.lower() in (".yaml", ".yml", ".json") or not path.exists():
        return None
    tf = tabular.table_file(path, delimiter=delimiter)
    names = tabular.header(con, tf)
    positions = tabular.unnamed(names) if tf.format != "jsonl" else []
    if not positions:
        return None
    shown = ", ".join(repr(names[i]) if names[i] else f"column {i + 1}" for i in positions)
    return (f"left out {len(positions)} unnamed column(s) (row names or an index, as R's write.csv and pandas "
            f"write them): {shown}")


@app.command("build", epilog=example(
    "dpspin atoms build --db tickets.duckdb --builder phrases -m 20 --manifest-out manifest.json"))
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
    if manifest_out is not None:   # checked before the store changes: a build is all or nothing
        _check_writable(manifest_out, "--manifest-out")
    con = store.connect(db)
    dictionary_id, manifest = builders.build(con, builder, fields=fields.split(",") if fields else None,
                                          profile=profile, m=m, min_support=min_support)
    out.print(f"built {manifest['m']} atoms ({builder}) from {manifest['aux_records']} auxiliary records, "
              f"threshold {manifest['threshold']}; dictionary {dictionary_id}", markup=False)
    if manifest.get("shortfall"):          # -m could not be met: say so
        err.print(f"warning: {manifest['shortfall']}", markup=False, highlight=False)
    if manifest_out:
        import json

        from dpspin_sql.outputs import write_text_atomic

        try:
            write_text_atomic(manifest_out, json.dumps(manifest, indent=2, ensure_ascii=False))
        except OSError as exc:
            raise BadInput(f"dictionary {dictionary_id} is installed, but its manifest could not be written to "
                           f"{manifest_out}: {exc.strerror or type(exc).__name__}") from None
        out.print(f"manifest written to {manifest_out}", markup=False)


def _check_writable(path: Path, option: str) -> None:
    """The output's directory takes a file now (one is made and removed), before anything changes."""
    import os
    import tempfile

    from dpspin_sql.outputs import Outputs

    Outputs().add(path, option)
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.probe.", dir=path.parent if str(path.parent) else ".")
        os.write(fd, b"\0" * 4096)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        why = "no space left on device" if exc.errno == 28 else (exc.strerror or type(exc).__name__)
        raise BadInput(f"{option} {path}: cannot write there ({why}); nothing was changed") from None
