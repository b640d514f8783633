"""Measure what the README's first command installs: a fresh virtual environment, the core
package (`pip install .`, no extras), its size on disk and the largest distributions in it.

    .venv/bin/python bench/install_size.py              # measure, print, write docs/install_size.json
    .venv/bin/python bench/install_size.py --readme     # ... and put the size in README.md

The README's sentence between `<!-- install-size -->` and `<!-- /install-size -->` is
written from the measurement only (tests/test_readme.py checks the two agree), so the size
it states is measured, never typed. pip reads the package index this machine is set up
with; a measurement takes a minute or two.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "docs" / "install_size.json"
MARK = re.compile(r"<!-- install-size -->.*?<!-- /install-size -->", re.S)


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def measure(python: str = sys.executable) -> dict:
    """Install the checkout into a new venv; its size, pip's time and the largest distributions."""
    with tempfile.TemporaryDirectory(prefix="dpspin-install-size-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-cache-dir", str(ROOT)]
        start = time.monotonic()
        subprocess.run(pip, check=True, cwd=tmp)
        seconds = time.monotonic() - start
        site = next(venv.glob("lib/python*/site-packages"))
        listing = subprocess.run([str(venv / "bin" / "python"), "-c", _SIZES], check=True, capture_output=True,
                                 text=True).stdout
        dists = sorted(json.loads(listing).items(), key=lambda kv: -kv[1])
        return {"python": f"{sys.version_info.major}.{sys.version_info.minor}",
                "site_packages_mb": round(_tree_bytes(site) / 1e6), "venv_mb": round(_tree_bytes(venv) / 1e6),
                "pip_seconds": round(seconds, 1), "distributions": len(dists),
                "largest": [{"name": n, "mb": round(b / 1e6)} for n, b in dists[:5]],
                "measured_at": time.strftime("%Y-%m-%d")}


# run inside the new venv: bytes per installed distribution, from its RECORD
_SIZES = """
import importlib.metadata as md, json, os
out = {}
for d in md.distributions():
    total = 0
    for f in d.files or []:
        p = d.locate_file(f)
        if os.path.isfile(p):
            total += os.path.getsize(p)
    out[d.metadata["Name"]] = total
print(json.dumps(out))
"""


def readme_sentence(record: dict) -> str:
    names = ", ".join(d["name"] for d in record["largest"][:3])
    return (f"<!-- install-size -->the core install only: {record['site_packages_mb']} MB of packages, "
            f"the largest {names} (measured by bench/install_size.py)<!-- /install-size -->")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: .venv/bin/python bench/install_size.py --readme",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readme", action="store_true", help="write the measured size into README.md")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose venv module makes the venv")
    args = ap.parse_args(argv)
    record = measure(args.python)
    RECORD.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"install_size: {record['site_packages_mb']} MB of packages in {record['distributions']} "
          f"distributions (venv {record['venv_mb']} MB), pip {record['pip_seconds']} s; largest: "
          + ", ".join(f"{d['name']} {d['mb']} MB" for d in record["largest"]))
    if args.readme:
        readme = ROOT / "README.md"
        text = readme.read_text(encoding="utf-8")
        if not MARK.search(text):
            print("install_size: README.md has no <!-- install-size --> mark", file=sys.stderr)
            return 2
        readme.write_text(MARK.sub(readme_sentence(record), text, count=1), encoding="utf-8")
        print("install_size: README.md updated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
