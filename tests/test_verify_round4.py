"""The forms rounds 4, 5 and 6 of the held-out corpora taught (docs/VERIFIER.md, *Measured on held-out corpora*), each in
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


@cache
def plan_and_atoms(stem: str) -> tuple[dict, list]:
    """A held-out plan and its dictionary's atoms (the writers saw both)."""
    p = json.loads((PLANS / f"{stem}.json").read_text(encoding="utf-8"))
    return p, json.loads((PLANS / f"{stem}.dictionary.json").read_text(encoding="utf-8"))["atoms"]


def plan6(name: str) -> tuple[dict, list]:
    """A round-6 plan (its files are prefixed r6_)."""
    return plan_and_atoms(f"r6_{name}")


CF, A23, A18, YE = "cfpb_topl_record", "amazon23_laplace_user", "amazon18_laplace_record", "yelp_gaussian_user"

ROUND6_FORMS = [
    # a gap stated with above/below/ahead/behind/clears/short of is a difference of two released values
    (YE, "Good food sits well ahead of happy hour, roughly 68 above it.", True),
    (YE, "Good food sits well ahead of happy hour, roughly 90 above it.", False),
    (A18, "Body wash is about 30 behind pleasant scent and clears the margin.", False),
    (A18, "Body wash is about 41.5 behind pleasant scent, which clears the margin.", True),
    (YE, "Reasonable price falls about 22 short of good service, below the 41.6 margin.", True),
    # B said of a reviewer's or customer's contribution
    (YE, "No reviewer can contribute more than 2 units of mass.", True),
    (YE, "Each customer contributes at most 3 units in total.", False),
    (A23, "Contributions are capped at 1 per reviewer.", True),
    # the assignment's fidelity on the auxiliary split, and its documented minimum
    (CF, "The scorer's held-out precision is 0.45 and its recall 0.33, below the 0.8 and 0.5 the docs ask for.", True),
    (CF, "The scorer's held-out precision is 0.62.", False),
    (CF, "Mass and expressing records correlate at a Spearman of 0.94 on the auxiliary split.", True),
    # "half": the split of ε, and a record's unit split over two themes
    (CF, "Half of the budget went to choosing the themes and the other half to their values.", True),
    (CF, "A complaint in two themes gives each of them half of its unit.", True),
    (YE, "Reviewers differ; each of them mentions good food.", False),
    # one sentence that names nothing between a question and a pronoun's antecedents
    (YE, "Is happy hour ahead of good service? Hard to say. They are about 26 apart, under the margin.", True),
    (YE, "Is happy hour ahead of good service? Hard to say. They are about 50 apart, under the margin.", False),
    # "Likewise, A, B and C" with a predicate of its own
    (YE, "Good service and reasonable price are within the margin. Likewise, mexican food, outdoor seating "
         "and customer service cannot be ranked against each other.", True),
    # a count opening a clause takes the noun of the clause before
    (A18, "Ten themes were released; three are high, four moderate and three low.", True),
    (A18, "Ten themes were released; four are high, three moderate and three low.", False),
    (YE, "A moderate tier of four: reasonable price, mexican food, outdoor seating and customer service.", True),
    (YE, "A moderate tier of three: reasonable price, mexican food, outdoor seating and customer service.", False),
    # "the largest of them": among the themes the sentence before listed
    (YE, "Five themes are low: fast food, great flavor, good lunch, good quality and nice atmosphere. "
         "The largest of them is fast food.", True),
    (YE, "Five themes are low: fast food, great flavor, good lunch, good quality and nice atmosphere. "
         "The largest of these is good lunch.", False),
    # a public word joined to a lowercase one names nothing; a name joined to one still does
    (A18, "The masses are Laplace-noised, so every value carries ±4.5.", True),
    (A18, "The masses come from Sephora-sourced reviews.", False),
]


FORMS = CASES + ROUND5_FORMS


