"""A corpus of real files: the same five small tables written the way real tools write them.

Each table (records, a taxonomy, assignment rows, a records file for `release --records`
and a warehouse's sketch result) is written by every writer below, once plainly and once
gzip-compressed (for Parquet: the gzip codec inside the file). The tests
(tests/test_real_files.py) load every file with every command that reads that table and
assert identical results.

Writers, and what makes each one real:

| writer | what it writes |
|---|---|
| python_csv | `csv.writer` defaults: CRLF line ends, minimal quoting, None as an empty field |
| excel_csv | Excel's "CSV UTF-8": a UTF-8 byte-order mark, CRLF, minimal quoting, quoted newlines |
| excel_semicolon | the same with `;` (Excel where the decimal separator is a comma; `--delimiter ';'`) |
| pandas_csv | `DataFrame.to_csv(path)`: the index as an unnamed first column, LF, NaN as empty |
| r_csv | R's `write.csv(df, path)`, byte for byte (see `r_csv`): quoted header and strings, an unnamed row-names column, `NA` for missing, 15 significant digits |
| r_csv_windows | the same as R writes it on Windows (CRLF) |
| duckdb_csv, duckdb_parquet, duckdb_json | DuckDB's `COPY (...) TO` with HEADER / Parquet / JSON |
| pandas_jsonl | `to_json(orient="records", lines=True)`: ASCII escapes, `\\/` |
| pandas_json_array | `to_json(orient="records")`: one JSON array |
| pyarrow_parquet | `pyarrow.parquet.write_table` (strings dictionary-encoded, its default) |
| pandas_parquet | `to_parquet` of a filtered frame: its index as `__index_level_0__`, a categorical column |
| postgres_csv (slow) | PostgreSQL's `COPY (...) TO STDOUT WITH (FORMAT csv, HEADER)` from a real server |
| spark_parquet, spark_csv, spark_json (slow) | Spark's `DataFrameWriter`: a folder of part files with `_SUCCESS` and `.crc` files; Parquet partitioned (`key=value` folders), dictionary-encoded |

Values are chosen to break naive readers: commas, quotes, `;`, newlines and CRLF inside a
field, leading spaces, non-ASCII text, ids with leading zeros, ids that differ only in case,
missing values, a weight below the fixed-point resolution and one for an unknown atom.
Writer-ambiguous values are left out on purpose: an empty string and the text `NA` read
back as missing from several writers (pandas reads them so too).
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

SCALE = 1 << 24

RECORDS_COLUMNS = ("record_id", "user_id", "text", "product", "issue", "sub_issue", "rating")
RECORDS = [
    ("c-001", "u1", "The fee was charged twice, and nobody answered.", "Checking", "Fees", "Overdraft", 1),
    ("007", "u2", 'She said "call back tomorrow"; I did.', "Checking", "Service", None, 2),
    ("c 3", None, "Line one\nline two of the same complaint", "Credit card", "Fraud", "Card stolen", 5),
    ("c-004", "u3", "Ünïcödé: café, naïve, 日本語, emoji 🙂", "Mortgage", "Escrow", None, 3),
    ("C-004", "u3", "  leading and trailing spaces  ", "Mortgage", "Escrow", "Taxes", 4),
    ("c-006", "u4", "semi;colon and comma, together", "Student loan", "Repayment", "Plan", 2),
    ("c-007", "u1", 'ends with a quote "', "Checking", "Fees", "Overdraft", 1),
    ("12345678901234567890", "u5", "CRLF inside\r\nthe text", "Credit card", "Billing", None, 5),
    ("c-009", "u5", "a tab\tinside", "Credit card", "Billing", "Late fee", 4),
    ("c-010", "u6", "plain", "Student loan", "Repayment", None, 3),
]
TAXONOMY_COLUMNS = ("atom_id", "label", "description")
TAXONOMY = [
    (0, "fees", "money charged, twice or unexpectedly"),
    (1, "customer service", 'agents who say "call back"'),
    (2, "fraud; identity theft", None),
    (5, "escrow", "taxes, insurance;\nheld by the servicer"),
    (7, "repayment", "plans, forbearance"),
    (11, "prêt étudiant", "ünïcödé description"),
]
ASSIGNMENTS_COLUMNS = ("record_id", "atom_id", "weight")
ASSIGNMENTS = [
    ("c-001", 0, 0.75), ("c-001", 1, 0.25),
    ("007", 1, 1.0),
    ("c 3", 2, 0.6), ("c 3", 0, 0.4),
    ("c-004", 5, 1 / 3), ("c-004", 7, 1 / 3),
    ("C-004", 5, 0.5),
    ("c-006", 7, 0.9), ("c-006", 11, 1e-9),          # below the fixed-point resolution: counts as 0
    ("c-007", 0, 0.1), ("c-007", 999, 0.5),          # 999: not an atom of the dictionary
    ("12345678901234567890", 2, 1.0),
    ("c-009", 0, 0.2), ("c-009", 2, 0.3), ("c-009", 11, 0.5),
    ("c-010", 7, 0.125),
]
UNITS_COLUMNS = ("record_id", "user_id", "split")
UNITS = [(r[0], r[1] or "u0", "aux" if r[1] == "u6" else "target") for r in RECORDS]
SKETCH_COLUMNS = ("atom_id", "mass")
SKETCH = [(0, 3 * SCALE + 12345), (1, SCALE + 1), (2, 0), (5, 2 * SCALE), (7, 123456789), (11, 7)]

TABLES = {"records": (RECORDS_COLUMNS, RECORDS), "taxonomy": (TAXONOMY_COLUMNS, TAXONOMY),
          "assignments": (ASSIGNMENTS_COLUMNS, ASSIGNMENTS), "units": (UNITS_COLUMNS, UNITS),
          "sketch": (SKETCH_COLUMNS, SKETCH)}

STATEMENT = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.1, mechanism = 'laplace', top = 3) "
             "atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) "
             "WHERE split = 'target' GROUP BY atom_id")


# ------------------------------------------------------------------------------- writers

@dataclass(frozen=True)
class Written:
    """One writer's files: table name -> path (a file or a folder), and the flags to read them."""

    writer: str
    files: dict[str, Path]
    flags: tuple[str, ...] = ()


