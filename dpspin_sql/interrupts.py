"""SIGINT and SIGTERM: honoured at a safe moment, reported in one line, never a crash.

A Python signal handler runs between two bytecodes of the main thread, wherever that is.
Raising there is what Ctrl-C normally does, and it is unsafe in three places:

- inside an OpenDP call: OpenDP's Rust code calls back into Python (`ctypes` callbacks
  that count references of the Python objects it holds); an exception raised in such a
  callback cannot unwind through Rust — ctypes prints it and returns garbage, and the
  process can segfault;
- between the charge of a release and the storing of its plan (`ledger.charge`): the
  charge and the plan must commit together;
- while a file is being written and renamed (`outputs.write_text_atomic`): no half file,
  no temporary file left behind.

So the handler installed here (`handling`, used by the CLI) raises `Interrupted` only when
the interrupted frame is none of those; otherwise it records the signal and the
exception is raised as soon as the protected part ends (`deferred()` on exit), or, for an
OpenDP call, when the signal is sent again to the main thread 20 ms later (a timer thread
repeats that until the stack is safe). A second signal
while the first is pending changes nothing: the command is already stopping.

DuckDB checks for signals while it runs a query and stops the query when the handler
raises, but it reports that as its own `RuntimeError("Query interrupted")`, not as our
exception; `received()` tells the CLI that a signal, not a failure, ended the command.

`status(...)` is what a command has done so far, in words ("release R was charged and its
plan stored ..."): the CLI's one line on interruption says it.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["Interrupted", "Hold", "handling", "deferred", "received", "status", "current_status", "exit_code"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_OPENDP = os.sep + "opendp" + os.sep
_RETRY_S = 0.02


class Interrupted(BaseException):
    """The command was stopped by SIGINT or SIGTERM at a safe moment. A BaseException but
    not a KeyboardInterrupt: click would turn that into its own Abort (and print a blank
    line); `except Exception` does not catch it, `except BaseException` cleanups run."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _State:
    def __init__(self) -> None:
        self.installed = False
        self.pending: int | None = None      # the first signal received
        self.raised = False                  # Interrupted was raised once (never again)
        self.depth = 0                       # nesting of deferred() in the main thread
        self.status = ""
        self.previous: dict[int, object] = {}
        self.previous_hook = sys.unraisablehook


_STATE = _State()


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + int(signum)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def received() -> int | None:
    """The signal that asked this command to stop, if one did."""
    return _STATE.pending


def status(text: str) -> None:
    """Say what the command has done so far (the line printed if it is interrupted now)."""
    _STATE.status = text


def current_status() -> str:
    return _STATE.status


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _unsafe(frame: FrameType | None) -> bool:
    """Whether the interrupted code is an OpenDP call (its ctypes callbacks included)."""
    while frame is not None:
        if _OPENDP in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def _maybe_raise(frame: FrameType | None) -> None:
    st = _STATE
    if st.pending is None or st.raised:
        return
    if st.depth > 0:
        return                        # deferred() raises on exit
    if _unsafe(frame):
        _again(st.pending)
        return
    st.raised = True
    raise Interrupted(st.pending)


def _handler(signum: int, frame: FrameType | None) -> None:
    if _STATE.pending is None:
        _STATE.pending = signum
    _maybe_raise(frame)


def _again(signum: int) -> None:
    """Deliver `signum` to the main thread again shortly (its handler re-checks the stack)."""
    main = threading.main_thread().ident
    if main is None:
        return
    def send() -> None:
        if _STATE.installed:
            signal.pthread_kill(main, signum)

    timer = threading.Timer(_RETRY_S, send)
    timer.daemon = True
    timer.start()


def _unraisable(u) -> None:
    """`sys.unraisablehook` while handling: an `Interrupted` raised inside code whose exceptions Python
    swallows — a weakref callback, a `__del__`, a GC callback (the handler runs in whatever frame
    the main thread is in) — is not lost, nor printed as "Exception ignored": the signal is
    delivered again 20 ms later, to a frame it can stop."""
    if isinstance(u.exc_value, Interrupted):
        _STATE.raised = False
        _again(u.exc_value.signum)
        return
    _STATE.previous_hook(u)


@contextmanager
def handling() -> Iterator[None]:
    """Install the handlers for SIGINT and SIGTERM for the duration (main thread only;
    elsewhere, and when already installed, this does nothing). The state starts afresh."""
    if _STATE.installed or not _in_main_thread():
        yield
        return
    st = _STATE
    st.pending, st.raised, st.depth, st.status = None, False, 0, ""
    st.previous = {s: signal.signal(s, _handler) for s in _SIGNALS}
    st.previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable
    st.installed = True
    try:
        yield
    finally:
        st.installed = False
        for s, h in st.previous.items():
            signal.signal(s, h)  # type: ignore[arg-type]
        sys.unraisablehook = st.previous_hook


class Hold:
    """A part of a command that a signal must not cut, entered and left explicitly (it may
    span functions): the signal takes effect when it is left. `deferred()` is the block form.

    Without `handling` (a library caller in the main thread whose SIGINT handler is
    Python's default), SIGINT is held here too and raised as KeyboardInterrupt on exit.
    Entering twice is entering once; outside the main thread it does nothing (signals are
    only delivered there).
    """

    def __init__(self) -> None:
        self.entered = False
        self._own = False
        self._previous: object = None
        self._saved: tuple[int | None, bool] = (None, False)

    def enter(self) -> None:
        if self.entered or not _in_main_thread():
            return
        self.entered = True
        self._own = not _STATE.installed and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if self._own:
            self._saved = (_STATE.pending, _STATE.raised)
            _STATE.pending, _STATE.raised = None, False
            self._previous = signal.signal(signal.SIGINT, _handler)
        _STATE.depth += 1

    def exit(self) -> None:
        """Leave; raise the signal that arrived meanwhile (even over an exception already
        on its way: the command stops either way, and the one line says what was done)."""
        if not self.entered:
            return
        self.entered = False
        _STATE.depth -= 1
        if self._own:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]
            pending = _STATE.pending
            _STATE.pending, _STATE.raised = self._saved
            if pending is not None:
                raise KeyboardInterrupt
            return
        if _STATE.depth == 0 and _STATE.installed:
            _maybe_raise(None)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold signals for the block (see `Hold`)."""
    hold = Hold()
    hold.enter()
    try:
        yield
    finally:
        hold.exit()


def early(signum: int, frame: FrameType | None) -> None:
    """The handler while the CLI is starting (before any store is open, nothing written):
    one line and the signal's exit code."""
    os.write(2, f"interrupted ({signal_name(signum)}) while starting; nothing was done\n".encode())
    os._exit(exit_code(signum))


def install_early() -> None:
    if _in_main_thread():
        for s in _SIGNALS:
            signal.signal(s, early)


def ignore() -> None:
    if _in_main_thread():
        for s in _SIGNALS:
            signal.signal(s, signal.SIG_IGN)
