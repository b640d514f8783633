"""The files a command writes: checked together before anything is charged, written atomically.

A careless path must never destroy what guards the data: an output that resolves to a
store (or its WAL), to an input of the same command, or to another output of the same
command is refused; an existing plan is replaced only with `--force`, and never a file
that is not a plan; names ending in `.dictionary.json` are reserved for the public
dictionary written beside a plan. Every check runs before the ledger is charged, so a
refused output costs nothing.

Every output's directory is probed before anything is charged: a temporary file is
created and removed there (`reserve` also writes the bytes the output will need, so a full
disk is found before the charge, not after).

Writes go through a temporary file in the target's directory and a rename, so a reader
never sees half a file; temporary files an earlier, killed write left for the same target
are removed first. SIGINT/SIGTERM wait while a file is written (`interrupts`): a write is
whole or absent, and leaves no temporary file.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dpspin_sql import interrupts
from dpspin_sql.db import storage_error
from dpspin_sql.errors import BadInput

SIDECAR_SUFFIX = ".dictionary.json"
_DUCKDB_MAGIC = b"DUCK"


def dictionary_sidecar(plan_path: str | Path) -> Path:
    """Where a release puts the public dictionary beside a plan (for the verifier)."""
    plan_path = Path(plan_path)
    return plan_path.with_name(plan_path.stem + SIDECAR_SUFFIX)


def is_duckdb_file(path: Path) -> bool:
    """A DuckDB database file carries the magic bytes 'DUCK' at offset 8 of its header."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(12)
    except OSError:
        return False
    return head[8:12] == _DUCKDB_MAGIC


def _key(path: Path) -> Path:
    return Path(os.path.realpath(path))


@dataclass
class Outputs:
    """One command's outputs, checked against its inputs, its store and each other."""

    inputs: Iterable[str | Path | None] = ()   # None: an optional input not given
    store: str | Path | None = None
    force: bool = False
    _taken: dict[Path, str] = field(default_factory=dict)
    _protected: dict[Path, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for p in self.inputs:
            if p is not None:
                self._protected[_key(Path(p))] = f"an input of this command ({p})"
        if self.store is not None:
            store = Path(self.store)
            self._protected[_key(store)] = f"the store {store}"
            self._protected[_key(store.with_name(store.name + ".wal"))] = f"the store's write-ahead log {store}.wal"

    def add(self, path: str | Path, option: str, *, kind: str = "file") -> Path:
        """Claim `path` for this command (`option` names it in errors). `kind="plan"` applies
        the plan rules: no overwrite without --force, and the sidecar is claimed too."""
        path = Path(path)
        if path.is_dir():
            raise BadInput(f"{option} {path} is a directory; give a file name such as {path / 'private_plan.json'}")
        if not path.parent.exists():
            raise BadInput(f"{option}: output directory does not exist: {path.parent}")
        key = _key(path)
        if key in self._protected:
            raise BadInput(f"{option} {path} is {self._protected[key]}; refusing to overwrite it")
        if key in self._taken:
            raise BadInput(f"{option} {path} is also {self._taken[key]}; give each output its own file")
        if path.exists() and is_duckdb_file(path):
            raise BadInput(f"{option} {path} is a DuckDB database; refusing to overwrite it")
        if path.name.endswith(SIDECAR_SUFFIX) and kind != "sidecar":
            raise BadInput(f"{option} {path}: names ending in {SIDECAR_SUFFIX} are reserved for the public "
                           "dictionary written beside a plan")
        if kind == "plan" and path.exists():
            if not self.force:
                raise BadInput(f"{option} {path} already exists; pass --force to replace it")
            if not _looks_like_plan(path):
                raise BadInput(f"{option} {path} exists and is not a dpspin plan; refusing to replace it")
        probe_writable(path, option)
        self._taken[key] = f"the {option} output"
        if kind == "plan":
            sidecar = dictionary_sidecar(path)
            self.add(sidecar, f"the dictionary beside {option}", kind="sidecar")
        return path


    def reserve(self, path: str | Path, option: str, nbytes: int) -> None:
        """Check now that `nbytes` fit beside `path` (a full disk refuses before any charge)."""
        probe_writable(Path(path), option, nbytes)


def probe_writable(path: Path, option: str, nbytes: int = 0) -> None:
    """Create a temporary file in `path`'s directory (with `nbytes` written and synced),
    then remove it; a directory that cannot take it is bad input naming `option`."""
    parent = path.parent if str(path.parent) else Path(".")
    with interrupts.deferred():
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
        except OSError as exc:
            raise _unwritable(option, parent, exc) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                chunk = b"\0" * 65536
                left = nbytes
                while left > 0:
                    fh.write(chunk[:min(left, len(chunk))])
                    left -= len(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise _unwritable(option, parent, exc) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _unwritable(option: str, parent: Path, exc: OSError) -> BadInput:
    full = storage_error(exc)
    if full is not None:
        return BadInput(f"{option}: no space left on device in {parent}; nothing was charged")
    return BadInput(f"{option}: cannot write in {parent} ({(exc.strerror or str(exc)).lower()})")


def _looks_like_plan(path: Path) -> bool:
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(d, dict) and (isinstance(d.get("atoms"), list) or isinstance(d.get("segments"), list)) \
        and "mechanism" in d


def write_text_atomic(path: str | Path, text: str, *, overwrite: bool = True) -> Path:
    """Write `text` (plus a final newline) via a temporary file and a rename. With
    `overwrite=False` the rename fails if the target appeared meanwhile."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise BadInput(f"output directory does not exist: {parent}")
    with interrupts.deferred():
        _write_atomic(path, parent, text, overwrite)
    return path


def _write_atomic(path: Path, parent: Path, text: str, overwrite: bool) -> None:
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a plan is meant to be published
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise BadInput(f"{path} appeared while it was being written; not replaced") from None
            os.unlink(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_stale_temporaries(path: Path) -> None:
    """Remove `.NAME.XXXXXXXX` files an interrupted write of `path` left behind."""
    parent = path.parent if str(path.parent) else Path(".")
    prefix = f".{path.name}."
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        rest = entry.name[len(prefix):]
        if entry.name.startswith(prefix) and len(rest) == 8 and entry.is_file():
            with contextlib.suppress(OSError):
                entry.unlink()
