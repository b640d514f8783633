"""A user's table file, read one way by every command that takes one.

`dpspin load`, `atoms load`, `assignments load`, `release --assignments/--records` and
`release --from-sketch` all read their files through this module, so a file that one of
them reads whole, every other reads whole, with the same values, under the same rules:

- **Formats.** CSV (or TSV), JSON Lines or a JSON array of objects, Parquet; each may be
  gzip- or zstd-compressed (`.csv.gz`, `.jsonl.gz`; a Parquet file's codec is inside it).
  A folder is read as one table of the data files in it, at any depth (what Spark, Hive
  and `pyarrow.dataset` write): names starting with `_` or `.` (`_SUCCESS`, `.crc`
  checksums) are skipped, and `key=value` folders become columns (hive partitioning).
- **CSV dialect.** RFC 4180, strictly: the delimiter is `,` (tab for `.tsv`) unless
  `--delimiter` says otherwise (Excel in many locales writes `;`), double quotes, a quote
  inside a field doubled; LF or CRLF line endings, a UTF-8 byte-order mark and quoted
  newlines are all fine; a malformed row is an error with its line number, never a row
  re-shaped by a dialect sniffer. Every CSV value is text (an id `007` stays `007`); the
  consumer casts the columns it needs. An empty unquoted field and an unquoted `NA` are
  missing values (what PostgreSQL/DuckDB `COPY` and R's `write.csv` write for NULL/NA,
  and what pandas reads as missing); a quoted `""` or `"NA"` is that text.
- **One header, unambiguous.** A column name given twice, two names that differ only in
  case (DuckDB, and so every query here, matches names without regard to case), or a
  JSON object with a key twice is an error that names the file and the columns —
  whichever copy a reader picked would be a guess (`check_columns`, also used by the
  two-phase result reader). Columns without a name (the row names R's `write.csv` writes,
  the index pandas' `to_csv` writes, `__index_level_0__` in pandas' Parquet) are not
  data anyone named: they are left out, and `TableRead.dropped` says so for the command's
  one line.
- **Rows.** A file that yields no rows is an error naming the file (the consumers check
  it where they count rows anyway: `require_rows`).

Error messages never quote a value of the file (it may be protected text): DuckDB's
messages are reduced to the kind of failure and a line number (`read_error`).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpspin_sql.db import duckdb_error_line
from dpspin_sql.errors import BadInput

FORMATS = ("csv", "jsonl", "parquet")
FORMAT_NAMES = {"csv": "csv", "tsv": "csv", "jsonl": "jsonl", "json": "jsonl", "ndjson": "jsonl",
                "parquet": "parquet", "pq": "parquet"}
COMPRESSIONS = (".gz", ".gzip", ".zst")
NULL_STRINGS = ("", "NA")
_INDEX_COLUMN = re.compile(r"__index_level_\d+__")
_EXTENSIONS = ((".csv", "csv"), (".tsv", "csv"), (".txt", None), (".jsonl", "jsonl"), (".ndjson", "jsonl"),
               (".json", "jsonl"), (".parquet", "parquet"), (".pq", "parquet"))


@dataclass(frozen=True)
class TableFile:
    """A file (or folder of files) and how to read it; made by `table_file`, validated once."""

    path: Path                       # as the user gave it (named in every message)
    format: str                      # csv | jsonl | parquet
    files: tuple[str, ...]           # the data files DuckDB reads (one, or a folder's)
    delimiter: str = ","

    @property
    def folder(self) -> bool:
        return len(self.files) != 1 or Path(self.files[0]) != self.path.resolve()

    def scan(self, types: dict[str, str] | None = None, *, header: bool = True) -> str:
        """The DuckDB table function that reads the file, as SQL text with literal paths.
        `types` gives some CSV columns a type (the others stay text); `header=False` reads a
        CSV's header row as a row of text (`header` below)."""
        name, options = self.scan_options(types, header=header)
        return f"{name}({', '.join(_sql_value(v) if k is None else f'{k} = {_sql_value(v)}' for k, v in options)})"

    def scan_options(self, types: dict[str, str] | None = None, *,
                     header: bool = True) -> tuple[str, list[tuple[str | None, Any]]]:
        """(function name, [(option name or None for the positional file list, value)]):
        the one description of how the file is read, rendered by `scan` here and as a
        sqlglot expression by `source.Relation.scan`."""
        files = list(self.files)
        union: list[tuple[str | None, Any]] = [("union_by_name", True)] if self.folder else []
        if self.format == "csv":
            options: list[tuple[str | None, Any]] = [
                (None, files), ("header", header), ("strict_mode", True), ("delimiter", self.delimiter),
                ("quote", '"'), ("escape", '"')]
            if header:   # (the header row itself: an empty name reads as NULL, no name is "NA")
                options += [("nullstr", list(NULL_STRINGS)), ("allow_quoted_nulls", False)]
            options += [("all_varchar", True), ("encoding", "utf-8")]
            if types:
                options.append(("types", dict(types)))
            return "read_csv", options + union
        first: list[tuple[str | None, Any]] = [(None, files)]
        if self.format == "jsonl":
            return "read_json", first + [("format", "auto"), ("records", True), ("sample_size", -1)] + union
        return "read_parquet", first + union


