"""Table-driven tests of the verifier rules added for issue 13/15 (docs/VERIFIER.md).

VALID: (plan, summary) that must be accepted. INVALID: (plan, summary, codes, bad) where
`codes` is the exact set of violation codes and `bad` the defective sentence (or phrase):
every violation's span is text of the summary, and each expected code has a violation
whose span lies inside `bad`.
"""
from __future__ import annotations

import pytest

from dpspin_sql.verify import verify
from tests.helpers.verifier_plans import make_plan, plan

# ---------------------------------------------------------------- counts of themes, ranks, bins
COUNTS_VALID = [
    ("amazon", "The three most common themes are dry skin, long lasting and strong smell."),
    ("amazon", "Four of the ten themes have moderate support."),
    ("amazon", "The least common of the ten themes is nice scent."),
    ("amazon", "Nice scent is the least common of the ten."),
    ("amazon", "Dry skin, long lasting and strong smell lead. All three are frequently mentioned."),
    ("amazon", "Long lasting, strong smell and great price follow. All three fall in the moderate bin."),
    ("amazon", "Only one theme has high support."),
    ("amazon", "Only one theme, dry skin, has high support."),
    ("amazon", "Five themes have low support: skin irritation, broken bottle, hair color, small bottle and nice scent."),
    ("amazon", "Two themes stand out: dry skin and long lasting."),
    ("amazon", "The themes fall into three bins."),
    ("amazon", "Of the ten themes, four have moderate support."),
    ("amazon", "Half of the ten themes have low support."),
    ("amazon", "Most themes do not reach moderate support; half of them are low."),
    ("amazon", "No theme besides dry skin reaches high support; none of the themes is in a fourth bin."),
    ("amazon", "The plan lists ten themes."),
    ("amazon", "Across the ten released themes, dry skin stands out."),
    ("amazon", "At least two themes have moderate support."),
    ("amazon", "Fewer than two themes have high support."),
    ("amazon", "The two most common themes, dry skin and long lasting, lead the list."),
    ("amazon", "The remaining five themes have low support."),
    ("amazon", "Dry skin is high; the other nine themes are moderate or low."),
    ("amazon", "Two themes concern skin and three concern packaging."),
    ("amazon", "4 out of 10 themes are moderate."),
    ("amazon", "Released over a dictionary of 50 candidate themes, the plan keeps ten."),
    ("amazon", "Skin irritation and broken bottle both have low support."),
    ("cfpb", "Three of the ten themes concern credit reporting."),
    ("cfpb", "Two of the ten themes have high support, and four have low support."),
    ("cfpb", "The two high-support themes both concern credit reporting."),
    ("yelp", "Friendly staff, long wait and fresh ingredients lead; these three form the high bin."),
    ("yelp", "Friendly staff and long wait are two of the three high-bin themes."),
    ("yelp", "Seven of the ten themes have high or moderate support."),
    ("yelp", "The six themes ranked 2 through 7 include long wait and good value."),
    ("yelp", "Released at ε = 2 over a 16-theme dictionary, the plan names ten themes."),
]
COUNTS_INVALID = [
    ("amazon", "Three themes have high support.", ["unsupported_number"], "Three themes have high support."),
    ("amazon", "Four of the twelve themes have moderate support.", ["unsupported_number"], "twelve"),
    ("amazon", "Three of the ten themes have moderate support.", ["unsupported_number"], "Three of the ten"),
    ("amazon", "Two of the ten themes have high support.", ["unsupported_number"], "Two of the ten"),
    ("amazon", "The least common of the eight themes is nice scent.", ["unsupported_number"], "eight"),
    ("amazon", "Dry skin, long lasting and strong smell lead. All three have high support.", ["wrong_bin"],
     "All three have high support."),
    ("amazon", "Dry skin and long lasting lead. All three fall in the moderate bin.", ["unsupported_number"],
     "All three fall in the moderate bin."),
    ("amazon", "Three themes have high support: dry skin, long lasting and strong smell.",
     ["unsupported_number", "wrong_bin"], "Three themes have high support"),
    ("amazon", "Two themes stand out: dry skin, long lasting and strong smell.", ["unsupported_number"], "Two themes"),
    ("amazon", "The themes fall into four bins.", ["unsupported_number"], "four bins"),
    ("amazon", "Most of the themes have moderate support.", ["unsupported_number"], "Most of the themes"),
    ("amazon", "None of the themes has high support.", ["unsupported_number"], "None of the themes"),
    ("amazon", "Every theme has low support.", ["wrong_bin"], "low"),
    ("amazon", "A third of the themes have low support.", ["unsupported_number"], "A third of the themes"),
    ("amazon", "The plan covers nine themes.", ["unsupported_number"], "nine"),
    ("amazon", "More than five themes have moderate support.", ["unsupported_number"], "More than five"),
    ("amazon", "The remaining eight themes have moderate support.", ["unsupported_number"], "eight"),
    ("amazon", "Of the ten themes, three have moderate support.", ["unsupported_number"], "three"),
    ("amazon", "Dry skin and great price both have high support.", ["wrong_bin"], "high"),
    ("amazon", "The two low-support themes are broken bottle and nice scent.", ["unsupported_number"], "two"),
    ("amazon", "Eleven themes concern skin care.", ["unsupported_number"], "Eleven"),
    ("cfpb", "Three themes have high support.", ["unsupported_number"], "Three"),
    ("yelp", "Two of the four high-bin themes concern service.", ["unsupported_number"], "four"),
]

# ---------------------------------------------------------------- rank groups and ranges
RANKS_VALID = [
    ("amazon", "The top three themes are dry skin, long lasting and strong smell."),
    ("amazon", "The top-3 includes strong smell."),
    ("amazon", "The bottom two themes are small bottle and nice scent."),
    ("amazon", "The last two themes, small bottle and nice scent, have low support."),
    ("amazon", "The two least common themes are small bottle and nice scent."),
    ("amazon", "Beyond the top three, great price ranks fourth."),
    ("amazon", "Themes ranked 6 through 10 all have low support."),
    ("amazon", "Ranks 2 to 5 are held by long lasting, strong smell, great price and easy application."),
    ("amazon", "Strong smell ranks third of ten."),
    ("yelp", "Ranks 8 and 9 go to cold food and live music."),
    ("yelp", "Rank-based bins: ranks 1–3 are high, 4–7 moderate and 8–10 low."),
]
RANKS_INVALID = [
    ("amazon", "The three most common themes are dry skin, long lasting and great price.", ["wrong_rank"], "great price"),
    ("amazon", "The top twelve themes include dry skin.", ["wrong_rank"], "top twelve"),
    ("amazon", "The bottom two themes are hair color and nice scent.", ["wrong_rank"], "hair color"),
    ("amazon", "Beyond the top three, long lasting still appears.", ["wrong_rank"], "long lasting"),
    ("amazon", "Themes ranked 4 through 6 have low support.", ["wrong_bin"], "low"),
    ("amazon", "Ranks 1 to 3 include great price.", ["wrong_rank"], "great price"),
    ("amazon", "Ranks 9 to 11 are low.", ["wrong_rank"], "Ranks 9 to 11"),
    ("yelp", "Rank-based bins: ranks 1–3 are high, 4–6 moderate and 7–10 low.", ["wrong_bin"], "low"),
]

