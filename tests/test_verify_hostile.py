"""Hostile summaries from an adversarial review, in their general forms, and the faithful
sentences next to them that must still pass (docs/VERIFIER.md: *Negation*, *Hidden text*,
*Subjects that are no theme*, *What no plan can show*).

Amazon plan (tests/helpers/verifier_plans.py): dry skin rank 1 (612.4, high), long lasting and
strong smell ranks 2–3 within the margin of 14.9, nice scent rank 10 (35.1, low).
"""
from __future__ import annotations

import pytest

from dpspin_sql.verify import verify
from tests.helpers.verifier_plans import make_plan, plan

REJECTED = [
    # negation: the claim a sentence denies is judged, not dropped
    ("amazon", "Dry skin is not the most common theme.", "wrong_rank"),
    ("amazon", "Dry skin isn't among the top three themes.", "wrong_rank"),
    ("amazon", "Dry skin does not rank in the top three.", "wrong_rank"),
    ("amazon", "Nice scent is not less common than dry skin.", "reversed_comparison"),
    ("amazon", "Dry skin is no more common than nice scent.", "reversed_comparison"),
    ("amazon", "Dry skin does not have high support.", "wrong_bin"),
    ("amazon", "Nice scent is not rare.", "wrong_bin"),
    ("amazon", "Long lasting and strong smell are not similar.", "unsupported_comparison"),
    ("amazon", "It is unclear whether nice scent is more common than dry skin.", "reversed_comparison"),
    # markup, invisible and look-alike characters, hard-wrapped lines
    ("amazon", "Nice scent is **more common** than dry skin.", "reversed_comparison"),
    ("amazon", "Nice scent is the _most common_ theme.", "wrong_rank"),
    ("amazon", "Nice scent is the <b>most</b> common theme.", "wrong_rank"),
    ("amazon", "Nice scent is\nmore common than dry skin.", "reversed_comparison"),
    ("amazon", "Nice scent is mo\u200bre common than dry skin.", "obfuscated_text"),
    ("amazon", "Nice scent has hi\u00adgh support.", "obfuscated_text"),
    ("amazon", "Nice scent is the m\u043est common theme.", "obfuscated_text"),
    ("amazon", "Nice scent is the \uff4d\uff4f\uff53\uff54 common theme.", "obfuscated_text"),
    ("amazon", "Nice scent is the mo\u0301st common theme.", "obfuscated_text"),
    # a subject that is no theme: a paraphrase is read as the themes sharing a word, else fails closed
    ("amazon", "Nice smell is the most common theme.", "wrong_rank"),
    ("amazon", "Allergic reactions have high support.", "wrong_bin"),
    ("amazon", "Allergic reactions are more common than dry skin.", "unsupported_comparison"),
    ("amazon", "Dry skin is more common than expected.", "unsupported_comparison"),
    ("amazon", "More reviews mention nice scent than dry skin.", "reversed_comparison"),
    # comparison and rank wording
    ("amazon", "Nice scent beats dry skin.", "reversed_comparison"),
    ("amazon", "Nice scent tops dry skin.", "reversed_comparison"),
    ("amazon", "Long lasting edges out strong smell.", "unsupported_comparison"),
    ("amazon", "Dry skin is rarer than nice scent.", "reversed_comparison"),
    ("amazon", "Nice scent ranks above dry skin.", "reversed_comparison"),
    ("amazon", "Nice scent and dry skin are equally common.", "unsupported_comparison"),
    ("amazon", "Dry skin and nice scent have the same support.", "unsupported_comparison"),
    ("amazon", "Dry skin and nice scent are indistinguishable.", "unsupported_comparison"),
    ("amazon", "Nice scent is the most-mentioned theme.", "wrong_rank"),
    ("amazon", "Nice scent is mentioned most often.", "wrong_rank"),
    ("amazon", "Reviewers mention nice scent most often.", "wrong_rank"),
    ("amazon", "Nice scent is second.", "wrong_rank"),
    ("amazon", "Nice scent takes the top spot.", "wrong_rank"),
    ("amazon", "Nice scent is the main concern.", "wrong_rank"),
    ("amazon", "Dry skin is the least-mentioned theme.", "wrong_rank"),
    ("amazon", "Long lasting is clearly the second most common theme, well ahead of strong smell.",
     "unsupported_comparison"),
    # what no plan can show
    ("amazon", "Nice scent is never mentioned.", "unsupported_claim"),
    ("amazon", "Nice scent is not mentioned at all.", "unsupported_claim"),
    ("amazon", "Zero reviews mention nice scent.", "unsupported_claim"),
    ("amazon", "Dry skin has 0 mentions.", "unsupported_claim"),
    ("amazon", "Exactly 612 reviews mention dry skin.", "unsupported_number"),
    ("amazon", "The true count of dry skin is 612.", "unsupported_number"),
    ("amazon", "Dry skin causes most of the negative ratings.", "unsupported_claim"),
    ("amazon", "Reviewers who mention dry skin also mention strong smell.", "unsupported_claim"),
    ("amazon", "Women mention dry skin more than men.", "unsupported_claim"),
    ("amazon", "Dry skin has 5k mentions.", "unsupported_number"),
    ("amazon", "Dry skin accounts for 90pc of reviews.", "unsupported_number"),
    # a claim carried to another theme, and a claim next to an aside about another theme
    ("amazon", "Dry skin is the most common theme, and so is nice scent.", "wrong_rank"),
    ("amazon", "Dry skin has high support, as does nice scent.", "wrong_bin"),
    ("amazon", "Dry skin accounts for 12% of reviews. So does nice scent.", "unsupported_number"),
    ("amazon", "Nice scent, unlike dry skin, is the most common theme.", "wrong_rank"),
    ("amazon", "Nice scent, like dry skin, is the most common theme.", "wrong_rank"),
    # more support words, trends, quotations and addresses
    ("amazon", "Nice scent is extremely common.", "wrong_bin"),
    ("amazon", "Nice scent is in the top bin.", "wrong_bin"),
    ("amazon", "Nice scent has strong support.", "wrong_bin"),
    ("amazon", "Dry skin is negligible.", "wrong_bin"),
    ("amazon", "Dry skin has weak support.", "wrong_bin"),
    ("amazon", "Dry skin has become the top theme.", "unsupported_trend"),
    ("amazon", "Dry skin is now the most common theme.", "unsupported_trend"),
    ("amazon", "Dry skin is getting worse.", "unsupported_trend"),
    ("amazon", "Reviewers wrote \u00abnever again\u00bb about dry skin.", "quotation"),
    ("amazon", "Reviewers wrote `never again` about dry skin.", "quotation"),
    ("amazon", "Visit example.com for dry skin tips.", "contact_detail"),
    # counts without a number (amazon: one high, four moderate, five low)
    ("amazon", "There are no low-support themes.", "unsupported_number"),
    ("amazon", "There is no high-support theme.", "unsupported_number"),
    ("amazon", "Several themes have high support.", "unsupported_number"),
    ("amazon", "A couple of themes have high support.", "unsupported_number"),
    # second review round
    ("amazon", "Dry skin, like nice scent, has high support.", "wrong_bin"),
    ("amazon", "Like nice scent, dry skin has high support.", "wrong_bin"),
    ("amazon", "Dry skin has high support along with nice scent.", "wrong_bin"),
    ("amazon", "Long delivery times rank second.", "wrong_rank"),
    ("amazon", "Greasy skin is the most common theme.", "wrong_rank"),
    ("yelp", "Unfriendly staff is the most common theme.", "wrong_rank"),
    ("amazon", "Allergic reactions are the most common theme, ahead of dry skin.", "wrong_rank"),
    ("amazon", "The most common theme is allergic reactions.", "wrong_rank"),
    ("amazon", "Compared with nice scent, dry skin is less common.", "reversed_comparison"),
    ("amazon", "Between nice scent and dry skin, nice scent is more common.", "reversed_comparison"),
    ("amazon", "Of dry skin and nice scent, nice scent is the more frequent.", "reversed_comparison"),
    ("amazon", "Nice scent is more common, dry skin less so.", "reversed_comparison"),
    ("amazon", "Dry skin is not as common as nice scent.", "reversed_comparison"),
    ("amazon", "Nice scent is not as rare as dry skin.", "reversed_comparison"),
    ("amazon", "Nice scent is hardly rare.", "wrong_bin"),
    ("amazon", "Dry skin is by no means the most common theme.", "wrong_rank"),
    ("amazon", "Nice scent is neither rare nor uncommon.", "wrong_bin"),
    ("amazon", "It is false that dry skin is the most common theme.", "wrong_rank"),
    ("amazon", "We cannot rule out that nice scent is more common than dry skin.", "reversed_comparison"),
    ("amazon", "Dry skin has high support. The same goes for nice scent.", "wrong_bin"),
    ("amazon", "Dry skin has high support; likewise nice scent.", "wrong_bin"),
    ("amazon", "Dry skin has high support. Nice scent does, too.", "wrong_bin"),
    ("amazon", "Nice scent and small bottle top the list.", "wrong_rank"),
    ("amazon", "Nice scent is the number-one theme.", "wrong_rank"),
    ("amazon", "Nice scent is the front-runner.", "wrong_rank"),
    ("amazon", "Dry skin is bottom-ranked.", "wrong_rank"),
    ("amazon", "Nice scent outstrips dry skin.", "reversed_comparison"),
    ("amazon", "Dry skin is overtaken by nice scent.", "reversed_comparison"),
    ("amazon", "Nice scent is ubiquitous.", "wrong_bin"),
    ("amazon", "Dry skin is sparse.", "wrong_bin"),
    ("amazon", "Nice scent is #1.", "wrong_rank"),
    ("amazon", "Nice scent accounts for a sixth of reviews.", "unsupported_number"),
    ("amazon", "Nice scent is the \u21161 theme.", "obfuscated_text"),
    # claims of a lead line or heading over the items under it
    ("amazon", "Themes by rank:\n1. Nice scent\n2. Long lasting\n3. Dry skin", "wrong_rank"),
    ("amazon", "The most common themes:\n- Nice scent\n- Small bottle", "wrong_rank"),
    ("amazon", "Rare themes:\n- Dry skin\n- Long lasting", "wrong_bin"),
    ("amazon", "## High support\n- Nice scent\n- Small bottle\n## Low support\n- Dry skin", "wrong_bin"),
    ("amazon", "Most common theme:\nNice scent", "wrong_rank"),
    # a negated verb between the claim word and its theme
    ("amazon", "The most common theme is not dry skin but nice scent.", "wrong_rank"),
    ("amazon", "The least common theme is not nice scent.", "wrong_rank"),
    ("amazon", "The top three themes do not include dry skin.", "wrong_rank"),
    ("amazon", "The most common theme is allergic reactions, not dry skin.", "wrong_rank"),
    ("amazon", "Nice scent is the most common low-support theme.", "wrong_rank"),
    ("amazon", "After dry skin, nice scent is the most common theme.", "wrong_rank"),
    # a question and its answer
    ("yelp", "Which theme is the most common? Clean restroom.", "wrong_rank"),
    ("amazon", "The most common theme? Nice scent.", "wrong_rank"),
    ("amazon", "Dry skin is the most common theme? No.", "wrong_rank"),
]

