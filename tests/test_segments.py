"""Segmented releases end to end (docs/DESIGN.md §11, docs/PLAN.md "Segmented plans"): the
public domain and what it rules out, the mechanisms over S·m coordinates and their charge,
the plan's parts, the command line (`--segment-by`, `--segments`, `--segments-file`,
`--period-col`, `--boundaries`, `--segment-top`), and that the query of an unsegmented
release is untouched."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpspin_sql import ledger, store
from dpspin_sql.errors import AuditRefusal, BadInput
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.plan import segment_part, validate_plan
from dpspin_sql.request import SCALE, ReleaseRequest, RequestError, Segments
from tests.helpers.core import assert_one_line_error, cli, read_plan, snapshot, synthetic_store

PRODUCTS = ("Mortgage", "Credit card", "Student loan")


@pytest.fixture
def db(tmp_path):
    """The synthetic store with a product in every record's metadata (one in five outside the
    domain) and a received date."""
    path = tmp_path / "s.duckdb"
    con = synthetic_store(path, m=12, epsilon_budget=20.0, close=False)
    con.execute("UPDATE records SET metadata = json_object('product', "
                "['Mortgage', 'Credit card', 'Student loan', 'Mortgage', 'Auto loan'][CAST(1 + hash(record_id) % 5 AS BIGINT)], "
                "'date_received', CASE WHEN hash(record_id) % 2 = 0 THEN '2016-05-01' ELSE '2018-02-03' END)")
    con.close()
    return path


def release_args(db, out, *extra, **over):
    opts = {"--mechanism": "gaussian", "--epsilon": "1", "--unit": "user", "-L": "3"} | over
    args = ["release", "--db", str(db), "--out", str(out)]
    for k, v in opts.items():
        args += [k, v]
    return args + list(extra)


# ----------------------------------------------------------------------------- the domain

@pytest.mark.parametrize("kwargs,field", [
    ({"labels": ()}, "segments"),
    ({"labels": ("a", "a")}, "segments"),
    ({"labels": ("a", "")}, "segments"),
    ({"labels": ("a", "b\nc")}, "segments"),
    ({"labels": "ab"}, "segments"),
    ({"labels": tuple(str(i) for i in range(1001))}, "segments"),
    ({"labels": ("a",), "admission": "each"}, "segment_admission"),
    ({"labels": ("a", "b"), "kind": "periods", "boundaries": ("2017-13-01",)}, "boundaries"),
    ({"labels": ("a", "b", "c"), "kind": "periods", "boundaries": ("2018-01-01", "2017-01-01")}, "boundaries"),
    ({"labels": ("a", "b", "c"), "kind": "periods", "boundaries": ("2017-01-01",)}, "segments"),
    ({"labels": ("a",), "boundaries": ("2017-01-01",)}, "boundaries"),
])
def test_a_bad_domain_is_refused_naming_its_field(kwargs, field):
    with pytest.raises(RequestError) as exc:
        Segments(**kwargs)
    assert exc.value.field == field


def test_what_a_segmented_request_rules_out():
    two = Segments(("a", "b"))
    with pytest.raises(RequestError, match="denominator"):
        ReleaseRequest(mechanism="laplace", public_denominator=100, segments=two)
    with pytest.raises(RequestError, match="add_drop") as exc:
        ReleaseRequest(mechanism="private_topL", adjacency="replace", segments=two)
    assert exc.value.field == "segment_admission"
    ReleaseRequest(mechanism="private_topL", adjacency="replace", segments=Segments(("a", "b"), admission="joint"))
    per = ReleaseRequest(mechanism="laplace", L=5, segments=two)
    with pytest.raises(RequestError, match="m=4"):
        per.check_m(4)
    joint = ReleaseRequest(mechanism="laplace", L=8, segments=Segments(("a", "b"), admission="joint"))
    joint.check_m(4)                        # 8 of the 2 × 4 (segment, atom) pairs
    with pytest.raises(RequestError):
        ReleaseRequest(mechanism="laplace", L=9, segments=Segments(("a", "b"), admission="joint")).check_m(4)
    # the sensitivity is the unsegmented one: a unit's whole vector is clipped once
    assert per.d_in == ReleaseRequest(mechanism="laplace", L=5).d_in


# ----------------------------------------------------------------------------- mechanisms

@pytest.mark.parametrize("mechanism", ["laplace", "gaussian", "private_topL"])
@pytest.mark.parametrize("admission", ["per_segment", "joint"])
def test_mechanism_over_segment_by_atom(mechanism, admission):
    """S·m coordinates at the unsegmented d_in and cost; per-segment admission gives L atoms
    in every segment, joint admission L in all; intervals cover every coordinate
    (laplace, gaussian) or every admitted value (private_topL)."""
    m, L = 6, 2
    segments = Segments(("a", "b", "c"), admission=admission)
    request = ReleaseRequest(mechanism=mechanism, epsilon=4.0, unit="user", B=2.0, L=L, segments=segments)
    plain = make_mechanism(ReleaseRequest(mechanism=mechanism, epsilon=4.0, unit="user", B=2.0, L=L), m)
    mech = make_mechanism(request, m)
    assert mech.size == 18 and mech.m == m
    assert mech.cost == plain.cost and [p.d_in for p in mech.parts] == [p.d_in for p in plain.parts]
    assert mech.noise_scale == plain.noise_scale
    # a sketch whose segment b holds the largest masses by far
    mass = np.array([SCALE * (1 + j) for j in range(6)] + [SCALE * 1000 * (1 + j) for j in range(6)]
                    + [0] * 6, dtype=np.int64)
    noisy = mech.apply(mass)
    by_segment = [sum(1 for p in noisy.admitted if p // m == s) for s in range(3)]
    if admission == "per_segment":
        assert by_segment == [L, L, L]
        assert mech.admitted_values == 3 * L
    else:
        assert by_segment == [0, L, 0] and mech.admitted_values == L
    if mechanism == "private_topL" and admission == "per_segment":
        select = mech.parts[0]
        assert select.per_segment == 3 and select.audit_record()["per_segment"] == 3
        assert select.measurement.input_domain.size == m              # one selection per segment's m atoms
        # the parallel argument needs the top-k map linear in d (docs/DESIGN.md §11)
        d = select.d_in
        assert select.measurement.map(2 * d) == pytest.approx(2 * select.measurement.map(d), rel=1e-12)
        assert select.measurement.map(d // 3) <= select.measurement.map(d) / 3 * (1 + 1e-9)


def test_the_plan_holds_a_part_per_segment():
    from dpspin_sql.atoms import Atom
    from dpspin_sql.plan import Plan, make_plan

    m = 4
    atoms = [Atom(i, f"theme {i}", "") for i in range(m)]
    request = ReleaseRequest(mechanism="laplace", epsilon=2.0, L=2, segments=Segments(("a", "b")))
    mech = make_mechanism(request, m)
    plan = make_plan(mech.apply(np.array([9, 1, 8, 0, 0, 7, 1, 9], dtype=np.int64) * SCALE), mech, atoms, "sha256:x")
    d = plan.to_dict()
    assert d["schema_version"] == "3" and "atoms" not in d
    assert [p["segment"] for p in d["segments"]] == ["a", "b"]
    assert all([a["rank"] for a in p["atoms"]] == [1, 2] for p in d["segments"])
    assert d["segmentation"]["labels"] == ["a", "b"] and d["segmentation"]["coordinates"] == 8
    validate_plan(d)
    assert Plan.from_dict(json.loads(json.dumps(d))).to_dict() == d
    part = segment_part(d, "b")
    assert part["segment"] == "b" and part["atoms"] == d["segments"][1]["atoms"]
    validate_plan(part)
    with pytest.raises(BadInput, match="no segment"):
        segment_part(d, "c")
    bad = json.loads(json.dumps(d))
    bad["segments"].reverse()
    with pytest.raises(BadInput, match="declared domain"):
        validate_plan(bad)
    bad = json.loads(json.dumps(d))
    bad["segments"][0]["atoms"] *= 2
    with pytest.raises(BadInput, match="segment 'a'"):
        validate_plan(bad)


# ----------------------------------------------------------------------------- the query

def test_an_unsegmented_release_runs_the_query_it_ran_before():
    """The placement is added only to a segmented release's query: the core files and every
    render of an unsegmented one are untouched (tests/test_compiled.py, tests/golden)."""
    from dpspin_sql.request import Bounds
    from dpspin_sql.segment_by import by_values
    from dpspin_sql.sketch.engines.duckdb import STORE_ROWS, segmented_sql
    from dpspin_sql.sketch.transpile import sketch_sql

    _, placement = by_values("product", PRODUCTS)
    for unit in ("record", "user"):
        bounds = Bounds(unit, 3, None if unit == "record" else 1.0)
        plain = sketch_sql(bounds, None, "duckdb", pretty=False, bind_params=False, source=STORE_ROWS)
        seg = segmented_sql(bounds, None, placement, STORE_ROWS)
        assert "dpspin_segment" not in plain and seg.count("dpspin_segment") >= 3
        # everything from `positive` on is the core's own text
        assert seg[seg.index("positive AS"):] == plain[plain.index("positive AS"):]


@pytest.mark.parametrize("expression,why", [
    ("weight * 1", "records columns only"),
    ("atom_id + 1", "records columns only"),
    ("random()", "audit"),
    ("CAST(text AS INTEGER)", "TRY_CAST"),
    ("(SELECT max(user_id) FROM records)", "subquer"),
])
def test_a_segment_expression_is_audited_like_a_where_term(expression, why):
    from dpspin_sql.segment_by import by_values

    with pytest.raises(AuditRefusal, match=why):
        by_values(expression, ("a", "b"))


def test_segment_expressions_a_user_can_guess():
    from dpspin_sql.segment_by import by_periods, by_values

    segments, _ = by_values("product", PRODUCTS)
    assert segments.name == "product" and "$.product" in segments.definition
    assert by_values("user_id", ("u1",))[1].terms[0].sql().count("user_id") == 1
    by_values("lower(metadata ->> '$.product')", ("mortgage",))
    periods, _ = by_periods("date_received", ("2016-01-01", "2017-01-01"))
    assert periods.labels == ("before 2016-01-01", "2016-01-01 to 2016-12-31", "from 2017-01-01")
    with pytest.raises(RequestError, match="increasing"):
        by_periods("date_received", ("2017-01-01", "2016-01-01"))
    with pytest.raises(RequestError, match="ISO"):
        by_periods("date_received", ("1/1/2017",))
    with pytest.raises(BadInput):
        by_values("product = ", ("a",))


# ----------------------------------------------------------------------------- the CLI

def test_cli_segmented_release_by_product(db, tmp_path, capsys):
    out = tmp_path / "seg.json"
    rc, stdout, err = cli(capsys, *release_args(db, out, "--segment-by", "product", "--segments",
                                                ",".join(PRODUCTS)))
    assert rc == 0, err
    assert "3 segments by product" in stdout and "plan written" in stdout
    plan = read_plan(out)
    assert plan["schema_version"] == "3" and [p["segment"] for p in plan["segments"]] == list(PRODUCTS)
    assert plan["segmentation"]["admission"] == "per_segment"
    assert all(len(p["atoms"]) == 3 for p in plan["segments"])
    sidecar = json.loads((tmp_path / "seg.dictionary.json").read_text())
    validate_plan(plan, sidecar)
    con = store.connect(db, read_only=True)
    try:
        st = ledger.status(con)
        assert st.releases[-1]["params"]["segments"]["labels"] == list(PRODUCTS)
        assert [r["epsilon"] for r in st.releases] == [pytest.approx(1.0)]   # one charge for all segments
        assert ledger.verify(con) == []
    finally:
        con.close()
    rc, _, err = cli(capsys, "card", out, "--out", tmp_path / "card.html", "--segment", "Credit card")
    assert rc == 0, err
    assert "segment Credit card" in (tmp_path / "card.html").read_text()


def test_cli_segments_file_joint_admission_and_periods(db, tmp_path, capsys):
    labels = tmp_path / "products.txt"
    labels.write_text("\ufeffMortgage\r\n\r\nCredit card\r\n", encoding="utf-8")     # BOM, CRLF, a blank line
    out = tmp_path / "joint.json"
    rc, _, err = cli(capsys, *release_args(db, out, "--segment-by", "product", "--segments-file", labels,
                                           "--segment-top", "joint", **{"--mechanism": "private_topL", "-L": "4"}))
    assert rc == 0, err
    plan = read_plan(out)
    assert [p["segment"] for p in plan["segments"]] == ["Mortgage", "Credit card"]
    assert sum(len(p["atoms"]) for p in plan["segments"]) == 4
    out = tmp_path / "periods.json"
    rc, _, err = cli(capsys, *release_args(db, out, "--period-col", "date_received", "--boundaries", "2017-01-01",
                                           **{"--unit": "record", "--mechanism": "laplace"}))
    assert rc == 0, err
    plan = read_plan(out)
    assert plan["segmentation"]["kind"] == "periods" and plan["segmentation"]["boundaries"] == ["2017-01-01"]
    assert [p["segment"] for p in plan["segments"]] == ["before 2017-01-01", "from 2017-01-01"]


@pytest.mark.parametrize("extra,code,words", [
    (["--segments", "a,b"], 2, "--segment-by"),
    (["--segment-by", "product"], 2, "--segments"),
    (["--segment-by", "product", "--segments", "a,,b"], 2, "empty label"),
    (["--segment-by", "product", "--segments", "a,a"], 2, "twice"),
    (["--segment-by", "product", "--segments-file", "/nonexistent/labels.txt"], 2, "not found"),
    (["--segment-by", "product", "--segments", "a", "--period-col", "date_received"], 2, "one"),
    (["--period-col", "date_received"], 2, "--boundaries"),
    (["--period-col", "date_received", "--boundaries", "2017-02-30"], 2, "ISO"),
    (["--boundaries", "2017-01-01"], 2, "--period-col"),
    (["--segment-top", "joint"], 2, "segmented"),
    (["--segment-by", "product", "--segments", "a", "--segment-top", "all"], 2, "--segment-top"),
    (["--segment-by", "product", "--segments", "a", "--public-denominator", "100"], 2, "denominator"),
    (["--segment-by", "weight * 1", "--segments", "a"], 1, "records columns"),
    (["--segment-by", "random()", "--segments", "a"], 1, "audit"),
    (["--segment-by", "product", "--segments", "a", "--assignments", "rows.parquet"], 2, "--assignments"),
])
def test_cli_refusals_are_one_line_and_charge_nothing(db, tmp_path, capsys, extra, code, words):
    before = snapshot(db)
    out = tmp_path / "p.json"
    rc, stdout, err = cli(capsys, *release_args(db, out, *extra))
    assert_one_line_error(rc, stdout, err, code=code)
    assert words in err
    assert not out.exists() and snapshot(db) == before


def test_cli_private_top_l_per_segment_under_replace_is_refused(db, tmp_path, capsys):
    rc, stdout, err = cli(capsys, *release_args(db, tmp_path / "p.json", "--segment-by", "product", "--segments",
                                                "Mortgage", "--adjacency", "replace",
                                                **{"--mechanism": "private_topL"}))
    assert_one_line_error(rc, stdout, err)
    assert "--segment-top" in err and "add_drop" in err


def test_summarize_refuses_a_segmented_plan_in_one_line(db, tmp_path, capsys):
    out = tmp_path / "seg.json"
    assert cli(capsys, *release_args(db, out, "--segment-by", "product", "--segments", "Mortgage"))[0] == 0
    rc, stdout, err = cli(capsys, "summarize", out)
    assert_one_line_error(rc, stdout, err)
    assert "segmented" in err
    rc, stdout, err = cli(capsys, "card", out, "--out", tmp_path / "c.html")
    assert_one_line_error(rc, stdout, err)
    assert "--segment" in err


def test_interval_family_of_a_segmented_plan():
    """laplace/gaussian: every one of the S·m coordinates; private_topL: the values admitted."""
    from dpspin_sql.mechanisms import interval_half_width, noise_accuracy

    m = 5
    for mechanism, admission, family in (("laplace", "per_segment", 15), ("gaussian", "joint", 15),
                                         ("private_topL", "per_segment", 6), ("private_topL", "joint", 2)):
        req = ReleaseRequest(mechanism=mechanism, epsilon=1.0, L=2, segments=Segments(("a", "b", "c"),
                                                                                       admission=admission))
        mech = make_mechanism(req, m)
        assert interval_half_width(mech, 0.95) == noise_accuracy(mech.noise_kind, mech.noise_scale, (1.0 - 0.95) / family)
        assert math.isfinite(interval_half_width(mech, 0.95))
