"""`dpspin compare` (docs/PLAN.md "Comparisons"): post-processing of two plans' released fields.

* It charges nothing and reads no store: the store is byte-for-byte unchanged.
* It refuses (exit 1) plans over different dictionaries or contribution bounds, and a
  release compared with itself; bad input is exit 2; both are one line.
* Its intervals hold family-wise at the stated level: a cheap statistical test on the real
  OpenDP mechanisms (below), with its false-failure probability and a power check.
* On CFPB: two releases (complaints before 2017 and from 2017, by a WHERE on metadata)
  compared, and the same two periods as one segmented release, compared part to part.

The coverage test. For each pair of mechanisms, N independent pairs of plans are released
from two fixed sketches a and b (OpenDP noise, `make_plan`, the code people read) and
compared. A comparison *covers* when every interval it states holds for the true masses at
once: each side's interval, each difference interval (one-sided atoms included), each
ratio interval, each one-sided upper bound, each supported rank swap. H0: family-wise
coverage ≥ 0.95. The test fails when the number of covering comparisons X satisfies
P(Binom(N, 0.95) ≤ X) ≤ 2.5e-7, so with valid intervals it fails with probability ≤ 2.5e-7
per case, ≤ 1e-6 for the four. N = 800: the critical count is 725 (coverage 0.906); the test
catches a true coverage of 0.90 with probability 0.74 and of 0.88 with probability 0.99
(`test_the_coverage_test_is_calibrated`). Power on the same draws: intervals of half the
stated width must fail the same test.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom

from dpspin_sql.atoms import Atom
from dpspin_sql.compare import ComparisonRequest, compare, side_of
from dpspin_sql.errors import BadInput, Refusal
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.plan import make_plan
from dpspin_sql.request import SCALE, ReleaseRequest, Segments
from tests.helpers.core import SHARED_DATA, assert_one_line_error, cli, read_plan, snapshot, synthetic_store

M = 12
ATOMS = [Atom(i, f"theme {i}", "") for i in range(M)]
# a: a clear head, near ties and empties; b: some rise, some fall, some stay, one overtakes
TRUE_A = [90.0, 70.0, 60.0, 55.0, 40.0, 30.0, 25.0, 10.0, 5.0, 0.0, 0.0, 2.0]
TRUE_B = [90.0, 140.0, 20.0, 56.0, 95.0, 30.0, 5.0, 60.0, 5.0, 45.0, 0.0, 2.0]
N = 800
CONFIDENCE = 0.95
ALPHA_EACH = 2.5e-7
PAIRS = {
    "gaussian-gaussian": ("gaussian", "gaussian"),
    "laplace-gaussian": ("laplace", "gaussian"),
    "private_topL-private_topL": ("private_topL", "private_topL"),
    "segments of one gaussian plan": ("segmented", None),
}
assert len(PAIRS) * ALPHA_EACH <= 1e-6


def request(mechanism: str, segments: Segments | None = None) -> ReleaseRequest:
    return ReleaseRequest(mechanism=mechanism, epsilon=0.5, unit="record", L=5, segments=segments,
                          delta=None if mechanism == "laplace" else 1e-6)


def sketch(masses) -> np.ndarray:
    return np.array([int(round(x * SCALE)) for x in masses], dtype=np.int64)


def plan_of(mechanism, masses, release_id: str) -> dict:
    plan = make_plan(mechanism.apply(sketch(masses)), mechanism, ATOMS, "sha256:test", release_id)
    return plan.to_dict()


def critical_count(n: int, c: float, alpha: float) -> int:
    k = int(binom.ppf(alpha, n, c))
    while binom.cdf(k, n, c) > alpha:
        k -= 1
    return k


def covers(c: dict, truth_a: list[float], truth_b: list[float], shrink: float = 1.0) -> bool:
    """Every interval of comparison `c` (each scaled by `shrink` about its released centre)
    holds for the true masses."""
    def inside(v: float, iv, centre: float | None = None) -> bool:
        lo, hi = iv
        if centre is not None:
            lo = centre - (centre - lo) * shrink if lo is not None else None
            hi = centre + (hi - centre) * shrink if hi is not None else None
        return (lo is None or lo <= v + 1e-9) and (hi is None or v <= hi + 1e-9)

    for r in c["atoms"]:
        ta, tb = truth_a[r["atom_id"]], truth_b[r["atom_id"]]
        if not (inside(ta, r["a"]["interval"], r["a"]["noisy_mass"]) and inside(tb, r["b"]["interval"], r["b"]["noisy_mass"])
                and inside(tb - ta, r["difference_interval"], r["difference"])):
            return False
        iv = r["ratio_interval"]
        if shrink == 1.0 and iv is not None:
            if ta == 0:
                if iv[1] is not None:
                    return False
            elif not inside(tb / ta, iv):
                return False
    for key, here in (("only_in_a", "a"), ("only_in_b", "b")):
        for r in c[key]:
            ta, tb = truth_a[r["atom_id"]], truth_b[r["atom_id"]]
            mine = ta if here == "a" else tb
            if not inside(mine, r[here]["interval"], r[here]["noisy_mass"]):
                return False
            other = r["b" if here == "a" else "a"]
            if shrink == 1.0:
                if other["upper_bound"] is not None and (tb if here == "a" else ta) > other["upper_bound"] + 1e-9:
                    return False
                if not inside(tb - ta, r["difference_interval"]):
                    return False
    if shrink == 1.0:
        for s in c["rank_swaps"]:
            if s["supported"] and not (truth_a[s["overtook"]] > truth_a[s["atom_id"]]
                                       and truth_b[s["atom_id"]] > truth_b[s["overtook"]]):
                return False
    return True


def test_the_coverage_test_is_calibrated():
    k = critical_count(N, CONFIDENCE, ALPHA_EACH)
    assert k == 725 and binom.cdf(k, N, CONFIDENCE) <= ALPHA_EACH
    assert binom.cdf(k, N, 0.90) >= 0.73 and binom.cdf(k, N, 0.88) >= 0.99


@pytest.mark.parametrize("case", list(PAIRS))
def test_family_wise_coverage(case):
    a_name, b_name = PAIRS[case]
    if a_name == "segmented":
        mech = make_mechanism(request("gaussian", Segments(("a", "b"))), M)
    else:
        mech_a, mech_b = make_mechanism(request(a_name), M), make_mechanism(request(b_name), M)
    covered = covered_half = one_sided = supported = 0
    for i in range(N):
        if a_name == "segmented":
            plan = make_plan(mech.apply(sketch(TRUE_A + TRUE_B)), mech, ATOMS, "sha256:test", f"r{i}").to_dict()
            a, b = side_of(plan, "a"), side_of(plan, "b")
        else:
            a = side_of(plan_of(mech_a, TRUE_A, f"a{i}"), name="a")
            b = side_of(plan_of(mech_b, TRUE_B, f"b{i}"), name="b")
        c = compare(a, b, ComparisonRequest(confidence=CONFIDENCE))
        covered += covers(c, TRUE_A, TRUE_B)
        covered_half += covers(c, TRUE_A, TRUE_B, shrink=0.5)
        one_sided += len(c["only_in_a"]) + len(c["only_in_b"])
        supported += sum(r["supported"] for r in c["atoms"] + c["only_in_a"] + c["only_in_b"])
    k = critical_count(N, CONFIDENCE, ALPHA_EACH)
    report = (f"{case}: family {c['family']['size']}, difference half-width {c['difference_half_width']:.2f}; "
              f"coverage {covered}/{N} = {covered / N:.4f} (critical {k}); half-width {covered_half}/{N}; "
              f"{one_sided / N:.2f} one-sided atoms and {supported / N:.2f} supported changes per comparison")
    print(report)
    assert covered > k, report          # fails with probability ≤ 2.5e-7 when the coverage is ≥ 0.95
    assert covered_half <= k, report    # the same test rejects intervals of half the width
    assert supported > N / 2, report    # the intervals are not vacuous: real changes are found


# ----------------------------------------------------------------------------- refusals

def _plans(mechanism="gaussian", **over):
    mech = make_mechanism(request(mechanism), M)
    return plan_of(mech, TRUE_A, "ra"), plan_of(mech, TRUE_B, "rb")


def test_refuses_plans_over_different_dictionaries_or_bounds():
    pa, pb = _plans()
    other = dict(pb, dictionary="sha256:other")
    with pytest.raises(Refusal, match="different dictionaries"):
        compare(side_of(pa, name="a"), side_of(other, name="b"))
    for key, value in (("K", 5), ("unit", "user"), ("B", 2.0), ("m", M + 1)):
        with pytest.raises(Refusal, match=key):
            compare(side_of(pa, name="a"), side_of(dict(pb, **{key: value}), name="b"))
    with pytest.raises(Refusal, match="itself"):
        compare(side_of(pa, name="a"), side_of(pa, name="b"))
    with pytest.raises(BadInput, match="named"):
        compare(side_of(pa, name="x"), side_of(pb, name="x"))
    for broken in (dict(pa, noise_scale=None), dict(pa, epsilon=None), dict(pa, mechanism="magic"),
                   dict(pa, noise_scale=0.0)):
        with pytest.raises(BadInput):
            side_of(broken)
    for bad in ({"confidence": 1.0}, {"confidence": 0.2}, {"comparisons": 0}, {"comparisons": True},
                {"equivalence": 1.0}, {"confidence": float("nan")}):
        with pytest.raises(BadInput):
            ComparisonRequest(**bad)


def test_what_the_comparison_says():
    """Shape and meaning on one draw: differences are b − a, rises and falls are supported
    only when the interval excludes 0, one-sided atoms carry the other side's bound."""
    pa, pb = _plans("laplace")
    c = compare(side_of(pa, name="2016"), side_of(pb, name="2017"))
    assert c["kind"] == "comparison" and c["direction"] == "b − a" and c["family"]["size"] == M
    for r in c["atoms"]:
        lo, hi = r["difference_interval"]
        assert r["difference"] == pytest.approx(r["b"]["noisy_mass"] - r["a"]["noisy_mass"])
        assert lo <= r["difference"] <= hi and (hi - lo) / 2 == pytest.approx(c["difference_half_width"])
        assert r["change"] == ("rose" if lo > 0 else "fell" if hi < 0 else "no_supported_change")
        assert r["rank_change"] == r["a"]["rank"] - r["b"]["rank"]
    for r in c["only_in_a"]:
        assert r["b"]["admitted"] is False and r["b"]["upper_bound"] == pytest.approx(
            c["b"]["lowest_admitted"] + c["b"]["half_width"])
    assert c["a"]["name"] == "2016" and c["b"]["admission"] == "by its noisy values"
    json.dumps(c)   # JSON-ready
    # private top-L on both sides: the family is the atoms a plan admits; not being selected bounds nothing
    pa, pb = _plans("private_topL")
    c = compare(side_of(pa, name="a"), side_of(pb, name="b"))
    assert c["family"]["size"] == 5
    assert all(r["b"]["upper_bound"] is None and r["change"] == "no_supported_change" for r in c["only_in_a"])


