"""Neighbour invariance of `dpspin sql`, fuzzed (tests/helpers/sql_fuzz.py; the big run is bench/fuzz_sql.py).

Statements come from a seeded generator over the audit's grammar (every admitted function
and operator, random and hostile literals, near misses the audit must refuse). Each accepted
one runs on stores that differ from a base store in one record X — adversarial text,
metadata and assignment rows (sql_fuzz.variants) — or lack X, and on a 'union' store that
holds every variant at once:

- through the CLI entry point: exit code, stderr (file-descriptor level), whether a plan
  was written and the new ledger rows must equal those on the plain store;
- at the sketch level (the exact query `dpspin sql` runs, the only data-dependent step of
  the CLI path), many more statements, on every store: each must succeed everywhere.

CI-bounded (~25 s on two idle cores, ~80 s at a load average of 10); sizes are in the module
constants; bench/fuzz_sql.py runs the same at size.
"""
from __future__ import annotations

import pytest

from tests.helpers import sql_fuzz

CLI_STATEMENTS = 6         # accepted statements through the CLI, each on 6 stores
SKETCH_STATEMENTS = 40     # accepted statements at the sketch level, each on all 19 stores
SEED = 20261107


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    work = tmp_path_factory.mktemp("fuzz")
    return sql_fuzz.build_family(sql_fuzz.build_base(work / "base.duckdb", n_users=20), work / "family")


def _fail(report):
    return "\n\n".join(sql_fuzz.describe(f) for f in report.failures[:5])


def test_the_family_has_the_adversarial_neighbours(family):
    assert len(family) == len(sql_fuzz.variants()) + 2
    assert {"plain", "without X", "union", "malformed JSON", "1 MB of a", "odd atom ids"} <= set(family)


def test_accepted_statements_have_the_same_outcome_on_neighbouring_stores(family, tmp_path):
    report = sql_fuzz.fuzz_cli(family, CLI_STATEMENTS, SEED, tmp_path / "plan.json", variants_per_statement=3,
                               mechanisms=("laplace",))
    print(sql_fuzz.to_json(report))
    assert report.cli_statements == CLI_STATEMENTS and report.refused > 0
    assert not report.failures, _fail(report)


def test_accepted_sketch_queries_succeed_on_every_neighbour(family):
    report = sql_fuzz.fuzz_sketch(family, SKETCH_STATEMENTS, SEED + 1)
    print(sql_fuzz.to_json(report))
    assert report.sketch_statements == SKETCH_STATEMENTS
    assert report.refused > 0 and len(report.refusal_reasons) > 5   # the near misses are generated and refused
    assert not report.failures, _fail(report)


def test_the_fuzzer_finds_the_failures_of_filters_run_as_written(family, monkeypatch):
    """Mutation check of the harness: with the rewrite's total form switched off (filters run as
    the analyst wrote them: integer arithmetic, raw JSON extraction) it finds failing stores."""
    from dpspin_sql.sketch import rewrite

    monkeypatch.setattr(rewrite, "total_form", lambda term, dialect="duckdb", names=None: term.copy())
    report = sql_fuzz.fuzz_sketch(family, SKETCH_STATEMENTS, SEED + 1, stop_after=1)
    assert report.failures, "the fuzzer found nothing to catch"
    failing = report.failures[0][2]
    assert "plain" not in failing or len(failing) < len(family)   # some stores fail, not all: data-dependent
