"""Mutation testing of the privacy core: plant one small bug at a time, run the tests that
should catch it, and report which mutants the tests kill.

    .venv/bin/python bench/mutate.py                      # every mutant in bench/mutants.toml
    .venv/bin/python bench/mutate.py --only sketch-record-top-k-plus-one --only ledger-
    .venv/bin/python bench/mutate.py --fast               # ... with only the fast loop's tests (-m "not slow")
    .venv/bin/python bench/mutate.py --list               # the table, checked, without running it
    .venv/bin/python bench/mutate.py --jobs 2 --out bench/out/mutation.md --json bench/out/mutation.json

The mutants live in a data file (bench/mutants.toml; `--table` for another), one
[[mutant]] each: the file, an exact snippet of it, its replacement, a class ("privacy"
for a bug that could release more than the plan accounts for, "other" otherwise), the
tests to run and why the mutant matters. A snippet must occur exactly once in its file
(or name `occurrence`, 1-based), so a table stays reviewable and a snippet that edits of
the code have moved or removed is reported as *stale*, never silently skipped. Test
entries are pytest node ids or paths; `@name` expands a list of [groups]. A mutant is
killed when its tests fail (or time out); it survives when they pass.

Never the working tree: each worker copies the checkout (git's tracked and untracked,
not ignored files) into a scratch directory of its own, applies one mutant there, runs
the tests with that copy first on the import path (the editable install's mapping of
`dpspin_sql.queries` / `dpspin_sql.udfs` is pointed at the copy too, in child processes
as well), and puts the file back. The tests' own subprocesses inherit the copy. Before
the mutants, the union of all tests runs once unmutated in every copy: a test that fails
there would "kill" every mutant that lists it, so the run stops instead.

Exit status: 0 when every privacy mutant is killed, 1 when one survives or is stale,
2 for a table that does not parse or check.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from queue import Queue

REPO = Path(__file__).resolve().parents[1]
TABLE = Path(__file__).with_name("mutants.toml")
CLASSES = ("privacy", "verifier", "other")
# the tests that start a real service (Spark, PostgreSQL, a model server) are left out unless
# asked for: minutes each, and a mutant of the privacy core must be caught without them
SERVICES_OFF = "not spark and not postgres and not llm"
_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


# ----------------------------------------------------------------------------- the table

@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    original: str
    replacement: str
    klass: str
    tests: tuple[str, ...]
    why: str = ""
    occurrence: int | None = None

    def apply(self, text: str) -> str:
        """`text` with this mutant applied; ValueError when the snippet is not where it belongs."""
        count = text.count(self.original)
        if self.occurrence is None:
            if count != 1:
                raise ValueError(f"the snippet occurs {count} times in {self.file} (want exactly 1, "
                                 "or name its occurrence)")
            return text.replace(self.original, self.replacement, 1)
        if not 1 <= self.occurrence <= count:
            raise ValueError(f"occurrence {self.occurrence} of the snippet in {self.file}, which has {count}")
        at = -1
        for _ in range(self.occurrence):
            at = text.index(self.original, at + 1)
        return text[:at] + self.replacement + text[at + len(self.original):]


class TableError(Exception):
    """The mutant table does not parse or check."""


def load_table(path: Path) -> list[Mutant]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TableError(f"{path}: {exc}") from None
    groups = data.get("groups", {})
    if not isinstance(groups, dict) or not all(isinstance(v, list) for v in groups.values()):
        raise TableError(f"{path}: [groups] must map names to lists of tests")
    mutants, seen = [], set()
    for i, entry in enumerate(data.get("mutant", []), start=1):
        where = f"{path} mutant #{i} ({entry.get('id', '?')})"
        unknown = set(entry) - {"id", "file", "original", "replacement", "class", "tests", "why", "occurrence"}
        if unknown:
            raise TableError(f"{where}: unknown keys {sorted(unknown)}")
        for key in ("id", "file", "original", "replacement", "class", "tests"):
            if key not in entry:
                raise TableError(f"{where}: missing {key!r}")
        mid = entry["id"]
        if not _ID.match(mid) or mid in seen:
            raise TableError(f"{where}: the id must be unique, lower case, [a-z0-9_.-]")
        seen.add(mid)
        if entry["class"] not in CLASSES:
            raise TableError(f"{where}: class must be one of {CLASSES}")
        if entry["original"] == entry["replacement"] or not entry["original"]:
            raise TableError(f"{where}: the replacement must differ from a non-empty original")
        tests: list[str] = []
        for t in entry["tests"]:
            if t.startswith("@"):
                if t[1:] not in groups:
                    raise TableError(f"{where}: no group {t[1:]!r}")
                tests.extend(groups[t[1:]])
            else:
                tests.append(t)
        if not tests:
            raise TableError(f"{where}: no tests")
        mutants.append(Mutant(mid, entry["file"], entry["original"], entry["replacement"], entry["class"],
                              tuple(dict.fromkeys(tests)), entry.get("why", ""), entry.get("occurrence")))
    if not mutants:
        raise TableError(f"{path}: no [[mutant]] entries")
    return mutants


def select(mutants: list[Mutant], only: list[str], klass: str | None) -> list[Mutant]:
    """The mutants whose id equals or starts with one of `only` (all without), of `klass`."""
    chosen = [m for m in mutants if not only or any(m.id == o or m.id.startswith(o) for o in only)]
    return [m for m in chosen if klass is None or m.klass == klass]


# ----------------------------------------------------------------------------- scratch copies

def tree_files(root: Path) -> list[str]:
    """The checkout as git sees it: tracked files and untracked ones that are not ignored."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    return sorted({p for p in out.decode().split("\0") if p and (root / p).is_file()})


