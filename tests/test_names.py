"""One vocabulary table (dpspin_sql/names.py): docs/OPTIONS.md is its generated text; every
flag it names is a `dpspin release` flag, every SQL key is accepted by the DP SQL option
parser, every grid key by the grid reader; an unknown option or grid key is refused with
the nearest known name, and a BigQuery option with its dpspin name."""
from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from dpspin_sql import names
from dpspin_sql.cli import app
from dpspin_sql.cli.common import FLAGS, SQL_SETTINGS
from dpspin_sql.errors import AuditRefusal, BadInput
from dpspin_sql.experiment.grid import GRID_KEYS, expand
from dpspin_sql.sql.options import OPTION_OF, OPTIONS, read_options

REPO = Path(__file__).resolve().parents[1]


def test_options_md_is_the_generated_text():
    assert (REPO / "docs" / "OPTIONS.md").read_text(encoding="utf-8") == names.markdown(), \
        "regenerate it: python -m dpspin_sql.names --markdown > docs/OPTIONS.md"


def test_every_flag_of_the_table_is_a_release_flag():
    release = typer.main.get_command(app).commands["release"]
    opts = {o for p in release.params for o in (*p.opts, *getattr(p, "secondary_opts", ()))}
    for n in names.TABLE:
        for flag in n.flags:
            assert flag in opts, f"{n.field}: {flag} is not a dpspin release flag"


def test_the_maps_read_from_the_table():
    assert FLAGS == {n.field: n.named for n in names.TABLE if n.flags or n.said}
    assert FLAGS["B"] == "-B" and FLAGS["interval_confidence"] == "--confidence"
    assert set(OPTIONS) == set(names.SQL_KEYS)
    assert all(OPTIONS[k].release_name == n.field for k, n in names.SQL_KEYS.items())
    assert OPTION_OF["K"] == "max_atoms_per_record" and OPTION_OF["L"] == "top"
    assert GRID_KEYS["unit"] == "units" and GRID_KEYS["B"] == "B"
    assert SQL_SETTINGS == {"delta": "OPTIONS (delta = …)", "selection_fraction": "OPTIONS (selection_fraction = …)"}


VALUES = {"number": "0.5", "integer": "3", "column": "user_id"}


def clause(options: str):
    statement = (f"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS ({options}) atom_id, DPSPIN_MASS(weight) "
                 "FROM assignments GROUP BY atom_id")
    from dpspin_sql.sql.dialect import parse

    return parse(statement).args["hint"]


@pytest.mark.parametrize("key", sorted(names.SQL_KEYS))
def test_every_sql_key_is_accepted_by_the_parser(key):
    spec = OPTIONS[key]
    value = f"'{spec.choices[0]}'" if spec.kind == "choice" else VALUES[spec.kind]
    base = {"epsilon": "1", "mechanism": "'gaussian'"}
    base[key] = value
    opts = read_options(clause(", ".join(f"{k} = {v}" for k, v in base.items())))
    assert key in opts.values


@pytest.mark.parametrize("key, said", [
    ("epsilom", "did you mean epsilon?"),
    ("privacy_unit", "did you mean privacy_unit_column?"),
    ("max_groups_contributed", "in dpspin it is max_atoms_per_record"),
    ("kappa", "in dpspin it is max_atoms_per_record"),
    ("max_rows_contributed", "in dpspin it is contribution_bound"),
])
def test_an_unknown_sql_option_is_refused_with_the_nearest_name(key, said):
    with pytest.raises(AuditRefusal) as caught:
        read_options(clause(f"epsilon = 1, mechanism = 'gaussian', {key} = 1"))
    assert f"unknown option {key!r}" in str(caught.value) and said in str(caught.value)


def test_an_unknown_grid_key_is_refused_with_the_nearest_name(tmp_path):
    with pytest.raises(BadInput, match="did you mean epsilon"):
        expand({"datasets": {"cfpb": {}}, "defaults": {"epsilom": [1]}}, None)
    with pytest.raises(BadInput, match="in a grid it is K"):
        expand({"datasets": {"cfpb": {"max_atoms_per_record": [3]}}}, None)
    with pytest.raises(BadInput, match="did you mean datasets"):
        expand({"dataset": {"cfpb": {}}}, None)


def test_every_grid_key_is_a_grid_setting():
    from dpspin_sql.experiment.grid import SCALARS, SWEPT

    for key in names.GRID:
        assert key in SWEPT or key in SCALARS or key == "unit", key
