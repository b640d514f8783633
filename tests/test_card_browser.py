"""The release card in a real headless Chromium (Debian's chromium + chromium-driver,
driven over WebDriver by tests/helpers_browser.py): it renders with no console error and
no network request, has one table row per admitted atom, draws its chart (SVG elements of
nonzero size), keeps hostile labels as text, fits a laptop screen, and prints.

docs/card.png is the demo's card photographed by bench/card_png.py.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from dpspin_sql.cli import run
from tests.helpers.browser import Browser, missing_reason
from tests.helpers.card import HOSTILE, make_release

REASON = missing_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"no headless browser: {REASON}")
ROOT = Path(__file__).resolve().parents[1]

PROBE = """
const box = el => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
const svg = document.querySelector('#mass-chart');
return {
  rows: document.querySelectorAll('#plan-table tbody tr').length,
  labels: Array.from(document.querySelectorAll('#plan-table td.label')).map(td => td.textContent),
  svg: svg ? box(svg) : null,
  bars: Array.from(document.querySelectorAll('#mass-chart rect.bar')).map(box),
  errorbars: Array.from(document.querySelectorAll('#mass-chart g.errorbar')).map(box),
  chartLabels: Array.from(document.querySelectorAll('#mass-chart text.label')).map(t => t.textContent),
  scripts: document.querySelectorAll('script').length,
  injected: document.querySelectorAll('main h1').length,
  handlers: Array.from(document.querySelectorAll('*')).filter(
      el => Array.from(el.attributes).some(a => a.name.startsWith('on'))).length,
  resources: performance.getEntriesByType('resource').length,
  scrollWidth: document.documentElement.scrollWidth,
  innerWidth: window.innerWidth,
  title: document.title,
  tableVisible: box(document.querySelector('#plan-table')),
};
"""


@pytest.fixture(scope="module")
def browser():
    with Browser(width=1366, height=768) as b:
        yield b


@pytest.fixture(scope="module")
def hostile_card(tmp_path_factory):
    d = tmp_path_factory.mktemp("card-browser")
    rel = make_release(d, run)
    out = d / "card.html"
    assert run(["card", str(rel["plan"]), "--out", str(out), "--db", str(rel["db"]),
                "--summary", str(rel["summary"])]) == 0
    return out, rel


def severe(browser) -> list:
    return [m for m in browser.console() if m.get("level") == "SEVERE"]


def test_the_console_check_sees_errors(browser, tmp_path):
    """Power of the console check: a page whose load the same CSP blocks logs an error."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
                   "content=\"default-src 'none'\"><title>x</title></head><body>"
                   "<img src=\"http://127.0.0.1:9/x.png\"></body></html>")
    browser.console()
    browser.open(bad)
    assert any("Content Security Policy" in m["message"] for m in severe(browser))


@pytest.mark.parametrize("width, height", [(1366, 768), (1280, 800)])
def test_card_renders(browser, hostile_card, width, height):
    out, rel = hostile_card
    atoms = rel["plan_dict"]["atoms"]
    browser.set_size(width, height)
    browser.console()
    browser.open(out)
    got = browser.js(PROBE)
    assert severe(browser) == []
    assert got["title"].startswith("Release card — gaussian plan")
    assert got["rows"] == len(atoms) == 6
    assert got["labels"] == [a["label"] for a in atoms]            # hostile labels stay text
    assert set(HOSTILE) <= set(got["labels"])
    assert got["scripts"] == 0 and got["handlers"] == 0 and got["injected"] == 1   # only the card's own h1
    assert got["resources"] == 0                                   # nothing fetched
    w, h = got["svg"]
    assert w > 600 and h > 200
    assert len(got["bars"]) == len(got["errorbars"]) == len(atoms)
    assert all(bw > 0 and bh > 0 for bw, bh in got["bars"])
    assert all(ew > 10 and eh > 0 for ew, eh in got["errorbars"])
    for shown, a in zip(got["chartLabels"], atoms, strict=True):   # whole where it fits, its end always kept
        shown = shown.split(". ", 1)[1]
        words = a["label"].split()
        if len(a["label"]) <= 2 * 30 and max(map(len, words)) <= 30:
            assert shown.split() == words
        else:
            assert shown.endswith(words[-1]) or shown.endswith("…")
    assert got["scrollWidth"] <= got["innerWidth"], "the card scrolls sideways on a laptop screen"
    assert got["tableVisible"][1] > 0


def test_card_prints(browser, hostile_card):
    out, _ = hostile_card
    browser.open(out)
    browser.cdp("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        style = browser.js("return [getComputedStyle(document.body).fontSize, "
                           "getComputedStyle(document.querySelector('#plan-table thead')).display, "
                           "document.querySelector('#mass-chart').getBoundingClientRect().width]")
        assert style[0] == "13.3333px" and style[1] == "table-header-group" and style[2] > 0   # 10pt print type
    finally:
        browser.cdp("Emulation.setEmulatedMedia", {"media": ""})
    pdf = browser.pdf()
    assert pdf.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", pdf))
    assert 1 <= pages <= 6
    assert severe(browser) == []


@pytest.mark.slow
def test_demo_card_renders(browser, tmp_path):
    db = tmp_path / "demo.duckdb"
    assert run(["demo", "--db", str(db)]) == 0
    card = tmp_path / "release_card.html"
    browser.set_size(1280, 800)
    browser.console()
    browser.open(card)
    got = browser.js(PROBE)
    assert severe(browser) == [] and got["rows"] == 10 and len(got["bars"]) == 10 and got["resources"] == 0
    png = browser.screenshot(tmp_path / "card.png")
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width == 1280 and height > 1500                       # the whole page, not just the viewport



@pytest.mark.slow
def test_the_docs_screenshot_script_photographs_the_demo(tmp_path):
    """bench/card_png.py is how docs/card.png is made: it runs the demo and writes a whole-page PNG."""
    import subprocess
    import sys

    out = tmp_path / "card.png"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "card_png.py"), "--out", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    head = out.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) [0] == 1280
    assert not out.with_name("card.png.part").exists()