_SITECUSTOMIZE = '''\
# Written by bench/mutate.py: point an editable install's package mapping at this copy.
import sys
_ORIGINAL, _COPY = {original!r}, {copy!r}
for _name, _mod in list(sys.modules.items()):
    _mapping = getattr(_mod, "MAPPING", None)
    if _name.startswith("__editable__") and isinstance(_mapping, dict):
        # the install may point at another checkout of the project (a git worktree run with
        # the main checkout's venv): its root is the folder that holds its dpspin_sql
        _roots = {{_ORIGINAL}}
        if isinstance(_mapping.get("dpspin_sql"), str):
            _roots.add(_mapping["dpspin_sql"].rstrip("/").rsplit("/", 1)[0])
        for _k, _v in list(_mapping.items()):
            for _root in _roots:
                if isinstance(_v, str) and (_v == _root or _v.startswith(_root + "/")):
                    _mapping[_k] = _COPY + _v[len(_root):]
                    break
'''


class Scratch:
    """One worker's copy of the checkout, and how to run pytest in it."""

    def __init__(self, base: Path, index: int, files: list[str]):
        self.root = base / f"tree{index}"
        shared = REPO.parent / "shared"
        if shared.is_dir() and not (base / "shared").exists():
            (base / "shared").symlink_to(shared)   # ../shared beside the copy, as beside the checkout
        self.hooks = base / f"hooks{index}"
        for rel in files:
            dest = self.root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest)
        self.hooks.mkdir(parents=True)
        (self.hooks / "sitecustomize.py").write_text(
            _SITECUSTOMIZE.format(original=str(REPO), copy=str(self.root)), encoding="utf-8")

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.hooks), str(self.root)]
                                            + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env.pop("PYTEST_ADDOPTS", None)
        env["DPSPIN_MUTATION_RUN"] = "1"
        return env

    def check_imports(self, python: str) -> None:
        """The copy, not the checkout, is what the tests import (the packages and their SQL)."""
        code = ("import dpspin_sql, dpspin_sql.queries as q, dpspin_sql.udfs as u, tests; "
                "print(dpspin_sql.__file__); print(q.__file__); print(u.__file__); print(list(tests.__path__)[0])")
        proc = subprocess.run([python, "-c", code], cwd=self.root, env=self.env(), capture_output=True, text=True)
        paths = proc.stdout.split()
        if proc.returncode != 0 or len(paths) != 4 or not all(Path(p).is_relative_to(self.root) for p in paths):
            raise SystemExit(f"mutate: the scratch copy is not what Python imports ({proc.stdout.strip()} "
                             f"{proc.stderr.strip()[-400:]})")

    def pytest(self, python: str, tests: list[str], marker: str | None, timeout: float) -> tuple[str, float, str]:
        """('pass' | 'fail' | 'timeout' | 'none' (nothing selected), seconds, output tail)."""
        cmd = [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header", "-o", "addopts=",
               *(["-m", marker] if marker else []), *tests]
        start = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=self.root, env=self.env(), capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            tail = (exc.stdout or b"")[-1500:]
            return "timeout", time.monotonic() - start, tail.decode(errors="replace") if isinstance(tail, bytes) \
                else str(tail)
        took = time.monotonic() - start
        tail = (proc.stdout + proc.stderr)[-3000:]
        if proc.returncode == 0:
            return "pass", took, tail
        if proc.returncode == 5:
            return "none", took, tail
        return "fail", took, tail


# ----------------------------------------------------------------------------- running

