"""Shared helpers for the split / atoms-build / assign / presets tests: tiny stores
written straight into DuckDB (no files), and the path of the real corpora."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from dpspin_sql import store
from tests.helpers.data import data_root
from tests.helpers.prereq import missing_prerequisite

SHARED_DATA = data_root()   # $DPSPIN_DATA, else ../shared/data (tests/helpers/data.py)


def shared(*parts: str) -> Path:
    """A path under ../shared/data, or a skip that says why (a failure in CI)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        missing_prerequisite(f"real corpus not available: {path} is absent (../shared/data sits beside the checkout)")
    return path


def make_store(tmp_path: Path, rows: list[dict], name: str = "s.duckdb"):
    """A store holding `rows` (record_id, user_id, text, split, metadata dict)."""
    con = store.connect(tmp_path / name, create=True)
    add_records(con, rows)
    return con


def add_records(con, rows: list[dict]) -> None:
    table = pa.table({
        "record_id": [str(r["record_id"]) for r in rows],
        "user_id": [r.get("user_id") for r in rows],
        "text": [r.get("text", "") for r in rows],
        "split": [r.get("split", "target") for r in rows],
        "metadata": [json.dumps(r.get("metadata") or {}) for r in rows],
    })
    con.register("tmp_rows", table)
    try:
        con.execute("INSERT INTO records (record_id, user_id, text, split, metadata) "
                    "SELECT record_id, user_id, text, split, CAST(metadata AS JSON) FROM tmp_rows")
    finally:
        con.unregister("tmp_rows")


def splits(con) -> dict[str, str]:
    return dict(con.execute("SELECT record_id, split FROM records").fetchall())


def cfpb_like(n_per: int = 12, split: str = "aux", start: int = 0, canary: str | None = None) -> list[dict]:
    """Records with CFPB-style metadata and text that mentions the combination."""
    combos = [("Debt collection", "Attempts to collect debt not owed", "Debt is not yours",
               "collector called about a debt that is not mine"),
              ("Credit reporting", "Incorrect information on your report", "Information belongs to someone else",
               "my credit report lists an account that belongs to someone else"),
              ("Mortgage", "Trouble during payment process", None,
               "the mortgage servicer lost my payment and charged escrow fees"),
              ("Credit card", "Fees or interest", None, "the card charged a late fee and interest")]
    rows, i = [], start
    for k in range(n_per):
        for p, iss, sub, text in combos[: 4 - (k % 2)]:
            body = f"{text} case {k}" + (f" {canary}" if canary else "")
            rows.append({"record_id": f"r{i:05d}", "text": body, "split": split,
                         "metadata": {"product": p, "issue": iss, "sub_issue": sub}})
            i += 1
    return rows


def assert_no_canary_in_scorer(scorer, canary: str) -> None:
    """Everything a fitted scorer keeps (its `state()`: the metadata and arrays it saves and
    scores with) is free of `canary`. Read from the state every scorer kind has, never from
    an attribute some kinds happen to have (a missing attribute must not make this vacuous)."""
    import json as _json

    import numpy as _np

    meta, arrays = scorer.state()
    assert isinstance(meta, dict) and isinstance(arrays, dict)
    assert canary not in _json.dumps(meta, ensure_ascii=False).lower()
    for name, value in arrays.items():
        value = _np.asarray(value)
        if value.dtype.kind in "USO":
            assert not any(canary in str(v).lower() for v in value.ravel()), name
        else:
            assert canary.encode() not in value.tobytes(), name
