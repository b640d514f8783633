"""Shared pytest configuration: where the real corpora live, which tests form the fast loop,
and what CI refuses to skip."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers.prereq import (  # SHARED_DATA: $DPSPIN_DATA, else ../shared/data
    ENVIRONMENT,
    IN_CI,
    SHARED_DATA,
    missing_prerequisite,
)

REPO = Path(__file__).resolve().parents[1]


def pytest_sessionstart(session):
    if IN_CI and not SHARED_DATA.is_dir():
        raise pytest.UsageError(f"CI runs the real-data tests: {SHARED_DATA} is absent (it sits beside the checkout)")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """$DPSPIN_DATA, else ../shared/data beside the checkout; tests that need it skip with the reason (fail in CI)."""
    if not SHARED_DATA.is_dir():
        missing_prerequisite(f"real corpora not available: {SHARED_DATA} is absent (set DPSPIN_DATA, or put them at "
                             "../shared/data beside the checkout: README, \"Datasets\")")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test process: a JVM start costs ~15 s, so the
    modules that need Spark share it (a test never stops it; the session's end does)."""
    import os
    import shutil

    pytest.importorskip("pyspark", reason="pyspark is not installed (install the spark extra)")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.skip("Java 17 is not installed (java on PATH or JAVA_HOME); Spark needs it")
    from dpspin_sql.sketch.engines.spark import get_session

    session = get_session("local[2]")
    yield session
    session.stop()


