"""docs/PLAN.md documents every key a real plan has (and nothing a plan lacks), its schema
version, and the interval formula that reproduces each plan's interval_half_width."""
from __future__ import annotations

import re
from pathlib import Path

import opendp.prelude as dp
import pytest

from dpspin_sql.plan import SCHEMA_VERSION
from dpspin_sql.release import release
from dpspin_sql.request import ReleaseRequest
from tests.helpers.core import read_plan, synthetic_store

DOC = Path(__file__).resolve().parents[1] / "docs" / "PLAN.md"

REQUESTS = {
    "laplace-record": dict(mechanism="laplace", epsilon=0.5, unit="record", L=4),
    "gaussian-user-denominator": dict(mechanism="gaussian", epsilon=0.5, delta=1e-6, unit="user", B=2.0, L=4,
                                      public_denominator=500),
    "topL-record-replace": dict(mechanism="private_topL", epsilon=0.5, delta=1e-6, unit="record", L=4,
                                adjacency="replace"),
    "topL-user-defaults": dict(mechanism="private_topL", epsilon=0.5, unit="user", L=4, public_denominator=120),
}


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("plans")
    con = synthetic_store(d / "s.duckdb", m=12, epsilon_budget=10.0, close=False)
    out = {}
    try:
        for name, kw in REQUESTS.items():
            path = d / f"{name}.json"
            release(con, ReleaseRequest(**kw), out=path)
            out[name] = read_plan(path)
    finally:
        con.close()
    # a store whose assignments a calibrated scorer wrote: the plan carries its unit and fidelity
    from dpspin_sql import assign, builders, ledger
    from tests.helpers.atoms import cfpb_like, make_store

    scored = make_store(d, cfpb_like(12) + cfpb_like(12, split="target", start=5000), name="scored.duckdb")
    try:
        ledger.set_budget(scored, 10.0, 1e-5)
        builders.build(scored, "metadata", fields=["product", "issue", "sub_issue"], m=4)
        assign.assign(scored, "supervised", K=3)
        path = d / "scored.json"
        release(scored, ReleaseRequest(mechanism="laplace", epsilon=0.5, unit="record", L=3), out=path)
        out["laplace-record-scored"] = read_plan(path)
    finally:
        scored.close()
    return out


def key_paths(plan: dict) -> set[str]:
    paths = set()
    for k, v in plan.items():
        if k == "atoms":
            paths.add("atoms")
            for a in v:
                paths |= {f"atoms[].{ak}" for ak in a}
        elif isinstance(v, dict):
            paths.add(k)
            paths |= {f"{k}.{sub}" for sub in v}
        else:
            paths.add(k)
    return paths


def documented() -> set[str]:
    """The keys in the first column of PLAN.md's field tables."""
    keys = set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `([^`]+)` \|", line)
        if m:
            keys.add(m.group(1))
    return keys


def test_every_key_of_a_real_plan_is_documented(plans):
    doc = documented()
    seen = set()
    for name, plan in plans.items():
        missing = key_paths(plan) - doc
        assert not missing, f"{name}: keys not documented in docs/PLAN.md: {sorted(missing)}"
        seen |= key_paths(plan)
    # and the doc describes no key that no plan has (the interval rows of the formula table are mechanisms)
    stale = {k for k in doc - seen if k not in ("laplace", "gaussian", "private_topL")}
    assert not stale, f"docs/PLAN.md documents keys no plan has: {sorted(stale)}"


def test_schema_version_is_documented(plans):
    text = DOC.read_text(encoding="utf-8")
    assert f'`schema_version` is `"{SCHEMA_VERSION}"`' in text
    assert all(p["schema_version"] == SCHEMA_VERSION for p in plans.values())


def test_documented_interval_formula_reproduces_the_plans(plans):
    """PLAN.md's table, written out independently: laplace (1−c)/m, gaussian (1−c)/m plus
    one fixed-point unit, private_topL (1−c)/L."""
    for name, p in plans.items():
        scale = p["mechanism_details"]["fixed_point_scale"]
        c = p["interval_confidence"]
        family = p["L"] if p["mechanism"] == "private_topL" else p["m"]
        alpha = (1 - c) / family
        if p["mechanism"] == "laplace":
            h = dp.discrete_laplacian_scale_to_accuracy(p["noise_scale"] * scale, alpha) / scale
        else:
            h = (dp.gaussian_scale_to_accuracy(p["noise_scale"] * scale, alpha) + 1.0) / scale
        assert p["interval_half_width"] == pytest.approx(h, rel=1e-12), name
        for a in p["atoms"]:
            assert a["interval"] == pytest.approx([a["noisy_mass"] - h, a["noisy_mass"] + h], rel=1e-12)
            if a["interval"][0] <= 0:
                assert a["bin"] == "low"
            if p["public_denominator"]:
                d = p["public_denominator"]
                assert a["support_interval"] == pytest.approx([max(a["interval"][0], 0) / d,
                                                               max(a["interval"][1], 0) / d])


def test_the_plan_notes_match_the_doc(plans):
    """The explanations carried in each plan name the same keys the doc explains."""
    doc = documented()
    for p in plans.values():
        assert {f"notes.{k}" for k in p["notes"]} <= doc
        assert p["bin_rule"].endswith("low whenever the interval reaches 0")