# ---------------------------------------------------------------- plan metadata, scoped by clause / sentence
METADATA_VALID = [
    ("amazon", "This summary is based on a differentially private release with ε = 1 and δ = 10⁻⁶."),
    ("amazon", "Differences smaller than the comparison margin of 14.9 are not treated as meaningful."),
    ("amazon", "Because every released mass includes calibrated noise, two themes whose masses differ by less than 14.9 "
               "— the public comparison margin — should be read as statistically indistinguishable."),
    ("amazon", "Each released mass carries noise with a standard deviation of 5.38."),
    ("amazon", "Any difference under 14.9, which is the comparison margin for this release, is treated as noise."),
    ("amazon", "Shares are computed over a public denominator of 5,000 reviews."),
    ("amazon", "Each review counts toward at most 3 themes, out of a dictionary of 50."),
    ("cfpb", "Results carry 95% confidence intervals."),
    ("cfpb", "Intervals are reported at a confidence level of 0.95."),
    ("yelp", "The release spends a privacy budget of ε = 2 on 16 candidate themes."),
]
METADATA_INVALID = [
    ("amazon", "Differences smaller than the comparison margin of 20 are not treated as meaningful.",
     ["unsupported_number"], "20"),
    ("amazon", "The release used ε = 2.", ["unsupported_number"], "2"),
    ("amazon", "Dry skin has 15 mentions, and the comparison margin is 14.9.", ["unsupported_number"], "15"),
    ("cfpb", "Results carry 90% confidence intervals.", ["unsupported_number"], "90%"),
    ("amazon", "Results carry 95% confidence intervals.", ["unsupported_number"], "95%"),
    ("amazon", "The noise scale is 9.", ["unsupported_number"], "9"),
    # every public field, bound to its name, is checked against that field (not any field it may equal)
    ("amazon", "The user-level release bounds each person's contribution.", ["wrong_method"], "user-level"),
    ("amazon", "Released with the Laplace mechanism at ε = 1.", ["wrong_method"], "Laplace"),
    ("amazon", "The release used ε = 1 with noise scale σ ≈ 3.", ["unsupported_number"], "3"),
]

# ---------------------------------------------------------------- change over time
TREND_VALID = [
    ("amazon", "All figures come from a single released plan, so they cannot show trends over time."),
    ("amazon", "A single plan cannot show whether dry skin is rising."),
    ("amazon", "These figures say nothing about how themes change over time."),
    ("amazon", "This release is one snapshot; trends over time are not covered."),
    ("amazon", "Support drops off sharply after the top three themes."),
    ("amazon", "Below the top three, support falls to moderate and then low levels."),
    ("amazon", "Dry skin emerges as the clear leader."),
    ("amazon", "Dry skin rises to the top of the list."),
    ("amazon", "Long lasting and strong smell fall within the comparison margin of each other."),
    ("amazon", "All four moderate themes fall in the moderate bin."),
    ("amazon", "Consumers say their interest rates increased."),
    ("amazon", "Reviewers complain that the formula changed."),
    ("amazon", "Customers who switched products mention a strong smell."),
    ("amazon", "A change of a few reviews would not alter the ranking."),
    ("amazon", "Dry skin is more common than great price."),
    ("yelp", "Long waits are the second most common theme."),
    ("yelp", "Reviews describe a long wait at peak times."),
    ("cfpb", "Consumers describe an increase in interest charges they did not expect."),
    ("amazon", "Support declined steadily down the list."),
    ("amazon", "Mentions taper off after the top five."),
    ("amazon", "Brands should increase bottle durability."),
    ("amazon", "Retailers could increase sales by fixing packaging."),
]
TREND_INVALID = [
    ("amazon", "Complaints about dry skin have been rising.", "have been rising"),
    ("amazon", "Mentions of great price grew through the year.", "grew through the year"),
    ("amazon", "Strong smell increased over the winter.", "increased over the winter"),
    ("amazon", "Long lasting is becoming less common.", "becoming less"),
    ("amazon", "Dry skin is more common than last year.", "than last year"),
    ("amazon", "Dry skin is more common than it used to be.", "used to"),
    ("amazon", "Broken bottles are on the rise.", "on the rise"),
    ("amazon", "There has been a spike in dry skin reviews.", "spike in dry skin"),
    ("amazon", "Reviewers increasingly mention skin irritation.", "increasingly"),
    ("amazon", "Dry skin is a growing concern.", "growing concern"),
    ("amazon", "Dry skin reviews doubled.", "doubled"),
    ("amazon", "It rose steadily.", "rose steadily"),
    ("amazon", "Dry skin peaks in winter.", "peaks in winter"),
    ("amazon", "Great price continues to climb.", "continues to climb"),
    ("amazon", "Dry skin has not declined over the year.", "has not declined over the year"),
    ("amazon", "Long lasting is no longer the leading theme.", "Long lasting is no longer the leading theme."),
    ("amazon", "Broken bottle fell to the bottom of the ranking.", "fell"),
    ("amazon", "Nice scent has grown steadily.", "has grown"),
    ("amazon", "Strong smell complaints are seasonal.", "seasonal"),
    ("amazon", "Year over year, easy application gained ground and now leads its bin.",
     "Year over year, easy application gained ground and now leads its bin."),
    ("yelp", "Long waits have become more common recently.", "become more common"),
    ("yelp", "Complaints about cold food dropped sharply.", "dropped sharply"),
    ("cfpb", "Complaints about debt that is not yours increased this year.", "increased this year"),
]
TREND_INVALID_EXTRA = {"Long lasting is no longer the leading theme.": ["wrong_rank"]}

