"""The verifier corpus (tests/data/verifier_cases.yaml): ≥150 (plan, summary, verdict) cases."""
from __future__ import annotations

import collections
import copy
from pathlib import Path

import pytest
import yaml

from dpspin_sql.verify import verify

DATA = yaml.safe_load((Path(__file__).parent / "data" / "verifier_cases.yaml").read_text(encoding="utf-8"))
CASES = DATA["cases"]


def _plan(name: str):
    plan = copy.deepcopy(DATA["plans"][name])
    dictionary = plan.pop("_dictionary", None)
    return plan, dictionary


@pytest.mark.parametrize("case", CASES, ids=[f"{i:03d}-{c['kind']}" for i, c in enumerate(CASES)])
def test_case(case):
    plan, dictionary = _plan(case["plan"])
    verdict = verify(case["summary"], plan, dictionary=dictionary)
    got = sorted({v.code for v in verdict.violations})
    want = sorted(set(case.get("codes", [])))
    assert verdict.accepted == (not want), (case["summary"], [v.to_dict() for v in verdict.violations])
    assert got == want, (case["summary"], [v.to_dict() for v in verdict.violations])
    for v in verdict.violations:  # every violation points at text in the summary
        assert v.span in case["summary"] and v.message


def test_corpus_size_and_kinds():
    kinds = collections.Counter(c["kind"] for c in CASES)
    assert len(CASES) >= 150
    for kind in ("valid", "unadmitted_atom", "unsupported_number", "wrong_bin", "reversed_comparison",
                 "unsupported_comparison", "wrong_rank", "record_detail"):
        assert kinds[kind] >= 5, kind


def test_verdict_is_deterministic_and_json_shaped():
    plan, _ = _plan("beauty")
    s = "Oily skin is more common than dry skin, says Dr. Patel."
    a, b = verify(s, plan).to_dict(), verify(s, copy.deepcopy(plan)).to_dict()
    assert a == b and a["accepted"] is False
    assert all(set(v) == {"code", "span", "message"} for v in a["violations"])


def test_plan_object_with_to_dict():
    plan, _ = _plan("beauty")

    class P:
        def to_dict(self):
            return plan
    assert verify("Dry skin is the most common theme.", P()).accepted
