"""The verifier package: public API, independence from the rest of dpspin_sql, rule registry."""
from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import dpspin_sql.verify as verify_pkg
from dpspin_sql.verify import rules


def test_public_api_names():
    from dpspin_sql.verify import BIN_WORDS, Verdict, Violation, margin_of, plan_dict, verify, verify_claims  # noqa: F401
    assert set(BIN_WORDS) == {"high", "moderate", "low"}


def test_imports_nothing_else_from_dpspin_sql():
    """Anyone can run the checker on a plan file: it needs no other part of the project."""
    code = ("import sys, dpspin_sql.verify; "
            "print('\\n'.join(m for m in sys.modules if m.startswith('dpspin_sql')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out and all(m == "dpspin_sql" or m.startswith("dpspin_sql.verify") for m in out), out


def test_every_rule_module_is_registered_once_with_one_entry_point():
    names = {m.name for m in pkgutil.iter_modules(rules.__path__)}
    registered = [r.__name__.rsplit(".", 1)[-1] for r in rules.RULES]
    assert sorted(registered) == sorted(names) and len(set(registered)) == len(registered)
    for name in names:
        mod = importlib.import_module(f"{rules.__name__}.{name}")
        assert callable(getattr(mod, "check", None)), name


def test_no_dead_helpers_left():
    assert not hasattr(verify_pkg, "plan_has_atoms")


def test_public_vocabulary_is_the_documented_list():
    """docs/VERIFIER.md lists the capitalised words that are never names; the code uses exactly that list."""
    import re
    from pathlib import Path

    from dpspin_sql.verify.vocab import PUBLIC_VOCABULARY
    doc = (Path(__file__).parent.parent / "docs" / "VERIFIER.md").read_text(encoding="utf-8")
    section = doc[doc.index("**Public vocabulary**"):]
    block = re.search(r"```text\n(.*?)\n```", section, re.S).group(1)
    assert block.split() == list(PUBLIC_VOCABULARY)


def test_verify_signature_is_the_documented_one():
    import inspect

    from dpspin_sql.verify import verify, verify_claims
    assert list(inspect.signature(verify).parameters) == ["summary", "plan", "dictionary", "require_theme"]
    assert list(inspect.signature(verify_claims).parameters) == ["claims", "plan", "dictionary", "require_theme"]