# ---------------------------------------------------------------- anecdotes
ANECDOTE_VALID = [
    ("amazon", "Customers report dry skin."),
    ("amazon", "Many reviewers mention a strong smell."),
    ("amazon", "Complaints describe broken bottles."),
    ("amazon", "Some users say the scent fades."),
    ("amazon", "A few diners mention long lasting."),
    ("amazon", "A number of shoppers praise a great price."),
    ("amazon", "Reviewers with sensitive skin mention skin irritation."),
    ("amazon", "Reviewers who mention dry skin often describe skin that feels tight after use."),
    ("amazon", "Every reviewer contributes at most one record."),
    ("amazon", "One in eight reviews mentions dry skin."),
    ("amazon", "What the customer sees first is the price; great price is a moderate theme."),
    ("amazon", "A single reviewer can contribute at most one record to the release, which protects privacy."),
    ("amazon", "The typical reviewer mentions dry skin."),
    ("amazon", "I would note that dry skin is the most common theme."),
    ("amazon", "I found dry skin to be the most common theme."),
    ("amazon", "We treat differences below the margin as noise."),
    ("amazon", "Our summary covers ten themes."),
    ("amazon", "A customer-service theme does not appear in the plan."),
    # was "The user-level release …": the amazon plan is a record-level release, so that sentence states a wrong
    # unit and is rejected now (wrong_method, METADATA_INVALID); the record-level statement passes
    ("amazon", "The record-level release bounds each record's contribution."),
    ("amazon", "A reviewer who mentions dry skin is counted under that theme."),
    ("amazon", "No individual customer can be identified from this plan."),
    ("cfpb", "Consumers describe credit reports that list information belonging to someone else."),
    ("cfpb", "Incorrect information on your report is the most common theme."),
    ("cfpb", "This report summarizes the released plan."),
    ("amazon", "In my view, dry skin matters most."),
    ("amazon", "It seems to me that dry skin leads the plan."),
]
ANECDOTE_INVALID = [
    ("amazon", "A customer whose bottle arrived broken asked for a refund.", "A customer whose"),
    ("amazon", "One shopper's bottle leaked in transit.", "One shopper's"),
    ("amazon", "I bought this for my wife and it smelled strong.", "I"),
    ("amazon", "A reviewer with sensitive skin described a burning feeling.", "A reviewer with sensitive skin described"),
    ("amazon", "One shopper, a nurse, returned the set after a week.", "One shopper, a nurse, returned"),
    ("amazon", "Her skin cleared up within days.", "Her"),
    ("amazon", "In one review, the pump stopped working.", "one review"),
    ("amazon", "This customer had waited weeks for delivery.", "This customer had"),
    ("amazon", "Another buyer mentions that the cap leaked.", "Another buyer mentions"),
    ("amazon", "Someone compared the scent to cheap candy.", "Someone compared"),
    ("amazon", "One of the reviewers described a rash.", "One of the reviewers described"),
    ("amazon", "A long-time customer wrote about a strong smell.", "A long-time customer wrote"),
    ("amazon", "The customer was charged twice for a broken bottle.", "The customer was"),
    ("amazon", "The reviewer says the bottle leaked.", "The reviewer says"),
    ("amazon", "My skin got worse after a week.", "My"),
    ("amazon", "He returned the set.", "He"),
    ("amazon", "A shopper who returned the set mentioned broken bottle.", "A shopper who returned"),
    ("amazon", "One complaint describes a lender who refused to help.", "One complaint describes"),
    ("amazon", "A single review mentioned a broken bottle.", "A single review mentioned"),
    ("amazon", "I found the cream greasy.", "I"),
    ("amazon", "My order arrived late.", "My"),
    ("yelp", "One diner's steak was cold.", "One diner's"),
    ("yelp", "A guest at the bar waited an hour for a table.", "A guest at the bar waited"),
    ("cfpb", "A borrower whose card was declined filed about fees.", "A borrower whose"),
    ("cfpb", "One consumer reported that the lender kept calling.", "One consumer reported"),
]

# ---------------------------------------------------------------- accuracy intervals
INTERVAL_VALID = [
    ("amazon_iv", "Dry skin has about 612 mentions, ±9."),
    ("amazon_iv", "Dry skin: 612.4 ± 8.8 (95% confidence)."),
    ("amazon_iv", "Dry skin has between 603.6 and 621.2 mentions."),
    ("amazon_iv", "Dry skin has between 604 and 621 mentions."),
    ("amazon_iv", "Dry skin accounts for 12.2% ± 0.2 points of reviews."),
    ("amazon_iv", "Dry skin accounts for between 12.1% and 12.4% of reviews."),
    ("amazon_iv", "Dry skin accounts for 12.1–12.4% of reviews."),
    ("amazon_iv", "Each released mass has a margin of error of about 9 at 95% confidence."),
    ("amazon_iv", "Each released mass is accurate to within ±8.8 (95% confidence)."),
    ("amazon_iv", "With 95% confidence, dry skin lies between 603.6 and 621.2."),
    ("amazon_iv", "Dry skin ranks first with 612 (95% CI: 603.6–621.2)."),
    ("amazon_iv", "Long lasting has about 480 mentions, plus or minus 9."),
    ("yelp_iv", "Clean restroom has a released mass of -4.1 ± 8.8."),
    ("yelp_iv", "Clean restroom lies between 0 and 4.7."),
    ("yelp_iv", "Clean restroom lies between -12.9 and 4.7."),
]
INTERVAL_INVALID = [
    ("amazon_iv", "Dry skin has 612 ± 20 mentions.", "612 ± 20"),
    ("amazon_iv", "Dry skin has 700 ± 9 mentions.", "700 ± 9"),
    ("amazon_iv", "Dry skin has between 590 and 600 mentions.", "between 590 and 600"),
    ("amazon_iv", "Dry skin accounts for 12.2% ± 2 points of reviews.", "12.2% ± 2 points"),
    ("amazon_iv", "Dry skin accounts for between 11% and 12% of reviews.", "between 11% and 12%"),
    ("amazon_iv", "Masses are accurate to within ±20.", "accurate to within ±20"),
    ("amazon_iv", "Long lasting has a 95% interval of 600 to 620.", "600 to 620"),
    ("amazon", "Dry skin has 612 ± 9 mentions.", "612 ± 9"),
    ("amazon", "Dry skin has between 600 and 620 mentions.", "between 600 and 620"),
    ("yelp", "Friendly staff has about 402 mentions, ±9.", "402 mentions, ±9"),
]

