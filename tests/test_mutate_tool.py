"""bench/mutate.py's own mechanics: a mutant applies exactly where its table says, a table that
does not check is refused, the shipped table parses (stale snippets are `--list`'s job)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mutate", REPO / "bench" / "mutate.py")
mutate = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mutate", mutate)   # dataclasses look their module up while it loads
_spec.loader.exec_module(mutate)


def test_a_mutant_applies_once_or_at_its_occurrence():
    m = mutate.Mutant("x", "f", "a <= b", "a < b", "privacy", ("t",))
    assert m.apply("if a <= b:") == "if a < b:"
    for text in ("nothing here", "a <= b or a <= b"):
        with pytest.raises(ValueError):
            m.apply(text)
    second = mutate.Mutant("x", "f", "a <= b", "a < b", "privacy", ("t",), occurrence=2)
    assert second.apply("a <= b or a <= b") == "a <= b or a < b"
    with pytest.raises(ValueError):
        mutate.Mutant("x", "f", "a <= b", "a < b", "privacy", ("t",), occurrence=3).apply("a <= b or a <= b")


@pytest.mark.parametrize("body, message", [
    ('[[mutant]]\nid = "a"\nfile = "f"\noriginal = "x"\nreplacement = "x"\nclass = "privacy"\ntests = ["t"]\n',
     "must differ"),
    ('[[mutant]]\nid = "a"\nfile = "f"\noriginal = "x"\nreplacement = "y"\nclass = "odd"\ntests = ["t"]\n', "class"),
    ('[[mutant]]\nid = "a"\nfile = "f"\noriginal = "x"\nreplacement = "y"\nclass = "other"\ntests = ["@nope"]\n',
     "no group"),
    ('[[mutant]]\nid = "a"\nfile = "f"\noriginal = "x"\nreplacement = "y"\nclass = "other"\n', "missing 'tests'"),
    ('[[mutant]]\nid = "A b"\nfile = "f"\noriginal = "x"\nreplacement = "y"\nclass = "other"\ntests = ["t"]\n', "id"),
    ("", "no [[mutant]]"),
])
def test_a_table_that_does_not_check_is_refused(tmp_path, body, message):
    path = tmp_path / "m.toml"
    path.write_text(body)
    with pytest.raises(mutate.TableError, match=message.replace("[", r"\[")):
        mutate.load_table(path)


def test_the_shipped_table_parses_and_groups_expand():
    mutants = mutate.load_table(mutate.TABLE)
    assert len(mutants) >= 100 and len({m.id for m in mutants}) == len(mutants)
    assert all(t and not t.startswith("@") for m in mutants for t in m.tests)
    assert sum(m.klass == "privacy" for m in mutants) >= 90
    assert mutate.select(mutants, ["ledger-"], None) and all(m.id.startswith("ledger-")
                                                              for m in mutate.select(mutants, ["ledger-"], None))