def _rows_as_dicts(columns, rows):
    return [dict(zip(columns, r)) for r in rows]


def _frame(table: str):
    import pandas as pd

    columns, rows = TABLES[table]
    df = pd.DataFrame(_rows_as_dicts(columns, rows), columns=list(columns))
    for col in ("rating", "atom_id", "mass"):
        if col in df:
            df[col] = df[col].astype("int64")
    return df


def _csv_text(columns, rows, *, delimiter=",", lineterminator="\r\n") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator=lineterminator)
    w.writerow(columns)
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    return buf.getvalue()


def _put(path: Path, data: bytes, gz: bool) -> Path:
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        path.write_bytes(data)
    return path


def python_csv(table, path: Path, gz: bool) -> Path:
    columns, rows = TABLES[table]
    return _put(path.with_suffix(".csv"), _csv_text(columns, rows).encode(), gz)


def excel_csv(table, path: Path, gz: bool, delimiter: str = ",") -> Path:
    columns, rows = TABLES[table]
    return _put(path.with_suffix(".csv"), b"\xef\xbb\xbf" + _csv_text(columns, rows, delimiter=delimiter).encode(), gz)


def excel_semicolon(table, path: Path, gz: bool) -> Path:
    return excel_csv(table, path, gz, delimiter=";")


def pandas_csv(table, path: Path, gz: bool) -> Path:
    target = path.with_suffix(".csv.gz" if gz else ".csv")
    _frame(table).to_csv(target, compression="gzip" if gz else None)
    return target


def r_number(x: float) -> str:
    """A double as R's write.csv writes it: up to 15 significant digits, the fewest that give
    the same 15-digit value, in fixed notation unless scientific is shorter (scipen = 0)."""
    if x == 0:
        return "0"
    target = float(f"{x:.14e}")
    digits = next(d for d in range(1, 16) if float(f"{x:.{d - 1}e}") == target)
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    exp = int(exponent)
    sci = f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    decimals = max(digits - 1 - exp, 0)
    fixed = f"{x:.{decimals}f}"
    return fixed if len(fixed) <= len(sci) else sci


def r_csv_text(columns, rows, *, eol="\n") -> str:
    """R's `write.csv(df, file)` of a data.frame whose text columns are character vectors and
    whose numbers are doubles: header `"","a","b"`, row names "1".."n" quoted, strings quoted
    with `"` doubled, numbers unquoted, NA unquoted for a missing value."""
    def field(v):
        if v is None:
            return "NA"
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return r_number(float(v))
        return '"' + str(v).replace('"', '""') + '"'

    lines = ['"",' + ",".join(f'"{c}"' for c in columns)]
    for i, r in enumerate(rows, start=1):
        lines.append(f'"{i}",' + ",".join(field(v) for v in r))
    return eol.join(lines) + eol