# ---------------------------------------------------------------- shared attachment helpers
ATTACH_VALID = [
    ("amazon", "Long lasting and strong smell follow at roughly 9.6% and 9.4% of reviews."),
    ("amazon", "Long lasting and strong smell have 9.6% and 9.4% of reviews respectively."),
    ("amazon", "Dry skin and great price have high and moderate support respectively."),
    ("amazon", "The difference between long lasting and strong smell is too small to be meaningful."),
    ("amazon", "There is no meaningful difference between long lasting and strong smell."),
    ("cfpb", "Mortgage complaints about trouble during the payment process are the seventh most common theme."),
    ("cfpb", "Problems with fees on credit cards rank sixth."),
]
ATTACH_VALID += [
    ("amazon", "Great price (rank 4, about 6% of reviews) is clearly more common than easy application (about 3%)."),
    ("amazon", "Long lasting wear (≈9.6%) and strong smell (≈9.4%) are effectively tied for second place."),
    ("amazon", "The remaining themes — skin irritation, broken bottle, hair color, small bottle and nice scent — each "
               "appear in fewer than 3% of reviews."),
    ("amazon", "Small bottle and nice scent each appear in under 1% of reviews."),
    ("amazon", "Both dry skin (12.2%) and long lasting (9.6%) are common."),
    ("cfpb", "The two most common themes each exceed 12% of complaints."),
    ("cfpb", "Three credit reporting themes appear in the plan, and two credit card themes have low or moderate support."),
    ("cfpb", "Complaints about a reporting company that used the report improperly make up about 6% of complaints."),
    ("cfpb", "Each released figure is noisy: masses carry Gaussian noise with a scale of 5.38, and a 95% interval of about ±8.8."),
    ("amazon", "The plan is differentially private: the masses include noise, and only differences of at least 14.9 "
               "are treated as meaningful."),
    ("amazon", "Themes at the bottom of the list — small bottle and nice scent — each account for under 1% of reviews."),
    ("amazon", "The top five themes all have moderate or high support."),
]
ATTACH_INVALID = [
    ("amazon", "Long lasting and strong smell follow at roughly 9.4% and 9.6% of reviews.", ["unsupported_number"], "9.4%"),
    ("amazon", "Dry skin and great price have moderate and high support respectively.", ["wrong_bin"], "moderate"),
    ("amazon", "The difference between dry skin and long lasting is too small to matter.", ["unsupported_comparison"],
     "difference between dry skin and long lasting"),
    ("amazon", "Dry skin and nice scent each appear in under 1% of reviews.", ["unsupported_number"], "under 1%"),
    ("amazon", "The top two themes each exceed 12% of reviews.", ["unsupported_number"], "exceed 12%"),
    ("amazon", "Great price (rank 4, about 9% of reviews) leads the moderate bin.", ["unsupported_number"], "about 9%"),
    ("cfpb", "Four credit reporting themes appear in the plan.", ["unsupported_number"], "Four"),
    ("cfpb", "Two credit card themes have high support.", ["unsupported_number"], "Two"),
    ("amazon", "Themes at the bottom of the list — hair color and nice scent — have low support.", ["wrong_rank"],
     "hair color"),
    ("amazon", "The top five themes all have moderate support.", ["wrong_bin"], "moderate"),
]

DOC_VALID = [  # one case per documented form (docs/VERIFIER.md), as a corpus author would write them
    ("amazon", "Contributions are clipped at B = 1."),
    ("amazon", "The release used δ = 1e-6."),
    ("amazon", "Noise has σ = 5.38."),
    ("amazon", "Dry skin appears in 612 out of 5,000 reviews."),
    ("amazon", "Each review counts toward at most 3 themes."),
    ("amazon", "The plan keeps the top 10 of 50 candidate themes."),
    ("amazon", "The themes fall into three support levels."),
    ("amazon", "Two themes, dry skin and long lasting, lead."),
    ("amazon", "Among the ten themes, the two most common are dry skin and long lasting."),
    ("amazon", "Exactly one theme is in the high bin."),
    ("amazon", "No fewer than four themes have moderate support."),
    ("amazon", "Four or more themes have low support."),
    ("amazon", "The majority of the themes have low or moderate support."),
    ("amazon", "All ten themes have high, moderate or low support."),
    ("amazon", "Both skin irritation and broken bottle have low support."),
    ("amazon", "A single theme has high support."),
    ("amazon", "One of the themes has high support."),
    ("amazon", "Outside the top five, skin irritation leads."),
    ("amazon", "Positions 9 and 10 belong to small bottle and nice scent."),
    ("amazon", "A reviewer's perspective is not part of the plan."),
    ("amazon", "A couple of reviewers mention broken bottles."),
    ("amazon_iv", "Dry skin has [603.6, 621.2] mentions."),
    ("amazon_iv", "Dry skin lies from 603.6 to 621.2."),
    ("amazon_iv", "Dry skin: 603.6 to 621.2 (95% interval)."),
    ("amazon_iv", "Dry skin: 612 give or take 9."),
    ("amazon_iv", "Dry skin, 612 +/- 8.8."),
    ("amazon_iv", "Dry skin has a margin of error of 8.8."),
    ("amazon", "Top themes:\n1. Dry skin — about 12% of reviews (high support)\n2. Long lasting — about 9.6%\n"
               "3. Strong smell — about 9.4%"),
    ("amazon", "1) Dry skin leads. 2) Long lasting is second."),
    ("amazon", "(1) Dry skin is the most common theme."),
    ("amazon", "Two patterns stand out: skin feel and longevity."),
    ("amazon", "The plan suggests two priorities: addressing dry skin and keeping the formula long lasting."),
    ("amazon", "The low-support themes each appear in under 2.5% of reviews."),
    ("amazon", "Themes in the low bin are each mentioned in fewer than 2.5% of reviews."),
]
DOC_INVALID = [
    ("amazon", "Contributions are clipped at B = 2.", ["unsupported_number"], "2"),
    ("amazon", "The release used δ = 1e-5.", ["unsupported_number"], "1e-5"),
    ("amazon", "Each review counts toward at most 5 themes.", ["unsupported_number"], "at most 5"),
    ("amazon", "The plan keeps the top 10 of 40 candidate themes.", ["unsupported_number"], "40"),
    ("amazon", "The themes fall into five support levels.", ["unsupported_number"], "five"),
    ("amazon", "Two themes, dry skin, long lasting and strong smell, lead.", ["unsupported_number"], "Two"),
    ("amazon", "Six or more themes have low support.", ["unsupported_number"], "Six"),
    ("amazon", "The majority of the themes have moderate support.", ["unsupported_number"], "The majority of"),
    ("amazon", "All ten themes have moderate or low support.", ["wrong_bin"], "moderate or low"),
    ("amazon", "Both dry skin and broken bottle have low support.", ["wrong_bin"], "low"),
    ("amazon", "Positions 9 and 10 belong to hair color and nice scent.", ["wrong_rank"], "hair color"),
    ("amazon", "According to one reviewer, the pump broke.", ["record_detail"], "one reviewer"),
    ("amazon", "Per one complaint, the seal was broken.", ["record_detail"], "one complaint"),
    ("amazon", "Someone's order arrived broken.", ["record_detail"], "Someone's"),
    ("amazon", "A couple said the cap cracked.", ["record_detail"], "A couple said"),
    ("amazon", "A reviewer's cap cracked in transit.", ["record_detail"], "A reviewer's"),
    ("amazon", "Dry skin has gained ground.", ["unsupported_trend"], "gained ground"),
    ("amazon", "Dry skin is up from last year.", ["unsupported_trend"], "is up from"),
    ("amazon", "Dry skin has overtaken long lasting.", ["unsupported_trend"], "has overtaken"),
    ("amazon", "Great price lost ground over the year.", ["unsupported_trend"], "lost ground"),
    ("amazon_iv", "Dry skin: about 612 (±12).", ["unsupported_interval"], "about 612 (±12"),
    ("amazon_iv", "Dry skin has [590.0, 621.2] mentions.", ["unsupported_interval"], "[590.0, 621.2]"),
    ("amazon_iv", "Dry skin: 600 to 610 (95% interval).", ["unsupported_interval"], "600 to 610"),
    ("amazon_iv", "Dry skin has a margin of error of 4.", ["unsupported_interval"], "margin of error of 4"),
    ("amazon_iv", "Intervals are 99% intervals.", ["unsupported_number"], "99%"),
    ("amazon", "Three patterns stand out: skin feel and longevity.", ["unsupported_number"], "Three"),
    ("amazon", "Top themes:\n1. Dry skin — about 15% of reviews", ["unsupported_number"], "about 15%"),
    ("amazon", "Dry skin has 1. Long lasting is second.", ["unsupported_number"], "Dry skin has 1."),
    ("amazon", "The plan suggests two priorities.", ["unsupported_number"], "two"),
    ("amazon", "Themes in the moderate bin are each mentioned in fewer than 2.5% of reviews.", ["unsupported_number"],
     "fewer than 2.5%"),
]

