"""Metric functions of docs/DESIGN.md §9 against hand-computed cases."""
from __future__ import annotations

import math

import pytest

from dpspin_sql.experiment import metrics as M


def test_top_l_tie_break_lower_index():
    assert M.top_l([5, 3, 3, 0, 1], 2) == [0, 1]
    assert M.top_l([1, 1, 1], 2) == [0, 1]
    assert M.top_l([0, 2, 2, 7], 3) == [3, 1, 2]


def test_plan_metrics_tie_at_boundary():
    # S* = {0, 1} (atoms 1 and 2 tie at 3; lower index wins). The release admits 2 instead of 1:
    # it misses one top-L atom but keeps all of its mass.
    out = M.plan_metrics([5, 3, 3, 0, 1], admitted=[0, 2], L=2)
    assert out["overlap_at_L"] == 0.5
    assert out["mass_retained"] == 1.0
    assert out["loss_L"] == 0.0
    assert out["mass_topL"] == 8.0


def test_plan_metrics_general_case():
    C = [10, 6, 4, 2, 1]
    out = M.plan_metrics(C, admitted=[0, 3, 4], L=3)      # S* = {0,1,2}, M* = 20
    assert out["overlap_at_L"] == pytest.approx(1 / 3)
    assert out["mass_retained"] == pytest.approx(13 / 20)
    assert out["loss_L"] == pytest.approx(7.0)
    # order of the admitted list does not matter
    assert M.plan_metrics(C, [4, 3, 0], 3) == out


def test_plan_metrics_L_above_positive_atoms():
    # Only two atoms carry mass; S* = Top_3 = {0, 2, 1} (zero-mass tie: lower index).
    out = M.plan_metrics([2, 0, 1, 0], admitted=[0, 3, 2], L=3)
    assert out["overlap_at_L"] == pytest.approx(2 / 3)   # atom 3 is not atom 1 (tie-break)
    assert out["mass_retained"] == 1.0                  # but no mass is lost
    assert out["loss_L"] == 0.0


def test_plan_metrics_empty_sketch_and_prefix():
    out = M.plan_metrics([0, 0, 0], admitted=[2, 1], L=2, prefix="truth_")
    assert out["truth_mass_retained"] is None
    assert out["truth_loss_L"] == 0.0
    assert out["truth_overlap_at_L"] == 0.5   # S* = {0, 1} by the tie-break
    with pytest.raises(ValueError):
        M.plan_metrics([1], [0], 0)


def test_value_errors_full_and_selected():
    full = M.full_errors([1, 2, 3], [1.5, 1, 3])
    assert full == {"full_err_linf": 1.0, "full_err_l1": 1.5, "full_err_l2": pytest.approx(math.sqrt(1.25))}
    # raw noisy values, negative ones included (no display clipping)
    sel = M.selected_errors([1, 2, 3], admitted=[2, 0], noisy_mass=[3.5, -0.0])
    assert sel == {"sel_err_linf": 1.0, "sel_err_l1": 1.5, "sel_err_l2": pytest.approx(math.sqrt(1.25))}
    neg = M.selected_errors([4, 0], admitted=[1], noisy_mass=[-2.0])
    assert neg["sel_err_linf"] == 2.0
    with pytest.raises(ValueError):
        M.full_errors([1, 2], [1])


def test_nonprivate_rank_and_boundary_gap():
    C = [5, 3, 3, 0, 1]
    assert [M.nonprivate_rank(C, j) for j in range(5)] == [1, 2, 3, 5, 4]
    assert M.boundary_gap(C, 2) == 0.0
    assert M.boundary_gap(C, 1) == 2.0
    assert M.boundary_gap(C, 5) is None


def test_text_metrics_hand_computed():
    assert M.jaccard(M.tokens("a b c"), M.tokens("B c d")) == 0.5
    assert M.jaccard([], []) == 1.0
    assert M.bigrams("x y z") == {("x", "y"), ("y", "z")}
    assert M.keyphrases("Rank 1: dry skin, and the pump dispenser.") == {"rank", "dry skin", "pump dispenser"}
    same = M.text_metrics("dry skin is common.", "dry skin is common.")
    assert all(v == pytest.approx(1.0) for v in same.values())
    apart = M.text_metrics("dry skin", "long wait")
    assert apart["text_token_jaccard"] == 0.0 and apart["text_tfidf_cosine"] == 0.0


def test_verifier_metrics_rates():
    text = "Dry skin is more common than pump dispenser. Long wait appears too."
    violations = [{"code": "unadmitted_atom", "span": "Long wait"},
                  {"code": "unsupported_comparison", "span": "more common than"}]
    out = M.verifier_metrics(text, violations, ["dry skin", "pump dispenser"], accepted=False, attempts_used=2)
    assert out["atom_mentions"] == 3
    assert out["unsupported_atom_rate"] == pytest.approx(1 / 3)
    assert out["comparisons"] == 1 and out["unsupported_comparison_rate"] == 1.0
    assert out["verifier_accepted"] == 0.0 and out["verifier_attempts"] == 2
    clean = M.verifier_metrics("Nothing to compare.", [], ["dry skin"], accepted=True, attempts_used=1)
    assert clean["unsupported_atom_rate"] == 0.0 and clean["unsupported_comparison_rate"] == 0.0


def test_label_mentions_longest_first():
    assert M.count_label_mentions("dry skin and very dry skin", ["dry skin", "skin"]) == 2
    assert M.mentions_label("The Probe Theme appears.", "probe theme")
    assert not M.mentions_label("probes themes", "probe theme")


def test_describe():
    d = M.describe([1, 2, 3, None, float("nan")])
    assert d == {"mean": 2.0, "min": 1.0, "max": 3.0, "std": 1.0, "n": 3}
    assert M.describe([4])["std"] == 0.0
    assert M.describe([])["mean"] is None
