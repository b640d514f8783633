"""Regenerate docs/card.png: run `dpspin demo` in a scratch directory and photograph its
release card in headless Chromium (the browser tests' driver, tests/helpers/browser.py),
1280 px wide, the whole page.

    .venv/bin/python bench/card_png.py              # writes docs/card.png
    .venv/bin/python bench/card_png.py --out x.png

Needs Chromium and chromium-driver (`bash .ci/install-browser`). The demo's corpus is
seeded, its noise is not: each run draws a new plan, so the picture changes in its values,
never in its shape.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: .venv/bin/python bench/card_png.py --out /tmp/card.png",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "card.png", help="where the PNG goes")
    ap.add_argument("--width", type=int, default=1280, help="the window's width in CSS pixels")
    args = ap.parse_args(argv)

    from dpspin_sql.cli import run
    from tests.helpers.browser import Browser, missing_reason

    reason = missing_reason()
    if reason:
        print(f"card_png: no headless browser: {reason} (bash .ci/install-browser)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="dpspin-card-png-") as tmp:
        db = Path(tmp) / "demo.duckdb"
        if run(["demo", "--db", str(db)]) != 0:
            print("card_png: dpspin demo failed", file=sys.stderr)
            return 1
        with Browser(width=args.width, height=800) as browser:
            browser.open(db.with_name("release_card.html"))
            png = browser.screenshot(Path(tmp) / "card.png")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        part = args.out.with_name(args.out.name + ".part")
        shutil.copy(png, part)
        part.replace(args.out)
    print(f"card_png: wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