def r_csv(table, path: Path, gz: bool, eol: str = "\n") -> Path:
    columns, rows = TABLES[table]
    return _put(path.with_suffix(".csv"), r_csv_text(columns, rows, eol=eol).encode(), gz)


def r_csv_windows(table, path: Path, gz: bool) -> Path:
    return r_csv(table, path, gz, eol="\r\n")


def _duckdb_table(con, table: str) -> None:
    columns, rows = TABLES[table]
    con.register("src", pa.Table.from_pylist(_rows_as_dicts(columns, rows), schema=_arrow_schema(table)))
    con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM src")
    con.unregister("src")


def _duckdb_copy(table, path: Path, gz: bool, suffix: str, options: str) -> Path:
    target = path.with_suffix(suffix + (".gz" if gz and suffix != ".parquet" else ""))
    con = duckdb.connect()
    try:
        _duckdb_table(con, table)
        con.execute(f"COPY t TO '{target}' ({options}{', COMPRESSION gzip' if gz else ''})")
    finally:
        con.close()
    return target


def duckdb_csv(table, path, gz):
    return _duckdb_copy(table, path, gz, ".csv", "HEADER, DELIMITER ','")


def duckdb_parquet(table, path, gz):
    return _duckdb_copy(table, path, gz, ".parquet", "FORMAT parquet")


def duckdb_json(table, path, gz):
    return _duckdb_copy(table, path, gz, ".jsonl", "FORMAT json")


def pandas_jsonl(table, path: Path, gz: bool) -> Path:
    target = path.with_suffix(".jsonl.gz" if gz else ".jsonl")
    _frame(table).to_json(target, orient="records", lines=True, compression="gzip" if gz else None)
    return target


def pandas_json_array(table, path: Path, gz: bool) -> Path:
    target = path.with_suffix(".json.gz" if gz else ".json")
    _frame(table).to_json(target, orient="records", compression="gzip" if gz else None)
    return target


def _arrow_schema(table: str) -> pa.Schema:
    columns, _ = TABLES[table]
    ints = {"rating", "atom_id", "mass"}
    floats = {"weight"}
    return pa.schema([(c, pa.int64() if c in ints else pa.float64() if c in floats else pa.string()) for c in columns])


def pyarrow_parquet(table, path: Path, gz: bool) -> Path:
    columns, rows = TABLES[table]
    target = path.with_suffix(".parquet")
    pq.write_table(pa.Table.from_pylist(_rows_as_dicts(columns, rows), schema=_arrow_schema(table)), target,
                   compression="gzip" if gz else "snappy")
    return target


def pandas_parquet(table, path: Path, gz: bool) -> Path:
    df = _frame(table)
    df = df.iloc[[*range(1, len(df)), 0]]      # a reordered frame: its (non-range) index is written
    for col in ("product", "label"):
        if col in df:
            df[col] = df[col].astype("category")   # a dictionary-typed column in the file
    target = path.with_suffix(".parquet")
    df.to_parquet(target, compression="gzip" if gz else "snappy")
    return target


FAST_WRITERS: dict[str, tuple[Callable, tuple[str, ...]]] = {
    "python_csv": (python_csv, ()),
    "excel_csv": (excel_csv, ()),
    "excel_semicolon": (excel_semicolon, ("--delimiter", ";")),
    "pandas_csv": (pandas_csv, ()),
    "r_csv": (r_csv, ()),
    "r_csv_windows": (r_csv_windows, ()),
    "duckdb_csv": (duckdb_csv, ()),
    "duckdb_parquet": (duckdb_parquet, ()),
    "duckdb_json": (duckdb_json, ()),
    "pandas_jsonl": (pandas_jsonl, ()),
    "pandas_json_array": (pandas_json_array, ()),
    "pyarrow_parquet": (pyarrow_parquet, ()),
    "pandas_parquet": (pandas_parquet, ()),
}
PANDAS_WRITERS = {"pandas_csv", "pandas_jsonl", "pandas_json_array", "pandas_parquet"}


def write_all(root: Path, writers: dict[str, tuple[Callable, tuple[str, ...]]]) -> dict[str, Written]:
    """Every table by every writer, plain and gzip: {"WRITER" | "WRITER.gz": Written}."""
    out = {}
    for name, (fn, flags) in writers.items():
        for gz in (False, True):
            key = name + (".gz" if gz else "")
            folder = root / key
            folder.mkdir(parents=True, exist_ok=True)
            out[key] = Written(key, {t: fn(t, folder / t, gz) for t in TABLES}, flags)
    return out


# -------------------------------------------------------------------------- slow writers