# ----------------------------------------------------------------------------------- the fast loop
#
# The edit loop is `pytest -m "not slow"`; `.ci/run` runs everything. Which tests are slow is
# decided by rule, in this order:
#
# 1. guard: a test marked `guard` (or in a module whose `pytestmark` has it), or named in
#    GUARDS below, is always in the fast loop, whatever it costs: the tests of a privacy
#    guarantee (the sketch's bounds, the sensitivity table, the over-budget refusal, the
#    noise scales, the audit's refusals, the catalog proofs of the fast paths, a cheap form
#    of the DP audit). Make such a test cheap rather than slow; a guard test may not need a
#    service (an error). A test's own `slow` marker wins over its module's guard marker.
# 2. services: a test that starts a real service (Spark, PostgreSQL, a model server, a
#    browser) or reads ../shared/data is slow.
# 3. marked: a test marked `slow` is slow.
# 4. scale: in a module whose point is scale (statistical audits, fuzzing, property runs,
#    whole pipelines: SCALE_MODULES) every other test is slow.
# 5. budgets: every other test is admitted by its module's budget, MODULE_BUDGET[module]
#    seconds (DEFAULT_BUDGET otherwise) of stored duration (tests/durations.json): a module's
#    tests in order of stored duration, cheapest first (a test not in the file costs 0: it
#    took under 0.02 s, or it is new), while the running total stays within the budget. So
#    every module keeps its cheapest tests in the loop, and a module's share of the loop is
#    bounded whatever number of tests it grows.
#
# `pytest --store-durations` (any selection) rewrites the measured tests in tests/durations.json;
# `pytest -m "not slow" --fast-loop-report` prints what the rule chose, module by module.
# The guard tests of modules that carry no guard marker of their own, by module: "*" for all
# of its tests, else test names (every parametrisation) or full `name[id]`s. (Kept here, not
# as markers in those files, so that the modules' owners can change them without conflicts.)
ALL = "*"
GUARDS: dict[str, tuple[str, ...] | str] = {
    # the sensitivity table; the audit's refusals
    "test_sensitivity": ALL,
    "test_sql_audit": ALL,
    # the calibration at every unit × adjacency (one ε each), the noise scales, admission
    "test_mechanisms": (
        "test_laplace_cost", "test_classical_sigma", "test_classical_refused_for_eps_at_least_one",
        "test_gaussian_zcdp_cost[1.0-1e-05-add_drop-record]", "test_gaussian_zcdp_cost[1.0-1e-05-replace-user]",
        "test_private_topL_cost[1.0-0.5-add_drop-record]", "test_private_topL_cost[1.0-0.5-replace-user]",
        "test_ledger_measurements_rebuild_to_the_same_cost[replace-user-private_topL]",
        "test_zcdp_sigma_between_analytic_and_classical[1e-06-0.5]",
        "test_laplace_noise_scale[user-replace]", "test_gaussian_noise_scale[record-add_drop-zcdp]",
        "test_private_topL_value_noise_scale",
        "test_private_topL_selection_noise_scale_coarse", "test_the_error_budget_adds_up",
        "test_private_topL_admits_L_distinct_ranked[5-replace]", "test_full_sketch_mechanisms_admit_noisy_top_L",
        "test_the_admitted_atoms_are_the_top_L_of_the_noisy_vector", "test_monotonic_selection_under_add_drop_only",
        "test_apply_rejects_a_float_or_misshaped_sketch", "test_a_cached_mechanism_must_match_its_request_and_its_maps",
        "test_the_comparison_margin_is_the_quantile_of_a_difference_of_two_draws[0.99-laplace]",
        "test_the_comparison_margin_is_the_quantile_of_a_difference_of_two_draws[0.99-gaussian]",
    ),
    # the DP audit in a cheap form: two Laplace cells and a broken variant the audit must reject
    "test_dp_audit": (
        "test_audit_does_not_refute_the_mechanism[laplace/user(B=2)/replace]",
        "test_audit_rejects_a_broken_mechanism[laplace/user(B=2)/add_drop BROKEN calibrated record]",
        "test_clopper_pearson_bounds",
    ),
    # the over-budget refusal (library and CLI), exact sums, invalid costs, one budget a store
    "test_ledger": (
        "test_library_release_over_budget_raises_and_writes_nothing", "test_overspend_refused_exit_1_no_plan_existing_plan_untouched",
        "test_fsum_ten_tenths_exactly", "test_fsum_no_rounding_drift", "test_invalid_cost_refused",
        "test_a_store_has_one_budget",
    ),
    "test_boundary": (
        "test_a_consistently_rehashed_cost_edit_is_still_caught_by_the_maps",
        "test_a_rehashed_d_in_below_the_sensitivity_is_caught",
    ),
    # the sketch: fixed hostile cases, the preconditions of a user-level release, the store plan
    "test_sketch_bounds": (
        "test_hostile_rows_by_hand", "test_user_level_needs_user_ids", "test_bad_bounds_refused",
        "test_user_level_refuses_a_split_that_is_not_user_disjoint",
    ),
    "test_sketch_store": (
        "test_the_plan_chunks_only_a_fully_keyed_store", "test_a_dictionary_retyped_away_from_integer_ids_is_never_dense",
        "test_sparse_user_keys_are_not_cut_into_empty_chunks",
    ),
    "test_release_files": (
        "test_one_target_record_stays_one_record_whatever_the_id_types[BIGINT-(['1', '01', '+1', ' 1', '001', '1.0'])"
        "[1 + i % 6]-user]",
    ),
    # DP SQL: refusals charge nothing, a filter never fails the query, the error oracle
    "test_sql_run": (
        "test_sketch_equals_the_core_sketch_exactly[record-3-1.0]", "test_sketch_equals_the_core_sketch_exactly[user-2-0.3]",
        "test_an_assignments_filter_selects_rows_before_the_clip",
        "test_refusals_write_no_plan_and_charge_nothing", "test_data_dependent_patterns_are_refused",
        "test_a_filter_that_would_raise_never_fails_the_query[atom_id * 2147483647 * 2147483647 > 0]",
        "test_a_mechanism_for_another_scale_is_refused",
        "test_user_level_refuses_aux_records_without_a_user",
    ),
    "test_sql_total": (
        "test_the_issue_statement_is_refused_for_a_true_and_a_false_guess", "test_duckdb_facts_the_old_guard_missed",
        "test_try_cast_is_total_for_every_admitted_target", "test_a_misread_json_path_is_refused",
        "test_a_misread_like_pattern_is_refused", "test_a_pattern_that_raises_on_samples_is_refused",
        "test_the_total_form_computes_in_double_and_never_divides_by_zero",
    ),
    "test_sql_own_tables": ("test_own_tables_user_level_counts_each_author_once_and_drops_unknown_atoms",),
    # views: one base record cannot move the sketch beyond its charge; DuckDB binds what the audit read
    "test_sql_views": ("test_a_view_whose_rows_depend_on_other_rows_cannot_move_the_sketch_beyond_its_charge",
                       "test_duckdb_binds_what_the_audit_read_or_the_statement_is_refused"),
    # the public boundary: texts fitted on aux only, splits after a release, the decoder's view
    "test_split": ("test_a_split_never_publishes_records_after_a_release", "test_user_split_is_user_disjoint_and_stable"),
    "test_assign": (
        "test_target_canary_never_reaches_dictionary_or_scorer[keyword]",
        "test_the_canary_check_sees_a_planted_canary", "test_phrase_dictionary_canary",
        "test_top_k_normalise_bounds_any_scores",
    ),
    "test_decode": ("test_canary_in_target_records_never_reaches_the_decoder",),
    # the calibrated assignment rule: mass only above threshold, at most one unit a record
    "test_relevance": ("test_calibrated_rule_gives_mass_only_above_threshold_and_at_most_one",),
    "test_template_intervals": ("test_public_view_carries_the_intervals",),
    "test_interval_coverage": ("test_the_test_is_calibrated_and_has_power",),
}
SERVICE_MARKERS = ("spark", "postgres", "llm")
SERVICE_FIXTURES = {"shared_data", "pg_dsn", "spark", "local_llm", "browser"}
SCALE_MODULES = {
    "test_dp_audit", "test_interval_coverage", "test_sql_fuzz", "test_sketch_bounds", "test_readme",
    "test_card_browser", "test_experiment_runner", "test_experiment_cli_probe", "test_experiment_baselines",
    "test_experiment_judge", "test_embedding_scorer", "test_warehouse", "test_presets",
    "test_verify_heldout",   # whole held-out corpora; their forms are in the fast loop through test_verify_round4
}
DEFAULT_BUDGET = 0.3
MODULE_BUDGET: dict[str, float] = {}
DURATIONS = Path(__file__).with_name("durations.json")
_STORED_MIN = 0.02  # shorter tests are not worth a line in the file (they cost 0 in the budgets)


