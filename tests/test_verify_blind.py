"""Blind corpus for the verifier: (plan, summary, expected verdict) cases written from
docs/VERIFIER.md alone, without reading the implementation or its other test cases
(tests/data/verifier_corpus_blind.yaml). Measures the implementation against the documented
contract:

* each case: accepted == valid, the set of violation codes == codes, and for an unfaithful
  case every violation's span lies inside the one defective sentence (bad_sentence);
* test_blind_rates prints the false-rejection rate (valid rejected / valid) and the miss
  rate (unfaithful accepted / unfaithful), overall and per class (run with -s to see it);
* test_plans_self_consistent checks the corpus plans against docs/PLAN.md and docs/VERIFIER.md
  (ranks by noisy mass, display mass, support, bins, intervals, L, m, dictionary).
"""
from __future__ import annotations

import copy
import math
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).parent / "data" / "verifier_corpus_blind.yaml"
CORPUS = yaml.safe_load(DATA.read_text(encoding="utf-8"))
PLANS = CORPUS["plans"]
CASES = CORPUS["cases"]
BY_ID = {c["id"]: c for c in CASES}


def _verdict(case: dict) -> dict:
    from dpspin_sql.verify import verify
    entry = PLANS[case["plan"]]
    verdict = verify(case["summary"], copy.deepcopy(entry["plan"]), dictionary=list(entry["dictionary"]))
    return verdict.to_dict()


@lru_cache(maxsize=None)
def _cached(case_id: str) -> dict:
    return _verdict(BY_ID[case_id])


def _describe(case: dict, got: dict) -> str:
    lines = [f"{case['id']} [{case['class']}] expected valid={case['valid']} codes={case['codes']}",
             f"  summary: {case['summary']!r}", f"  why: {case['why']}",
             f"  got accepted={got['accepted']}"]
    lines += [f"    [{v['code']}] {v['span']!r}: {v.get('message', '')}" for v in got["violations"]]
    return "\n".join(lines)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_blind_case(case):
    got = _cached(case["id"])
    msg = _describe(case, got)
    assert got["accepted"] == case["valid"], msg
    assert sorted({v["code"] for v in got["violations"]}) == sorted(set(case["codes"])), msg
    if not case["valid"]:
        bad = case["bad_sentence"]
        assert bad in case["summary"], f"{case['id']}: bad_sentence not in summary"
        for v in got["violations"]:
            assert v["span"] and v["span"] in bad, f"span {v['span']!r} outside the bad sentence\n{msg}"


def test_blind_rates():
    """Report only: false-rejection and miss rates, overall and per class."""
    per_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # [wrong, total]
    fr = [0, 0]
    miss = [0, 0]
    failing = []
    for case in CASES:
        got = _cached(case["id"])
        if case["valid"]:
            wrong = not got["accepted"]
            fr[0] += wrong
            fr[1] += 1
        else:
            wrong = got["accepted"]
            miss[0] += wrong
            miss[1] += 1
        per_class[case["class"]][0] += wrong
        per_class[case["class"]][1] += 1
        codes_ok = sorted({v["code"] for v in got["violations"]}) == sorted(set(case["codes"]))
        spans_ok = case["valid"] or all(v["span"] and v["span"] in case["bad_sentence"] for v in got["violations"])
        if wrong or not codes_ok or not spans_ok:
            failing.append((case["id"], case["class"], "verdict" if wrong else "codes" if not codes_ok else "span"))

    def rate(x):
        return f"{x[0]}/{x[1]} = {100 * x[0] / x[1]:.1f}%" if x[1] else "n/a"

    print()
    print(f"false-rejection rate (valid rejected / valid): {rate(fr)}")
    print(f"miss rate (unfaithful accepted / unfaithful):  {rate(miss)}")
    print("per class (valid_*: rejected / total; others: accepted / total):")
    for cls in sorted(per_class):
        print(f"  {cls:18s} {rate(per_class[cls])}")
    print(f"cases failing any assertion: {len(failing)}")
    for cid, cls, what in failing:
        print(f"  {cid:7s} {cls:18s} {what}")
    assert fr[1] >= 75 and miss[1] >= 75


# ---------------------------------------------------------------- corpus self-check
def _close(a: float, b: float, tol: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=0, abs_tol=tol)


@pytest.mark.parametrize("name", list(PLANS))
def test_plans_self_consistent(name):
    entry = PLANS[name]
    plan, dictionary = entry["plan"], entry["dictionary"]
    atoms = plan["atoms"]
    assert plan["L"] == len(atoms)
    assert plan["m"] == len(dictionary) == len(set(dictionary))
    assert [a["rank"] for a in atoms] == list(range(1, len(atoms) + 1))
    masses = [a["noisy_mass"] for a in atoms]
    assert masses == sorted(masses, reverse=True)
    denom = plan.get("public_denominator")
    bins = plan["bins"]
    h = plan.get("interval_half_width")
    for a in atoms:
        assert dictionary[a["atom_id"]] == a["label"]
        assert a["display_mass"] == max(a["noisy_mass"], 0.0)
        if denom:
            assert plan["bin_basis"] == "support"
            assert _close(a["support"], a["display_mass"] / denom)
            s = a["support"]
            want = "high" if s >= bins["high"] else "moderate" if s >= bins["moderate"] else "low"
        else:
            assert plan["bin_basis"] == "rank" and "support" not in a
            r = a["rank"]
            want = "high" if r <= bins["high"] else "moderate" if r <= bins["moderate"] else "low"
        assert a["bin"] == want, (name, a["label"])
        if "interval" in a:
            lo, hi = a["interval"]
            assert h is not None and _close(lo, a["noisy_mass"] - h, 0.05) and _close(hi, a["noisy_mass"] + h, 0.05)
        if "support_interval" in a:
            lo, hi = a["support_interval"]
            assert denom and _close(lo * denom, a["interval"][0], 0.01) and _close(hi * denom, a["interval"][1], 0.01)
    if h is not None or any("interval" in a for a in atoms):
        assert "interval_confidence" in plan
    # ε, δ and the comparison margin are present; the margin exceeds the noise scale
    assert plan["epsilon"] > 0 and plan["delta"] >= 0 and plan["comparison_margin"] > plan["noise_scale"]
    # the dictionary holds non-admitted labels
    assert len(dictionary) > len(atoms)


def test_corpus_shape():
    classes = {"count", "metadata_cue", "trend", "anecdote", "interval", "rank", "number", "comparison", "bin",
               "mention", "detail", "valid_enumeration", "valid_rank", "valid_approx", "valid_hedged",
               "valid_method", "valid_interval", "valid_other"}
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids))
    for c in CASES:
        assert c["plan"] in PLANS and c["class"] in classes and c["why"]
        assert c["class"].startswith("valid_") == bool(c["valid"])
        assert bool(c["codes"]) == (not c["valid"])
        if not c["valid"]:
            assert c["bad_sentence"] and c["bad_sentence"] in c["summary"]
    assert sum(c["valid"] for c in CASES) >= 75 and sum(not c["valid"] for c in CASES) >= 75