@dataclass
class Outcome:
    id: str
    klass: str
    file: str
    tests: list[str]
    status: str            # killed | survived | stale | untested
    seconds: float = 0.0
    detail: str = ""
    why: str = ""
    failed: list[str] = field(default_factory=list)


def _failed_tests(tail: str) -> list[str]:
    return sorted(set(re.findall(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", tail, flags=re.M)))[:3]


def run_mutant(scratch: Scratch, mutant: Mutant, python: str, marker: str | None, timeout: float) -> Outcome:
    target = scratch.root / mutant.file
    out = Outcome(mutant.id, mutant.klass, mutant.file, list(mutant.tests), "stale", why=mutant.why)
    try:
        original = target.read_text(encoding="utf-8")
        mutated = mutant.apply(original)
    except (OSError, ValueError) as exc:
        out.detail = str(exc)
        return out
    stat = target.stat()
    try:
        target.write_text(mutated, encoding="utf-8")
        result, out.seconds, tail = scratch.pytest(python, list(mutant.tests), marker, timeout)
    finally:
        target.write_text(original, encoding="utf-8")
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if result in ("fail", "timeout"):
        out.status, out.failed = "killed", _failed_tests(tail)
        out.detail = "timed out" if result == "timeout" else ", ".join(out.failed)
    elif result == "none":
        out.status, out.detail = "untested", f"no test selected{' by -m ' + repr(marker) if marker else ''}"
    else:
        out.status, out.detail = "survived", "the tests pass with the mutant"
    return out


def baseline(scratches: list[Scratch], mutants: list[Mutant], python: str, marker: str | None,
             timeout: float) -> None:
    """Every listed test passes unmutated (in the first copy: the copies are the same files)."""
    tests = list(dict.fromkeys(t for m in mutants for t in m.tests))
    result, took, tail = scratches[0].pytest(python, tests, marker, timeout * 4)
    if result not in ("pass", "none"):
        raise SystemExit(f"mutate: the listed tests do not pass unmutated ({result}, {took:.0f} s); "
                         f"fix them first:\n{tail[-2500:]}")


def table_markdown(outcomes: list[Outcome], marker: str | None) -> str:
    head = ("| mutant | class | file | tests run | result |\n"
            "|---|---|---|---|---|\n")
    rows = []
    for o in outcomes:
        shown = "<br>".join(f"`{t.removeprefix('tests/')}`" for t in o.tests)
        if o.status == "killed":
            first = o.failed[0].removeprefix("tests/") if o.failed else ""
            result = "**killed**" + (" (timed out)" if o.detail == "timed out" else f" by `{first}`" if first else "")
        else:
            result = {"survived": "SURVIVED", "stale": "STALE", "untested": "UNTESTED"}[o.status]
            result += f" ({o.detail})" if o.status != "survived" else ""
        why = f"<br><sub>{o.why}</sub>" if o.why else ""
        rows.append(f"| `{o.id}`{why} | {o.klass} | `{o.file}` | {shown} | {result} |")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("killed", "survived", "stale", "untested")}
    privacy = [o for o in outcomes if o.klass == "privacy"]
    summary = (f"{len(outcomes)} mutants{' (tests selected by -m ' + repr(marker) + ')' if marker else ''}: "
               f"{counts['killed']} killed, {counts['survived']} survived, {counts['stale']} stale, "
               f"{counts['untested']} untested; privacy mutants: "
               f"{sum(o.status == 'killed' for o in privacy)}/{len(privacy)} killed.")
    return summary + "\n\n" + head + "\n".join(rows) + "\n"


def combined_markdown(full: list[dict], fast: list[dict]) -> str:
    """One table of two runs' JSON (`--json`): every listed test, and the fast loop's only."""
    by_fast = {o["id"]: o for o in fast}
    rows = ["| mutant | class | file | tests listed | killed by the listed tests | killed by the fast loop |",
            "|---|---|---|---|---|---|"]

    def cell(o: dict | None) -> str:
        if o is None:
            return "(not run)"
        if o["status"] != "killed":
            return o["status"].upper()
        first = o["failed"][0].removeprefix("tests/") if o.get("failed") else "timed out"
        return f"**killed** by `{first}`"

    for o in full:
        shown = "<br>".join(f"`{t.removeprefix('tests/')}`" for t in o["tests"])
        why = f"<br><sub>{o['why']}</sub>" if o.get("why") else ""
        rows.append(f"| `{o['id']}`{why} | {o['klass']} | `{o['file']}` | {shown} | {cell(o)} | "
                    f"{cell(by_fast.get(o['id']))} |")
    count = lambda runs, klass: (sum(o["status"] == "killed" for o in runs if klass is None or o["klass"] == klass),
                                 sum(1 for o in runs if klass is None or o["klass"] == klass))
    lines = []
    for name, runs in (("the listed tests", full), ("the fast loop", fast)):
        k, n = count(runs, None)
        kp, np_ = count(runs, "privacy")
        kv, nv = count(runs, "verifier")
        lines.append(f"- {name}: {k}/{n} killed; privacy {kp}/{np_}, verifier {kv}/{nv}")
    return "\n".join(lines) + "\n\n" + "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter,
                                 epilog="example: .venv/bin/python bench/mutate.py --only sketch- --jobs 2")
    ap.add_argument("--table", type=Path, default=TABLE, help="the mutant table (default bench/mutants.toml)")
    ap.add_argument("--only", action="append", default=[], help="run the mutants whose id is or starts with this")
    ap.add_argument("--class", dest="klass", choices=CLASSES, help="run only this class of mutants")
    ap.add_argument("--fast", action="store_true", help='run only the listed tests the fast loop runs (-m "not slow")')
    ap.add_argument("--marker", default=SERVICES_OFF,
                    help=f"run only the listed tests this -m expression selects (default {SERVICES_OFF!r}; '' for all)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="scratch copies run at once")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant before it counts as killed")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run of the listed tests")
    ap.add_argument("--list", action="store_true", help="check the table against the tree and print it; run nothing")
    ap.add_argument("--out", type=Path, help="write the Markdown table here too")
    ap.add_argument("--json", type=Path, help="write the outcomes as JSON here")
    ap.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"), help="the interpreter with pytest")
    ap.add_argument("--render", nargs=2, type=Path, metavar=("FULL_JSON", "FAST_JSON"),
                    help="print one table of two earlier runs (--json of a run and of a --fast run); run nothing")
    args = ap.parse_args(argv)
    if args.render:
        text = combined_markdown(*(json.loads(p.read_text(encoding="utf-8")) for p in args.render))
        print(text)
        if args.out:
            args.out.write_text(text, encoding="utf-8")
        return 0
    marker = "not slow" if args.fast else (args.marker or None)

    try:
        mutants = select(load_table(args.table), args.only, args.klass)
    except TableError as exc:
        print(f"mutate: {exc}", file=sys.stderr)
        return 2
    if not mutants:
        print("mutate: no mutant matches --only/--class", file=sys.stderr)
        return 2
    stale = []
    for m in mutants:
        try:
            m.apply((REPO / m.file).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            stale.append(Outcome(m.id, m.klass, m.file, list(m.tests), "stale", detail=str(exc), why=m.why))
    if args.list:
        for m in mutants:
            state = next((s.detail for s in stale if s.id == m.id), "ok")
            print(f"{m.id:48s} {m.klass:8s} {m.file:40s} {len(m.tests):2d} test(s)  {state}")
        return 1 if stale else 0
    runnable = [m for m in mutants if m.id not in {s.id for s in stale}]
    jobs = max(1, min(args.jobs, len(runnable) or 1))
    outcomes: dict[str, Outcome] = {s.id: s for s in stale}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dpspin-mutate-") as tmp:
        files = tree_files(REPO)
        scratches = [Scratch(Path(tmp), i, files) for i in range(jobs)]
        scratches[0].check_imports(args.python)
        if runnable and not args.no_baseline:
            print("mutate: baseline: the listed tests, unmutated", file=sys.stderr)
            baseline(scratches, runnable, args.python, marker, args.timeout)
        free: Queue[Scratch] = Queue()
        for s in scratches:
            free.put(s)
        lock = threading.Lock()

        def work(m: Mutant) -> Outcome:
            s = free.get()
            try:
                return run_mutant(s, m, args.python, marker, args.timeout)
            finally:
                free.put(s)

        with ThreadPoolExecutor(jobs) as pool:
            futures = {pool.submit(work, m): m for m in runnable}
            for done, fut in enumerate(as_completed(futures), start=1):
                o = fut.result()
                outcomes[o.id] = o
                with lock:
                    print(f"mutate: [{done}/{len(runnable)}] {o.id}: {o.status} ({o.seconds:.1f} s) {o.detail}",
                          file=sys.stderr)
    ordered = [outcomes[m.id] for m in mutants]
    text = table_markdown(ordered, marker)
    print(text)
    print(f"mutate: {time.monotonic() - started:.0f} s with {jobs} job(s)", file=sys.stderr)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(o) for o in ordered], indent=1) + "\n", encoding="utf-8")
    bad = [o for o in ordered if o.klass in ("privacy", "verifier") and o.status != "killed"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