def _sql_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(_sql_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_sql_value(k)}: {_sql_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value).__name__)


def format_of_name(name: str) -> str | None:
    """csv | jsonl | parquet from a file name (a compression suffix is looked through)."""
    name = name.lower()
    for suffix in COMPRESSIONS:
        name = name.removesuffix(suffix)
    for ext, found in _EXTENSIONS:
        if name.endswith(ext):
            return found
    return None


def parse_delimiter(text: str | None) -> str | None:
    """--delimiter: one character; `\\t` or `tab` for a tab."""
    if text is None:
        return None
    value = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(text, text)
    if len(value) != 1:
        raise BadInput(f"--delimiter must be one character (e.g. ';' or '\\t' for a tab), not {text!r}")
    if value in ('"', "\n", "\r"):
        raise BadInput(f"--delimiter cannot be {value!r}")
    return value


def table_file(path: str | Path, fmt: str | None = None, *, delimiter: str | None = None,
               what: str = "input file", formats: Iterable[str] = FORMATS) -> TableFile:
    """A user's file (or folder) checked for reading: it exists, its format is known (from
    `fmt` or the name) and one of `formats`, and `delimiter` fits it."""
    path = Path(path)
    formats = tuple(formats)
    if fmt is not None:
        if fmt.lower() not in FORMAT_NAMES or FORMAT_NAMES[fmt.lower()] not in formats:
            names = ", ".join(sorted({k for k, v in FORMAT_NAMES.items() if v in formats} - {"pq", "ndjson"}))
            raise BadInput(f"unknown format {fmt!r}; use one of {names}")
        fmt = FORMAT_NAMES[fmt.lower()]
    if path.is_dir():
        files, found = _folder_files(path, fmt)
    elif path.is_file():
        found = fmt or format_of_name(path.name)
        files = [str(path.resolve())]
    elif path.exists():
        raise BadInput(f"{what} {path} is not a regular file or folder")
    else:
        raise BadInput(f"{what} not found: {path}")
    if found is None:
        raise BadInput(f"cannot tell the format of {path}; pass --format csv|jsonl|parquet")
    if found not in formats:
        raise BadInput(f"{path}: a {found} file cannot be read here; give one of: {', '.join(formats)}")
    if delimiter is not None and found != "csv":
        raise BadInput(f"--delimiter is for CSV files; {path} is {found}")
    is_tsv = path.name.lower().removesuffix(".gz").endswith(".tsv")
    return TableFile(path, found, tuple(files), delimiter or ("\t" if is_tsv else ","))


def _folder_files(folder: Path, fmt: str | None) -> tuple[list[str], str | None]:
    """The data files of a folder, in name order; their one format."""
    data: list[str] = []
    formats: set[str] = set()
    for f in sorted(folder.rglob("*")):
        rel = f.relative_to(folder).parts
        if any(part.startswith(("_", ".")) for part in rel) or not f.is_file():
            continue
        found = format_of_name(f.name)
        if fmt is None and found is None:
            continue
        data.append(str(f.resolve()))
        formats.add(fmt or found or "")
    if not data:
        raise BadInput(f"{folder} is a folder with no data files (CSV, JSON Lines or Parquet)")
    if len(formats) > 1:
        raise BadInput(f"{folder} holds files of several formats ({', '.join(sorted(formats))}); "
                       "give one file or a folder of one format")
    return data, formats.pop()


# -- the header ----------------------------------------------------------------------------

