"""The two-phase warehouse release: the sketch runs where the data lives, the release here.

1. `dpspin sql --dialect D --emit-sketch -f QUERY.sql` prints the audited statement's
   enforced sketch for BigQuery, Snowflake, Trino, PostgreSQL, Spark or DuckDB: one
   (atom_id, mass) row per atom, zeros included.
2. The curator runs it in the warehouse and exports the m rows (CSV with a header, a JSON
   array of objects, or JSON Lines — what `bq`, `snowsql`, `trino`, `psql --csv` and
   Spark write).
3. `dpspin release --from-sketch RESULT --statement QUERY.sql --dialect D --db STORE
   --out PLAN.json` re-audits the statement (the request comes from it, never from the
   file), checks the vector against public facts only, and releases it through
   `release.release` with `engines.given.GivenSketch`; the ledger row names the engine
   `warehouse:D` and carries the statement's hash and the hash of the query that was to
   run — never anything computed from the data.

The checks (`check_vector`), all before anything is charged (bad input, exit 2):
exactly the columns atom_id and mass; exactly m rows whose atom ids are the store's
dictionary, each once; every mass an integer (a JSON number without a fraction or
exponent, or a string of digits: BigQuery writes INT64/BIGNUMERIC as strings),
non-negative and within int64 (the fixed-point range OpenDP's i64 vector takes); each
coordinate at most the total; and, when the curator passes the public number of
protected units (`max_units`), a total of at most max_units × bound_fix, the most the
enforced bounds allow. What cannot be checked from public facts — that the warehouse ran
the emitted query on the right tables — is the curator's to vouch for, as for any engine.

A statement over the warehouse's own tables declares them first (CREATE TABLE statements
in the statement file, `dpspin_sql.sql.catalog`): both phases audit it against the same
declared column types, and the emitted query reads the tables under their own names next
to the warehouse's `atoms` (and, at user level, the store's `records`). With the
warehouse's catalog file (`--catalog`, `dpspin_sql.sql.warehouse_catalog`) the declarations
are checked against it, or made from it, and the ledger row adds its `catalog_sha256`.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from dpspin_sql.errors import BadInput

WAREHOUSES = ("bigquery", "snowflake", "trino", "postgres", "spark", "duckdb")
FORMATS = ("csv", "json", "jsonl", "parquet")
INT64_MAX = (1 << 63) - 1
MAX_RESULT_BYTES = 64 << 20     # m rows of two integers; anything this large is not a sketch
_SIGNED = re.compile(r"[+-]?[0-9]+")


class _Float:
    """A JSON number with a fraction or exponent, kept as text (never rounded)."""

    def __init__(self, text: str):
        self.text = text


def statement_hash(statement: str) -> str:
    """sha256 of the statement with its whitespace normalised (as the ledger records it)."""
    return "sha256:" + hashlib.sha256(" ".join(statement.split()).encode()).hexdigest()


# -- reading a returned vector -------------------------------------------------------

def detect_format(path: Path, fmt: str | None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise BadInput(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        return fmt
    name = path.name.lower()
    for suffix in (".gz", ".gzip", ".zst"):
        name = name.removesuffix(suffix)
    for ext, found in ((".csv", "csv"), (".tsv", "csv"), (".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "json"),
                       (".parquet", "parquet"), (".pq", "parquet")):
        if name.endswith(ext):
            return found
    if path.is_dir():   # a folder of parts (Spark's, BigQuery's exports): the format of its files
        from dpspin_sql import tabular

        found = tabular.table_file(path).format
        return "jsonl" if found == "jsonl" else found
    raise BadInput(f"cannot tell the format of {path}: name it .csv, .json, .jsonl or .parquet (or pass --format)")


def read_result(path: str | Path, fmt: str | None = None, *, delimiter: str | None = None) -> list[tuple[Any, Any]]:
    """The (atom_id, mass) rows of a warehouse's result file, values as written (text, JSON
    values, or Parquet integers), for `check_vector`. Unreadable or mis-shaped files are bad
    input. CSV and Parquet (a file or a folder of parts) are read by `dpspin_sql.tabular` as
    every command reads files; JSON is parsed here, exactly (a number with a fraction or an
    exponent stays text, never rounded), with the same rule for ambiguous keys."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"--from-sketch: file not found: {path}")
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size
    if size > MAX_RESULT_BYTES:
        raise BadInput(f"--from-sketch {path} is {size} bytes; a sketch is m rows of two integers")
    fmt = detect_format(path, fmt)
    if fmt in ("csv", "parquet"):
        rows = _table_rows(path, fmt, delimiter)
    else:
        if delimiter is not None:
            raise BadInput(f"--delimiter is for CSV files; {path} is {fmt}")
        rows = _json_rows(path, fmt)
    if not rows:
        raise BadInput(f"--from-sketch {path} has no rows; expected one (atom_id, mass) row per atom")
    return rows