def test_the_comparison_card_shows_every_compared_atom_and_escapes_labels():
    """The comparison card from a comparison in memory (no store): a chart row per atom of
    either plan, labels escaped and wrapped onto lines of at most 30 characters."""
    import re
    from html import unescape

    from dpspin_sql.card_comparison import render_comparison

    pa, pb = _plans()
    hostile = "<b>refund</b> & a label long enough that the chart has to wrap it onto two lines"
    pa = dict(pa, atoms=[dict(a, label=hostile) if i == 0 else a for i, a in enumerate(pa["atoms"])])
    pb = dict(pb, atoms=[dict(a, label=hostile) if a["atom_id"] == pa["atoms"][0]["atom_id"] else a
                         for a in pb["atoms"]])
    c = compare(side_of(pa, name="a"), side_of(pb, name="b"))
    html = render_comparison(c)
    rows = len(c["atoms"]) + len(c["only_in_a"]) + len(c["only_in_b"])   # one-sided atoms get a row too
    assert "Comparison card" in html and "<b>refund</b>" not in html and "&lt;b&gt;refund&lt;/b&gt;" in html
    assert 'id="difference-chart"' in html
    assert len(re.findall(r'<g class="atom">', html)) == rows
    lines = [unescape(t).strip() for t in re.findall(r"<tspan[^>]*>([^<]*)</tspan>", html)]
    assert lines and all(len(t) <= 30 for t in lines)   # the long label wraps onto lines of ≤ 30