def check_columns(names: list[str], where: str) -> None:
    """The one rule for a header: no name twice, no two names that differ only in case."""
    seen: dict[str, str] = {}
    for name in names:
        if name == "" or _INDEX_COLUMN.fullmatch(name):
            continue
        other = seen.get(name.lower())
        if other is not None:
            if other == name:
                raise BadInput(f"{where}: the column {name!r} appears twice in the header; which one is meant "
                               "is ambiguous (give every column its own name)")
            raise BadInput(f"{where}: the columns {other!r} and {name!r} differ only in case; column names are "
                           "matched without regard to case, so which one is meant is ambiguous (rename one)")
        seen[name.lower()] = name


def json_pairs(where: str):
    """An `object_pairs_hook` for `json.loads` that refuses an object with a key twice (or two
    keys that differ only in case), by the rule of `check_columns`."""
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            twice = next(k for k in keys if keys.count(k) > 1)
            raise BadInput(f"{where}: an object has the key {twice!r} twice; which value is meant is ambiguous")
        check_columns(keys, where)
        return dict(pairs)

    return hook


def check_json_text(path: Path) -> None:
    """A JSON document parsed once with `json_pairs` (only to refuse ambiguous objects)."""
    import json

    try:
        json.loads(path.read_text(encoding="utf-8-sig"), object_pairs_hook=json_pairs(str(path)))
    except (ValueError, RecursionError, OSError):
        return   # not valid JSON: the reader that follows says so


def unnamed(names: list[str]) -> list[int]:
    """Positions of the columns without a name of their own (row names, a pandas index)."""
    return [i for i, n in enumerate(names) if n == "" or _INDEX_COLUMN.fullmatch(n)]


def header(con: Any, tf: TableFile) -> list[str]:
    """The column names as the file writes them (before DuckDB makes them unique), checked
    by `check_columns`. CSV: each file's header row; Parquet: each file's schema plus its
    hive partition keys; JSON: every key of every object (one pass over the file)."""
    import duckdb

    if tf.format == "parquet":
        return _parquet_header(tf)
    if tf.format == "jsonl":
        return _json_keys(con, tf)
    names: list[str] = []
    for i, f in enumerate(tf.files):
        one = TableFile(Path(f), "csv", (f,), tf.delimiter)
        try:
            rows = con.execute(f"SELECT * FROM {one.scan(header=False)} LIMIT 1").fetchall()
        except duckdb.Error as exc:
            raise BadInput(f"cannot read {tf.path} as csv: {read_error(Path(f), 'csv', exc, tf.delimiter)}") from None
        these = [("" if v is None else str(v)) for v in rows[0]] if rows else []
        check_columns(these, str(tf.path))
        if i == 0:
            names = these
        else:
            names += [n for n in these if n.lower() not in {m.lower() for m in names}]
    check_columns(names, str(tf.path))
    return names


def _parquet_header(tf: TableFile) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names: list[str] = []
    for f in tf.files:
        try:
            these = list(pq.read_schema(f).names)
        except (OSError, pa.ArrowException) as exc:
            raise BadInput(f"cannot read {tf.path} as parquet: {duckdb_error_line(exc)}") from None
        these += [p.split("=", 1)[0] for p in Path(f).relative_to(tf.path.resolve()).parts[:-1] if "=" in p] \
            if tf.folder else []
        check_columns(these, str(tf.path))
        names += [n for n in these if n.lower() not in {m.lower() for m in names}]
    return names


def _json_keys(con: Any, tf: TableFile) -> list[str]:
    import duckdb

    files = _sql_value(list(tf.files))
    sql = (f"WITH o AS (SELECT row_number() OVER () AS n, json_keys(json) AS k "
           f"FROM read_json_objects({files}, format = 'auto')) "
           "SELECT (SELECT list(DISTINCT key ORDER BY key) FROM (SELECT unnest(k) AS key FROM o)), "
           "(SELECT min(n) FROM o WHERE len(k) <> len(list_distinct(k))), "
           "(SELECT first(k ORDER BY n) FROM o WHERE len(k) <> len(list_distinct(k)))")
    try:
        keys, bad_row, bad_keys = con.execute(sql).fetchall()[0]
    except duckdb.Error as exc:
        raise BadInput(f"cannot read {tf.path} as JSON: {read_error(tf.path, 'jsonl', exc)}") from None
    if bad_row is not None:
        twice = next(k for k in bad_keys if bad_keys.count(k) > 1)
        raise BadInput(f"{tf.path}: the object at row {bad_row} has the key {twice!r} twice; which value is meant "
                       "is ambiguous")
    keys = list(keys or [])
    check_columns(keys, str(tf.path))
    return keys


# -- reading -----------------------------------------------------------------------------

