"""`dpspin card`: one self-contained, escaped HTML page per release, with the plan, the
chart, the mechanism, the ledger history and check, and the summary's fresh verdict.
(The page in a real browser: tests/test_card_browser.py.)"""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import duckdb
import pytest

from dpspin_sql.cli import run
from tests.helpers.card import HOSTILE, Page, make_release
from tests.helpers.core import assert_one_line_error, cli, synthetic_store


@pytest.fixture(scope="module")
def rel(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("card"), run)


def card(capsys, rel, out, *extra):
    return cli(capsys, "card", rel["plan"], "--out", out, *extra)


def test_full_card(rel, tmp_path, capsys):
    out = tmp_path / "card.html"
    rc, stdout, err = card(capsys, rel, out, "--db", rel["db"], "--summary", rel["summary"])
    assert rc == 0, err
    assert f"release card written to {out}" in stdout and err == ""
    text = out.read_text(encoding="utf-8")
    page = Page(text)
    plan = rel["plan_dict"]
    # self-contained: nothing to fetch, no script, no handler; a CSP forbids loads anyway
    assert {t for t, _ in page.tags}.isdisjoint({"script", "img", "link", "iframe", "object", "embed", "base"})
    for tag, attrs in page.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        assert not any(v and ("http:" in v or "https:" in v or "javascript:" in v)
                       for k, v in attrs.items() if k != "content"), (tag, attrs)
    assert "http://" not in text and "https://" not in text and "url(" not in text and "@import" not in text
    csp = [a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]
    assert "@media print" in text
    # the table: one row per admitted atom, labels as text (escaped, never markup)
    assert len(page.plan_rows) == len(plan["atoms"]) == 6
    assert page.label_cells == [a["label"] for a in plan["atoms"]]
    assert set(HOSTILE) <= {a["label"] for a in plan["atoms"]}
    for row, a in zip(page.plan_rows, plan["atoms"]):
        assert row[0] == str(a["rank"]) and row[3] == f"{a['noisy_mass']:.1f}"
        assert row[4] == f"{a['interval'][0] + 0.0:.1f} – {a['interval'][1] + 0.0:.1f}"
        assert row[-1] == a["bin"]
    # the chart: one bar and one error bar per atom
    assert page.count("svg") >= 1 and page.count("rect", "bar") == 6 and page.count("g", "errorbar") == 6
    # mechanism and parameters
    params = page.by_id["parameters"]
    for needle in ("gaussian", "user (adjacency add_drop)", "zcdp", f"{plan['noise_scale']:.4g}",
                   f"{plan['comparison_margin']:.4g}", plan["dictionary"], plan["release_id"], plan["ledger_chain"],
                   "family-wise"):
        assert needle in params, needle
    # ledger: this release, its chain, verified, the budget left
    budget = page.by_id["budget-table"]
    assert plan["release_id"] in budget and plan["ledger_chain"][:23] in budget and "this plan" in budget
    assert "ledger verified" in text and "left ε = 8" in text
    # summary: re-verified, from the template
    assert page.by_id["summary-text"] == rel["summary"].read_text(encoding="utf-8").rstrip("\n")
    assert "accepted by the verifier (re-run now)" in text
    assert "deterministic template decoder" in page.by_id["summary-source"]


def test_minimal_card_says_what_is_missing(rel, tmp_path, capsys):
    out = tmp_path / "card.html"
    rc, _, err = card(capsys, rel, out)
    assert rc == 0, err
    text = out.read_text(encoding="utf-8")
    assert "No store given" in text and "No summary given" in text and "No attempts file given" in text
    assert len(Page(text).plan_rows) == 6


def test_card_without_dictionary_sidecar(rel, tmp_path, capsys):
    plan = tmp_path / "lonely.json"
    shutil.copy(rel["plan"], plan)
    out = tmp_path / "card.html"
    rc, _, err = cli(capsys, "card", plan, "--out", out, "--summary", rel["summary"])
    assert rc == 0, err
    assert "no public dictionary" in err and "no public dictionary" in out.read_text(encoding="utf-8")