ACCEPTED = [
    ("amazon", "Nice scent is not the most common theme."),
    ("amazon", "Nice scent isn't among the top three themes."),
    ("amazon", "Long lasting is not clearly more common than strong smell."),
    ("amazon", "It is unclear whether long lasting is more common than strong smell."),
    ("amazon", "Dry skin is not rare."),
    ("amazon", "Nice scent does not have high support."),
    ("amazon", "Dry skin is **the most common** theme, with _high_ support."),
    ("amazon", "Dry skin is the most\ncommon theme."),
    ("amazon", "Dry skin beats nice scent."),
    ("amazon", "More reviews mention dry skin than nice scent."),
    ("amazon", "Dry skin is the most-mentioned theme."),
    ("amazon", "Dry skin is clearly the most common theme."),
    ("amazon", "Long lasting and strong smell are equally common."),
    ("amazon", "Dry skin is more common than any other theme."),
    ("amazon", "This release used ε = 1 and δ = 10⁻⁶."),
    ("amazon", "Dry skin is not only the most common theme but also has high support."),
    ("amazon", "Dry skin can appear in a review together with strong smell."),
    ("cfpb", "Incorrect information on your report is the most common theme."),
    ("amazon", "Long lasting has moderate support, and so does strong smell."),
    ("amazon", "Nice scent has low support, as does skin irritation."),
    ("amazon", "Great price trails the top three."),
    ("amazon", "Great price narrowly misses the top three."),
    ("amazon", "Dry skin is roughly 17 times as common as nice scent."),
    ("amazon", "Dry skin leads long lasting by about 133 mentions."),
    ("amazon", "Dry skin, unlike nice scent, has high support."),
    ("amazon", "Dry skin has high support. No other theme has high support."),
    ("amazon", "Several themes have low support."),
    ("amazon", "A few themes have moderate support."),
    ("yelp", "Friendly staff is mentioned most, though long wait isn't far behind."),
    ("amazon", "Dry skin is the most common theme. Nice scent is too rare to rank reliably."),
    ("amazon", "\u26a0\ufe0f Long lasting and strong smell are too close to call."),
    ("amazon", "\U0001f469\u200d\U0001f52c Dry skin is the most common theme."),
    ("amazon", "Due to the noise added for privacy, long lasting and strong smell cannot be told apart."),
    ("amazon", "Dry skin is far from rare."),
    ("amazon", "Dry skin is anything but rare."),
    ("amazon", "Nice scent is neither moderate nor high."),
    ("amazon", "Dry skin is not the least common theme, nor is it rare."),
    ("amazon", "Dry skin is no rarer than nice scent."),
    ("amazon", "Dry skin, like long lasting, is among the top three themes."),
    ("amazon", "Compared with nice scent, dry skin is more common."),
    ("amazon", "Dry skin and long lasting are more common."),
    ("amazon", "Dry skin is well ahead of nice scent (12.2% vs. 0.7%)."),
    ("amazon", "Long lasting and strong smell are indistinguishable (9.6% vs 9.4%)."),
    ("yelp", "Long wait and fresh ingredients are statistically tied (difference below the 12.0 margin)."),
    ("amazon", "Dry skin is 577 mentions ahead of nice scent."),
    ("amazon", "The most common themes:\n- Dry skin\n- Long lasting"),
    ("amazon", "## High support\n- Dry skin\n## Low support\n- Nice scent\n- Small bottle"),
    ("amazon", "Themes by rank:\n1. Dry skin\n2. Long lasting\n3. Strong smell"),
    ("amazon", "Most common theme:\nDry skin"),
    ("amazon", "The most common theme is not nice scent."),
    ("amazon", "The top three themes do not include nice scent."),
    ("yelp", "Which theme is the most common? Friendly staff."),
    ("amazon", "Scent is the least common theme."),
    ("amazon", "Dry skin is #1 with high support."),
    ("amazon", "Dry skin is No. 1."),
    ("amazon", "Skin irritation is the most common low-support theme."),
    ("amazon", "After dry skin, long lasting is the most common theme."),
    ("amazon", "Apart from nice scent, small bottle is the least common theme."),
    ("amazon", "Is nice scent the most common theme? No."),
    ("amazon", "Is dry skin the most common theme? Yes."),
    ("amazon", "**Key themes**\n- Dry skin: high support, about 12% of reviews\n- Nice scent: low support"),
]


@pytest.mark.parametrize("plan_name, summary, code", REJECTED, ids=[s for _, s, _ in REJECTED])
def test_hostile_summaries_are_rejected(plan_name, summary, code):
    v = verify(summary, plan(plan_name))
    assert not v.accepted
    assert code in {x.code for x in v.violations}, [x.to_dict() for x in v.violations]


@pytest.mark.parametrize("plan_name, summary", ACCEPTED, ids=[s for _, s in ACCEPTED])
def test_faithful_summaries_still_pass(plan_name, summary):
    v = verify(summary, plan(plan_name))
    assert v.accepted, [x.to_dict() for x in v.violations]


def test_a_certain_first_place_needs_the_margin_to_second():
    tied = make_plan(["missing notifications", "wrong item", "refund delay"], [29.8, 28.3, 26.8])
    assert verify("Missing notifications is the most common theme.", tied).accepted
    v = verify("Missing notifications is clearly the most common theme.", tied)
    assert [x.code for x in v.violations] == ["unsupported_comparison"]


def test_letters_of_the_plans_own_script_are_not_hidden_text():
    greek = make_plan(["καφές", "dry skin"], [300.0, 100.0])
    assert verify("καφές is the most common theme.", greek).accepted
