"""Anchors of the ledger's hash chain outside the store: published plans and a witness file.

Whoever can write the store file can rewrite its ledger into a consistent chain: drop the
last rows and set the head back, or replace the whole ledger. What they cannot do is change
what was copied out of the store before: a chain hash commits to every row up to it
(docs/DESIGN.md §4), so a `(seq, row hash)` pair kept elsewhere pins the whole prefix.

- **Plans.** Every plan carries its `release_id` and `ledger_chain`, the hash of its
  release's ledger row. Given published plans, `dpspin budget --verify --plan P` checks
  that each one's row is in the ledger with that very hash.
- **A witness file** the curator keeps elsewhere (another disk, a write-once bucket, a
  repository): JSON Lines, one line per change of the ledger, with the store's path, the
  chain's id (the hash of its first row), the row number and the row's hash. Every charge
  and budget change on a store with a witness (`dpspin release --witness W`,
  `dpspin_sql.install(con, STORE, witness=W)`, or `DPSPIN_WITNESS=W`) checks the ledger
  against it first and appends the new head after the commit; `dpspin budget --witness W`
  appends the current head; `dpspin budget --verify --witness W` checks.

One witness file can serve several stores: a line concerns this ledger when its chain id
is this chain's, or its store path is this store's (then its chain id must be this
chain's: a ledger replaced at the same path is caught).

This module only reads and writes the anchors and compares `(seq, hash)` pairs; the chain
itself is `ledger.py`'s.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dpspin_sql.errors import BadInput

ENV = "DPSPIN_WITNESS"
_REGISTERED: dict[str, Path] = {}


@dataclass(frozen=True)
class WitnessLine:
    line: int          # 1-based line number in the file
    store: str
    chain: str
    seq: int
    hash: str


@dataclass(frozen=True)
class PlanAnchor:
    source: str        # the plan file
    release_id: str
    ledger_chain: str
    text_sha256: str   # of the file's text without its final newline (what the store keeps)


def _key(path: str | Path) -> str:
    return os.path.realpath(path)


def register(store_path: str | Path, witness: str | Path) -> None:
    """Charges and budget changes on the store at `store_path` use `witness` (this process)."""
    _REGISTERED[_key(store_path)] = Path(witness)


def unregister(store_path: str | Path) -> None:
    _REGISTERED.pop(_key(store_path), None)


def witness_for(store_path: str | Path | None) -> Path | None:
    """The witness of a store: registered for its path, else $DPSPIN_WITNESS, else none."""
    if store_path is not None and _key(store_path) in _REGISTERED:
        return _REGISTERED[_key(store_path)]
    env = os.environ.get(ENV)
    return Path(env) if env else None


def read_witness(path: str | Path, *, must_exist: bool = True) -> list[WitnessLine]:
    """The lines of a witness file. A last line without its newline (a write cut short) is
    ignored; any other line that is not a witness line is bad input, named by number."""
    path = Path(path)
    if path.is_dir():
        raise BadInput(f"witness {path} is a directory, not a witness file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if must_exist:
            raise BadInput(f"witness file not found: {path} (start one with: dpspin budget --db STORE "
                           f"--witness {path})") from None
        return []
    except OSError as exc:
        raise BadInput(f"cannot read the witness {path}: {exc.strerror}") from None
    text = raw.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] != "":
        lines = lines[:-1]          # an append cut short: not a line
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            entry = WitnessLine(n, str(d["store"]), str(d["chain"]), int(d["seq"]), str(d["hash"]))
        except (ValueError, KeyError, TypeError):
            raise BadInput(f"witness {path} line {n} is not a witness line "
                           "(JSON with store, chain, seq and hash)") from None
        out.append(entry)
    return out


def append_witness(path: str | Path, store_path: str | Path | None, chain: str, seq: int, row_hash: str) -> None:
    """Append one line (a single write in append mode, then fsync)."""
    line = json.dumps({"store": _key(store_path) if store_path else "", "chain": chain, "seq": int(seq),
                       "hash": row_hash, "at": datetime.now(UTC).isoformat(timespec="seconds")},
                      separators=(",", ":")) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def probe_witness(path: str | Path) -> None:
    """Refuse now (before a charge) a witness that cannot be appended to."""
    path = Path(path)
    if path.is_dir():
        raise BadInput(f"witness {path} is a directory, not a witness file")
    if not path.exists():
        raise BadInput(f"witness file not found: {path} (start one with: dpspin budget --db STORE --witness {path})")
    if not os.access(path, os.W_OK):
        raise BadInput(f"the witness {path} is not writable")


def probe_witness_directory(path: str | Path) -> None:
    """Refuse a witness that can be neither appended to nor created."""
    path = Path(path)
    if path.exists():
        probe_witness(path)
        return
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"the witness's directory does not exist: {parent}")
    if not os.access(parent, os.W_OK):
        raise BadInput(f"cannot create the witness {path}: its directory is not writable")


def check_witness(entries: Iterable[WitnessLine], store_path: str | Path | None, chain_id: str | None,
                  hashes: Mapping[int, str], source: str) -> list[tuple[str, str]]:
    """(where, problem) for each witness line this ledger does not hold; `hashes` maps each
    row number of the (verified) chain to its hash."""
    problems: list[tuple[str, str]] = []
    here = _key(store_path) if store_path else None
    last = max(hashes) if hashes else 0
    relevant = 0
    for e in entries:
        if e.chain != chain_id and (here is None or e.store != here):
            continue                       # another store's line
        relevant += 1
        where = f"witness {source} line {e.line}"
        if e.chain != chain_id:
            problems.append((where, f"saw another ledger at this path (chain {e.chain[:19]}…, this one is "
                                    f"{(chain_id or 'empty')[:19]}…): the ledger was replaced"))
        elif e.seq not in hashes:
            problems.append((where, f"saw row {e.seq}, but the ledger ends at row {last}: rows were deleted "
                                    "(the ledger was truncated or rewound)"))
        elif hashes[e.seq] != e.hash:
            problems.append((where, f"saw row {e.seq} with another hash: the ledger was rewritten from row "
                                    f"{e.seq} or before"))
    if relevant == 0:
        problems.append((f"witness {source}", "has no line of this ledger (another store's witness, or it was "
                                              "never written for this store)"))
    return problems


def read_plan_anchors(paths: Iterable[str | Path]) -> list[PlanAnchor]:
    """The (release id, chain hash) of each plan file given, or of each plan in a directory
    given (files named *.json other than dictionaries, that parse as plans)."""
    out: list[PlanAnchor] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files = sorted(f for f in p.rglob("*.json") if not f.name.endswith(".dictionary.json"))
            out.extend(a for f in files if (a := _plan_anchor(f, strict=False)) is not None)
        else:
            anchor = _plan_anchor(p, strict=True)
            assert anchor is not None
            out.append(anchor)
    return out


def _plan_anchor(path: Path, *, strict: bool) -> PlanAnchor | None:
    try:
        text = path.read_text(encoding="utf-8")
        d = json.loads(text)
    except FileNotFoundError:
        raise BadInput(f"plan file not found: {path}") from None
    except (OSError, ValueError):
        if strict:
            raise BadInput(f"{path} is not a readable JSON plan") from None
        return None
    if not (isinstance(d, dict) and isinstance(d.get("release_id"), str) and isinstance(d.get("ledger_chain"), str)):
        if strict:
            raise BadInput(f"{path} is not a charged dpspin plan (it has no release_id and ledger_chain)")
        return None
    body = text[:-1] if text.endswith("\n") else text
    return PlanAnchor(str(path), d["release_id"], d["ledger_chain"],
                      "sha256:" + hashlib.sha256(body.encode()).hexdigest())


def check_plans(anchors: Iterable[PlanAnchor], rows: Mapping[str, tuple[int, str]],
                pins: Mapping[str, str]) -> list[tuple[str, str]]:
    """(where, problem) for each plan whose release row is not in the ledger with its hash,
    or whose text is not the one the chain pinned; `rows` maps each release id of the
    (verified) chain to (row number, hash), `pins` a release id to its plan text's hash."""
    problems: list[tuple[str, str]] = []
    for a in anchors:
        where = f"plan {a.source} (release {a.release_id})"
        if a.release_id not in rows:
            problems.append((where, "its release is not in the ledger: the ledger was truncated, rewound or "
                                    "replaced (or the plan is another store's)"))
        elif rows[a.release_id][1] != a.ledger_chain:
            problems.append((where, f"row {rows[a.release_id][0]} of the ledger does not have the plan's chain "
                                    "hash: the ledger was rewritten from that row or before"))
        elif a.release_id in pins and pins[a.release_id] != a.text_sha256:
            problems.append((where, "is not the plan this release wrote (its text differs from the one whose "
                                    "hash the ledger holds): the plan file was edited"))
    return problems