# ----------------------------------------------------------------------------- the CLI

@pytest.fixture
def released(tmp_path, capsys):
    db = synthetic_store(tmp_path / "s.duckdb", m=M, epsilon_budget=10.0)
    paths = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.json"
        rc, _, err = cli(capsys, "release", "--db", db, "--out", out, "--mechanism", "gaussian", "--epsilon", "1",
                         "--unit", "user", "-L", "4")
        assert rc == 0, err
        paths.append(out)
    return db, paths


def test_cli_compare_charges_nothing(released, tmp_path, capsys):
    db, (a, b) = released
    before = snapshot(db)
    out = tmp_path / "ab.json"
    rc, stdout, err = cli(capsys, "compare", a, b, "--out", out)
    assert rc == 0, err
    assert "nothing charged" in stdout and snapshot(db) == before
    c = json.loads(out.read_text())
    assert c["a"]["release_id"] == read_plan(a)["release_id"] and c["b"]["name"] == "b"
    rc, _, err = cli(capsys, "card", out, "--out", tmp_path / "ab.html")
    assert rc == 0, err
    html = (tmp_path / "ab.html").read_text()
    assert "Comparison card" in html and "b − a" in html and "difference-chart" in html
    assert snapshot(db) == before


def test_cli_compare_refusals(released, tmp_path, capsys):
    _, (a, b) = released
    out = tmp_path / "ab.json"
    # a plan naming another dictionary (no sidecar beside it, so only the hashes differ)
    other = tmp_path / "other.json"
    plan = read_plan(b)
    plan["dictionary"] = "sha256:" + "0" * 64
    other.write_text(json.dumps(plan))
    for argv, code, words in (
            (("compare", a, other, "--out", out), 1, "different dictionaries"),
            (("compare", a, a, "--out", out), 1, "itself"),
            (("compare", a, b, "--out", a), 2, "input"),
            (("compare", a, tmp_path / "missing.json", "--out", out), 2, "not found"),
            (("compare", a, b, "--out", out, "--segment", "x"), 2, "not segmented"),
            (("compare", a, b, "--out", out, "--confidence", "1.5"), 2, "--confidence"),
            (("compare", a, b, "--out", tmp_path / "nodir" / "x.json"), 2, "directory"),
    ):
        rc, stdout, err = cli(capsys, *argv)
        assert_one_line_error(rc, stdout, err, code=code)
        assert words in err
        assert not out.exists()
    (tmp_path / "notes.txt").write_text("mine")
    rc, stdout, err = cli(capsys, "compare", a, b, "--out", tmp_path / "notes.txt", "--force")
    assert_one_line_error(rc, stdout, err)
    assert (tmp_path / "notes.txt").read_text() == "mine"


