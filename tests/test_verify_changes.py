"""Claims of change checked against a comparison of two releases (docs/VERIFIER.md *Comparisons of two
releases*; rules/change.py, verify/comparison.py).

The comparison below is written out by hand so that every verdict is fixed: "late fees" rose
(supported) and overtook "billing disputes", which fell; "card fraud" shows no supported change
and is not about the same; "account closure" is about the same; "debt collection calls" is
admitted before 2017 only (no supported change), "identity theft" from 2017 only (a supported
rise through the one-sided bound); "gift cards" and "mortgage escrow" are in the dictionary and
in neither plan. The same sentences against a single plan are rejected (rule `temporal`).
"""
from __future__ import annotations

import copy

import pytest

from dpspin_sql.verify import verify
from dpspin_sql.verify.comparison import is_comparison, side_markers, side_plan


def side(v, rank, lo, hi):
    return {"noisy_mass": v, "rank": rank, "interval": [lo, hi]}

def row(aid, label, a, b, diff_iv, change, ratio, ratio_iv, same):
    return {"atom_id": aid, "label": label, "description": "", "a": a, "b": b, "difference": b["noisy_mass"] - a["noisy_mass"],
            "difference_interval": diff_iv, "change": change, "supported": change != "no_supported_change",
            "ratio": ratio, "ratio_interval": ratio_iv, "about_the_same": same, "rank_change": a["rank"] - b["rank"]}

def meta(name):
    return {"name": name, "plan": "periods.json", "segment": name, "mechanism": "gaussian", "noise": "gaussian",
            "noise_scale": 10.0, "epsilon": 0.5, "delta": 1e-6, "unit": "record", "B": 1.0, "K": 3, "L": 5, "m": 12,
            "admission": "by its noisy values", "admitted": 5, "lowest_admitted": 60.0, "half_width": 30.0}

COMP: dict = {
    "kind": "comparison", "schema_version": "1", "direction": "b − a", "dictionary": "sha256:x", "m": 12,
    "a": meta("before 2017-01-01"), "b": meta("from 2017-01-01"), "confidence": 0.95, "comparisons": 1,
    "family": {"size": 12}, "difference_half_width": 50.0, "equivalence_ratio": 1.25,
    "atoms": [
        row(3, "account closure", side(400.0, 1, 370, 430), side(410.0, 1, 380, 440), [-40.0, 60.0], "no_supported_change", 1.025, [0.9, 1.15], True),
        row(0, "late fees", side(100.0, 3, 70, 130), side(300.0, 2, 270, 330), [150.0, 250.0], "rose", 3.0, [2.2, 4.1], False),
        row(1, "billing disputes", side(250.0, 2, 220, 280), side(120.0, 4, 90, 150), [-180.0, -80.0], "fell", 0.48, [0.35, 0.7], False),
        row(2, "card fraud", side(80.0, 4, 50, 110), side(95.0, 5, 65, 125), [-35.0, 65.0], "no_supported_change", 1.19, [0.6, 2.1], False),
    ],
    "only_in_a": [{"atom_id": 4, "label": "debt collection calls", "description": "", "a": side(60.0, 5, 30, 90),
                   "b": {"admitted": False, "upper_bound": 115.0, "why": "…"}, "difference_interval": [-90.0, 115.0],
                   "change": "no_supported_change", "supported": False}],
    "only_in_b": [{"atom_id": 5, "label": "identity theft", "description": "", "b": side(150.0, 3, 120, 180),
                   "a": {"admitted": False, "upper_bound": 100.0, "why": "…"}, "difference_interval": [20.0, 180.0],
                   "change": "rose", "supported": True}],
    "rank_swaps": [{"atom_id": 0, "label": "late fees", "overtook": 1, "overtook_label": "billing disputes", "supported": True}],
    "noise_source": "opendp", "notes": {},
}
DICT = [r["label"] for r in COMP["atoms"] + COMP["only_in_a"] + COMP["only_in_b"]] + ["gift cards", "mortgage escrow"]