def test_tampered_ledger_is_shown(rel, tmp_path, capsys):
    db = tmp_path / "store.duckdb"
    shutil.copy(rel["db"], db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE ledger SET epsilon = epsilon / 2")
    con.close()
    out = tmp_path / "card.html"
    rc, _, err = card(capsys, rel, out, "--db", db)
    assert rc == 0
    assert "note: the ledger does not verify" in err
    text = out.read_text(encoding="utf-8")
    assert "ledger check failed" in text and "does not match its hash" in text


def test_plan_from_another_store(rel, tmp_path, capsys):
    other = synthetic_store(tmp_path / "other.duckdb", m=12, epsilon_budget=5.0)
    out = tmp_path / "card.html"
    rc, _, err = card(capsys, rel, out, "--db", other)
    assert rc == 0
    assert f"release {rel['plan_dict']['release_id']} is not in this store's ledger" in err
    assert "is not in this store" in out.read_text(encoding="utf-8")


def test_rejected_summary(rel, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    top = rel["plan_dict"]["atoms"][0]["label"]
    bad.write_text(f"{top} has a released mass of 4242.0. Password reset is the most common theme.\n")
    out = tmp_path / "card.html"
    rc, _, err = card(capsys, rel, out, "--summary", bad)
    assert rc == 0
    assert "note: the summary is rejected by the verifier" in err
    text = out.read_text(encoding="utf-8")
    assert "rejected by the verifier (re-run now)" in text and "4242.0" in text
    assert "unsupported_number" in text


@pytest.mark.parametrize("attempts, says", [
    ({"decoder": "llm", "max_attempts": 2, "accepted": True, "fallback_used": True, "attempts": [
        {"attempt": 1, "source": "llm", "accepted": False, "violations": [{"code": "unsupported_number"}]},
        {"attempt": 2, "source": "llm", "accepted": False, "violations": [{"code": "wrong_bin"}]},
        {"attempt": "fallback", "source": "template", "accepted": True, "violations": []}]},
     "the template fallback, after 2 rejected model attempt(s)"),
    ({"decoder": "llm", "max_attempts": 3, "accepted": True, "fallback_used": False, "attempts": [
        {"attempt": 1, "source": "llm", "accepted": False, "violations": [{"code": "<b>x</b>"}]},
        {"attempt": 2, "source": "llm", "accepted": True, "violations": []}]},
     "the model, accepted at attempt 2"),
], ids=["fallback", "model"])
def test_attempt_sources(rel, tmp_path, capsys, attempts, says):
    path = tmp_path / "attempts.json"
    path.write_text(json.dumps(attempts))
    out = tmp_path / "card.html"
    rc, _, err = card(capsys, rel, out, "--summary", rel["summary"], "--attempts", path)
    assert rc == 0, err
    page = Page(out.read_text(encoding="utf-8"))
    assert says in page.by_id["summary-source"]
    assert page.by_id["attempts-table"].count("rejected") == sum(not a["accepted"] for a in attempts["attempts"])
    assert "<b>" not in out.read_text(encoding="utf-8").split("attempts-table", 1)[1]


def test_bad_input(rel, tmp_path, capsys):
    out = tmp_path / "card.html"
    tampered = tmp_path / "tampered.json"
    plan = dict(rel["plan_dict"])
    plan["atoms"] = plan["atoms"] + [dict(plan["atoms"][0], rank=7, atom_id=11)]
    tampered.write_text(json.dumps(plan))
    not_attempts = tmp_path / "x.json"
    not_attempts.write_text("[1, 2]")
    existing = tmp_path / "existing.html"
    existing.write_text("keep me")
    cases = [
        ["card", tmp_path / "missing.json", "--out", out],
        ["card", tampered, "--out", out],
        ["card", rel["plan"], "--out", rel["plan"]],
        ["card", rel["plan"], "--out", out, "--db", rel["db"].with_name("nope.duckdb")],
        ["card", rel["plan"], "--out", rel["db"], "--db", rel["db"]],
        ["card", rel["plan"], "--out", out, "--summary", tmp_path / "nope.txt"],
        ["card", rel["plan"], "--out", out, "--attempts", not_attempts],
        ["card", rel["plan"], "--out", existing],
        ["card", rel["plan"], "--out", tmp_path / "no" / "card.html"],
        ["card", rel["plan"]],
    ]
    for args in cases:
        rc, stdout, err = cli(capsys, *args)
        assert_one_line_error(rc, stdout, err)
        assert not out.exists(), args
    assert existing.read_text() == "keep me"
    rc, _, err = cli(capsys, "card", rel["plan"], "--out", existing, "--force")
    assert rc == 0, err and existing.read_text().startswith("<!DOCTYPE html>")


def test_card_is_listed_after_verify(capsys):
    rc, stdout, _ = cli(capsys, "--help")
    assert rc == 0
    names = [ln.split()[0] for ln in stdout.split("Commands:")[1].splitlines() if ln.strip()]
    assert names.index("card") == names.index("verify") + 1


@pytest.mark.slow
def test_demo_writes_a_card(tmp_path, capsys):
    rc, stdout, err = cli(capsys, "demo", "--db", tmp_path / "demo.duckdb")
    assert rc == 0, err
    card_path = tmp_path / "release_card.html"
    assert f"release card (open it in a browser): {card_path}" in stdout
    page = Page(card_path.read_text(encoding="utf-8"))
    assert len(page.plan_rows) == 10 and page.count("rect", "bar") == 10
    assert "accepted by the verifier" in page.by_id["summary"] and "ledger verified" in page.by_id["budget"]


@pytest.mark.slow
def test_a_demo_without_a_store_names_only_what_exists(capsys):
    """Without --db the demo's store is temporary and deleted: the card says so and names no
    store file; the plan, summary and card it names are there afterwards."""
    import re

    rc, stdout, err = cli(capsys, "demo")
    assert rc == 0, err
    card_path = Path(re.search(r"release card \(open it in a browser\): (\S+)", stdout).group(1))
    plan_path = Path(re.search(r"plan (\S+);", stdout).group(1))
    assert card_path.exists() and plan_path.exists() and plan_path.with_name("summary.txt").exists()
    page = Page(card_path.read_text(encoding="utf-8"))
    assert "demo.duckdb" not in page.by_id["budget"] and "temporary store that was deleted" in page.by_id["budget"]
    assert "ledger verified" in page.by_id["budget"]
    assert not list(Path(card_path.parent).glob("*.duckdb"))
    shutil.rmtree(card_path.parent)


def test_docs_screenshot_is_kept():
    """docs/card.png is the demo's card as Chromium draws it (bench/card_png.py rewrites it)."""
    head = (Path(__file__).resolve().parents[1] / "docs" / "card.png").read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24])[0] >= 1000


def test_card_of_a_plan_without_intervals(rel, tmp_path, capsys):
    """A schema-1 plan (no interval fields, no notes) and odd metadata still make a card."""
    plan = dict(rel["plan_dict"], schema_version="1", interval_confidence="ninety-five")
    for key in ("interval_half_width", "notes", "bin_rule", "ledger_chain"):
        plan.pop(key)
    plan["atoms"] = [{k: v for k, v in a.items() if k not in ("interval", "support_interval")} for a in plan["atoms"]]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(plan))
    shutil.copy(rel["plan"].with_name("plan.dictionary.json"), tmp_path / "old.dictionary.json")
    out = tmp_path / "card.html"
    rc, _, err = cli(capsys, "card", path, "--out", out, "--db", rel["db"])
    assert rc == 0, err
    page = Page(out.read_text(encoding="utf-8"))
    assert len(page.plan_rows) == 6 and all(row[4] == "–" for row in page.plan_rows)
    assert page.count("rect", "bar") == 6 and page.count("g", "errorbar") == 0
    assert "accuracy intervals" not in page.by_id["parameters"]