# ----------------------------------------------------------------------------- CFPB

CFPB = SHARED_DATA / "cfpb_complaints" / "complaints.jsonl.gz"
BEFORE = "TRY_CAST(metadata ->> '$.date_received' AS DATE) < TRY_CAST('2017-01-01' AS DATE)"
FROM = "TRY_CAST(metadata ->> '$.date_received' AS DATE) >= TRY_CAST('2017-01-01' AS DATE)"


def test_cfpb_before_and_from_2017(tmp_path, capsys):
    """Two DP SQL releases (a WHERE on the received date), compared; the same two periods as
    one segmented release (one charge), compared part to part; both comparisons charge
    nothing. Each period of the segmented sketch is exactly the filtered release's sketch."""
    if not CFPB.exists():
        pytest.skip(f"CFPB sample not available: {CFPB} is absent")
    from dpspin_sql import assign, store
    from dpspin_sql.request import Bounds
    from dpspin_sql.segment_by import by_periods
    from dpspin_sql.sketch.engines.duckdb import DuckDBEngine
    from dpspin_sql.sql.audit import audit_statement
    from tests.helpers.core import DATA

    db = tmp_path / "cfpb.duckdb"
    assert cli(capsys, "init", "--db", db, "--epsilon-budget", "3", "--delta-budget", "1e-5")[0] == 0
    assert cli(capsys, "load", "--db", db, "--input", CFPB, "--preset", "cfpb")[0] == 0
    assert cli(capsys, "atoms", "load", "--db", db, "--input", DATA / "cfpb_taxonomy.csv")[0] == 0
    con = store.connect(db)
    assign.assign(con, scorer="keyword", K=3)
    # the segmented sketch is the two filtered sketches side by side, exactly
    _, placement = by_periods("date_received", ("2017-01-01",))
    seg = DuckDBEngine(segments=placement).sketch(con, Bounds("record", 3))
    for i, where in enumerate((BEFORE, FROM)):
        audited = audit_statement("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 1, mechanism = 'laplace') "
                                  f"atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) "
                                  f"WHERE {where} GROUP BY atom_id")
        part = DuckDBEngine(audited.filters).sketch(con, Bounds("record", 3))
        assert seg.mass[i * seg.m:(i + 1) * seg.m].tolist() == part.mass.tolist()
        assert part.mass.sum() > 0
    con.close()
    plans = []
    for name, where in (("before", BEFORE), ("from", FROM)):
        out = tmp_path / f"{name}.json"
        statement = ("SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS (epsilon = 0.5, delta = 1e-6, mechanism = 'gaussian', "
                     f"top = 6) atom_id, DPSPIN_MASS(weight) FROM assignments JOIN records USING (record_id) "
                     f"WHERE {where} GROUP BY atom_id")
        rc, _, err = cli(capsys, "sql", "--db", db, statement, "--out", out)
        assert rc == 0, err
        plans.append(out)
    periods = tmp_path / "periods.json"
    rc, _, err = cli(capsys, "release", "--db", db, "--mechanism", "gaussian", "--epsilon", "0.5", "--delta", "1e-6",
                     "--unit", "record", "-L", "6", "--period-col", "date_received", "--boundaries", "2017-01-01",
                     "--out", periods)
    assert rc == 0, err
    before = snapshot(db)
    rc, _, err = cli(capsys, "compare", *plans, "--out", tmp_path / "change.json")
    assert rc == 0, err
    rc, _, err = cli(capsys, "compare", periods, "--segment-a", "before 2017-01-01", "--segment-b",
                     "from 2017-01-01", "--out", tmp_path / "change2.json")
    assert rc == 0, err
    assert snapshot(db) == before                 # nothing charged, nothing written to the store
    for name in ("change.json", "change2.json"):
        c = json.loads((tmp_path / name).read_text())
        assert c["family"]["size"] == 12 and c["atoms"]
        # from 2017 the sample has ten times the complaints: the head themes rose, supported
        assert any(r["change"] == "rose" and r["supported"] for r in c["atoms"])
        assert all(math.isfinite(r["difference_interval"][0]) for r in c["atoms"])
    st = json.loads(cli(capsys, "budget", "--db", db, "--json")[1])
    # two releases and one segmented release were charged; the comparisons charged nothing
    assert [r["epsilon"] for r in st["releases"]] == [pytest.approx(0.5)] * 3
    _verified_narration_of_change(tmp_path, capsys, tmp_path / "change.json", tmp_path / "change2.json")


