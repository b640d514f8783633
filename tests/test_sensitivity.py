"""docs/DESIGN.md §2: the sensitivity table, exactly, for every unit, adjacency and B; and its
fixed-point form (the integer d_in the OpenDP measurements are charged at)."""
from __future__ import annotations

import math

import pytest

from dpspin_sql.errors import BadInput
from dpspin_sql.sensitivity import Sensitivity, fixed_point_d_in, sensitivity
from dpspin_sql.sketch import SCALE, fixed_bound

B_VALUES = [1.0, 2.0, 5.0, 0.5, 1 / 3, 0.1, 2.0 ** -24, 7.25, 1000.0]


def spec_row(unit: str, adjacency: str, B: float) -> tuple[float, float, float]:
    """docs/DESIGN.md §2 verbatim: (Δ1, Δ2, Δcoord)."""
    b = 1.0 if unit == "record" else B
    if adjacency == "add_drop":
        return b, b, b
    return 2 * b, math.sqrt(2) * b, b


@pytest.mark.parametrize("unit", ["record", "user"])
@pytest.mark.parametrize("adjacency", ["add_drop", "replace"])
@pytest.mark.parametrize("B", B_VALUES)
def test_table_exact(unit, adjacency, B):
    s = sensitivity(unit, adjacency, B)
    assert (s.l1, s.l2, s.linf) == spec_row(unit, adjacency, B)  # exact, no tolerance


def test_literal_rows():
    assert sensitivity("record", "add_drop") == Sensitivity(1, 1, 1)
    assert sensitivity("record", "replace") == Sensitivity(2, math.sqrt(2), 1)
    assert sensitivity("user", "add_drop", 2.0) == Sensitivity(2, 2, 2)
    assert sensitivity("user", "replace", 2.0) == Sensitivity(4, 2 * math.sqrt(2), 2)
    assert sensitivity("user", "replace", 5.0) == Sensitivity(10, 5 * math.sqrt(2), 5)


@pytest.mark.parametrize("adjacency", ["add_drop", "replace"])
@pytest.mark.parametrize("B", [0.5, 2.0, 5.0, 100.0])
def test_record_level_ignores_B(adjacency, B):
    assert sensitivity("record", adjacency, B) == sensitivity("record", adjacency, 1.0)


@pytest.mark.parametrize("unit,adjacency,B", [
    ("bogus", "add_drop", 1.0), ("user", "bogus", 1.0), ("user", "add_drop", 0.0), ("user", "add_drop", -1.0),
    ("user", "replace", float("nan")), ("user", "replace", float("inf")), ("user", "add_drop", -float("inf")),
])
def test_bad_arguments_are_bad_input(unit, adjacency, B):
    """The table is looked up only by a request, which refuses these before the lookup."""
    from dpspin_sql.request import ReleaseRequest

    with pytest.raises(BadInput):
        ReleaseRequest(mechanism="laplace", unit=unit, adjacency=adjacency, B=B)


# ----------------------------------------------------------------------------- fixed point

BOUNDS = [1, 2, 3, 7, 1000, SCALE, SCALE + 1, fixed_bound(1 / 3), fixed_bound(2.0), fixed_bound(5.0),
          fixed_bound(1000.0), 2 ** 40 + 12345, 3 * 2 ** 59]


@pytest.mark.parametrize("bound", BOUNDS)
def test_fixed_point_add_drop(bound):
    d = fixed_point_d_in("user", "add_drop", bound)
    assert (d.l1, d.l2, d.linf) == (bound, bound, bound)
    assert all(type(x) is int for x in (d.l1, d.l2, d.linf))


@pytest.mark.parametrize("bound", BOUNDS)
def test_fixed_point_replace(bound):
    d = fixed_point_d_in("user", "replace", bound)
    assert d.l1 == 2 * bound and d.linf == bound
    assert all(type(x) is int for x in (d.l1, d.l2, d.linf))
    # l2 = ceil(√2 · bound), exactly, in integers: the smallest integer whose square ≥ 2·bound²
    assert d.l2 * d.l2 >= 2 * bound * bound
    assert (d.l2 - 1) * (d.l2 - 1) < 2 * bound * bound
    # a valid upper bound of the real-valued Δ2 (never below it)
    assert d.l2 >= math.sqrt(2) * bound * (1 - 1e-15)


@pytest.mark.parametrize("unit", ["record", "user"])
@pytest.mark.parametrize("adjacency", ["add_drop", "replace"])
@pytest.mark.parametrize("B", [1.0, 2.0, 5.0, 1 / 3])
def test_fixed_point_matches_table(unit, adjacency, B):
    """The integer d_in, divided by 2^S, is the design's entry at the enforced bound floor(B·2^S)/2^S
    (l2 under replace rounded up by less than one fixed-point unit)."""
    bound = SCALE if unit == "record" else fixed_bound(B)
    d = fixed_point_d_in(unit, adjacency, bound)
    b_eff = bound / SCALE
    row = sensitivity(unit, adjacency, b_eff if unit == "user" else 1.0)
    assert d.l1 == row.l1 * SCALE and d.linf == row.linf * SCALE
    assert 0 <= d.l2 - row.l2 * SCALE < 1 + 1e-6
    # the enforced bound never exceeds B (1 at record level)
    b_unit = 1.0 if unit == "record" else B
    assert bound <= b_unit * SCALE < bound + 1


def test_fixed_bound_is_floor():
    assert fixed_bound(1.0) == SCALE
    assert fixed_bound(2.0) == 2 * SCALE
    assert fixed_bound(1 / 3) == SCALE // 3
    assert fixed_bound(2.0 ** -24) == 1
    assert fixed_bound(2.0 ** -25) == 0
    assert fixed_bound(0.1) == math.floor(0.1 * SCALE)
