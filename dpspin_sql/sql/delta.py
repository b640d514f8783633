"""A Delta table read as the Parquet files its log names (`delta_scan('path')` in a statement).

A Delta table is a folder of Parquet files and a transaction log (`_delta_log/`): JSON commits
`NNNNNNNNNNNNNNNNNNNN.json`, each a line per action, and Parquet checkpoints that sum up the
commits before them. The current snapshot is the replay of those actions from the last
checkpoint: the files `add`ed and not since `remove`d. That list is what every Delta reader
reads, and it is what the audit fixes here; both engines then read exactly those Parquet files
(DuckDB's `read_parquet([...])`, Spark's `spark.read.parquet(*files)`), so neither needs a
Delta extension or package.

Read: the protocol, the table's metadata (its partition columns and column mapping) and each
file action's path and deletion vector. Never read: the rows, and the per-file statistics the
log also carries (minimum and maximum values are derived from the rows).

Refused, one line each, because the Parquet files alone would not be the table: deletion
vectors (rows deleted without rewriting their file), column mapping (the files' column names
are not the table's), partition columns (their values live in the log, not the files), reader
features other than those that change nothing for a reader of plain files, multi-part and V2
checkpoints.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from sqlglot import exp

from dpspin_sql.errors import BadInput

LOG = "_delta_log"
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART = re.compile(r"^(\d{20})\.checkpoint\.\d+\.\d+\.parquet$")
# reader features under which the current files, read as plain Parquet, are the table
HARMLESS_READER_FEATURES = frozenset({"timestampNtz", "vacuumProtocolCheck", "typeWidening-preview", "typeWidening"})


def is_delta_scan(fn: exp.Expr) -> bool:
    """`delta_scan('path')` (DuckDB's name for it) in a statement: a Delta table."""
    return isinstance(fn, exp.Anonymous) and str(fn.name).lower() == "delta_scan"


@dataclass(frozen=True)
class DeltaSnapshot:
    """The table's current version and the absolute paths of its data files, sorted."""

    root: Path
    version: int
    files: tuple[str, ...]


def is_delta_table(path: Path) -> bool:
    return (path / LOG).is_dir()


def _file_path(root: Path, raw: str) -> str:
    """An action's path: relative to the table root and URL-encoded, or an absolute file URI."""
    parsed = urlparse(raw)
    if parsed.scheme in ("", "file"):
        decoded = unquote(parsed.path if parsed.scheme else raw)
        path = Path(decoded) if Path(decoded).is_absolute() else root / decoded
        return str(path.resolve())
    raise BadInput(f"the Delta table {root} names a data file on {parsed.scheme}:// ({raw}); only local files are read")


class _Replay:
    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, None] = {}
        self.protocol: dict | None = None
        self.metadata: dict | None = None

    def protocol_(self, action: dict) -> None:
        self.protocol = action

    def add(self, action: dict) -> None:
        if action.get("deletionVector"):
            raise BadInput(f"the Delta table {self.root} has deletion vectors (rows deleted without rewriting their "
                           "file): its Parquet files are not its rows; run OPTIMIZE/PURGE on it first")
        self.files[_file_path(self.root, action["path"])] = None

    def remove(self, action: dict) -> None:
        self.files.pop(_file_path(self.root, action["path"]), None)

    def commit(self, path: Path) -> None:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    action = json.loads(line)
                except json.JSONDecodeError:
                    raise BadInput(f"the Delta log file {path} is not JSON lines (line {n})") from None
                if "protocol" in action:
                    self.protocol_(action["protocol"])
                elif "metaData" in action:
                    self.metadata = action["metaData"]
                elif "add" in action:
                    self.add(action["add"])
                elif "remove" in action:
                    self.remove(action["remove"])

    def checkpoint(self, path: Path) -> None:
        import duckdb

        con = duckdb.connect()
        try:
            names = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()}
            v2 = [f"{c} IS NOT NULL" for c in ("sidecar", "checkpointMetadata") if c in names]
            if v2 and con.execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE {' OR '.join(v2)}").fetchall()[0][0]:
                raise BadInput(f"the Delta table {self.root} has a V2 checkpoint ({path.name}), which is not read")
            # the actions' paths and deletion vectors only: never the statistics
            if "protocol" in names:
                for (proto,) in con.execute(f"SELECT protocol FROM read_parquet('{path}') "
                                            "WHERE protocol IS NOT NULL").fetchall():
                    self.protocol_(proto)
            if "metaData" in names:
                for (meta,) in con.execute(f"SELECT metaData FROM read_parquet('{path}') "
                                           "WHERE metaData IS NOT NULL").fetchall():
                    self.metadata = meta
            if "add" in names:
                dv = "add.deletionVector" if "deletionVector" in _fields(con, path, "add") else "NULL"
                for p, d in con.execute(f"SELECT add.path, {dv} FROM read_parquet('{path}') "
                                        "WHERE add IS NOT NULL").fetchall():
                    self.add({"path": p, "deletionVector": d})
        finally:
            con.close()