def _durations() -> dict[str, float]:
    try:
        return json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true",
                     help="rewrite tests/durations.json from this run (setup + call + teardown per test)")
    parser.addoption("--fast-loop-report", action="store_true",
                     help="print, per module, how many tests the fast-loop rule keeps and their stored seconds")


def pytest_configure(config):
    config.addinivalue_line("markers", "guard: a privacy guarantee test: always in the fast loop (tests/conftest.py)")


def _module(item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1] if item.module else ""


def _service(item) -> str | None:
    for m in SERVICE_MARKERS:
        if item.get_closest_marker(m):
            return f"the {m} marker"
    needs = SERVICE_FIXTURES & set(getattr(item, "fixturenames", ()))
    return f"the fixture {sorted(needs)[0]}" if needs else None


def _named_guard(item) -> bool:
    names = GUARDS.get(_module(item), ())
    return names == ALL or getattr(item, "originalname", item.name) in names or item.name in names


def classify(items, measured: dict[str, float]) -> dict[str, str]:
    """nodeid → 'guard' | 'budget' (the fast loop) | 'service' | 'marked' | 'scale' | 'over budget'."""
    kind: dict[str, str] = {}
    rest: dict[str, list] = defaultdict(list)
    for item in items:
        service = _service(item)
        own = {m.name for m in item.own_markers}
        if "slow" in own and ("guard" in own or _named_guard(item)):
            raise pytest.UsageError(f"{item.nodeid}: marked both guard and slow")
        if "slow" not in own and (item.get_closest_marker("guard") or _named_guard(item)):
            if service:
                raise pytest.UsageError(f"{item.nodeid}: a guard test runs in the fast loop, so it may not need "
                                        f"{service}; make it cheap or drop the guard marker")
            kind[item.nodeid] = "guard"
        elif service:
            kind[item.nodeid] = "service"
        elif item.get_closest_marker("slow"):
            kind[item.nodeid] = "marked"
        elif _module(item) in SCALE_MODULES:
            kind[item.nodeid] = "scale"
        else:
            rest[_module(item)].append(item)
    for module, group in rest.items():
        budget, spent = MODULE_BUDGET.get(module, DEFAULT_BUDGET), 0.0
        for item in sorted(group, key=lambda i: (measured.get(i.nodeid, 0.0), i.nodeid)):
            cost = measured.get(item.nodeid, 0.0)
            if spent + cost <= budget:
                spent += cost
                kind[item.nodeid] = "budget"
            else:
                kind[item.nodeid] = "over budget"
    return kind


