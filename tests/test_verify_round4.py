"""The forms rounds 4 and 5 of the held-out corpora taught (docs/VERIFIER.md, *Measured on held-out corpora*), each in
general form with wordings the corpus did not use: input → verdict over the round's real plans."""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from dpspin_sql.verify import verify

PLANS = Path(__file__).parent / "data" / "heldout" / "plans"


@cache
def plan(name: str) -> dict:
    return json.loads((PLANS / f"r4_{name}.json").read_text(encoding="utf-8"))


YELP_TOPL, YELP, AMAZON, CFPB_D = "yelp_topl_user", "yelp_laplace_user", "amazon_gaussian_user", "cfpb_laplace_denominator"

CASES = [
    # the selection's and the values' ε are fields of their own, not the plan's ε
    (YELP_TOPL, "Selection ε = 1 and value ε = 1, total ε = 2, δ = 1e-6.", True),
    (YELP_TOPL, "The admission used an epsilon of 1 for the selection; the values got the other 1.", True),
    (YELP_TOPL, "Selection ε = 1.5 and value ε = 0.5.", False),
    (YELP_TOPL, "The plan's ε = 1.", False),
    # the bin rule stated is no bin claim about a theme
    (CFPB_D, "Bins use support thresholds of 10% for high and 3% for moderate.", True),
    (CFPB_D, "The cut-off for high is 10% support.", True),
    # a wh-question asserts nothing; its answer is checked
    (AMAZON, "Q: Which themes are tied at the bottom?\nA: Long lasting and fine lines cannot be told apart.", True),
    (AMAZON, "Which theme is second?\nCurly hair.", False),
    # "not demonstrably" answers no
    (AMAZON, "Is good quality more common than pleasant scent?\nNot demonstrably: they are within the margin.", True),
    (AMAZON, "Is good quality more common than pleasant scent?\nYes.", False),
    # a gap stated after a pronoun: the difference of the themes named just before
    (YELP_TOPL, "Is good food ahead of happy hour?\nYes. It leads happy hour by about 23.5.", True),
    (YELP_TOPL, "Is good food ahead of happy hour?\nYes. It leads happy hour by about 40.", False),
    # a 95% family-wise (simultaneous, joint) interval of ± the half-width
    (YELP_TOPL, "Every value carries a 95% family-wise interval of ±12.4.", True),
    (YELP_TOPL, "All masses hold within a 95% simultaneous interval of ±12.4.", True),
    (YELP_TOPL, "Every value carries a 95% family-wise interval of ±20.", False),
    # "the ones ranked ..." is the plan's vocabulary
    (CFPB_D, "Five themes have moderate support: the ones ranked 2 through 6.", True),
    # causes with an adverb between the verb and "by"
    (YELP, "Happy hour's second place is driven largely by discounted drinks.", False),
    (YELP, "Good food is fuelled mostly by the local chefs.", False),
    (YELP, "Good service was boosted in part by new staff.", False),
    # a disclaimer in a later clause of its own does not excuse a trend
    (AMAZON, "Curly hair has been gaining ground over recent months, though it cannot be separated from dry skin.", False),
    (AMAZON, "A single plan cannot show whether curly hair has been gaining ground over recent months.", True),
    # a theme cell that lists several themes fails closed on each
    (YELP_TOPL, "| Bin | Themes |\n|---|---|\n| low | wait staff, live music |", False),
    (YELP_TOPL, "| Bin | Themes |\n|---|---|\n| low | wait staff |", True),
]


ROUND5_FORMS = [
    # a verb after a plural noun that a determiner follows ends the noun phrase
    (AMAZON, "Reviews that mention several themes split their unit equally among them.", True),
    (AMAZON, "Reviews that name two themes share their weight between them.", True),
    # a document heading is no theme position
    (CFPB_D, "Executive summary: 3,000 consumer complaints, eight themes.", True),
    (CFPB_D, "Briefing memo: eight themes of 3,000 complaints.", True),
    # "each user's" after a verb is the method, not one person
    (YELP, "This release bounds each user's total contribution at B = 1.", True),
    (YELP, "The plan caps every reviewer's contribution at B = 1.", True),
    # a superlative restricted to a bin: the first (last) of that bin
    (YELP, "Reasonable price is the largest of the moderate themes.", True),
    (YELP, "Wine list is the smallest among the moderate themes.", True),
    (YELP, "Mexican food is the largest of the moderate themes.", False),
    (YELP, "Outdoor seating is the smallest of the moderate ones.", False),
    # a parenthesised aside between a theme and its claim word does not move the claim to the next theme
    (YELP_TOPL, "Happy hour (about 138.0) is second and good service third at about 88.2.", True),
    (YELP_TOPL, "Good service (about 88.2, ±12.4) is third and happy hour second.", True),
    (YELP_TOPL, "Good service (about 88.2) is second and happy hour third.", False),
    # values after a rank pair pair with the themes in order
    (YELP_TOPL, "Mexican food and outdoor seating: ranks 5 and 6, about 56.6 and 53.7.", True),
    (YELP_TOPL, "Mexican food and outdoor seating: ranks 5 and 6, about 53.7 and 56.6.", False),
    # what "whether" asks ends at a colon or semicolon: the claim after it is stated
    (YELP, "It is unclear whether mexican food is more common than outdoor seating: they differ by about 4.8, "
           "less than the margin.", True),
    (YELP, "It is unclear whether good food is more common than wide selection.", False),
    (YELP, "Whether mexican food leads outdoor seating is open; good food is more common than happy hour.", True),
]


FORMS = CASES + ROUND5_FORMS


@pytest.mark.parametrize("name, summary, accepted", FORMS, ids=[f"{i}-{c[0]}" for i, c in enumerate(FORMS)])
def test_held_out_forms(name, summary, accepted):
    v = verify(summary, plan(name))
    assert v.accepted == accepted, [x.to_dict() for x in v.violations]
