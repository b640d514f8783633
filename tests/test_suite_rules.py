"""The suite's own rules (tests/conftest.py): which tests form the fast loop, and that CI
fails rather than skips for a missing prerequisite."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import tests.conftest as rules

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Mark:
    name: str


@dataclass
class FakeModule:
    __name__: str


@dataclass
class Item:
    """The parts of a pytest item the rule reads."""

    nodeid: str
    module_name: str = "tests.test_x"
    own: tuple[str, ...] = ()
    inherited: tuple[str, ...] = ()
    fixturenames: tuple[str, ...] = ()
    originalname: str = ""
    name: str = ""
    own_markers: list = field(default_factory=list)

    def __post_init__(self):
        self.module = FakeModule(self.module_name)
        self.own_markers = [Mark(m) for m in self.own]
        self.name = self.name or self.nodeid.rsplit("::", 1)[-1]
        self.originalname = self.originalname or self.name.split("[")[0]

    def get_closest_marker(self, name):
        return Mark(name) if name in self.own or name in self.inherited else None


def test_guards_run_whatever_they_cost_and_budgets_take_the_cheapest_first(monkeypatch):
    monkeypatch.setattr(rules, "MODULE_BUDGET", {"test_x": 1.0})
    items = [Item("t::guarded", own=("guard",)), Item("t::module_guard", inherited=("guard",)),
             Item("t::cheap_a"), Item("t::cheap_b"), Item("t::mid"), Item("t::dear"), Item("t::new"),
             Item("t::marked", own=("slow",)), Item("t::spark", inherited=("spark",)),
             Item("t::data", fixturenames=("shared_data",)), Item("t::own_slow", own=("slow",), inherited=("guard",))]
    measured = {"t::guarded": 30.0, "t::module_guard": 5.0, "t::cheap_a": 0.3, "t::cheap_b": 0.3, "t::mid": 0.5,
                "t::dear": 2.0}
    kind = rules.classify(items, measured)
    assert kind == {"t::guarded": "guard", "t::module_guard": "guard", "t::new": "budget", "t::cheap_a": "budget",
                    "t::cheap_b": "budget", "t::mid": "over budget", "t::dear": "over budget", "t::marked": "marked",
                    "t::spark": "service", "t::data": "service", "t::own_slow": "marked"}


def test_scale_modules_keep_only_their_guards_and_named_guards_count(monkeypatch):
    monkeypatch.setattr(rules, "GUARDS", {"test_y": ("test_one",), "test_z": rules.ALL})
    items = [Item("a::cheap", module_name="tests.test_dp_audit"), Item("a::g", module_name="tests.test_dp_audit",
                                                                        own=("guard",)),
             Item("y::test_one[p1]", module_name="tests.test_y"), Item("y::test_two", module_name="tests.test_y"),
             Item("z::anything", module_name="tests.test_z")]
    kind = rules.classify(items, {"y::test_one[p1]": 9.0, "y::test_two": 9.0})
    assert kind == {"a::cheap": "scale", "a::g": "guard", "y::test_one[p1]": "guard", "y::test_two": "over budget",
                    "z::anything": "guard"}


@pytest.mark.parametrize("item", [Item("t::g", own=("guard",), fixturenames=("pg_dsn",)),
                                  Item("t::g", inherited=("guard", "postgres")),
                                  Item("t::g", own=("guard", "slow"))])
def test_a_guard_that_needs_a_service_or_is_slow_is_an_error(item):
    with pytest.raises(pytest.UsageError):
        rules.classify([item], {})


def test_every_named_guard_exists():
    """A renamed test must not silently leave the fast loop: every name in GUARDS is a test
    of its module."""
    import importlib

    for module, names in rules.GUARDS.items():
        mod = importlib.import_module(f"tests.{module}")
        if names == rules.ALL:
            continue
        for name in names:
            assert callable(getattr(mod, name.split("[")[0], None)), f"{module}.{name}"


SKIPPING = """
import pytest

def test_skips():
    pytest.skip("no such server")

def test_needs_data():
    from tests.helpers.prereq import missing_prerequisite
    missing_prerequisite("the corpus is absent")

@pytest.mark.skipif(True, reason="no browser")
def test_marked():
    pass

def test_not_required_here():
    from tests.helpers.prereq import environment_skip
    environment_skip("R is no prerequisite")
"""


@pytest.mark.parametrize("in_ci", [False, True])
def test_ci_fails_where_a_developer_skips(tmp_path, in_ci):
    (tmp_path / "test_skipping.py").write_text(textwrap.dedent(SKIPPING))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "DPSPIN_CI": "1" if in_ci else "0"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_skipping.py")],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    tail = proc.stdout.strip().splitlines()[-1]
    if in_ci:
        # a skip at setup is an error; a machine condition the project does not require still skips
        assert proc.returncode == 1 and "2 failed, 1 skipped, 1 error" in tail, proc.stdout[-2000:]
        assert "CI has every prerequisite" in proc.stdout or "skipped in CI" in proc.stdout
    else:
        assert proc.returncode == 0 and "4 skipped" in tail, proc.stdout[-2000:]


@pytest.mark.slow
def test_every_named_guard_is_a_collected_test():
    """Each GUARDS entry, a test name or a full `name[id]`, matches a test pytest collects:
    a renamed test or parametrisation must not silently leave the fast loop."""
    modules = [f"tests/{m}.py" for m in rules.GUARDS]
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *modules],
                          capture_output=True, text=True, cwd=REPO)
    ids = {line.strip() for line in proc.stdout.splitlines() if "::" in line}
    assert ids, proc.stdout[-2000:]
    for module, names in rules.GUARDS.items():
        if names == rules.ALL:
            continue
        for name in names:
            prefix = f"tests/{module}.py::{name}"
            assert any(i == prefix or i.startswith(prefix + "[") for i in ids), prefix
