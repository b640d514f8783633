"""Shared pytest configuration: where the real corpora live, and a skip when they don't."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.data import data_root

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = data_root()   # $DPSPIN_DATA, else ../shared/data beside the checkout


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """$DPSPIN_DATA, else ../shared/data beside the checkout; tests that need it skip with the reason."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real corpora not available: {SHARED_DATA} is absent (set DPSPIN_DATA, or put them at "
                    "../shared/data beside the checkout: README, \"Datasets\")")
    return SHARED_DATA


# The edit loop is `pytest -m "not slow"` (under a minute on 2 cores); `.ci/run` runs
# everything. A test is slow when it is marked so, when it starts a real service (Spark,
# PostgreSQL, a model server, a browser), reads the real corpora, lives in a module whose
# point is scale (statistical audits, fuzzing, hypothesis property runs, whole pipelines),
# or took at least SLOW_SECONDS the last time durations were stored
# (`pytest -m "not slow" --store-durations` rewrites tests/durations.json). A new test is
# fast until measured, so the loop only grows until the next refresh.
SLOW_MARKERS = ("spark", "postgres", "llm")
SLOW_FIXTURES = {"shared_data", "pg_dsn", "spark", "local_llm", "browser"}
SLOW_MODULES = {
    "test_dp_audit", "test_interval_coverage", "test_sql_fuzz", "test_sketch_bounds", "test_readme",
    "test_card_browser", "test_experiment_runner", "test_experiment_cli_probe", "test_experiment_baselines",
    "test_experiment_judge", "test_embedding_scorer", "test_warehouse", "test_presets",
}
SLOW_SECONDS = 0.12
DURATIONS = Path(__file__).with_name("durations.json")
_STORED_MIN = 0.1   # shorter tests are not worth a line in the file


def _durations() -> dict[str, float]:
    try:
        return json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true",
                     help="rewrite tests/durations.json from this run (setup + call + teardown per test)")


def pytest_collection_modifyitems(config, items):
    slow = pytest.mark.slow
    measured = _durations()
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        if (module in SLOW_MODULES or any(item.get_closest_marker(m) for m in SLOW_MARKERS)
                or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
                or measured.get(item.nodeid, 0.0) >= SLOW_SECONDS):
            item.add_marker(slow)


_RUN: dict[str, float] = {}


def pytest_runtest_logreport(report):
    _RUN[report.nodeid] = _RUN.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    if not session.config.getoption("--store-durations") or not _RUN:
        return
    stored = _durations()
    stored.update({k: round(v, 2) for k, v in _RUN.items()})
    kept = {k: v for k, v in sorted(stored.items()) if v >= _STORED_MIN}
    DURATIONS.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