def _table_rows(path: Path, fmt: str, delimiter: str | None) -> list[tuple[Any, Any]]:
    import duckdb

    from dpspin_sql import tabular

    tf = tabular.table_file(path, fmt, delimiter=delimiter, what="--from-sketch file", formats=(fmt,))
    con = duckdb.connect()
    try:
        got = tabular.read(con, tf)
        columns = list(got.columns)
        by_name = {c.lower(): c for c in columns}
        _pair(dict.fromkeys(by_name), columns, "the header", path)   # exactly atom_id and mass
        try:
            fetched = got.relation.select(duckdb.ColumnExpression(by_name["atom_id"]),
                                          duckdb.ColumnExpression(by_name["mass"])).fetchall()
        except duckdb.Error as exc:
            raise BadInput(f"--from-sketch {path}: {tabular.read_error(path, fmt, exc, tf.delimiter)}") from None
    finally:
        con.close()
    return [(_value(a), _value(m)) for a, m in fetched]


def _value(value: Any) -> Any:
    """A Parquet value as `_integer` reads it: integers as they are, a decimal without a
    fraction as its integer, a float as text (refused: the sketch is exact fixed point)."""
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() and value.is_finite() else _Float(str(value))
    if isinstance(value, float):
        return _Float(repr(value))
    return value


def _json_rows(path: Path, fmt: str) -> list[tuple[Any, Any]]:
    if path.is_dir():   # a folder of JSON Lines parts (Spark): their rows, in file name order
        from dpspin_sql import tabular

        parts = tabular.table_file(path, "jsonl", what="--from-sketch file").files
        return [row for part in parts for row in _json_rows(Path(part), "jsonl")]
    try:
        text = _decompressed(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"--from-sketch {path} is not UTF-8 text") from None
    try:
        if fmt == "json":
            body = _json(text, str(path))
            if isinstance(body, dict) and set(body) == {"rows"}:
                body = body["rows"]
            if not isinstance(body, list):
                raise BadInput(f"--from-sketch {path}: a JSON result is an array of {{atom_id, mass}} objects")
            objects = body
        else:
            objects = [_json(line, str(path)) for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError):
        raise BadInput(f"--from-sketch {path} is not valid {fmt.upper()}") from None
    rows = []
    for i, obj in enumerate(objects, start=1):
        if not isinstance(obj, dict):
            raise BadInput(f"--from-sketch {path}: row {i} is not an object with atom_id and mass")
        rows.append(_pair({str(k).lower(): v for k, v in obj.items()}, list(obj), f"row {i}", path))
    return rows


def _decompressed(path: Path) -> bytes:
    """The file's bytes, gunzipped when it is gzip (at most MAX_RESULT_BYTES either way)."""
    import gzip

    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic != b"\x1f\x8b":
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as fh:
            data = fh.read(MAX_RESULT_BYTES + 1)
    except (OSError, EOFError):
        raise BadInput(f"--from-sketch {path} is not a readable gzip file") from None
    if len(data) > MAX_RESULT_BYTES:
        raise BadInput(f"--from-sketch {path} is over {MAX_RESULT_BYTES} bytes unpacked; a sketch is m rows of two "
                       "integers")
    return data