def _verified_narration_of_change(tmp_path, capsys, *comparisons):
    """Issue 25 item 4: the comparative summary of each comparison passes `dpspin verify`; a change claim the
    two releases do not support, and a claim about a theme in neither plan, are rejected."""
    for path in comparisons:
        c = json.loads(path.read_text())
        summary = tmp_path / (path.stem + ".txt")
        rc, stdout, err = cli(capsys, "summarize", path, "--out", summary)
        assert rc == 0, err
        assert "rose" in summary.read_text() or "fell" in summary.read_text()
        rc, stdout, err = cli(capsys, "verify", path, summary)
        assert rc == 0 and "accepted" in stdout, (summary.read_text(), stdout, err)
        quiet = [r for r in c["atoms"] if not r["supported"]]
        if quiet:
            claim = f"{quiet[0]['label'].capitalize()} rose."
        else:   # every compared atom changed: claim the other direction
            r = c["atoms"][0]
            claim = f"{r['label'].capitalize()} {'fell' if r['change'] == 'rose' else 'rose'}."
        admitted = {r["label"] for key in ("atoms", "only_in_a", "only_in_b") for r in c[key]}
        bad = tmp_path / "bad.txt"
        bad.write_text(claim)
        rc, stdout, _ = cli(capsys, "verify", path, bad, "--json")
        verdict = json.loads(stdout)
        assert rc == 1 and {v["code"] for v in verdict["violations"]} & {"unsupported_change", "reversed_change"}
        dictionary = json.loads(dictionary_sidecar_of(path, c).read_text())["atoms"]
        neither = next(d["label"] for d in dictionary if d["label"] not in admitted)
        bad.write_text(f"{neither.capitalize()} fell from 2017.")
        rc, stdout, _ = cli(capsys, "verify", path, bad, "--json")
        assert rc == 1 and {v["code"] for v in json.loads(stdout)["violations"]} & {"unadmitted_atom", "unknown_theme"}