# ---------------------------------------------------------------- whole summaries in analyst prose
PROSE_VALID = [
    ("cfpb", "This summary is based on a differentially private release with ε = 1 and δ = 10⁻⁶, covering the ten "
             "most common themes in 20,000 complaints. The two most common themes both concern credit reporting: "
             "information that belongs to someone else (about 15.6% of complaints) and an investigation that did not "
             "fix an error on your report (about 12.1%). Both have high support. Debt collection complaints about debt "
             "that is not yours rank third, at roughly 7.7%. Four of the ten themes have moderate support, and four have "
             "low support. Differences smaller than the comparison margin of 14.9 are not treated as meaningful."),
    ("amazon", "Across the ten released themes, dry skin stands out as the most common, mentioned in about 12% of "
               "reviews. Long lasting and strong smell follow at roughly 9.6% and 9.4%, a difference too small to be "
               "meaningful under the comparison margin. Great price and easy application also have moderate support, "
               "while the remaining five themes have low support. Customers report broken bottles and small bottles "
               "less often; both have low support. Note: no individual reviewer can be identified from this plan."),
    ("yelp", "Friendly staff is the most common theme, followed by long waits and fresh ingredients; these three form "
             "the high bin. Happy hour, outdoor seating, slow service and good value make up the moderate bin. The three "
             "least common themes — cold food, live music and clean restroom — have low support. Diners frequently "
             "mention friendly staff, and many reviews describe long waits. The plan is a single snapshot, so it cannot "
             "show whether any theme is rising or falling."),
]


def _ids(rows):
    return [f"{r[0]}: {r[1][:60]}" for r in rows]


def _check_invalid(plan_name, summary, codes, bad):
    assert bad in summary
    v = verify(summary, plan(plan_name))
    got = {x.code for x in v.violations}
    assert not v.accepted and got == set(codes), [x.to_dict() for x in v.violations]
    for x in v.violations:
        assert x.span and x.span in summary and x.message
    for code in codes:
        assert any((x.code == code and x.span in bad) or bad in x.span for x in v.violations if x.code == code), \
            (code, bad, [x.to_dict() for x in v.violations])


_VALID = (COUNTS_VALID + RANKS_VALID + METADATA_VALID + TREND_VALID + ANECDOTE_VALID + INTERVAL_VALID
          + ATTACH_VALID + DOC_VALID + PROSE_VALID)
_INVALID = COUNTS_INVALID + RANKS_INVALID + METADATA_INVALID + ATTACH_INVALID + DOC_INVALID


@pytest.mark.parametrize("plan_name,summary", _VALID, ids=_ids(_VALID))
def test_valid(plan_name, summary):
    v = verify(summary, plan(plan_name))
    assert v.accepted, [x.to_dict() for x in v.violations]


@pytest.mark.parametrize("plan_name,summary,codes,bad", _INVALID, ids=_ids(_INVALID))
def test_invalid(plan_name, summary, codes, bad):
    _check_invalid(plan_name, summary, codes, bad)


@pytest.mark.parametrize("plan_name,summary,bad", TREND_INVALID, ids=_ids(TREND_INVALID))
def test_trend_invalid(plan_name, summary, bad):
    _check_invalid(plan_name, summary, ["unsupported_trend"] + TREND_INVALID_EXTRA.get(summary, []), bad)


@pytest.mark.parametrize("plan_name,summary,bad", ANECDOTE_INVALID, ids=_ids(ANECDOTE_INVALID))
def test_anecdote_invalid(plan_name, summary, bad):
    _check_invalid(plan_name, summary, ["record_detail"], bad)


@pytest.mark.parametrize("plan_name,summary,bad", INTERVAL_INVALID, ids=_ids(INTERVAL_INVALID))
def test_interval_invalid(plan_name, summary, bad):
    _check_invalid(plan_name, summary, ["unsupported_interval"], bad)