ACCEPTED = [
    # supported rises and falls, in the comparison's direction
    "Late fees rose.",
    "Late fees increased from before 2017 to from 2017.",
    "Late fees grew between the first release and the second release.",
    "From the first release to the second, late fees rose.",
    "Billing disputes fell.",
    "Billing disputes decreased.",
    "Billing disputes dropped from 2017.",
    "There was an increase in late fees.",
    "Late fees rose, while billing disputes fell.",
    "Late fees rose and billing disputes fell.",
    # multiples and percentages: inside the ratio interval / the released ratio by the rounding rule
    "Late fees tripled.",
    "Billing disputes halved.",
    "Late fees rose by about 200%.",
    "Billing disputes fell by about 50%.",
    # numbers on either side: each side's released value
    "Late fees rose from about 100 before 2017 to about 300 from 2017.",
    "Late fees rose from about 100 to about 300.",
    "Late fees rose to about 300.",
    # the size of a change: the released difference b − a
    "Late fees rose by about 200.",
    "Billing disputes fell by roughly 130 between the two releases.",
    "Late fees rose from about 100 in release A to about 300 in release B.",
    # more common in b than in a, and the reverse wording
    "Late fees were more common from 2017 than before 2017.",
    "Billing disputes were less common from 2017 than before 2017.",
    "Compared with complaints received from 2017, late fees were lower before 2017.",
    # overtook: a supported rank swap
    "Late fees overtook billing disputes.",
    # about the same: about_the_same and no supported change
    "Account closure stayed about the same.",
    "Account closure was little changed.",
    "Account closure remained unchanged.",
    # no supported change, said as such
    "Card fraud shows no supported change.",
    "Billing disputes did not rise.",
    "The comparison does not support a change for card fraud.",
    # one-sided: the comparison's one-sided bound supports the rise
    "Identity theft rose.",
    # a sentence about one side is a summary of that side's plan
    "Before 2017, account closure was the most common theme.",
    "From 2017, late fees ranked second.",
    "In the second release, late fees ranked second.",
    "In both releases, account closure was the most common theme.",
    "Account closure is the most common theme.",
    "Late fees rose at the 95% family-wise level.",
]

REJECTED = [
    # (summary, a code it must carry)
    ("Card fraud rose.", "unsupported_change"),                         # the interval includes 0
    ("Card fraud fell.", "unsupported_change"),
    ("Card fraud doubled.", "unsupported_change"),
    ("Late fees fell.", "reversed_change"),                              # the other direction
    ("Billing disputes rose.", "reversed_change"),
    ("Late fees were more common before 2017 than from 2017.", "reversed_change"),
    ("Compared with complaints received from 2017, late fees were higher before 2017.", "reversed_change"),
    ("Late fees fell and billing disputes fell.", "reversed_change"),
    ("Billing disputes overtook late fees.", "unsupported_change"),
    ("Late fees doubled.", "unsupported_change"),                        # 2 is outside [2.2, 4.1]
    ("Late fees rose by about 50%.", "unsupported_number"),
    ("Late fees stayed about the same.", "unsupported_change"),          # a supported change
    ("Card fraud stayed about the same.", "unsupported_change"),         # no supported change is not "same"
    ("Card fraud was unchanged.", "unsupported_change"),
    ("Late fees shows no supported change.", "unsupported_change"),
    ("Late fees did not rise.", "unsupported_change"),
    # numbers checked per side
    ("Late fees rose from about 120 to about 300.", "unsupported_number"),
    ("Late fees rose from about 300 before 2017 to about 100 from 2017.", "unsupported_number"),
    ("Late fees rose from about 100 to about 350.", "unsupported_number"),
    ("Identity theft rose from about 0 to about 150.", "unsupported_number"),   # no released value before 2017
    ("Late fees rose by about 150.", "unsupported_number"),              # the difference is 200
    ("Billing disputes fell by about 200.", "unsupported_number"),
    ("Identity theft rose by about 150.", "unsupported_number"),          # one release only: no difference
    ("The comparison does not support a change for late fees.", "unsupported_change"),
    ("Before 2017, late fees ranked first.", "wrong_rank"),
    ("Late fees ranked second.", "wrong_rank"),                           # no side named: must hold in both
    ("Late fees ranked second before 2017 and third from 2017.", "mixed_sides"),
    # themes in neither plan
    ("Gift cards rose.", "unadmitted_atom"),
    ("Mortgage escrow fell before 2017.", "unadmitted_atom"),
    ("Complaints rose.", "unknown_theme"),
    # a theme admitted by one release only, described as changing without a supported bound
    ("Debt collection calls fell.", "unsupported_change"),
    ("Debt collection calls stayed about the same.", "unsupported_change"),
    ("Identity theft doubled.", "unsupported_change"),
    # causes and subgroups stay rejected; wording of change the rule does not read
    ("Late fees rose because of new fees.", "unsupported_claim"),
    ("Late fees rose among older consumers.", "unsupported_claim"),
    ("Late fees fluctuated between the two releases.", "unsupported_change"),
]


