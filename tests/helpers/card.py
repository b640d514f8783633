"""A release with hostile labels (HTML in them), made with the real CLI, for the card tests."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from tests.helpers.core import install_atoms, new_store, put_assignments, put_records

# labels are public but not plain text: every one must reach the page as text, never markup
HOSTILE = ["<script>alert(1)</script> login failure", "refund & <b>billing</b> delay",
           "<img src=x onerror=alert(2)> app crash", "</td></tr></table><h1>broken</h1> table theme"]
M = 12


def hostile_store(path: Path, epsilon_budget: float = 10.0) -> Path:
    """400 users × 3 records; the four hostile atoms get almost all the mass (about 90 each
    against under 10), far beyond the noise (σ ≈ 5), so they are admitted whatever it draws."""
    con = new_store(path, epsilon_budget=epsilon_budget)
    labels = HOSTILE + [f"theme {chr(97 + i)}{i}" for i in range(len(HOSTILE), M)]
    install_atoms(con, list(range(M)), labels)
    records, rows = [], []
    for u in range(400):
        for r in range(3):
            rid = f"r{u:03d}-{r}"
            records.append((rid, f"u{u:03d}", "target"))
            for k in range(1 + (u + r) % 3):
                rows.append((rid, (u % 4) if k == 0 else 4 + (u * 7 + r * 3 + k * 5) % (M - 4),
                             1.0 if k == 0 else 0.05))
    put_records(con, records)
    put_assignments(con, rows)
    con.close()
    return path


def make_release(directory: Path, cli_run) -> dict:
    """store, plan (+ sidecar), summary.txt and verifier_attempts.json, through the CLI."""
    db = hostile_store(directory / "store.duckdb")
    plan = directory / "plan.json"
    assert cli_run(["release", "--db", str(db), "--mechanism", "gaussian", "--epsilon", "2", "--unit", "user",
                    "-L", "6", "--out", str(plan), "-q"]) == 0
    summary = directory / "summary.txt"
    assert cli_run(["summarize", str(plan), "--out", str(summary)]) == 0
    return {"db": db, "plan": plan, "summary": summary, "attempts": directory / "verifier_attempts.json",
            "plan_dict": json.loads(plan.read_text(encoding="utf-8"))}


class Page(HTMLParser):
    """The parts of a card the tests read: every start tag with its attributes, the cells
    of the plan table and the text of elements by id."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self._stack: list[tuple[str, dict]] = []
        self.plan_rows: list[list[str]] = []
        self.label_cells: list[str] = []
        self.by_id: dict[str, str] = {}
        self._text_for: list[list] = []
        self.feed(text)
        self.close()

    def _inside(self, tag: str, **attrs) -> bool:
        return any(t == tag and all(a.get(k) == v for k, v in attrs.items()) for t, a in self._stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag in ("meta", "br", "link", "img", "input", "col"):
            return
        self._stack.append((tag, a))
        if tag == "tr" and self._inside("table", id="plan-table") and self._inside("tbody"):
            self.plan_rows.append([])
        if tag == "td" and self._inside("table", id="plan-table"):
            self.plan_rows[-1].append("")
        if "id" in a:
            self._text_for.append([a["id"], len(self._stack), ""])

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        while self._stack:
            t, a = self._stack.pop()
            depth = len(self._stack) + 1
            while self._text_for and self._text_for[-1][1] == depth:
                key, _, text = self._text_for.pop()
                self.by_id[key] = text
            if t == tag:
                break

    def handle_data(self, data):
        for entry in self._text_for:
            entry[2] += data
        if self._inside("table", id="plan-table") and self._inside("tbody") and self.plan_rows:
            if self._inside("td"):
                self.plan_rows[-1][-1] += data
            if self._inside("td", **{"class": "label"}):
                if len(self.label_cells) < len(self.plan_rows):
                    self.label_cells.append("")
                self.label_cells[-1] += data

    def count(self, tag: str, cls: str | None = None) -> int:
        return sum(1 for t, a in self.tags if t == tag and (cls is None or cls in (a.get("class") or "").split()))