def dictionary_sidecar_of(path, c):
    from dpspin_sql.outputs import dictionary_sidecar

    return dictionary_sidecar(path.parent / c["a"]["plan"])


def test_the_readme_comparison_example_runs(tmp_path, monkeypatch, capsys):
    """README "Comparing periods, products and releases", after the pipeline's store is built
    as the README builds it (its lines up to `dpspin assign`)."""
    if not CFPB.exists():
        pytest.skip(f"CFPB sample not available: {CFPB} is absent")
    import shlex

    from dpspin_sql import cli as cli_mod
    from tests.test_readme import bash_blocks

    monkeypatch.chdir(tmp_path)
    pipeline = bash_blocks("## The pipeline")[0].strip().splitlines()
    setup = pipeline[:next(i for i, line in enumerate(pipeline) if line.startswith("dpspin assign")) + 1]
    (example,) = bash_blocks("## Comparing periods, products and releases")
    for line in setup + example.strip().splitlines():
        if line.startswith("DATA="):
            continue   # the block's data root: here the real corpora
        argv = shlex.split(line.replace("$DATA", str(SHARED_DATA)).replace("../shared/data", str(SHARED_DATA)))
        assert argv[0] == "dpspin"
        assert cli_mod.run(argv[1:]) == 0, f"{line!r}: {capsys.readouterr().err}"
    c = json.loads((tmp_path / "change.json").read_text())
    assert c["a"]["name"] == "before 2017-01-01" and (tmp_path / "change.html").exists()