@pytest.mark.parametrize("summary", ACCEPTED)
def test_supported_claims_pass(summary):
    v = verify(summary, COMP, DICT)
    assert v.accepted, [x.to_dict() for x in v.violations]


@pytest.mark.parametrize("summary,code", REJECTED)
def test_unsupported_claims_are_rejected(summary, code):
    v = verify(summary, COMP, DICT)
    assert not v.accepted
    assert code in [x.code for x in v.violations], [x.to_dict() for x in v.violations]


SINGLE_PLAN_CHANGES = [s for s in ACCEPTED if any(w in s for w in (
    "rose", "fell", "increase", "grew", "dropped", "decreased", "tripled", "halved", "overtook", "more common from",
    "less common from", "lower before", "stayed about the same", "little changed", "unchanged", "did not rise"))]


@pytest.mark.parametrize("summary", SINGLE_PLAN_CHANGES)
@pytest.mark.parametrize("side", ["a", "b"])
def test_the_same_change_claims_against_a_single_plan_are_rejected(summary, side):
    """One plan is one snapshot: every claim of change, supported by the comparison or not, is rejected."""
    v = verify(summary, side_plan(COMP, side), DICT)
    assert not v.accepted, summary


def test_messages_say_what_support_and_admission_mean():
    v = verify("Card fraud rose.", COMP, DICT)
    assert "includes 0" in v.violations[0].message and "not evidence that nothing changed" in v.violations[0].message
    v = verify("Card fraud stayed about the same.", COMP, DICT)
    assert "ratio interval" in v.violations[0].message
    v = verify("Debt collection calls fell.", COMP, DICT)
    msg = v.violations[0].message
    assert "only" in msg and "top 5" in msg and "not that its mass there is zero" in msg
    v = verify("Late fees fell.", COMP, DICT)
    assert "before 2017-01-01" in v.violations[0].message and "from 2017-01-01" in v.violations[0].message


def test_side_names_come_from_the_comparison():
    named = copy.deepcopy(COMP)
    named["a"].update(name="2016", segment=None)
    named["b"].update(name="2018 survey", segment=None)
    assert verify("In the 2016 release, account closure was the most common theme.", named, DICT).accepted
    assert verify("In 2018 survey, late fees ranked second.", named, DICT).accepted
    assert not verify("In 2018 survey, late fees ranked third.", named, DICT).accepted
    text = "Before 2017 late fees were rarer; from 2017 on, late fees ranked second."
    assert [w for *_, w in side_markers(text, COMP)] == ["a", "b"]
    assert is_comparison(COMP) and not is_comparison(side_plan(COMP, "a"))


def test_a_malformed_comparison_is_refused():
    with pytest.raises(ValueError):
        verify("Late fees rose.", {"kind": "comparison", "a": {}, "b": {}, "atoms": "x", "only_in_a": [],
                                   "only_in_b": []})
    assert not verify("", COMP).accepted


def test_the_comparison_template_is_accepted():
    from dpspin_sql.decode import comparison_summary

    text = comparison_summary(COMP)
    assert text.splitlines()[0].startswith("Late fees rose from about 100.0 before 2017-01-01 to about 300.0 from 2017")
    assert "Billing disputes fell" in text and "card fraud" not in text.lower()
    assert verify(text, COMP, DICT).accepted, verify(text, COMP, DICT).violations
    quiet = copy.deepcopy(COMP)
    for r in quiet["atoms"]:
        r.update(change="no_supported_change", supported=False)
    assert verify(comparison_summary(quiet), quiet, DICT).accepted
    named = copy.deepcopy(COMP)
    named["a"].update(name="a", segment=None)
    named["b"].update(name="b", segment=None)
    text = comparison_summary(named)
    assert "in the first release" in text and verify(text, named, DICT).accepted
