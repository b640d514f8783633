"""Run `dpspin ARGV` with a signal sent to itself at one named stage of a release, for
tests/test_signals.py. Usage (from the repository root):

    python -m tests.helpers.signal_stages STAGE SIGINT|SIGTERM ARGV...

The stage's function is wrapped so that the process signals itself there (the signal is
then handled exactly as one from outside would be, at the next bytecode). The `opendp`
stage signals from inside a frame whose code lives in a file under an `opendp/` folder and
keeps running there for a while — the frame a ctypes callback of OpenDP's would be — and
writes `$SIGNAL_STAGE_MARK` if it ran to its end (a signal raised inside would stop it).
"""
from __future__ import annotations

import os
import signal
import sys
import time


def _kill(sig: int) -> None:
    os.kill(os.getpid(), sig)


def _wrap(owner, name: str, sig: int, *, call: int = 1, after: bool = False) -> None:
    original = getattr(owner, name)
    seen = [0]

    def wrapped(*args, **kwargs):
        seen[0] += 1
        if seen[0] == call and not after:
            _kill(sig)
        result = original(*args, **kwargs)
        if seen[0] == call and after:
            _kill(sig)
        return result

    setattr(owner, name, wrapped)


_OPENDP_HOOK = '''
def hook(kill, sig, mark):
    kill(sig)
    until = time.monotonic() + 0.3
    n = 0
    while time.monotonic() < until:   # the handler runs in this frame, which must not be cut
        n += 1
    if mark:
        open(mark, "w").write(str(n))
'''


def main(argv: list[str]) -> int:
    stage, signame, rest = argv[0], argv[1], argv[2:]
    sig = getattr(signal, signame)
    from dpspin_sql import ledger, mechanisms, outputs, release, report
    from dpspin_sql.sketch.engines.duckdb import DuckDBEngine

    if stage == "opendp":
        namespace: dict = {"time": time}
        exec(compile(_OPENDP_HOOK, os.path.join(os.sep, "x", "opendp", "hook.py"), "exec"), namespace)
        original = mechanisms.make_mechanism

        def with_hook(*args, **kwargs):
            namespace["hook"](_kill, sig, os.environ.get("SIGNAL_STAGE_MARK"))
            return original(*args, **kwargs)

        release.make_mechanism = with_hook
    elif stage == "sketch":
        _wrap(DuckDBEngine, "sketch", sig)
    elif stage == "probe":
        _wrap(outputs.os, "fsync", sig)          # inside the probe's temporary file (the first fsync)
    elif stage == "row_written":
        _wrap(ledger, "_advance_head", sig, after=True)
    elif stage == "noise":
        _wrap(release, "make_plan", sig)
    elif stage == "plan_pinned":
        _wrap(ledger, "_append_event", sig, after=True)
    elif stage == "dictionary_write":
        _wrap(outputs, "_write_atomic", sig)
    elif stage == "plan_write":
        _wrap(outputs, "_write_atomic", sig, call=2)
    elif stage == "report":
        _wrap(report, "plan_table", sig)
    else:
        raise SystemExit(f"unknown stage {stage}")
    from dpspin_sql.cli import run

    return run(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