def _json(text: str, where: str = "the result"):
    from dpspin_sql.tabular import json_pairs

    def constant(name: str):
        raise ValueError(name)   # NaN, Infinity: not JSON, and not a mass

    return json.loads(text, parse_float=_Float, parse_constant=constant, object_pairs_hook=json_pairs(where))


def _pair(row: dict, columns: list, where: str, path: Path) -> tuple[Any, Any]:
    if sorted(row) != ["atom_id", "mass"]:
        raise BadInput(f"--from-sketch {path}: {where} has the columns {', '.join(map(str, columns)) or 'none'}; "
                       "expected exactly atom_id and mass (as the emitted sketch query names them)")
    return row["atom_id"], row["mass"]


# -- checking it ----------------------------------------------------------------------

def _integer(value: Any, what: str) -> int:
    """An exact integer from a JSON int or a string of (signed) digits; anything else is refused."""
    if isinstance(value, bool) or value is None:
        raise BadInput(f"{what} is {json.dumps(value)}, not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, _Float):
        raise BadInput(f"{what} is {value.text[:30]}, not an integer (the sketch is exact fixed point)")
    if isinstance(value, str) and _SIGNED.fullmatch(value.strip()):
        if len(value.strip()) > 40:
            raise BadInput(f"{what} has {len(value.strip())} digits; it is outside the int64 fixed-point range")
        return int(value.strip())
    shown = value.strip()[:30] if isinstance(value, str) else type(value).__name__
    raise BadInput(f"{what} is {shown!r}, not an integer (the sketch is exact fixed point)")


def check_vector(rows: list[tuple[Any, Any]], atom_ids: list[int], bound_fix: int, *,
                 max_units: int | None = None) -> np.ndarray:
    """The m-vector in the dictionary's order, after the checks of the module docstring."""
    m = len(atom_ids)
    if len(rows) != m:
        raise BadInput(f"the returned sketch has {len(rows)} rows; the store's dictionary has m = {m} atoms "
                       "(the emitted query returns one row per atom)")
    position = {int(a): j for j, a in enumerate(atom_ids)}
    slots: list[int | None] = [None] * m
    for atom_raw, mass_raw in rows:
        atom = _integer(atom_raw, "an atom_id")
        if atom not in position:
            raise BadInput(f"atom_id {atom} of the returned sketch is not in the store's dictionary")
        j = position[atom]
        if slots[j] is not None:
            raise BadInput(f"atom_id {atom} appears more than once in the returned sketch")
        value = _integer(mass_raw, f"the mass of atom {atom}")
        if value < 0:
            raise BadInput(f"the mass of atom {atom} is negative ({value}); a sketch is a sum of non-negative "
                           "contributions")
        if value > INT64_MAX:
            raise BadInput(f"the mass of atom {atom} is above the int64 fixed-point range")
        slots[j] = value
    mass = [v for v in slots if v is not None]
    assert len(mass) == m  # m rows, each a distinct atom of the dictionary: every slot is filled
    total = sum(mass)
    for atom, value in zip(atom_ids, mass):
        if value > total:   # holds for any non-negative vector; kept as the stated invariant
            raise BadInput(f"the mass of atom {atom} exceeds the vector's total")
    if total > INT64_MAX:
        raise BadInput("the returned sketch's total is above the int64 fixed-point range")
    if max_units is not None and total > max_units * bound_fix:
        raise BadInput(f"the returned sketch's total {total} is more than {max_units} protected unit(s) can "
                       f"contribute under the statement's bounds ({max_units} × {bound_fix} fixed-point units)")
    return np.array(mass, dtype=np.int64)


# -- the release -----------------------------------------------------------------------

def release_from_sketch(con, statement: str, result: str | Path, dialect: str, *, out: str | Path | None = None,
                        fmt: str | None = None, max_units: int | None = None, dataset: str | None = None,
                        outputs=None, delimiter: str | None = None, catalog: str | Path | None = None):
    """Release a plan from a warehouse-computed sketch of `statement` (see the module docstring).

    Raises AuditRefusal for an unsafe statement (exit 1), BadInput for a result that does not
    check (exit 2), BudgetExceeded when it does not fit; none of them charges anything.
    `catalog` is the warehouse's catalog file (`sql.warehouse_catalog.read_catalog`): the
    declarations are checked against it, or made from it, and its sha256 is recorded.
    """
    from dpspin_sql import ledger
    from dpspin_sql.atoms import current_atoms
    from dpspin_sql.embed import resolve
    from dpspin_sql.release import release
    from dpspin_sql.request import RequestError
    from dpspin_sql.sketch import Sketch, check_user_level
    from dpspin_sql.sketch.engines.given import GivenSketch
    from dpspin_sql.sql.catalog import audit_for_warehouse
    from dpspin_sql.sql.options import refuse_field
    from dpspin_sql.sql.run import emit_sketch

    if dialect not in WAREHOUSES:
        raise BadInput(f"--dialect must name the warehouse that ran the emitted query: one of "
                       f"{', '.join(WAREHOUSES)}, not {dialect!r}")
    if max_units is not None and (isinstance(max_units, bool) or not isinstance(max_units, int) or max_units < 1):
        raise BadInput(f"--max-units must be a positive integer, not {max_units!r}")
    checked = None
    if catalog is not None:
        from dpspin_sql.sql.warehouse_catalog import read_catalog

        checked = read_catalog(catalog, dialect)
    audited, _ = audit_for_warehouse(statement, dialect, checked)   # declared tables: audited against them
    request = audited.request
    with resolve(con) as con:
        atoms = current_atoms(con)
        if not atoms:
            raise BadInput("the store has no atoms: load the taxonomy the warehouse's atoms table holds "
                           "(dpspin atoms load)")
        try:
            request.check_m(len(atoms))
        except RequestError as exc:
            refuse_field(exc, audited.options, audited.statement.args["hint"])
        atom_ids = [a.atom_id for a in atoms]
        mass = check_vector(read_result(result, fmt, delimiter=delimiter), atom_ids, request.bound_fix, max_units=max_units)
        if request.unit == "user":   # the store's own aux side shaped the dictionary and the scorer
            check_user_level(con, 0)
        bounds = request.bounds
        sketch = Sketch(atom_ids=np.array(atom_ids, dtype=np.int64), mass=mass, unit=bounds.unit, K=bounds.K,
                        B=bounds.B, n_records=0, n_users=0)
        details: dict[str, Any] = {"statement_sha256": statement_hash(statement),
                   "sketch_sql_sha256": "sha256:" + hashlib.sha256(emit_sketch(statement, dialect, checked).encode())
                                                 .hexdigest()}
        if checked is not None:   # what the audit's column types were checked against
            details["catalog_sha256"] = checked.sha256
        if max_units is not None:
            details["max_units"] = max_units
        engine = GivenSketch(sketch, name=f"warehouse:{dialect}", details=details)
        return release(con, request, engine, out=out, outputs=outputs, dataset=dataset or ledger.DEFAULT_DATASET,
                       extra_params={"sql": " ".join(statement.split())})


# -- PostgreSQL: the store's tables on the server ------------------------------------------

def push_postgres(con, dsn: str | None = None, *, pg=None) -> dict[str, int]:
    """Copy the store's records, assignments and atoms to a PostgreSQL server (replacing
    them there, in one transaction), so that the emitted query runs over the server's own
    tables. Returns the row counts."""
    from dpspin_sql.embed import resolve
    from dpspin_sql.sketch.engines import postgres

    own = pg is None
    if pg is None:
        if not dsn:
            raise BadInput("--pg-dsn (or DPSPIN_PG_DSN) is required")
        pg = postgres.connect(dsn)
    try:
        with resolve(con) as con:
            return postgres.copy_store(con, pg)
    finally:
        if own:
            pg.close()
