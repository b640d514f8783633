"""Missing prerequisites: a skip that says why on a developer's machine, a failure in CI.

`.ci/run` sets DPSPIN_CI=1. There every prerequisite is installed (the extras, Java, the
PostgreSQL binaries, the model server, the browser) and ../shared/data sits beside the
checkout, so a test that would skip for want of one fails instead: a green CI run that
skipped the real-data tests would prove nothing about them (tests/conftest.py also turns
any other skip into a failure there).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.data import data_root

IN_CI = os.environ.get("DPSPIN_CI") == "1"
SHARED_DATA = data_root()   # $DPSPIN_DATA, else ../shared/data beside the checkout (README, "Datasets")


# A condition of the machine that is no prerequisite of the project (R, user namespaces,
# not running as root): its skips stand in CI too. The CI hook in tests/conftest.py lets a
# skip through only when its reason starts with this prefix.
ENVIRONMENT = "environment: "


def environment_skip(reason: str):
    """Skip, in CI too, for a machine condition the project does not require."""
    pytest.skip(ENVIRONMENT + reason)


def environment_skipif(condition: bool, reason: str):
    """`pytest.mark.skipif` for a machine condition the project does not require (stands in CI)."""
    return pytest.mark.skipif(condition, reason=ENVIRONMENT + reason)


def missing_prerequisite(reason: str):
    """Skip the test (fail it in CI), saying what is missing."""
    if IN_CI:
        pytest.fail(f"CI has every prerequisite, but: {reason}", pytrace=False)
    pytest.skip(reason)


def shared_path(path: str | Path) -> Path:
    """A path under ../shared/data, or a skip that says why (a failure in CI)."""
    path = Path(path)
    if not path.exists():
        missing_prerequisite(f"real corpus not available: {path} is absent (../shared/data sits beside the checkout)")
    return path


def importorskip(module: str, reason: str):
    """pytest.importorskip for an optional extra: a failure in CI, where every extra is installed."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        missing_prerequisite(reason)