@pytest.mark.parametrize("name, summary, accepted", FORMS, ids=[f"{i}-{c[0]}" for i, c in enumerate(FORMS)])
def test_held_out_forms(name, summary, accepted):
    v = verify(summary, plan(name))
    assert v.accepted == accepted, [x.to_dict() for x in v.violations]


@pytest.mark.parametrize("name, summary, accepted", ROUND6_FORMS, ids=[f"{i}-{c[0]}" for i, c in enumerate(ROUND6_FORMS)])
def test_round6_forms(name, summary, accepted):
    p, atoms = plan6(name)
    v = verify(summary, p, dictionary=atoms)
    assert v.accepted == accepted, [x.to_dict() for x in v.violations]


# Round 7 (an unseen writer, measured once before these fixes): hard-wrapped text, quoted labels with values in
# parentheses, lists told over several items, "no two", and universal claims that carry the public count.
AG, YG = "amazon2023_gaussian_record", "yelp_gaussian_user"
ROUND7_FORMS = [
    # a soft line break inside a quoted label, and inside a label
    (AG, 'Pleasant scent leads, followed by "good\nprice" (about 298) and "good quality" (about 262).', True),
    (AG, 'Pleasant scent leads, followed by good\nprice (about 298).', True),
    (AG, 'Pleasant scent leads, followed by good\nprice (about 398).', False),
    (AG, 'Pleasant scent leads. One reviewer wrote "I love\nthis smell" about it.', False),
    # the next line starts with a quoted label or a number: the sentence goes on
    (YG, 'Good food leads, well ahead of good service, which is clearly more common than\n"outdoor seating". '
         'Those three make up the high bin.', True),
    (YG, 'Good food leads with a released mass of about\n422.', True),
    # a list told over several items, then a count of it
    (YG, '- Good food ranks first.\n- Good service is second.\n- Outdoor seating is third; these three form the high bin.',
     True),
    (YG, '- Good food ranks first.\n- Good service is second.\n- Outdoor seating is third; these four form the high bin.',
     False),
    # "no two" is no count
    (YG, 'From rank 8 down, no two released themes can be told apart.', True),
    # a value in parentheses after a quoted label is that label's, even beside a distributive "each"
    (AG, '"nice color" (≈ 247) and "dry skin" (≈ 246) are tied at about 9.5% each.', True),
    (AG, '"nice color" (≈ 247) and "dry skin" (≈ 296) are tied at about 9.5% each.', False),
    (AG, '"sensitive skin" ≈ 183 (7.0%) and "skin care" ≈ 115 (4.4%) are moderate.', True),
    (AG, '"sensitive skin" ≈ 183 (7.9%) and "skin care" ≈ 115 (4.4%) are moderate.', False),
    # a universal claim with the public count in it is still universal; "of all N reviews" is a share or a frame
    (AG, "Every one of the 2,600 reviews talks about scent, price or quality.", False),
    (AG, "All 2,600 reviews mention pleasant scent.", False),
    (AG, "Each of the 2,600 reviews mentions pleasant scent or good price.", False),
    (AG, "Of all 2,600 reviews, pleasant scent is the most common theme.", True),
    (AG, "Across all reviews, pleasant scent is the top theme.", True),
    (AG, "Pleasant scent appears in all reviews.", False),
    # the parts of private top-L's ε named after the number, and the dictionary's size as a subject or a tail
    ("r4_yelp_topl_user", "Private top-L with a total of ε = 2 — 1.0 for the noisy top-k admission and 1.0 for the "
                          "Gaussian values.", True),
    ("r4_yelp_topl_user", "Private top-L with a total of ε = 2, 1.5 for the selection and 0.5 for the values.", False),
    ("r4_yelp_topl_user", "The dictionary has 27 themes.", True),
    ("r4_yelp_topl_user", "The dictionary has 28 themes.", False),
    ("r4_yelp_topl_user", "Eight themes were admitted out of the 27 in the public dictionary.", True),
    ("r4_yelp_topl_user", "Eight themes were admitted out of the 26 in the public dictionary.", False),
    ("r4_yelp_topl_user", "Noise was added to all 27 dictionary coordinates.", True),
    ("r4_yelp_topl_user", "Noise was added to all 29 dictionary coordinates.", False),
    # a range after a group of themes states the span of their values
    (AG, '"fine lines", "pump dispenser", "essential oil" and "absorbs quickly" are similar (≈ 86–96, i.e. 3.3–3.7%).', True),
    (AG, "Fine lines, pump dispenser, essential oil and absorbs quickly are similar (≈ 86–99).", False),
    (AG, "Fine lines and pump dispenser lie between 90 and 96.", True),
    (AG, "Fine lines and pump dispenser lie between 80 and 96.", False),
    # "in turn" is no change; an interval that reaches 0; the number a parenthesis denies; method words
    ("r6_amazon23_laplace_user", "Good quality is more common than pleasant scent, which is in turn more common than "
                                 "good price.", True),
    ("r6_amazon23_laplace_user", "Good price turned more common.", False),
    ("r6_yelp_gaussian_user", "Great flavor is low: its interval reaches 0.", True),
    ("r6_yelp_gaussian_user", "Good food has an interval that reaches 0.", False),
    ("r6_amazon23_laplace_user", "The intervals in this release are 90% (not 95%) family-wise, at ±3.1.", True),
    ("r6_amazon23_laplace_user", "The intervals in this release are 95% (not 90%) family-wise, at ±3.1.", False),
    ("r6_amazon23_laplace_user", "The comparison margin of about 2.6 is set at 99% comparison confidence.", True),
    ("r6_amazon23_laplace_user", "The comparison margin of about 2.6 is set at 95% comparison confidence.", False),
    (AG, "The privacy ledger was charged ε = 1; all 13 dictionary coordinates were noised.", True),
    # "each … more common than the next" is a chain over the themes named, in order; "each of the three" a group
    ("r6_amazon18_laplace_record", "Pleasant scent, body wash and shower gel are the three most common themes, in that "
                                   "order, and each is clearly more common than the next.", True),
    ("r6_amazon18_laplace_record", "Good price, body lotion and good quality lead the moderate group, and each is more "
                                   "common than the next.", False),
    ("r6_amazon18_laplace_record", "Pleasant scent is the most common, followed by body wash and shower gel. Each of "
                                   "the three is more common than the next.", True),
    ("r6_amazon18_laplace_record", "Pleasant scent is the most common, followed by body wash and shower gel. Each of "
                                   "the four is high.", False),
    # a yes/no question answered "That is not supported"; "everything else is X except A"
    ("yelp_gaussian_user", 'Q: Is "outdoor seating" more common than "reasonable price"?\nA: That is not supported.', True),
    ("yelp_gaussian_user", "Q: Is good food more common than good service?\nA: That is not supported.", False),
    (AG, 'Pleasant scent, good price and good quality are high. Everything else released is moderate except '
         '"nail polish" (about 2.7%), which is low.', True),
    (AG, 'Pleasant scent and good price are high. Everything else released is moderate except "nail polish", which '
         'is low.', False),
    # a value column whose header states the half-width: "Released mass (±7.8)"
    ("r4_amazon_gaussian_user", "| # | Theme | Released mass (±7.8) | Bin |\n|---|---|---|---|\n"
                                "| 1 | good quality | 52.4 | high |\n| 2 | pleasant scent | 48.7 | high |", True),
    ("r4_amazon_gaussian_user", "| # | Theme | Released mass (±5.1) | Bin |\n|---|---|---|---|\n"
                                "| 1 | good quality | 52.4 | high |\n| 2 | pleasant scent | 48.7 | high |", False),
    # numbers in an answer are the question's themes'; the unit's definition; the selection's scale; a gap idiom
    ("yelp_gaussian_user", 'Q: Is "outdoor seating" more common than "reasonable price"?\nA: That is not supported: '
                           "about 154 against about 135 is a gap under the margin.", True),
    ("yelp_gaussian_user", 'Q: Is "outdoor seating" more common than "reasonable price"?\nA: That is not supported: '
                           "about 164 against about 135 is a gap under the margin.", False),
    ("r4_yelp_topl_user", "Unit: user (all of a user's reviews), B = 1, K = 3.", True),
    ("r4_yelp_topl_user", "All of a user's reviews mention good food.", False),
    ("r4_yelp_topl_user", "Private top-L: the noisy top-k admission (scale 8) and the Gaussian values (σ ≈ 4.53).", True),
    ("r4_yelp_topl_user", "Private top-L: the noisy top-k admission (scale 6) and the Gaussian values (σ ≈ 4.53).", False),
    # a list of ranks with a similarity predicate, checked over the themes at those ranks
    ("cfpb_gaussian_record", "Differences under the margin are not meaningful, so ranks 7, 8 and 9 are effectively tied.",
     True),
    ("cfpb_gaussian_record", "Ranks 1, 2 and 3 are effectively tied.", False),
    ("cfpb_gaussian_record", "Ranks 7, 8 and 19 are effectively tied.", False),
    ("cfpb_gaussian_record", "Ranks 7, 8 and 9 are high.", False),
]


