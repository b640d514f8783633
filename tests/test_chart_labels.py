"""Chart labels (dpspin_sql/chart_labels.py): at most two lines of at most 30 characters, the
whole label where it fits, and labels that share a long beginning still told apart by their end."""
from __future__ import annotations

import pytest

from dpspin_sql.chart_labels import chart_lines

# CFPB-shaped sub-issue labels: the product first, then what tells them apart
CFPB = ["Payday loan, title loan, or personal loan: Charged fees or interest you didn't expect",
        "Payday loan, title loan, or personal loan: Problem when making payments",
        "Payday loan, title loan, or personal loan: Getting a loan or lease",
        "Payday loan, title loan, or personal loan: Struggling to pay your loan",
        "Credit reporting, credit repair services, or other personal consumer reports: Incorrect information",
        "Credit reporting, credit repair services, or other personal consumer reports: Improper use of your report",
        "Checking or savings account: Managing an account",
        "Debt collection"]


@pytest.mark.parametrize("label, lines", [
    ("login failure", ["login failure"]),
    ("", [""]),
    ("Checking or savings account", ["Checking or savings account"]),
    ("Money transfer, virtual currency, or money service", ["Money transfer, virtual", "currency, or money service"]),
    ("a" * 40, ["a" * 29 + "…"]),
])
def test_short_labels_are_whole(label, lines):
    assert chart_lines(label) == lines


@pytest.mark.parametrize("label", CFPB)
def test_every_line_fits(label):
    lines = chart_lines(label, CFPB)
    assert 1 <= len(lines) <= 2 and all(len(line) <= 30 for line in lines)


def test_labels_that_share_a_beginning_stay_apart_and_keep_their_end():
    shown = [" ".join(chart_lines(label, CFPB)) for label in CFPB]
    assert len(set(shown)) == len(CFPB)
    for label, text in zip(CFPB, shown, strict=True):
        assert text.endswith(label.split()[-1])
    # cut at the end, as the card did, seven of these would read alike
    assert len({label[:31] for label in CFPB}) < len(CFPB)


def test_a_shared_beginning_is_shortened_only_when_the_label_does_not_fit():
    labels = ["Credit card or prepaid card: Fees", "Credit card or prepaid card: Fraud"]
    assert [chart_lines(label, labels) for label in labels] == [
        ["Credit card or prepaid card:", "Fees"], ["Credit card or prepaid card:", "Fraud"]]


def test_a_label_alone_loses_its_middle_not_its_end():
    label = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    lines = chart_lines(label)
    assert lines[0].startswith("one two") and lines[-1].startswith("… ") and lines[-1].endswith("fourteen")