def test_time_dimension_field_disables_the_trend_rule():
    """A future plan with per-period values hands trend claims to a rule that can check them."""
    p = plan("amazon")
    s = "Complaints about dry skin have been rising."
    assert not verify(s, p).accepted
    p["time_dimension"] = {"field": "month", "periods": ["2026-01", "2026-02"]}
    assert verify(s, p).accepted


def test_old_plans_without_intervals_still_verify():
    p = plan("amazon")
    assert "interval_half_width" not in p and all("interval" not in a for a in p["atoms"])
    assert verify("Dry skin has about 612 mentions, with high support.", p).accepted


def test_a_tie_in_a_one_theme_plan_has_no_partner():
    """'A is tied for first' in a plan of one theme: no other theme to share the rank (this used to raise)."""
    v = verify("Dry skin is tied for first place.", make_plan(["dry skin"], [612.4], denom=5000))
    assert not v.accepted and [x.code for x in v.violations] == ["unsupported_comparison"], [x.to_dict() for x in v.violations]


# ---------------------------------------------------------------- issue: blind-corpus findings and decided doc gaps
# Partitives: the qualifiers name M's group; N is judged by the predicate (Counts, *Partitives*).
PARTITIVE_VALID = [
    ("amazon", "Ten of the 50 dictionary themes were admitted to the plan."),
    ("amazon", "The plan admits ten of the 50 candidate themes."),
    ("amazon", "Of the 50 candidate themes, ten made it into the plan."),
    ("amazon", "Ten of the 50 themes in the dictionary were released."),
    ("amazon", "Ten themes were admitted from a dictionary of 50."),
    ("amazon", "Four of the 50 candidate themes have moderate support."),
    ("amazon", "Three of the 50 dictionary themes concern skin."),
    ("amazon", "Half of the 10 themes have low support."),
    ("yelp", "Ten of the 16 dictionary themes were released at ε = 2."),
    ("yelp", "The plan keeps ten of its 16 candidate themes."),
    ("yelp", "Two themes are listed under long wait and fresh ingredients."),
]
PARTITIVE_INVALID = [
    ("amazon", "Nine of the 50 dictionary themes were admitted to the plan.", ["unsupported_number"], "Nine"),
    ("amazon", "The plan admits ten of the 40 candidate themes.", ["unsupported_number"], "40"),
    ("amazon", "Eight themes were admitted from a dictionary of 50.", ["unsupported_number"], "Eight"),
    ("amazon", "Of the 50 candidate themes, twelve made it into the plan.", ["unsupported_number"], "twelve"),
    ("amazon", "Two of the 50 candidate themes have moderate support.", ["unsupported_number"], "Two"),
    ("yelp", "The plan keeps nine of its 16 candidate themes.", ["unsupported_number"], "nine"),
    ("yelp", "Ten of the 20 dictionary themes were released.", ["unsupported_number"], "20"),
]
# The assignment bound K: a method statement, checked against K only (Counts rule 0, quantifiers).
BOUND_VALID = [
    ("amazon", "Each review is assigned to at most 3 themes."),
    ("amazon", "Every review counts toward up to three themes."),
    ("amazon", "A review can be assigned to at most three themes."),
    ("amazon", "Each complaint contributes to no more than three themes."),
    ("amazon", "Each review belongs to at most three themes, and each review counts once."),
]
BOUND_INVALID = [  # exactly one violation: the wrong K, never "each review" as a universal claim
    ("amazon", "Each review is assigned to at most 2 themes.", ["unsupported_number"], "at most 2"),
    ("amazon", "Every review counts toward up to four themes.", ["unsupported_number"], "up to four"),
    ("yelp", "Long wait ranks second. Each review is assigned to at most 5 themes.", ["unsupported_number"], "at most 5"),
    ("amazon", "Each review mentions dry skin.", ["unsupported_number"], "Each review"),
]
# Listed counts: a list item keeps its own values; bulleted lines after a colon are the list.
LISTED_VALID = [
    ("amazon", "Two themes stand out: dry skin (rank 1) and long lasting (rank 2)."),
    ("amazon", "Two themes stand out: dry skin at 12% and long lasting at 9.6%."),
    ("amazon", "Three themes lead, dry skin (about 612), long lasting (about 480) and strong smell (about 470)."),
    ("amazon", "Two themes, dry skin with 12% of reviews and long lasting with 9.6% of reviews, lead."),
    ("amazon", "Two themes stand out: dry skin, ranked first, and long lasting, ranked second."),
    ("amazon", "Three themes lead:\n- dry skin (12.2%)\n- long lasting (9.6%)\n- strong smell (9.4%)"),
    ("amazon", "Two themes stand out:\n1. Dry skin, at about 12%.\n2. Long lasting, at about 9.6%."),
    ("amazon", "Two themes lead:\n\n* dry skin\n* long lasting\n\nThe other themes are smaller."),
    ("cfpb", "Within debt collection, two themes appear: debt is not yours (rank 3) and didn't receive enough "
             "information to verify debt (rank 8)."),
]
LISTED_INVALID = [
    ("amazon", "Three themes stand out: dry skin (rank 1) and long lasting (rank 2).", ["unsupported_number"], "Three"),
    ("amazon", "Two themes stand out: dry skin at 12%, long lasting at 9.6% and strong smell at 9.4%.",
     ["unsupported_number"], "Two"),
    ("amazon", "Two themes lead:\n- dry skin (12.2%)\n- long lasting (9.6%)\n- strong smell (9.4%)",
     ["unsupported_number"], "Two themes lead:"),
    ("cfpb", "Within debt collection, three themes appear: debt is not yours (rank 3) and didn't receive enough "
             "information to verify debt (rank 8).", ["unsupported_number"], "three"),
]
# A rank group's count that introduces (or follows) an enumeration equals it (Counts rule 2).
RANK_ENUM_VALID = [
    ("amazon", "The four most common themes are dry skin, long lasting, strong smell and great price."),
    ("amazon", "The top three themes are dry skin, long lasting and strong smell."),
    ("amazon", "The top three: dry skin, long lasting and strong smell."),
    ("amazon", "Dry skin, long lasting and strong smell are the three most common themes."),
    ("amazon", "The top three are dry skin and long lasting, followed by strong smell."),
    ("amazon", "The top five themes include dry skin and great price."),
    ("amazon", "Dry skin and long lasting are among the three most common themes."),
    ("amazon", "The two least common themes are small bottle and nice scent."),
    ("amazon", "The top three themes all have moderate or high support."),
]
RANK_ENUM_INVALID = [
    ("amazon", "The five most common themes are dry skin, long lasting, strong smell and great price.",
     ["unsupported_number"], "five"),
    ("amazon", "The top three themes are dry skin and long lasting.", ["unsupported_number"], "three"),
    ("amazon", "Dry skin and long lasting are the three most common themes.", ["unsupported_number"], "three"),
    ("amazon", "The three least common themes are small bottle and nice scent.", ["unsupported_number"], "three"),
    ("amazon", "The top two themes are dry skin, long lasting and strong smell.", ["unsupported_number", "wrong_rank"],
     "The top two themes are dry skin, long lasting and strong smell."),
]
# A count restricted by its own enumeration vs an unrestricted bin count (Counts rule 3).
RESTRICTED_VALID = [
    ("amazon", "Two themes of moderate support follow: long lasting and strong smell."),
    ("amazon", "Two themes of moderate support, long lasting and strong smell, follow."),
    ("amazon", "Two moderate-support themes, great price and easy application, fill the middle."),
    ("amazon", "Three themes with moderate support (long lasting, strong smell and great price) follow."),
    ("amazon", "Four themes have moderate support."),
]
RESTRICTED_INVALID = [
    ("amazon", "Two themes have moderate support: long lasting and strong smell.", ["unsupported_number"], "Two"),
    ("amazon", "Two themes of moderate support follow.", ["unsupported_number"], "Two"),
    ("amazon", "Two themes of moderate support, long lasting and dry skin, follow.", ["wrong_bin"], "moderate"),
    ("amazon", "Three themes of moderate support follow: long lasting and strong smell.", ["unsupported_number"], "Three"),
]
# A share of the public denominator: the denominator is metadata, the percentage the theme's value.
DENOMINATOR_VALID = [
    ("amazon", "Dry skin accounts for 12% of the 5,000 reviews."),
    ("amazon", "Of the 5,000 reviews, about 12% mention dry skin."),
    ("amazon", "Dry skin leads with about 612 of the 5,000 reviews (12%)."),
    ("amazon", "Roughly 9.6% of all 5,000 reviews mention long lasting."),
    ("cfpb", "Information belongs to someone else accounts for about 15.6% of the 20,000 complaints."),
]
DENOMINATOR_INVALID = [
    ("amazon", "Dry skin accounts for 20% of the 5,000 reviews.", ["unsupported_number"], "20%"),
    ("amazon", "Dry skin accounts for 12% of the 6,000 reviews.", ["unsupported_number"], "6,000"),
    ("amazon", "Of the 4,000 reviews, about 12% mention dry skin.", ["unsupported_number"], "4,000"),
    ("cfpb", "Information belongs to someone else accounts for about 25% of the 20,000 complaints.",
     ["unsupported_number"], "about 25%"),
]
# Shared ranks over a conjunction (Ranks, *Shared ranks*).
SHARED_RANK_VALID = [
    ("amazon", "Long lasting and strong smell are tied for second place."),
    ("amazon", "Long lasting and strong smell share second place."),
    ("amazon", "Long lasting and strong smell rank joint second."),
    ("amazon", "Long lasting and strong smell are tied at rank 2."),
    ("amazon", "Long lasting ties strong smell for second place."),
    ("amazon", "Strong smell is tied for second."),
    ("amazon", "Small bottle and nice scent are tied for last place."),
    ("yelp", "Long wait and fresh ingredients are tied for second place."),
    ("yelp", "Happy hour and outdoor seating share fourth place."),
]
SHARED_RANK_INVALID = [
    ("amazon", "Long lasting and strong smell are tied for third place.", ["wrong_rank"], "tied for third place"),
    ("amazon", "Dry skin and long lasting are tied for first.", ["unsupported_comparison"], "Dry skin and long lasting"),
    ("amazon", "Dry skin and long lasting share the top spot.", ["unsupported_comparison"], "Dry skin and long lasting"),
    ("amazon", "Great price and easy application are tied for fifth.", ["wrong_rank", "unsupported_comparison"],
     "Great price and easy application are tied for fifth."),
    ("yelp", "Happy hour and outdoor seating are tied for fifth place.", ["wrong_rank"], "tied for fifth place"),
    ("amazon", "Hair color and small bottle are tied for last.", ["wrong_rank", "unsupported_comparison"],
     "Hair color and small bottle are tied for last."),
]
# Similarity between two named themes (Comparisons).
SIMILAR_VALID = [
    ("amazon", "Long lasting and strong smell are close to each other."),
    ("amazon", "Long lasting and strong smell are comparable to one another."),
    ("amazon", "Long lasting and strong smell are very close."),
    ("amazon", "Long lasting and strong smell are close in support."),
    ("amazon", "Long lasting and strong smell sit close together."),
    ("amazon", "Dry skin has close to 610 mentions."),
    ("amazon", "Great price comes close to the top three."),
]
SIMILAR_INVALID = [
    ("amazon", "Dry skin and long lasting are close to each other.", ["unsupported_comparison"], "Dry skin and long lasting"),
    ("amazon", "Dry skin and long lasting are comparable to each other.", ["unsupported_comparison"], "Dry skin and long lasting"),
    ("amazon", "Dry skin and long lasting are very close.", ["unsupported_comparison"], "Dry skin and long lasting"),
    ("amazon", "Great price and easy application are close in support.", ["unsupported_comparison"], "Great price"),
    ("amazon", "Dry skin and great price sit close together.", ["unsupported_comparison"], "Dry skin and great price"),
]
# Record nouns with a / an / one: anecdotes about one record (Anecdotes).
RECORD_VALID = [
    ("amazon", "Reviews described broken bottle."),
    ("amazon", "Many reviews mention dry skin."),
    ("amazon", "A review counts toward at most three themes."),
    ("amazon", "Dry skin can appear in a review together with broken bottle."),
    ("amazon", "A record number of reviews mention dry skin."),
    ("amazon", "A review that mentions both themes counts for each."),
]
RECORD_INVALID = [
    ("amazon", "A complaint described broken bottle.", "A complaint described"),
    ("amazon", "A review mentioned dry skin.", "A review mentioned"),
    ("amazon", "An angry review complained about broken bottle.", "An angry review complained"),
    ("amazon", "A review was posted about broken bottle.", "A review was"),
    ("amazon", "One review mentioned dry skin.", "One review mentioned"),
    ("amazon", "According to a review, broken bottle is a problem.", "a review"),
    ("amazon", "A single review mentioned broken bottle.", "A single review mentioned"),
]
# A mention shared by several atoms ("credit reporting": atoms at 15.6%/rank 1, 12.1%/rank 2, 6.1%/rank 4).
AMBIGUOUS_VALID = [
    ("cfpb", "Credit reporting accounts for about 15.6% of complaints."),
    ("cfpb", "Credit reporting accounts for about 6.1% of complaints."),
    ("cfpb", "Credit reporting ranks fourth."),
    ("cfpb", "Credit reporting has moderate support."),
    ("cfpb", "Credit reporting has high support."),
]
AMBIGUOUS_INVALID = [
    ("cfpb", "Credit reporting accounts for about 34% of complaints.", ["unsupported_number"], "about 34%"),
    ("cfpb", "Credit reporting ranks third.", ["wrong_rank"], "ranks third"),
    ("cfpb", "Credit reporting has low support.", ["wrong_bin"], "low"),
]
VOCAB_VALID = [
    ("amazon", "Dry skin leads under Gaussian noise at ε = 1, released with OpenDP by DP-SPIN."),
    ("amazon", "Dry skin leads the Top-L plan; each review counts toward at most K = 3 themes."),
    ("cfpb", "In this CFPB plan, credit reporting leads."),
]
VOCAB_INVALID = [
    ("amazon", "Dry skin leads; reviewers mention Walmart.", ["named_entity"], "Walmart"),
]