@pytest.mark.parametrize("name, summary, accepted", ROUND7_FORMS, ids=[f"{i}-{c[0]}" for i, c in enumerate(ROUND7_FORMS)])
def test_round7_forms(name, summary, accepted):
    p, atoms = plan_and_atoms(name)
    v = verify(summary, p, dictionary=atoms)
    assert v.accepted == accepted, [x.to_dict() for x in v.violations]


# Round 8 (an unseen writer, measured once before these fixes: 39 of 40 faithful cases rejected): a half-width
# written "+/-", the ε of private top-L's parts named before the number, and claims about a whole order.
YT = "yelp_topL_record"   # ranks 4 and 5, and 6 and 7, are within the margin; the top three are apart
ROUND8_FORMS = [
    (YT, "Each mass carries a +/-12.4 interval, all eight holding together at 95%.", True),
    (YT, "Good food has a mass of 485.7 +- 12.4.", True),
    (YT, "Good food: 485.7 (+/- 12.4).", True),
    (YT, "Each mass carries a +/-13.4 interval.", False),
    (YT, "Good food has a mass of -485.7.", False),
    (YT, "Private top-L with epsilon = 2 in total, split evenly between selecting the eight themes (epsilon 1) and "
         "the Gaussian values (epsilon 1).", True),
    (YT, "Private top-L with epsilon = 2 in total, split between selecting the eight themes (epsilon 1.5) and "
         "the Gaussian values (epsilon 0.5).", False),
    (YT, "A record-level release with private top-L selection (ε = 2, δ = 10⁻⁶).", True),
    (YT, "A record-level release with private top-L selection (ε = 3, δ = 10⁻⁶).", False),
    # whole orders: every consecutive pair of the ranks covered against the margin
    (YT, "Every neighbouring pair clears the comparison margin.", False),
    (YT, "All adjacent themes are separated by more than the comparison margin.", False),
    (YT, "The ranking of all eight themes is supported by the comparison margin.", False),
    (YT, "The full order is supported.", False),
    (YT, "The order 1 to 8 is not fully supported.", True),
    (YT, "Not every adjacent pair clears the margin.", True),
    (YT, "The order of the top three is supported.", True),
    (YT, "The order 1 to 3 is supported.", True),
    (YT, "Every adjacent pair among the top three clears the margin.", True),
    (YT, "The order 1 to 3 is not supported.", False),
    (YT, "The top three are clear of one another; their order is supported.", True),
]


@pytest.mark.parametrize("name, summary, accepted", ROUND8_FORMS, ids=[f"{i}-{c[0]}" for i, c in enumerate(ROUND8_FORMS)])
def test_round8_forms(name, summary, accepted):
    p, atoms = plan_and_atoms(name)
    v = verify(summary, p, dictionary=atoms)
    assert v.accepted == accepted, [x.to_dict() for x in v.violations]
