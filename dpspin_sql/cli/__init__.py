"""The `dpspin` command line: thin Typer commands over the library, in pipeline order.

    store → atoms → assign → release → read (summarize, verify, card) → experiments

Each module of this package owns one stage's commands and exposes a Typer app; this
module composes them. Exit codes: 0 success; 1 a refusal (over budget, SQL audit,
verifier, store busy); 2 bad input or usage. Every failure is one line on stderr, never a
traceback (set DPSPIN_DEBUG=1 to see one for an unexpected failure).
"""
from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Protocol, cast

import typer

from dpspin_sql import __version__
from dpspin_sql import store as store_lib
from dpspin_sql.cli import assign, atoms, card, compare, decode, demo, experiment, release, sql, warehouse
from dpspin_sql.cli import store as store_cmds
from dpspin_sql.cli.common import FLAGS
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
                  rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})


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
    """Run the CLI and return its exit code (for tests and embedding)."""
    already_open = store_lib.open_connections()
    logging.getLogger("sqlglot").setLevel(logging.CRITICAL)   # a library's warning is not our one line
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc = app(args=argv, prog_name="dpspin", standalone_mode=False)
    except RequestError as exc:
        _one_line(f"error: {exc.named(FLAGS.get(exc.field, exc.field))}")
        return exc.exit_code
    except DpspinError as exc:
        _one_line(f"error: {exc}" if isinstance(exc, BadInput) else str(exc))
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        _one_line("aborted")
        return 130
    except RecursionError:
        _one_line("error: the input is nested too deeply to process")
        return 2
    except MemoryError:
        _one_line("error: out of memory")
        return 1
    except Exception as exc:  # click usage errors and unexpected failures
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):  # (typer's) click exception
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            click_exc = cast(_ClickError, exc)
            _one_line(f"error: {click_exc.format_message()}{hint}")
            return click_exc.exit_code
        if os.environ.get("DPSPIN_DEBUG"):
            raise
        # the type only: an unexpected engine message could quote a protected value
        _one_line(f"internal error: {type(exc).__name__} (set DPSPIN_DEBUG=1 for a traceback)")
        return 3
    finally:
        store_lib.close_all(except_for=already_open)
    return rc if isinstance(rc, int) else 0


def _one_line(message: str) -> None:
    print(" ".join(str(message).split()), file=sys.stderr)


def main() -> None:
    sys.exit(run(sys.argv[1:]))
