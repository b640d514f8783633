"""The `dpspin` command line: thin Typer commands over the library, in pipeline order.

    store → atoms → assign → release → read (summarize, verify, card) → experiments

Each module of this package owns one stage's commands and exposes a Typer app; this
module composes them. Exit codes: 0 success; 1 a refusal (over budget, SQL audit,
verifier, store busy, a tampered ledger); 2 bad input or usage (a full disk: "no space
left on device ..."); 130 / 143 stopped by SIGINT / SIGTERM. Every failure is one line on
stderr, never a traceback (set DPSPIN_DEBUG=1 to see one for an unexpected failure).

Signals (`dpspin_sql.interrupts`): from the entry point on, SIGINT and SIGTERM stop a
command at the next safe moment — never inside an OpenDP call, a charge or a file write
— with one line that says what was done ("release R was charged and its plan is stored
...; write it with: dpspin recover ...") and exit 130 / 143.
"""
from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Protocol, cast

import duckdb
import typer

from dpspin_sql import __version__, interrupts
from dpspin_sql import store as store_lib
from dpspin_sql.cli import assign, atoms, card, compare, decode, demo, experiment, release, sql, warehouse
from dpspin_sql.cli import store as store_cmds
from dpspin_sql.cli.common import FLAGS, example
from dpspin_sql.db import duckdb_error_line, no_space, storage_error
from dpspin_sql.errors import BadInput, DpspinError
from dpspin_sql.request import RequestError


class _ClickError(Protocol):
    """What run() uses of a click exception (recognised by duck typing: click is typer's, not ours)."""

    exit_code: int

    def format_message(self) -> str: ...


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dpspin-sql {__version__}")
        raise typer.Exit(0)


app = typer.Typer(help="Differentially private semantic plans (DP-SPIN) over DuckDB, with OpenDP releases, "
                       "a budget ledger and a verifier. Pipeline: init → load → split → atoms → assign → "
                       "release (or sql) → summarize → verify → card.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False,
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
                  epilog=example("dpspin demo --db demo.duckdb", "dpspin budget --db demo.duckdb"))


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    pass


app.add_typer(store_cmds.app)
app.add_typer(atoms.app, name="atoms")
app.add_typer(assign.app)
app.add_typer(assign.assignments_app, name="assignments")
app.add_typer(release.app)
app.add_typer(sql.app)
app.add_typer(warehouse.app, name="warehouse")
app.add_typer(decode.app)
app.add_typer(card.app)
app.add_typer(compare.app)
app.add_typer(experiment.app, name="experiment")
app.add_typer(demo.app)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (for tests and embedding). In the main thread,
    SIGINT and SIGTERM are handled for the command's duration (module docstring)."""
    with interrupts.handling():
        if argv and argv[0] in _CHARGING:   # until its charge commits (release.py says what happened then)
            interrupts.status("nothing was charged")
        _SAID.clear()
        _CODE.clear()
        try:
            rc = _run(argv)
        except interrupts.Interrupted:   # a signal that arrived as the command ended (or as it said why it failed)
            rc = _CODE[0] if _SAID and _CODE else 0
        signum = interrupts.received()
        if signum is not None and not (rc != 0 and _SAID):
            return _interrupted(signum)
        return rc   # a command that failed and said why stays that failure: a late signal changes nothing


_SAID: list[str] = []   # the one line this command printed, if it printed one (see _one_line)
_CODE: list[int] = []   # the exit code of the failure that line says (see _said)


_CHARGING = ("release", "sql")   # the commands that charge the ledger of the store they are given


def _interrupted(signum: int) -> int:
    done = interrupts.current_status()
    _one_line(f"interrupted ({interrupts.signal_name(signum)})" + (f": {done}" if done else ""))
    return interrupts.exit_code(signum)


def _run(argv: list[str] | None) -> int:
    already_open = store_lib.open_connections()
    logging.getLogger("sqlglot").setLevel(logging.CRITICAL)   # a library's warning is not our one line
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc = app(args=argv, prog_name="dpspin", standalone_mode=False)
    except interrupts.Interrupted:
        return 1   # run() reports it
    except RequestError as exc:
        return _said(f"error: {exc.named(FLAGS.get(exc.field, exc.field))}", exc.exit_code)
    except DpspinError as exc:
        return _said(f"error: {exc}" if isinstance(exc, BadInput) else str(exc), exc.exit_code)
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        if interrupts.received() is not None:
            return 1   # run() reports it
        return _said("aborted", 130)
    except RecursionError:
        return _said("error: the input is nested too deeply to process", 2)
    except OSError as exc:   # a file the command reads or writes (unwritable, a directory, a full disk)
        return _said(f"error: {os_error_line(exc)}", 2)
    except MemoryError:
        return _said("error: out of memory", 1)
    except Exception as exc:  # click usage errors and unexpected failures
        if interrupts.received() is not None:
            return 1   # DuckDB reports a query it stopped for the signal as its own error; run() says why
        full = storage_error(exc)
        if full is not None:
            return _said(f"error: {full}", full.exit_code)
        if isinstance(exc, duckdb.Error) and (isinstance(exc, _ENGINE_INPUT_ERRORS) or no_space(exc)):
            # the engine refused a value: the kind, never the value
            return _said(f"error: {duckdb_error_line(exc)}", 2)
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):  # (typer's) click exception
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            click_exc = cast(_ClickError, exc)
            return _said(f"error: {click_exc.format_message()}{hint}", click_exc.exit_code)
        if os.environ.get("DPSPIN_DEBUG"):
            raise
        # the type only: an unexpected engine message could quote a protected value
        return _said(f"internal error: {type(exc).__name__} (set DPSPIN_DEBUG=1 for a traceback)", 3)
    finally:
        with interrupts.deferred():   # a signal now waits until every store is closed
            store_lib.close_all(except_for=already_open)
    return rc if isinstance(rc, int) else 0


def _said(message: str, code: int) -> int:
    """A failure's one line and its exit code, the code kept first: a signal that arrives once the line is out
    leaves the failure as it was said (`run`)."""
    _CODE[:] = [code]
    _one_line(message)
    return code


def _one_line(message: str) -> None:
    sys.stdout.flush()   # what the command printed comes first, each line ended, never "…rejectederror: …"
    line = " ".join(str(message).split())
    with interrupts.deferred():   # said and recorded together: a signal takes effect after both
        _SAID.append(line)
        print(line, file=sys.stderr)


def os_error_line(exc: OSError) -> str:
    """An OS error as one line: what failed on which path."""
    import errno

    why = "no space left on device" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else \
        (exc.strerror or type(exc).__name__)
    where = exc.filename if exc.filename is not None else None
    return f"{why}: {where}" if where is not None else why


_ENGINE_INPUT_ERRORS = (duckdb.ConversionException, duckdb.ConstraintException, duckdb.IOException,
                        duckdb.OutOfRangeException, duckdb.InvalidInputException)


def main() -> None:
    interrupts.install_early()   # until run() takes over: one line, nothing was done yet
    rc = run(sys.argv[1:])
    interrupts.ignore()          # the command has ended; a late signal changes nothing
    sys.exit(rc)
