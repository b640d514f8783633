"""Neighbour sensitivity over the user's own tables and views, fuzzed (tests/helpers/sql_neighbours.py;
the big run is `bench/fuzz_sql.py neighbours`).

For every statement the audit accepts — views, CTEs and subqueries of the row-wise grammar over
random adversarial user databases — the exact integer sketch on neighbouring base databases
(add, drop, replace one base record; add, drop one unit) moves by at most the charged
sensitivity, in L1 and L2. Every near miss (a view whose rows depend on other rows, a join off
the record id, ids of different types joined) is refused. With the row-wise rule switched off
the same fuzzer finds violations: the harness can see what the rule stops.

Bounded for the suite (a few seconds on two idle cores); sizes are the module constants.
"""
from __future__ import annotations

import json

from tests.helpers import sql_neighbours

STATEMENTS = 36
DATABASES = 3
SEED = 20261201
# the near misses whose rows follow one trigger record (the one n above 50): with the rule off,
# dropping that record must move the sketch past its charge
REACTIVE = ("window", "scalar subquery", "EXISTS", "IN subquery", "aggregate CTE", "join off the record id")


def test_accepted_statements_stay_within_the_charged_sensitivity_on_neighbouring_base_databases():
    report = sql_neighbours.run(SEED, STATEMENTS, databases=DATABASES, near_miss=0.3)
    print(json.dumps(report.to_dict(), indent=1, sort_keys=True))
    assert report.statements == STATEMENTS and report.accepted >= STATEMENTS // 2 and report.pairs >= 3 * report.accepted
    assert not report.violations, report.violations[:3]
    assert not report.near_miss_accepted, report.near_miss_accepted[:3]
    assert not report.false_refusals, report.false_refusals[:3]   # the accepted grammar is accepted
    assert report.worst <= 1.0


def test_every_near_miss_class_is_refused():
    classes = sorted(sql_neighbours.NEAR_MISSES)
    report = sql_neighbours.run(SEED + 1, len(classes), databases=1, n_reviews=8, near_miss=1.0)
    table = report.to_dict()["classes"]
    assert {c.removeprefix("near miss: ") for c in table} == set(classes)
    assert all(row["held"] == row["attempted"] == 1 for row in table.values()), table
    assert report.refused == len(classes) and not report.near_miss_accepted


def test_with_the_row_wise_rule_off_the_fuzzer_finds_violations(monkeypatch):
    """Mutation check of the harness: accept every relation as written (rowwise.ROWWISE off) and
    the fuzzer must see sketches move past their charge."""
    from dpspin_sql.sql import rowwise

    monkeypatch.setattr(rowwise, "ROWWISE", False)
    report = sql_neighbours.run(SEED + 2, 12, databases=2, near_miss=1.0, classes=REACTIVE)
    print(json.dumps(report.to_dict(), indent=1, sort_keys=True))
    assert report.accepted == report.statements == 12
    assert report.violations, "the fuzzer found nothing to catch with the row-wise rule off"
    assert report.worst > 2
    assert {v["case"] for v in report.violations} <= set(REACTIVE)