FAST = ("guard", "budget")


def pytest_collection_modifyitems(config, items):
    measured = _durations()
    kind = classify(items, measured)
    for item in items:
        if kind[item.nodeid] not in FAST:
            item.add_marker(pytest.mark.slow)
    if config.getoption("--fast-loop-report"):
        _report(config, items, kind, measured)
    if hasattr(config, "workerinput"):
        heaviest_modules_first(items, measured)


def heaviest_modules_first(items, measured: dict[str, float]) -> None:
    """Under pytest-xdist (`--dist loadfile`: a module runs whole on one worker, so its module
    fixtures are built once), hand out the modules with the most stored seconds first, so that
    no long module starts last and runs alone. Each module's own order is kept; every worker
    computes the same order from the same file, as xdist requires."""
    def module_of(item) -> str:
        return item.nodeid.partition("::")[0]

    cost: dict[str, float] = defaultdict(float)
    for item in items:
        cost[module_of(item)] += measured.get(item.nodeid, 0.0)
    items.sort(key=lambda it: -cost[module_of(it)])   # stable: modules stay whole, in their own order


def _report(config, items, kind, measured) -> None:
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item in items:
        rows[_module(item)][kind[item.nodeid]].append(measured.get(item.nodeid, 0.0))
    lines = [f"{'module':34s} {'guard':>11s} {'budget':>11s} {'slow':>11s}   (tests, stored s)"]
    for module in sorted(rows):
        r = rows[module]
        slow = [d for k in ("service", "marked", "scale", "over budget") for d in r[k]]
        cells = [f"{len(v):4d} {sum(v):6.1f}" for v in (r["guard"], r["budget"], slow)]
        lines.append(f"{module:34s} " + " ".join(f"{c:>11s}" for c in cells))
    fast = [measured.get(i.nodeid, 0.0) for i in items if kind[i.nodeid] in FAST]
    lines.append(f"fast loop: {len(fast)} tests, {sum(fast):.1f} s stored (tests under {_STORED_MIN} s count 0)")
    config._fast_loop_report = lines   # printed in the terminal summary


def pytest_terminal_summary(terminalreporter, config):
    for line in getattr(config, "_fast_loop_report", []):
        terminalreporter.write_line(line)


# ----------------------------------------------------------------------------------- CI: no skips

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if ENVIRONMENT in reason:
            return   # a machine condition the project does not require (tests/helpers/prereq.py)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every prerequisite is installed: {reason}"


def pytest_collectreport(report):
    if IN_CI and report.skipped:   # a module-level skip (no Java, no pyspark, no browser)
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every prerequisite is installed: {reason}"


# ----------------------------------------------------------------------------------- durations

_RUN: dict[str, float] = {}


def pytest_runtest_logreport(report):
    _RUN[report.nodeid] = _RUN.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    if not session.config.getoption("--store-durations") or not _RUN:
        return
    if hasattr(session.config, "workerinput"):
        return   # under pytest-xdist the controller sees every worker's reports and writes the file once
    stored = _durations()
    stored.update({k: round(v, 2) for k, v in _RUN.items()})
    kept = {k: v for k, v in sorted(stored.items()) if v >= _STORED_MIN}
    DURATIONS.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
