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
