"""docs/PLAN.md documents every key a real plan has (and nothing a plan lacks), its schema
version, and the interval formula that reproduces each plan's interval_half_width; a
segmented plan (schema 3) and a comparison likewise."""
from __future__ import annotations

import re
from pathlib import Path

import opendp.prelude as dp
import pytest

from dpspin_sql.plan import SCHEMA_VERSION, SEGMENTED_SCHEMA_VERSION
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
# segmented plans (schema 3): by period of a metadata date, per segment and jointly
SEGMENTED = {
    "periods-gaussian-user": dict(mechanism="gaussian", epsilon=0.5, delta=1e-6, unit="user", L=3),
    "periods-topL-joint": dict(mechanism="private_topL", epsilon=0.5, delta=1e-6, unit="record", L=4),
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
        from dpspin_sql.segment_by import by_periods
        from dpspin_sql.sketch.engines.duckdb import DuckDBEngine

        con.execute("UPDATE records SET metadata = json_object('day', CASE WHEN hash(record_id) % 3 = 0 "
                    "THEN '2016-03-01' WHEN hash(record_id) % 3 = 1 THEN '2017-06-30' ELSE '2019-01-01' END)")
        for name, kw in SEGMENTED.items():
            admission = "joint" if name.endswith("joint") else "per_segment"
            segments, placement = by_periods("day", ("2017-01-01", "2018-01-01"), admission=admission)
            path = d / f"{name}.json"
            release(con, ReleaseRequest(segments=segments, **kw), DuckDBEngine(segments=placement), out=path)
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
        if k == "segments":   # each part's atoms have the fields of atoms[]
            paths |= {"segments", "segments[].segment", "segments[].atoms"}
            paths |= {f"atoms[].{ak}" for part in v for a in part["atoms"] for ak in a}
        elif k == "atoms":
            paths.add("atoms")
            for a in v:
                paths |= {f"atoms[].{ak}" for ak in a}
        elif isinstance(v, dict):
            paths.add(k)
            paths |= {f"{k}.{sub}" for sub in v}
        else:
            paths.add(k)
    return paths


def documented(part: str = "plan") -> set[str]:
    """The keys in the first column of PLAN.md's field tables: the plan's (everything before
    "## Comparisons"), or the comparison's (that section)."""
    keys = set()
    plan_doc, _, comparison_doc = DOC.read_text(encoding="utf-8").partition("\n## Comparisons")
    for line in (plan_doc if part == "plan" else comparison_doc).splitlines():
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
    assert f'`schema_version` is `"{SEGMENTED_SCHEMA_VERSION}"`' in text
    assert all(p["schema_version"] == (SEGMENTED_SCHEMA_VERSION if name in SEGMENTED else SCHEMA_VERSION)
               for name, p in plans.items())


def test_documented_interval_formula_reproduces_the_plans(plans):
    """PLAN.md's table, written out independently: laplace (1−c)/m, gaussian (1−c)/m plus
    one fixed-point unit, private_topL (1−c)/L."""
    for name, p in plans.items():
        scale = p["mechanism_details"]["fixed_point_scale"]
        c = p["interval_confidence"]
        family = p["L"] if p["mechanism"] == "private_topL" else p["m"]
        seg = p.get("segmentation")
        if seg:   # Segmented plans: every S·m coordinate, or the values admitted (L per segment, or L)
            family = (p["L"] * (len(seg["labels"]) if seg["admission"] == "per_segment" else 1)
                      if p["mechanism"] == "private_topL" else seg["coordinates"])
        alpha = (1 - c) / family
        if p["mechanism"] == "laplace":
            h = dp.discrete_laplacian_scale_to_accuracy(p["noise_scale"] * scale, alpha) / scale
        else:
            h = (dp.gaussian_scale_to_accuracy(p["noise_scale"] * scale, alpha) + 1.0) / scale
        assert p["interval_half_width"] == pytest.approx(h, rel=1e-12), name
        for a in p.get("atoms") or [a for part in p.get("segments", []) for a in part["atoms"]]:
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


def test_every_key_of_a_real_comparison_is_documented(plans):
    """The "Comparisons" section's tables name every top-level, family and notes key of a
    comparison (and no other); its prose names every side, atom and swap field."""
    from dpspin_sql.compare import compare, side_of

    text = DOC.read_text(encoding="utf-8").partition("\n## Comparisons")[2]
    doc = documented("comparison")
    for c in (compare(side_of(plans["laplace-record"], name="a"), side_of(plans["topL-record-replace"], name="b")),
              compare(side_of(plans["periods-gaussian-user"], "before 2017-01-01"),
                      side_of(plans["periods-gaussian-user"], "from 2018-01-01"))):
        keys = set()
        for k, v in c.items():
            keys.add(k)
            if k in ("family", "notes"):
                keys |= {f"{k}.{sub}" for sub in v}
        assert not keys - doc, f"comparison keys not documented: {sorted(keys - doc)}"
        nested = set(c["a"]) | {k for r in c["atoms"] + c["only_in_a"] + c["only_in_b"] + c["rank_swaps"] for k in r}
        nested |= {k for r in c["atoms"] for side in ("a", "b") for k in r[side]}
        nested |= {k for r in c["only_in_a"] for k in r["b"]} | {k for r in c["only_in_b"] for k in r["a"]}
        assert not {k for k in nested if f"`{k}`" not in text}, "comparison fields the doc does not name"
    assert doc <= keys | {"a", "b"}, f"docs/PLAN.md documents comparison keys no comparison has: {sorted(doc - keys)}"