_ISSUE_VALID = (PARTITIVE_VALID + BOUND_VALID + LISTED_VALID + RANK_ENUM_VALID + RESTRICTED_VALID + DENOMINATOR_VALID
                + SHARED_RANK_VALID + SIMILAR_VALID + RECORD_VALID + AMBIGUOUS_VALID + VOCAB_VALID)
_ISSUE_INVALID = (PARTITIVE_INVALID + BOUND_INVALID + LISTED_INVALID + RANK_ENUM_INVALID + RESTRICTED_INVALID
                  + DENOMINATOR_INVALID + SHARED_RANK_INVALID + SIMILAR_INVALID + AMBIGUOUS_INVALID + VOCAB_INVALID)


@pytest.mark.parametrize("plan_name,summary", _ISSUE_VALID, ids=_ids(_ISSUE_VALID))
def test_issue_valid(plan_name, summary):
    v = verify(summary, plan(plan_name))
    assert v.accepted, [x.to_dict() for x in v.violations]


@pytest.mark.parametrize("plan_name,summary,codes,bad", _ISSUE_INVALID, ids=_ids(_ISSUE_INVALID))
def test_issue_invalid(plan_name, summary, codes, bad):
    _check_invalid(plan_name, summary, codes, bad)


@pytest.mark.parametrize("plan_name,summary,bad", RECORD_INVALID, ids=_ids(RECORD_INVALID))
def test_issue_record_invalid(plan_name, summary, bad):
    _check_invalid(plan_name, summary, ["record_detail"], bad)


