"""Anaphora (docs/VERIFIER.md, *Anaphora*): a claim whose subject or compared side is a pronoun or an
anaphor is checked against the theme it resolves to; pronouns that are no theme reference stay accepted.

Plans are the blind corpus's (tests/data/verifier_corpus_blind.yaml). yelp_topl, margin 17.2: friendly staff
961.4 (high), good service 702.9 (high), happy hour 688.0 (high), fried chicken 402.5, long wait 311.0
(moderate), outdoor seating 158.4 (low). VALID rows must be accepted; INVALID rows give exactly `codes`, and
every violation lies inside `bad`, the one defective sentence.
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from dpspin_sql.verify import verify

_PLANS = yaml.safe_load((Path(__file__).parent / "data" / "verifier_corpus_blind.yaml").read_text(encoding="utf-8"))["plans"]


def _verify(plan_name: str, summary: str):
    entry = _PLANS[plan_name]
    return verify(summary, copy.deepcopy(entry["plan"]), dictionary=list(entry["dictionary"]))


def _ids(rows):
    return [f"{r[0]}: {r[1][:70]}" for r in rows]


VALID = [
    ('yelp_topl', 'Good service ranks second. It is more common than outdoor seating.'),
    ('yelp_topl', 'Friendly staff leads the plan. Long wait trails it.'),
    ('yelp_topl', 'Outdoor seating appears at the bottom. Fried chicken is more common than it.'),
    ('yelp_topl', 'Good service and happy hour are very close. Both are more common than fried chicken.'),
    ('yelp_topl', 'Good service and happy hour are very close. These two themes rank second and third.'),
    ('yelp_topl', 'Friendly staff and outdoor seating both appear. The former is more common than the latter.'),
    ('yelp_topl', 'Friendly staff is mentioned most. It ranks first.'),
    ('yelp_topl', 'Outdoor seating appears too. It has low support.'),
    ('yelp_topl', 'Friendly staff ranks first. It is based on 8,000 reviews.'),
    ('yelp_topl', 'This plan covers six themes. Friendly staff ranks first.'),
    ('yelp_topl', 'Friendly staff ranks first. This plan was released with epsilon 1.'),
    ('yelp_topl', 'Long wait is common. Good service outnumbers it.'),
    ('yelp_topl', 'Fried chicken and long wait are moderate. The former ranks fourth.'),
    ('yelp_topl', 'Fried chicken and long wait are moderate. The latter ranks fifth.'),
    ('yelp_topl', 'Friendly staff and good service lead. Both have high support.'),
    ('yelp_topl', 'Happy hour and good service are close. They each account for about 9% of reviews.'),
    ('yelp_topl', 'Friendly staff leads. The theme ranked second is good service.'),
    ('yelp_topl', 'The theme with the most mentions is friendly staff.'),
    ('yelp_topl', 'It is worth noting that friendly staff ranks first.'),
    ('yelp_topl', 'Friendly staff ranks first. It is worth noting that outdoor seating is rare.'),
    ('yelp_topl', 'Friendly staff ranks first. This plan covers 8,000 reviews.'),
    ('yelp_topl', 'Friendly staff ranks first. It covers six themes.'),
    ('yelp_topl', 'Friendly staff ranks first. This summary reports only released values.'),
    ('yelp_topl', 'Customers praise friendly staff and good service. They also mention happy hour.'),
    ('yelp_topl', 'Friendly staff ranks first. Its support is high.'),
    ('yelp_topl', 'Friendly staff is more common than outdoor seating. It ranks first.'),
    ('yelp_topl', 'Long wait and fried chicken both have moderate support. The second of these ranks fourth.'),
    ('yelp_topl', 'Good service ranks second. Happy hour is similar to it.'),
    ('yelp_topl', 'Good service and happy hour are close. Friendly staff is more common than both.'),
    ('yelp_topl', 'Good service and happy hour are close. Friendly staff is more common than these two themes.'),
    ('yelp_topl', 'Outdoor seating ranks sixth. This theme is less common than long wait.'),
    ('yelp_topl', 'Long wait and outdoor seating are both listed. The former outnumbers the latter.'),
    ('yelp_topl', 'It covers 8,000 reviews. Friendly staff ranks first.'),
    ('yelp_topl', 'This plan has six themes. They are ranked by released mass, and friendly staff ranks first.'),
    ('yelp_topl', 'Friendly staff ranks first, and it has high support.'),
    ('yelp_topl', 'Friendly staff ranks first, followed by good service. It accounts for about 12% of reviews.'),
    ('yelp_topl', 'Good service and happy hour follow. They both have high support.'),
    ('yelp_topl', 'Fried chicken is moderate; it is less common than happy hour.'),
    ('yelp_topl', 'Reviewers mention friendly staff most. They also praise good service.'),
    ('yelp_topl', 'Friendly staff leads. This is more than good service.'),
    ('yelp_topl', 'That is, friendly staff ranks first.'),
    ('yelp_topl', 'Friendly staff ranks first. That said, good service is close behind.'),
    ('yelp_topl', 'Two themes count as distinct only when their masses differ by more than the comparison margin.'),
    ('yelp_topl', 'Themes are compared only when they differ by more than the margin.'),
    ('yelp_topl', 'Friendly staff ranks first. A theme is called more common only when it exceeds another by the margin.'),
    ('yelp_topl', 'Friendly staff ranks first. Among the themes, it has the most mentions.'),
    ('yelp_topl', 'Any theme can be compared with another, but it must differ by at least the margin.'),
    ('beauty_gauss', 'Long lasting and dry skin lead. The latter ranks second.'),
    ('beauty_gauss', 'Easy application and great price are close. These two themes are far more common than skin irritation.'),
    ('cfpb_topl', 'Debt is not yours ranks fifth. It is more common than frequent or repeated calls.'),
    ('cfpb_topl', 'Account status incorrect is a high theme. This theme ranks second.'),
    ('cfpb_gauss', 'Problem with fees and deposits and withdrawals are the two smallest themes. The former ranks seventh and the latter ranks eighth.'),
    ('cfpb_gauss', 'Debt is not yours has moderate support. It is based on 6,000 complaints in total.'),
    ('cfpb_gauss', 'This plan covers eight themes out of 22 candidates. It was released with epsilon 1.0.'),
    ('beauty_laplace', 'Dry skin is the most common theme; it is far ahead of great price.'),
    ('beauty_laplace', 'Great price is moderate. Dry skin, by contrast, is more common than it.'),
    ('yelp_topl', 'This theme ranks first: friendly staff.'),
]
INVALID = [
    ('yelp_topl', 'Outdoor seating ranks sixth. It is more common than long wait.', ['reversed_comparison'], 'It is more common than long wait.'),
    ('yelp_topl', 'Good service ranks second. It is more common than happy hour.', ['unsupported_comparison'], 'It is more common than happy hour.'),
    ('yelp_topl', 'Outdoor seating is mentioned too. Long wait trails it.', ['reversed_comparison'], 'Long wait trails it.'),
    ('yelp_topl', 'Friendly staff ranks first. Fried chicken is more common than it.', ['reversed_comparison'], 'Fried chicken is more common than it.'),
    ('yelp_topl', 'Good service and happy hour are very close. Both are more common than friendly staff.', ['reversed_comparison'], 'Both are more common than friendly staff.'),
    ('yelp_topl', 'Friendly staff and outdoor seating both appear. The latter is more common than the former.', ['reversed_comparison'], 'The latter is more common than the former.'),
    ('yelp_topl', 'Happy hour is discussed often. It ranks second.', ['wrong_rank'], 'It ranks second.'),
    ('yelp_topl', 'Outdoor seating appears too. It has high support.', ['wrong_bin'], 'It has high support.'),
    ('yelp_topl', 'Friendly staff and outdoor seating were discussed. It ranks first.', ['wrong_rank'], 'It ranks first.'),
    ('yelp_topl', 'Good service is common. Happy hour is more common than it.', ['unsupported_comparison'], 'Happy hour is more common than it.'),
    ('yelp_topl', 'Long wait is common. It outnumbers good service.', ['reversed_comparison'], 'It outnumbers good service.'),
    ('yelp_topl', 'Fried chicken and long wait are moderate. The former ranks fifth.', ['wrong_rank'], 'The former ranks fifth.'),
    ('yelp_topl', 'Friendly staff and good service lead. Both have low support.', ['wrong_bin'], 'Both have low support.'),
    ('yelp_topl', 'Outdoor seating and friendly staff appear. Both have low support.', ['wrong_bin'], 'Both have low support.'),
    ('yelp_topl', 'Outdoor seating and friendly staff appear. They have low support.', ['wrong_bin'], 'They have low support.'),
    ('yelp_topl', 'Happy hour and good service are close. They both rank second.', ['wrong_rank'], 'They both rank second.'),
    ('yelp_topl', 'Happy hour and good service are close. They each account for about 8.8% of reviews.', ['unsupported_number'], 'They each account for about 8.8% of reviews.'),
    ('yelp_topl', 'Outdoor seating is notable. In fact it is more common than long wait.', ['reversed_comparison'], 'In fact it is more common than long wait.'),
    ('yelp_topl', 'Outdoor seating is notable; it outranks long wait.', ['reversed_comparison'], 'it outranks long wait.'),
    ('yelp_topl', 'As for outdoor seating, it ranks first.', ['wrong_rank'], 'As for outdoor seating, it ranks first.'),
    ('yelp_topl', 'The theme ranks first.', ['wrong_rank'], 'The theme ranks first.'),
    ('yelp_topl', 'Outdoor seating ranks sixth. Its support is high.', ['wrong_bin'], 'Its support is high.'),
    ('yelp_topl', 'Friendly staff is more common than outdoor seating. It ranks sixth.', ['wrong_rank'], 'It ranks sixth.'),
    ('yelp_topl', 'Long wait and fried chicken both have moderate support. The first of these ranks fourth.', ['wrong_rank'], 'The first of these ranks fourth.'),
    ('yelp_topl', 'Good service ranks second. Fried chicken is similar to it.', ['unsupported_comparison'], 'Fried chicken is similar to it.'),
    ('yelp_topl', 'Good service and happy hour are close. Outdoor seating is more common than both.', ['reversed_comparison'], 'Outdoor seating is more common than both.'),
    ('yelp_topl', 'Good service and happy hour are close. Outdoor seating is more common than these two themes.', ['reversed_comparison'], 'Outdoor seating is more common than these two themes.'),
    ('yelp_topl', 'Friendly staff ranks first. This theme is similar to good service.', ['unsupported_comparison'], 'This theme is similar to good service.'),
    ('yelp_topl', 'Outdoor seating ranks sixth. This theme is more common than long wait.', ['reversed_comparison'], 'This theme is more common than long wait.'),
    ('yelp_topl', 'Long wait and outdoor seating are both listed. The latter outnumbers the former.', ['reversed_comparison'], 'The latter outnumbers the former.'),
    ('yelp_topl', 'It is more common than outdoor seating.', ['unsupported_comparison'], 'It is more common than outdoor seating.'),
    ('yelp_topl', 'It ranks first among the themes.', ['wrong_rank'], 'It ranks first among the themes.'),
    ('yelp_topl', 'Outdoor seating ranks sixth. Of all the themes, it is more common than long wait.', ['reversed_comparison'], 'Of all the themes, it is more common than long wait.'),
    ('beauty_laplace', 'Dry skin leads. Nice scent is rare, and it is more common than broken bottle.', ['unsupported_comparison'], 'Nice scent is rare, and it is more common than broken bottle.'),
    ('beauty_laplace', 'Dry skin and strong smell are both high. The latter outranks long lasting.', ['unsupported_comparison'], 'The latter outranks long lasting.'),
    ('yelp_topl', 'Outdoor seating ranks sixth. It is low. It is more common than long wait.', ['reversed_comparison'], 'It is more common than long wait.'),
    ('yelp_topl', 'Long wait ranks fifth. Outdoor seating ranks sixth. It is more common than fried chicken.', ['reversed_comparison'], 'It is more common than fried chicken.'),
    ('yelp_topl', 'Outdoor seating ranks sixth, though it outnumbers long wait.', ['reversed_comparison'], 'Outdoor seating ranks sixth, though it outnumbers long wait.'),
    ('yelp_topl', 'Good service and happy hour are close. Outdoor seating outnumbers both of them.', ['reversed_comparison'], 'Outdoor seating outnumbers both of them.'),
    ('yelp_topl', 'Outdoor seating ranks sixth; its share is high.', ['wrong_bin'], 'its share is high.'),
    ('beauty_gauss', 'Long lasting and dry skin lead. The latter ranks first.', ['wrong_rank'], 'The latter ranks first.'),
    ('beauty_gauss', 'Long lasting and dry skin lead. The latter is more common than the former.', ['reversed_comparison'], 'The latter is more common than the former.'),
    ('beauty_gauss', 'Easy application and great price are close. These two themes are less common than skin irritation.', ['reversed_comparison'], 'These two themes are less common than skin irritation.'),
    ('cfpb_topl', 'Frequent or repeated calls ranks sixth. It outnumbers debt is not yours.', ['reversed_comparison'], 'It outnumbers debt is not yours.'),
    ('cfpb_topl', 'Account status incorrect is a high theme. This theme ranks third.', ['wrong_rank'], 'This theme ranks third.'),
    ('cfpb_gauss', 'Problem with fees and deposits and withdrawals are the two smallest themes. The latter ranks seventh.', ['wrong_rank'], 'The latter ranks seventh.'),
    ('beauty_laplace', 'Great price is moderate. Easy application, by contrast, is more common than it.', ['reversed_comparison'], 'Easy application, by contrast, is more common than it.'),
    ('yelp_topl', 'This theme ranks first: outdoor seating.', ['wrong_rank'], 'This theme ranks first: outdoor seating.'),
    ('yelp_topl', 'The theme is more common than long wait: outdoor seating.', ['reversed_comparison'], 'The theme is more common than long wait: outdoor seating.'),
    ('yelp_topl', 'The theme is more common than outdoor seating.', ['unsupported_comparison'], 'The theme is more common than outdoor seating.'),
]


@pytest.mark.parametrize("plan_name,summary", VALID, ids=_ids(VALID))
def test_valid(plan_name, summary):
    v = _verify(plan_name, summary)
    assert v.accepted, [x.to_dict() for x in v.violations]


@pytest.mark.parametrize("plan_name,summary,codes,bad", INVALID, ids=_ids(INVALID))
def test_invalid(plan_name, summary, codes, bad):
    assert bad in summary
    v = _verify(plan_name, summary)
    s0 = summary.index(bad)
    assert not v.accepted and {x.code for x in v.violations} == set(codes), [x.to_dict() for x in v.violations]
    for x in v.violations:
        assert x.span and x.message and s0 <= x.start and x.end <= s0 + len(bad), x.to_dict()


def test_messages_name_the_resolved_theme():
    v = _verify("yelp_topl", "Outdoor seating ranks sixth. It is more common than long wait.")
    assert "[outdoor seating]" in v.violations[0].message


def test_an_ambiguous_anaphor_is_checked_under_every_reading():
    """'It' after two subjects: true of friendly staff, false of outdoor seating, so rejected; a claim true
    under both readings passes."""
    bad = _verify("yelp_topl", "Friendly staff and outdoor seating were discussed. It ranks first.")
    assert [x.code for x in bad.violations] == ["wrong_rank"]
    assert "[outdoor seating]" in bad.violations[0].message
    assert _verify("yelp_topl", "Friendly staff and good service were discussed. It has high support.").accepted


def test_the_named_theme_wins_and_pronoun_sentences_match_named_ones():
    """Replacing the pronoun by the theme it resolves to never changes the verdict."""
    pairs = [("Good service ranks second. It is more common than happy hour.",
              "Good service ranks second. Good service is more common than happy hour."),
             ("Outdoor seating is listed. Fried chicken is more common than it.",
              "Outdoor seating is listed. Fried chicken is more common than outdoor seating."),
             ("Long wait and fried chicken are moderate. The former ranks fifth.",
              "Long wait and fried chicken are moderate. Long wait ranks fifth.")]
    for with_pronoun, named in pairs:
        a, b = _verify("yelp_topl", with_pronoun), _verify("yelp_topl", named)
        assert a.accepted == b.accepted and {x.code for x in a.violations} == {x.code for x in b.violations}


def test_many_ambiguous_anaphors_stay_bounded():
    """2^13 readings in principle: past rules.anaphora.MAX_READINGS the readings still take every alternative
    of every anaphor, so a false reading of the first one is not crowded out by the later ones."""
    s = " ".join(["Friendly staff and happy hour were discussed. It has high support."] * 12)
    assert _verify("yelp_topl", s).accepted
    v = _verify("yelp_topl", s + " Friendly staff and outdoor seating were discussed. It ranks first.")
    assert not v.accepted and {x.code for x in v.violations} == {"wrong_rank"}
    v = _verify("yelp_topl", "Friendly staff and outdoor seating were discussed. It ranks first. " + s)
    assert not v.accepted and {x.code for x in v.violations} == {"wrong_rank"}
