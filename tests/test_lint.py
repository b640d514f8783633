"""The linter and the type checker are part of the suite, so `.ci/run` keeps them clean.

Both read their settings from pyproject.toml ([tool.ruff], [tool.mypy]); the versions are
pinned in the `test` extra, so a new release cannot turn CI red on its own.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    res = _run("ruff", "check", "--no-cache", ".")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


def test_mypy_is_clean():
    res = _run("mypy", "--no-incremental")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