@dataclass(frozen=True)
class TableRead:
    """A checked file as a DuckDB relation, and what was left out of it."""

    relation: Any
    columns: tuple[str, ...]
    dropped: tuple[str, ...] = field(default=())

    def note(self) -> str | None:
        """One line for the columns left out, or None."""
        if not self.dropped:
            return None
        return (f"left out {len(self.dropped)} unnamed column(s) (row names or an index, as R's write.csv "
                f"and pandas write them): {', '.join(self.dropped)}")


def read(con: Any, tf: TableFile, *, types: dict[str, str] | None = None) -> TableRead:
    """The file as a relation over its named columns (`header`'s checks first)."""
    import duckdb

    names = header(con, tf)
    if not names:
        raise BadInput(f"{tf.path} is empty (no header and no rows); nothing was read")
    types = {k: v for k, v in (types or {}).items() if k in names} if tf.format == "csv" else None
    try:
        rel = con.sql(f"SELECT * FROM {tf.scan(types)}")
        columns = list(rel.columns)
    except duckdb.Error as exc:
        raise BadInput(f"cannot read {tf.path} as {tf.format}: {read_error(tf.path, tf.format, exc, tf.delimiter)}") \
            from None
    if tf.format == "jsonl":   # keys come as a set; DuckDB names the columns after them
        positions = [i for i, c in enumerate(columns) if c == "" or _INDEX_COLUMN.fullmatch(c)]
        shown = tuple(repr(columns[i]) for i in positions)
    else:                      # the header's positions are the relation's
        positions = [i for i in unnamed(names) if i < len(columns)]
        shown = tuple(repr(names[i]) if names[i] else f"column {i + 1}" for i in positions)
    if positions:
        kept = [c for i, c in enumerate(columns) if i not in positions]
        if not kept:
            raise BadInput(f"{tf.path} has no named columns")
        rel = rel.select(*[duckdb.ColumnExpression(c) for c in kept])
        columns = kept
    return TableRead(rel, tuple(columns), shown)


def require_rows(n: int, tf: TableFile | Path | str, what: str = "rows") -> None:
    """A file that yields nothing is an error naming it (never 'loaded 0')."""
    if n == 0:
        path = tf.path if isinstance(tf, TableFile) else tf
        raise BadInput(f"{path} has no {what} (an empty file, or a header only); nothing was loaded")


# -- errors ------------------------------------------------------------------------------

def read_error(path: Path, fmt: str, exc: BaseException, delimiter: str = ",") -> str:
    """One line for a file DuckDB could not read: the line number of the first malformed
    row and the kind of failure, never the row's content (it may be protected text)."""
    text = str(exc)
    if "Invalid unicode" in text or "invalid unicode" in text.lower():
        return "it is not UTF-8 text (save it as UTF-8; in Excel: CSV UTF-8)"
    too_long = re.search(r"Maximum line size of (\d+) bytes exceeded", text)
    if too_long:
        return (f"a row is longer than {int(too_long.group(1)):,} bytes, DuckDB's limit for one CSV row "
                "(split the field, or give the file as Parquet or JSON Lines)")
    dup = re.search(r'has duplicate key "([^"]{0,80})"', text)
    line = re.search(r"CSV Error on Line: (\d+)", text) or re.search(r"\bin line (\d+)", text)
    if dup:
        where = f" (line {line.group(1)})" if line else ""
        return f"an object has the key {dup.group(1)!r} twice{where}; which value is meant is ambiguous"
    if fmt == "csv" and line is None:
        bad = _first_bad_csv_line(path, delimiter)
        if bad is not None:
            return f"malformed CSV row at line {bad} (an unterminated quote or the wrong number of fields)"
    if line is not None:
        return f"malformed {fmt.upper()} at line {line.group(1)}"
    return duckdb_error_line(exc)


def _first_bad_csv_line(path: Path, delimiter: str = ",") -> int | None:
    """Find the first malformed row with Python's strict CSV reader (only after DuckDB failed)."""
    import csv
    import gzip

    if path.is_dir():
        return None
    opener: Any = gzip.open if path.name.lower().endswith((".gz", ".gzip")) else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter=delimiter, quotechar='"', doublequote=True, strict=True)
            width = None
            try:
                for row in reader:
                    if width is None:
                        width = len(row)
                    elif row and len(row) != width:
                        return reader.line_num
            except csv.Error:
                return reader.line_num
    except (OSError, UnicodeDecodeError, EOFError):
        return None
    return None
