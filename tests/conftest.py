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


# The edit loop is `pytest -m "not slow"` (under a minute); `.ci/run` runs everything. A test
# is slow when it is marked so, when it starts a real service (Spark, PostgreSQL, a model
# server, a browser), reads the real corpora, or lives in a module whose point is scale
# (statistical audits, fuzzing, hypothesis property runs, whole pipelines).
SLOW_MARKERS = ("spark", "postgres", "llm")
SLOW_FIXTURES = {"shared_data", "pg_dsn", "spark", "local_llm", "browser"}
SLOW_MODULES = {
    "test_dp_audit", "test_interval_coverage", "test_sql_fuzz", "test_sketch_bounds", "test_readme",
    "test_card_browser", "test_experiment_runner", "test_experiment_cli_probe", "test_experiment_baselines",
    "test_experiment_judge", "test_embedding_scorer", "test_warehouse", "test_presets",
}


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        if (module in SLOW_MODULES or any(item.get_closest_marker(m) for m in SLOW_MARKERS)
                or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(slow)