def postgres_csv(dsn: str, root: Path) -> dict[str, Written]:
    """PostgreSQL's own CSV: `COPY (SELECT ...) TO STDOUT WITH (FORMAT csv, HEADER)` of tables
    made on a real server (text, bigint and double precision columns; NULL stays NULL)."""
    import psycopg

    out = {}
    with psycopg.connect(dsn, autocommit=True) as pg:
        for table, (columns, rows) in TABLES.items():
            types = {"rating": "bigint", "atom_id": "bigint", "mass": "bigint", "weight": "double precision"}
            pg.execute(f"DROP TABLE IF EXISTS corpus_{table}")
            pg.execute(f"CREATE TABLE corpus_{table} ("
                       + ", ".join(f"{c} {types.get(c, 'text')}" for c in columns) + ")")
            with pg.cursor().copy(f"COPY corpus_{table} ({', '.join(columns)}) FROM STDIN") as cp:
                for r in rows:
                    cp.write_row(r)
        for gz in (False, True):
            key = "postgres_csv" + (".gz" if gz else "")
            folder = root / key
            folder.mkdir(parents=True, exist_ok=True)
            files = {}
            for table in TABLES:
                buf = bytearray()
                with pg.cursor().copy(f"COPY (SELECT * FROM corpus_{table}) TO STDOUT WITH (FORMAT csv, HEADER)") as cp:
                    for chunk in cp:
                        buf += chunk
                files[table] = _put(folder / f"{table}.csv", bytes(buf), gz)
            out[key] = Written(key, files)
    return out


SPARK_VARIANTS = (("parquet", False), ("parquet", True), ("csv", True), ("json", False))
"""Spark's writes are slow (a job per file): Parquet plain and with the gzip codec, CSV
gzipped (its plain form is the same reader's), JSON Lines plain."""


def spark_files(session, root: Path) -> dict[str, Written]:
    """Spark's DataFrameWriter: folders of part files (Parquet partitioned by a column where the
    table has a natural one, CSV with a header in each part, JSON Lines)."""
    out = {}
    partition = {"records": "rating", "units": "split"}
    for fmt, gz in SPARK_VARIANTS:
        key = f"spark_{fmt}" + (".gz" if gz else "")
        folder = root / key
        folder.mkdir(parents=True, exist_ok=True)
        files = {}
        for table, (_columns, rows) in TABLES.items():
            parts = session.sparkContext.parallelize([list(r) for r in rows], 2)   # two part files
            df = session.createDataFrame(parts, schema=_spark_schema(table))
            writer = df.write.mode("overwrite")
            if gz:
                writer = writer.option("compression", "gzip")
            target = folder / table
            if fmt == "parquet":
                if table in partition:
                    writer = writer.partitionBy(partition[table])
                writer.parquet(str(target))
            elif fmt == "csv":   # (Spark trims values by default when it writes CSV: the writer would
                # change the data, so the test keeps them whole; quotes doubled as RFC 4180 has them)
                writer.option("header", True).option("escape", '"').option("ignoreLeadingWhiteSpace", False) \
                    .option("ignoreTrailingWhiteSpace", False).csv(str(target))
            else:
                writer.json(str(target))
            files[table] = target
        out[key] = Written(key, files)
    return out


def _spark_schema(table: str):
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    columns, _ = TABLES[table]
    kinds = {"rating": LongType(), "atom_id": LongType(), "mass": LongType(), "weight": DoubleType()}
    return StructType([StructField(c, kinds.get(c, StringType()), True) for c in columns])


# ---------------------------------------------------------------------------- expectations

def expected_records() -> list[tuple]:
    """The records table every writer's file must load to: (record_id, user_id, text, split,
    product, issue, sub_issue, rating as text)."""
    return sorted((r[0], r[1], r[2], "target", r[3], r[4], r[5], str(r[6])) for r in RECORDS)


def expected_atoms() -> list[tuple]:
    return sorted((a, label, desc or "") for a, label, desc in TAXONOMY)


def expected_counted_rows() -> list[tuple]:
    """The assignment rows that count (a known atom and record, a fixed-point weight > 0)."""
    atoms = {a for a, _, _ in TAXONOMY}
    records = {r[0] for r in RECORDS}
    rows = []
    for rid, atom, w in ASSIGNMENTS:
        fixed = math.floor(min(w, 1.0) * SCALE) if w > 0 and math.isfinite(w) else 0
        if atom in atoms and rid in records and fixed > 0:
            rows.append((rid, atom, fixed))
    return sorted(rows)


def expected_sketch() -> list[int]:
    return [m for _, m in sorted(SKETCH)]


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst)


def json_dump(value) -> str:
    return json.dumps(value)
