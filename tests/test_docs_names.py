"""Docs pinned to code: every `module.name` that docs/, the README and the package's own
docstrings and comments name resolves to something that exists.

A name is checked when its first part is a module of the package (`release.release`,
`sketch.canonical_facts`, `sql.run.run_sql`, `dpspin_sql.verify.verify`): it must import and
every later part must be an attribute (a function, class, constant or submodule). A backticked
file name (`ledger.py`, `sketch_user.sql`, `test_ledger.py`) must be a file of the repository.
Plan fields written the same way (`bins.high`, `privacy_cost.epsilon`) start with no module's
name and are not names of code.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache
from pathlib import Path

import pytest

import dpspin_sql
from tests.conftest import REPO

NAME = re.compile(r"`((?:dpspin_sql\.)?[a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?`")
FILE = re.compile(r"`(?!\.\./)(?:[\w./-]*/)?([\w-]+\.(?:py|sql))`")   # ../shared/… lies outside
USER_FILES = {"query.sql"}   # the file a user writes in docs/WAREHOUSE.md's example, not one of ours
SOURCES = ["README.md", "docs/*.md", "dpspin_sql/**/*.py", "queries/*.sql", "udfs/*"]


@cache
def modules() -> dict[str, str]:
    """The names a doc may use for a module → its dotted path: a top-level module by its own
    name (`release`, `sketch`), a nested one with its parent (`sql.run`, `verify.rules.bins`),
    any with the package's name in front."""
    found: dict[str, str] = {}
    for info in pkgutil.walk_packages(dpspin_sql.__path__, "dpspin_sql."):
        parts = info.name.split(".")[1:]
        found[info.name] = info.name
        for i in range(len(parts)):
            if len(parts) - i >= 2 or len(parts) == 1:
                found.setdefault(".".join(parts[i:]), info.name)
    return found


@cache
def repo_files() -> frozenset[str]:
    return frozenset(p.name for p in REPO.rglob("*") if p.suffix in (".py", ".sql") and ".venv" not in p.parts)


def _has(obj: object, attr: str) -> bool:
    if hasattr(obj, attr):
        return True
    fields = getattr(obj, "__dataclass_fields__", None) or getattr(obj, "__annotations__", None) or {}
    return attr in fields


def resolve(name: str) -> str | None:
    """None when `name` resolves (or names no module of the package); else why it does not."""
    parts = name.split(".")
    mods = modules()
    for cut in range(len(parts), 0, -1):    # the longest prefix that names a module
        dotted = mods.get(".".join(parts[:cut]))
        if dotted is not None:
            break
    else:
        if parts[0] != "dpspin_sql":
            return None
        dotted, cut = "dpspin_sql", 1
    rest = parts[cut:]
    if rest and rest[0] in ("py", "sql", "md", "json", "yaml", "toml", "txt", "csv", "parquet", "duckdb"):
        return None   # a file name, checked by FILE
    obj: object = importlib.import_module(dotted)
    for i, attr in enumerate(rest):
        if not _has(obj, attr):
            try:   # a subpackage not imported yet (dpspin_sql.udfs, a namespace of .sql files)
                obj = importlib.import_module(".".join([dotted, *rest[:i + 1]]))
                continue
            except ImportError:
                return f"{dotted} has no {'.'.join(rest[:i + 1])}"
        obj = getattr(obj, attr, None)
    return None


def sources() -> list[Path]:
    return sorted({p for g in SOURCES for p in REPO.glob(g) if p.is_file()})


def names_in(text: str) -> set[str]:
    return set(NAME.findall(text))


def test_every_code_name_in_the_docs_resolves():
    bad = {}
    for path in sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        for n in sorted(names_in(text)):
            if why := resolve(n):
                bad[f"{path.relative_to(REPO)}: {n}"] = why
    assert not bad, f"docs name code that does not exist: {bad}"


def test_every_file_the_docs_name_exists():
    missing = {}
    for path in sources():
        text = path.read_text(encoding="utf-8", errors="replace")
        gone = sorted(f for f in set(FILE.findall(text))   # `dpspin_sql.sql` is a module, not a file
                      if f not in repo_files() and f not in USER_FILES and f not in modules())
        if gone:
            missing[str(path.relative_to(REPO))] = gone
    assert not missing, f"docs name files the repository does not have: {missing}"


@pytest.mark.parametrize("name, resolves", [
    ("release.release", True),
    ("dpspin_sql.release.release", True),
    ("sql.run.run_sql", True),
    ("run.run_sql", True),
    ("request.ReleaseRequest", True),
    ("verify.verify", True),
    ("pipeline.release_and_charge", True),        # no module `pipeline`: not a name of code
    ("bins.high", True),                          # a plan field
    ("release.release_and_charge", False),
    ("sketch.no_such_function", False),
    ("request.ReleaseRequest.no_such_field", False),
    ("dpspin_sql.pipeline", False),
    ("dpspin_sql.install", True),                 # the package's lazy attribute
    ("duckdb.connect", True),                     # not engines.duckdb: a nested module needs its parent
    ("engines.duckdb.no_such_engine", False),
])
def test_the_resolver(name, resolves):
    assert (resolve(name) is None) is resolves
