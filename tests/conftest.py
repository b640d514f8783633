"""Shared pytest configuration: where the real corpora live, and a skip when they don't."""
from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout; tests that need it skip with the reason."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real corpora not available: {SHARED_DATA} is absent (it sits beside the checkout in CI)")
    return SHARED_DATA


def open_copy(template: Path, tmp_path: Path):
    """A connection to a fresh copy of a module's template store (tests mutate it freely);
    use as `yield from open_copy(template, tmp_path)` in a fixture."""
    import shutil

    from dpspin_sql import store

    path = tmp_path / "store.duckdb"
    shutil.copy(template, path)
    con = store.connect(path)
    yield con
    con.close()
