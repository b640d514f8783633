"""`dpspin release` and `dpspin budget`: spend budget on a plan; see and check what was spent."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer

from dpspin_sql import anchors, ledger, store
from dpspin_sql.cli import segment_flags
from dpspin_sql.cli.common import DB, budget_line, defaults_line, err, example, out
from dpspin_sql.errors import BadInput, LedgerTampered

app = typer.Typer()


@app.command(rich_help_panel="Release", epilog=example(
    "dpspin release --db tickets.duckdb --mechanism gaussian --epsilon 0.5 --unit user -K 3 -L 10 --out plan.json"))
def release(db: Path = DB,
            mechanism: Optional[str] = typer.Option(None, help="laplace | gaussian | private_topL "
                                                               "(required, unless --from-sketch)."),
            epsilon: Optional[float] = typer.Option(None, help="ε of this release (> 0; required, unless "
                                                               "--from-sketch)."),
            delta: Optional[float] = typer.Option(None, help="δ for gaussian and private_topL (default 1e-6, "
                                                             "printed); laplace is pure ε-DP."),
            unit: Optional[str] = typer.Option(None, help="record | user: the protected unit (required, unless "
                                                          "--from-sketch)."),
            adjacency: Optional[str] = typer.Option(None, help="add_drop (default) | replace."),
            B: Optional[float] = typer.Option(None, "-B", help="Per-user L1 contribution bound (user level; default 1)."),
            K: Optional[int] = typer.Option(None, "-K", help="Atoms kept per record (default 3)."),
            L: Optional[int] = typer.Option(None, "-L", help="Atoms admitted to the plan (default 10)."),
            selection_fraction: Optional[float] = typer.Option(None, help="Share of ε spent on admission "
                                                                          "(private_topL; default 0.5)."),
            calibration: Optional[str] = typer.Option(None, help="Gaussian calibration: zcdp (default, any ε) | "
                                                                 "classical (ε < 1)."),
            public_denominator: Optional[int] = typer.Option(None, help="Public count that turns masses into support."),
            comparison_margin: Optional[float] = typer.Option(None, help="Public margin for comparisons "
                                                                         "(default: from the noise)."),
            confidence: Optional[float] = typer.Option(None, "--confidence",
                                                       help="Confidence of the plan's accuracy intervals (default 0.95)."),
            segment_by: Optional[str] = segment_flags.SEGMENT_BY,
            segments: Optional[str] = segment_flags.SEGMENTS,
            segments_file: Optional[Path] = segment_flags.SEGMENTS_FILE,
            period_col: Optional[str] = segment_flags.PERIOD_COL,
            boundaries: Optional[str] = segment_flags.BOUNDARIES,
            segment_top: Optional[str] = segment_flags.SEGMENT_TOP,
            from_sketch: Optional[Path] = typer.Option(
                None, "--from-sketch", rich_help_panel="Two-phase warehouse release",
                help="The m-vector a warehouse computed with the query of `dpspin sql --emit-sketch` "
                     "(CSV with a header atom_id,mass; a JSON array; or JSON Lines). Checked, then released."),
            statement: Optional[Path] = typer.Option(
                None, "--statement", rich_help_panel="Two-phase warehouse release",
                help="The DP statement (.sql) whose emitted sketch the warehouse ran; the release's parameters "
                     "come from it (with --from-sketch)."),
            dialect: Optional[str] = typer.Option(
                None, "--dialect", rich_help_panel="Two-phase warehouse release",
                help="The warehouse that ran it: bigquery|snowflake|trino|postgres|spark|duckdb (recorded in the "
                     "ledger as warehouse:DIALECT)."),
            catalog: Optional[Path] = typer.Option(
                None, "--catalog", rich_help_panel="Two-phase warehouse release", metavar="FILE",
                help="The warehouse's catalog rows (dpspin sql --catalog-query), as given to --emit-sketch: the "
                     "declarations are checked against it (or made from it); its sha256 is recorded."),
            result_format: Optional[str] = typer.Option(
                None, "--format", rich_help_panel="Two-phase warehouse release",
                help="csv | json | jsonl | parquet (default: from the file name)."),
            delimiter: Optional[str] = typer.Option(
                None, "--delimiter", rich_help_panel="Sources and engine",
                help="CSV field delimiter of --from-sketch, --assignments and --records (default ',')."),
            max_units: Optional[int] = typer.Option(
                None, "--max-units", rich_help_panel="Two-phase warehouse release",
                help="Public upper bound on the protected units (records or users) in the warehouse: the "
                     "vector's total must fit it."),
            assignments: Optional[Path] = typer.Option(
                None, "--assignments", rich_help_panel="Sources and engine",
                help="Release straight from an assignments file (Parquet or CSV: record_id, atom_id, weight "
                     "[, user_id]) instead of the store's; the atoms, dictionary and ledger stay the store's, "
                     "and every row is enforced as if it were in the store."),
            records: Optional[Path] = typer.Option(
                None, "--records", rich_help_panel="Sources and engine",
                help="With --assignments: the records file (record_id [, user_id] [, split]) that says which "
                     "records are the target and each record's user."),
            memory_limit: Optional[str] = typer.Option(
                None, "--memory-limit", rich_help_panel="Sources and engine",
                help="DuckDB memory limit for the sketch query, e.g. 4GB: past it DuckDB spills to "
                     "--temp-directory (default: DPSPIN_MEMORY_LIMIT, else DuckDB's own)."),
            temp_directory: Optional[Path] = typer.Option(
                None, "--temp-directory", rich_help_panel="Sources and engine",
                help="Where DuckDB spills (default: DPSPIN_TEMP_DIRECTORY, else DuckDB's own)."),
            progress: Optional[bool] = typer.Option(
                None, "--progress/--no-progress", rich_help_panel="Sources and engine",
                help="Show the sketch query's progress on stderr (default: when stderr is a terminal; "
                     "--progress writes a line per step to a log too)."),
            dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget to charge."),
            witness: Optional[Path] = typer.Option(
                None, "--witness", help="The store's witness file, kept outside the store (default: "
                                        "DPSPIN_WITNESS): the ledger is checked against it before the charge and "
                                        "the new head appended after (dpspin budget --witness starts one)."),
            out_path: Path = typer.Option(..., "--out", help="Where to write the plan (private_plan.json)."),
            force: bool = typer.Option(False, "--force/--no-force", help="Replace an existing plan at --out."),
            quiet: bool = typer.Option(False, "--quiet/--no-quiet", "-q", help="Print only the plan path.")) -> None:
    """Release a DP plan: charge the ledger, then add OpenDP noise to the enforced sketch.

    With --from-sketch, the sketch is one a warehouse computed (two-phase release, docs/WAREHOUSE.md):
    dpspin release --from-sketch RESULT.csv --statement QUERY.sql --dialect bigquery --db STORE --out PLAN.json

    Per segment (one release over segment × atom, docs/PLAN.md "Segmented plans"):
    dpspin release --db STORE --mechanism gaussian --epsilon 1 --unit record --period-col date_received
    --boundaries 2017-01-01 --out PLAN.json
    """
    from dpspin_sql.outputs import Outputs
    from dpspin_sql.tabular import parse_delimiter

    if witness is not None:
        anchors.register(db, witness)
    segmentation = segment_flags.read(segment_by, segments, segments_file, period_col, boundaries, segment_top)
    if segmentation[0] is not None and (from_sketch is not None or assignments is not None):
        raise BadInput("a segmented release reads the store's records here; it cannot take "
                       + ("--from-sketch" if from_sketch is not None else "--assignments"))

    flags = {"--mechanism": mechanism, "--epsilon": epsilon, "--delta": delta, "--unit": unit,
             "--adjacency": adjacency, "-B": B, "-K": K, "-L": L, "--selection-fraction": selection_fraction,
             "--calibration": calibration, "--public-denominator": public_denominator,
             "--comparison-margin": comparison_margin, "--confidence": confidence}
    two_phase = {"--statement": statement, "--dialect": dialect, "--format": result_format,
                 "--max-units": max_units, "--catalog": catalog}
    engine_flags = {"--assignments": assignments, "--records": records, "--memory-limit": memory_limit,
                    "--temp-directory": temp_directory, "--progress": progress}
    if from_sketch is not None and any(v is not None for v in engine_flags.values()):
        name = next(k for k, v in engine_flags.items() if v is not None)
        raise BadInput(f"{name} is for a sketch computed here; with --from-sketch the warehouse computed it")
    if records is not None and assignments is None:
        raise BadInput("--records goes with --assignments (a release straight from files)")
    if delimiter is not None and from_sketch is None and assignments is None:
        raise BadInput("--delimiter is for the files a release reads (--from-sketch, --assignments, --records)")
    if from_sketch is not None:
        given = [name for name, value in flags.items() if value is not None]
        if given:
            raise BadInput(f"with --from-sketch the release's parameters come from --statement; drop {given[0]}")
        if statement is None or dialect is None:
            raise BadInput("--from-sketch needs --statement QUERY.sql (the statement whose sketch was emitted) "
                           "and --dialect (the warehouse that ran it)")
        from dpspin_sql.cli.sql import read_statement
        from dpspin_sql.warehouse import release_from_sketch

        text = read_statement(statement)
        con = store.connect(db)
        outputs = Outputs(inputs=[p for p in (from_sketch, statement, catalog) if p is not None], store=db,
                          force=force)
        plan = release_from_sketch(con, text, from_sketch, dialect, out=out_path, fmt=result_format,
                                   max_units=max_units, dataset=dataset, outputs=outputs,
                                   delimiter=parse_delimiter(delimiter), catalog=catalog)
        _report(con, plan, None, out_path, dataset, quiet)
        return
    stray = [name for name, value in two_phase.items() if value is not None]
    if stray:
        raise BadInput(f"{stray[0]} goes with --from-sketch (a warehouse-computed sketch)")
    missing = [name for name in ("--mechanism", "--epsilon", "--unit") if flags[name] is None]
    if missing:
        raise BadInput(f"missing option{'s' if len(missing) > 1 else ''} {', '.join(missing)}: for example "
                       f"dpspin release --db {db or 'STORE'} --mechanism gaussian --epsilon 1 --delta 1e-6 "
                       "--unit user -B 1 --out plan.json (or release a warehouse sketch with --from-sketch)")
    from dpspin_sql.release import release as run_release
    from dpspin_sql.request import ReleaseRequest

    chosen: dict[str, Any] = {"adjacency": adjacency, "K": K, "L": L, "interval_confidence": confidence}
    assert mechanism is not None and epsilon is not None and unit is not None  # checked just above
    request = ReleaseRequest(mechanism=mechanism, epsilon=epsilon, delta=delta, unit=unit, B=B,
                             selection_fraction=selection_fraction, calibration=calibration,
                             public_denominator=public_denominator, comparison_margin=comparison_margin,
                             segments=segmentation[0], **{k: v for k, v in chosen.items() if v is not None})
    from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
    from dpspin_sql.sketch.engines.settings import EngineSettings

    con = store.connect(db)
    inputs = [p for p in (assignments, records) if p is not None]
    outputs = Outputs(inputs=inputs, store=db, force=force) if inputs else Outputs(store=db, force=force)
    with sketch_progress(progress, quiet) as report:
        settings = EngineSettings.from_env(memory_limit=memory_limit, progress=report,
                                           temp_directory=str(temp_directory) if temp_directory else None)
        source = None
        if assignments is not None:
            from dpspin_sql.source import files

            source = files(con, assignments, records, delimiter=parse_delimiter(delimiter))
        engine = DuckDBEngine(source=source, settings=settings, segments=segmentation[1])
        plan = run_release(con, request, engine, out=out_path, outputs=outputs, dataset=dataset)
    _report(con, plan, request, out_path, dataset, quiet)


@contextmanager
def sketch_progress(wanted: Optional[bool], quiet: bool):
    """The sketch query's progress on stderr: a bar on a terminal (unless --no-progress or
    --quiet), a line per 10% with --progress elsewhere; None when off."""
    import sys
    import time

    from dpspin_sql.cli.common import progress_bar

    if wanted is False or (wanted is None and (quiet or not sys.stderr.isatty())):
        yield None
        return
    if sys.stderr.isatty():
        with progress_bar() as bar:
            task = bar.add_task("sketch", total=100)
            yield lambda done: bar.update(task, completed=round(100 * done))
        return
    start, said = time.monotonic(), [-1]

    def line(done: float) -> None:
        step = int(done * 10)
        if step > said[0]:
            said[0] = step
            print(f"sketch {10 * step}% ({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)

    yield line


def _report(con, plan, request, out_path: Path, dataset: str, quiet: bool) -> None:
    said = defaults_line(request) if request is not None else None
    if said:                      # privacy-relevant: said on stderr even with --quiet
        err.print(said, markup=False)
    from dpspin_sql.relevance import release_warning

    if warned := release_warning(plan.assignment):   # the masses may not mean what their labels say: one line
        err.print(warned, markup=False)
    if quiet:
        out.print(str(out_path))
        return
    from dpspin_sql.report import plan_table

    out.print(plan_table(plan))
    out.print(budget_line(con, dataset))
    out.print(f"plan written to {out_path}")


@app.command(rich_help_panel="Release", epilog=example(
    "dpspin budget --db tickets.duckdb --witness witness.jsonl",
    "dpspin budget --db tickets.duckdb --verify --witness witness.jsonl --plan private_plan.json"))
def budget(db: Path = DB, dataset: str = typer.Option(ledger.DEFAULT_DATASET, help="Budget name."),
           as_json: bool = typer.Option(False, "--json/--no-json", help="Machine-readable output."),
           verify: bool = typer.Option(False, "--verify/--no-verify",
                                       help="Check the ledger: its hash chain, its tables and budget events, the "
                                            "plans stored with it, every stored OpenDP measurement's map and d_in, "
                                            "the accountant's composition of the releases (rebuilt from the stored "
                                            "measurements through OpenDP) against the budget, and the anchors "
                                            "given (--plan, --witness); exit 1 naming the first problem."),
           plans: Optional[list[Path]] = typer.Option(
               None, "--plan", metavar="<path>", help="A published plan, or a folder of plans (repeatable): with --verify, its "
                                    "release must be in the ledger with the plan's chain hash (catches a "
                                    "rewound, truncated or replaced ledger)."),
           witness: Optional[Path] = typer.Option(
               None, "--witness", help="The store's witness file, kept outside the store (default: DPSPIN_WITNESS). "
                                       "With --verify: check the ledger against it. Without: check, then append the "
                                       "ledger's current head to it (creating it).")) -> None:
    """Show the total budget, what is spent and left (as the store's accountant counts it), and every release.

    Keep the ledger anchored outside the store: dpspin budget --db STORE --witness /elsewhere/witness.jsonl,
    then dpspin budget --db STORE --verify --witness /elsewhere/witness.jsonl --plan published/
    """
    if plans and not verify:
        raise BadInput("--plan goes with --verify (the plans are checked against the ledger)")
    con = _open_for_reading(db)
    if verify:
        findings = ledger.verify(con, plans=plans or (), witness=witness)
        if as_json:
            composition = ({d: c.to_dict() for d, c in ledger.compositions(con).items()} if not findings else {})
            print(json.dumps({"ok": not findings, "findings": [vars(f) for f in findings],
                              "compositions": composition}, indent=2))
        if findings:
            more = f" (and {len(findings) - 1} more: dpspin budget --verify --json)" if len(findings) > 1 else ""
            raise LedgerTampered(f"ledger check failed: {findings[0].line()}{more}")
        if as_json:
            return
        n = con.execute("SELECT count(*) FROM ledger").fetchall()[0][0]
        e = con.execute("SELECT count(*) FROM ledger_events").fetchall()[0][0]
        composed = ledger.compositions(con)   # rebuilt from the stored measurements through OpenDP
        anchored = []
        if plans:
            anchored.append("the plans given")
        if witness is not None or anchors.witness_for(db) is not None:
            anchored.append(f"the witness {witness or anchors.witness_for(db)}")
        out.print(f"ledger verified: {n} release(s) and {e} other event(s); the hash chain, budget events, stored "
                  "plans, every measurement's privacy map and d_in check"
                  + (f", and so do {' and '.join(anchored)}" if anchored else
                     " (no anchor outside the store was given: --plan, --witness)"), markup=False, highlight=False)
        for name, comp in composed.items():
            out.print(f"dataset {name!r}: the composition of its {comp.releases} release(s), rebuilt from the stored "
                      f"measurements, fits its budget (ε={comp.epsilon_total:g}, δ={comp.delta_total:g}): "
                      f"{comp.summary()}", markup=False, highlight=False)
        return
    if witness is not None:
        findings = ledger.verify(con, maps=False, witness=witness if witness.exists() else None,
                                 registered_witness=False)
        if findings:
            raise LedgerTampered(f"refused: the ledger does not check ({findings[0].line()}); the witness "
                                 f"{witness} was not extended")
        head = ledger.head(con)
        anchors.probe_witness_directory(witness)
        anchors.append_witness(witness, store.path_of(con), head.chain_id or head.row_hash, head.seq,
                               head.row_hash)
        out.print(f"witness {witness}: recorded row {head.seq} ({head.row_hash[:19]}…) of {db}",
                  markup=False, highlight=False)
        return
    st = ledger.status(con, dataset)
    if as_json:
        print(json.dumps(st.to_dict(), indent=2))
        return
    from dpspin_sql.report import budget_table

    out.print(budget_table(st))


def _open_for_reading(db: Path):
    """The store read-only; one of an earlier version is brought up to date first (once)."""
    con = store.connect(db, read_only=True)
    if ledger.needs_migration(con):
        con.close()
        store.connect(db).close()
        con = store.connect(db, read_only=True)
    return con


@app.command(rich_help_panel="Release", epilog=example(
    "dpspin recover --db tickets.duckdb --out recovered_plan.json"))
def recover(db: Path = DB,
            release_id: Optional[str] = typer.Option(None, "--release", help="The release (default: the last "
                                                                            "one); dpspin budget lists them."),
            out_path: Path = typer.Option(..., "--out", help="Where to write the plan (its dictionary goes beside)."),
            force: bool = typer.Option(False, "--force/--no-force", help="Replace an existing plan at --out.")) -> None:
    """Write a charged release's plan again, exactly as stored with its ledger row.

    A release stores its plan with its charge; when the plan file could not be written (a full disk, Ctrl-C):
    dpspin recover --db STORE --release ID --out plan.json
    """
    from dpspin_sql.outputs import Outputs
    from dpspin_sql.release import recover as recover_plan

    con = store.connect(db, read_only=True)
    rid = recover_plan(con, out_path, release_id, outputs=Outputs(store=db, force=force))
    out.print(f"plan of release {rid} written to {out_path} (its dictionary beside it)", markup=False,
              highlight=False)