def _fields(con, path: Path, column: str) -> set[str]:
    row = con.execute(f"SELECT typeof({column}) FROM read_parquet('{path}') LIMIT 1").fetchall()
    return set(re.findall(r"(\w+) ", row[0][0].removeprefix("STRUCT(")) if row else [])


def snapshot(root: Path) -> DeltaSnapshot:
    """The table's current files (module docstring), or a one-line refusal of what cannot be read."""
    log = root / LOG
    commits: dict[int, Path] = {}
    checkpoints: dict[int, Path] = {}
    for entry in log.iterdir():
        if m := _COMMIT.match(entry.name):
            commits[int(m.group(1))] = entry
        elif m := _CHECKPOINT.match(entry.name):
            checkpoints[int(m.group(1))] = entry
        elif _MULTIPART.match(entry.name):
            raise BadInput(f"the Delta table {root} has a multi-part checkpoint ({entry.name}), which is not read")
    if not commits and not checkpoints:
        raise BadInput(f"the Delta table {root} has no commit in {LOG}")
    latest = max([*commits, *checkpoints])
    start = max((v for v in checkpoints if v <= latest), default=None)
    replay = _Replay(root)
    if start is not None:
        replay.checkpoint(checkpoints[start])
    first = start + 1 if start is not None else 0
    missing = [v for v in range(first, latest + 1) if v not in commits]
    if missing:
        raise BadInput(f"the Delta log of {root} lacks the commit {missing[0]:020d}.json (an incomplete or vacuumed log)")
    for v in range(first, latest + 1):
        replay.commit(commits[v])
    _check(root, replay)
    return DeltaSnapshot(root, latest, tuple(sorted(replay.files)))


def _check(root: Path, replay: _Replay) -> None:
    proto, meta = replay.protocol or {}, replay.metadata or {}
    if not meta:
        raise BadInput(f"the Delta log of {root} has no metaData action")
    reader = int(proto.get("minReaderVersion", 1))
    features = set(proto.get("readerFeatures") or [])
    config = meta.get("configuration") or {}
    if isinstance(config, list):   # a checkpoint's MAP, as DuckDB returns it
        config = dict(config) if config and isinstance(config[0], tuple) else {}
    mapping = str(config.get("delta.columnMapping.mode", "none")).lower()
    if mapping != "none" or "columnMapping" in features:
        raise BadInput(f"the Delta table {root} uses column mapping (its files' column names are not the table's), "
                       "which is not read")
    if "deletionVectors" in features:
        raise BadInput(f"the Delta table {root} has deletion vectors enabled: its Parquet files may hold deleted "
                       "rows; disable them and rewrite its files (OPTIMIZE/PURGE) first")
    unknown = sorted(features - HARMLESS_READER_FEATURES)
    if reader > 3 or unknown:
        raise BadInput(f"the Delta table {root} needs reader {'features ' + ', '.join(unknown) if unknown else f'version {reader}'}, "
                       "which are not read")
    if meta.get("partitionColumns"):
        raise BadInput(f"the Delta table {root} is partitioned by {', '.join(meta['partitionColumns'])} (their values "
                       "live in the log, not in the files), which is not read")
    fmt = (meta.get("format") or {}).get("provider", "parquet")
    if fmt != "parquet":
        raise BadInput(f"the Delta table {root} stores its data as {fmt}, not Parquet")