@pytest.mark.parametrize("plan_name,summary,codes,bad", PARTITIVE_INVALID + BOUND_INVALID,
                         ids=_ids(PARTITIVE_INVALID + BOUND_INVALID))
def test_issue_one_violation_only(plan_name, summary, codes, bad):
    """The right part of a partitive or a bound sentence is never flagged with the wrong one."""
    v = verify(summary, plan(plan_name))
    assert len(v.violations) == 1 and v.violations[0].span == bad, [x.to_dict() for x in v.violations]


# ---------------------------------------------------------------- quotation marks that belong to labels
# Labels written verbatim keep their own quote characters ('"buy now" button', '5" screen', "kids' toys"):
# those, and inch / foot marks after numbers, open no quotation; quotations of record text stay rejected.
QUOTE_VALID = [
    ("gadget", 'The most common theme is "buy now" button.'),
    ("gadget", '"Buy now" button ranks first, at about 13% of reviews.'),
    ("gadget", 'The "buy now" buttons theme leads, ahead of 5" screen.'),
    ("gadget", 'Reviews about the 5" screen rank second, with high support.'),
    ("gadget", "Kids' toys ranks third and '90s music sixth."),
    ("gadget", 'Salt & pepper and <b> tag have moderate and low support respectively.'),
    ("gadget", 'It\'s "fine" has low support, at about 1.5% of reviews.'),
    ("gadget", 'Reviewers often name the "buy now" part of the button theme.'),
    ("gadget", 'The 5" screens theme is more common than battery life.'),
    ("gadget", "Battery life sits in the moderate bin; '90s music is also moderate."),
]
QUOTE_INVALID = [
    ("gadget", 'The "buy now" button leads. Reviewers wrote "never again" about it.', ["quotation"],
     'Reviewers wrote "never again" about it.'),
    ("gadget", '5" screen ranks second; reviewers said "too small to read".', ["quotation"],
     'reviewers said "too small to read".'),
    ("gadget", "Kids' toys ranks third. Reviewers call the toys 'cheap junk'.", ["quotation"],
     "Reviewers call the toys 'cheap junk'."),
    ("gadget", 'Battery life is "awful" according to reviewers.', ["quotation"],
     'Battery life is "awful" according to reviewers.'),
    ("gadget", 'The 5" screen theme ranks second. Reviewers say "it cracked after 2" days.', ["quotation", "unsupported_number"],
     'Reviewers say "it cracked after 2" days.'),
    ("gadget", "'90s music ranks sixth. Many reviews say the 6' cord is 'far too short'.", ["quotation", "unadmitted_atom"],
     "Many reviews say the 6' cord is 'far too short'."),
]


def _check_in_sentence(plan_name, summary, codes, bad):
    """Exact codes, and every violation's span lies inside the defective sentence `bad` (by position)."""
    assert bad in summary
    v = verify(summary, plan(plan_name))
    s0 = summary.index(bad)
    assert not v.accepted and {x.code for x in v.violations} == set(codes), [x.to_dict() for x in v.violations]
    for x in v.violations:
        assert x.span and x.message and s0 <= x.start and x.end <= s0 + len(bad), x.to_dict()


@pytest.mark.parametrize("plan_name,summary", QUOTE_VALID, ids=_ids(QUOTE_VALID))
def test_label_quotes_valid(plan_name, summary):
    v = verify(summary, plan(plan_name))
    assert v.accepted, [x.to_dict() for x in v.violations]


@pytest.mark.parametrize("plan_name,summary,codes,bad", QUOTE_INVALID, ids=_ids(QUOTE_INVALID))
def test_label_quotes_invalid(plan_name, summary, codes, bad):
    _check_in_sentence(plan_name, summary, codes, bad)
