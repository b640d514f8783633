"""Claims no plan can support, whatever the numbers (`unsupported_claim`, `unsupported_number`).

A plan releases one noisy mass per admitted theme, so it cannot show:
- absence: that no record mentions a theme ("never mentioned", "zero reviews", "0 mentions"),
  since a released theme has noise on it and an unreleased one was never measured
  ("nobody", "none of the customers" are the quantifier rule's);
- an exact count ("exactly 612", "the true count"): every released value is noisy;
- a relation between themes or with something else — cause ("causes", "leads to", "due to"),
  co-occurrence ("reviewers who mention A also mention B"), or a subgroup ("women", "one-star
  reviews") — since the sketch keeps no record's other attributes and no pair of themes;
- a number in a unit the number rule does not read ("5k", "90pc"), which would otherwise pass
  unchecked.
They fail closed: the sentence is rejected rather than read as something the plan says.
"""
from __future__ import annotations

import re

from ..context import Check
from ..vocab import METHOD, PEOPLE_NOUNS, RECORD_NOUNS, is_bound_statement

ABSENCE = re.compile(
    r"\b(?:never|not\s+(?:once|ever))\s+(?:been\s+)?(?:mentioned|raised|cited|reported|discussed|appears?|comes?\s+up)\b"
    r"|\bnot\s+(?:mentioned|raised|cited|reported|discussed)\s+at\s+all\b"
    r"|\b(?:zero|0|no|not\s+a\s+single|not\s+one)\s+(?:single\s+)?" + RECORD_NOUNS + r"\s+(?:\w+\s+){0,2}?"
    r"(?:mention|mentions|mentioned|raise|raises|raised|cite|cites|cited|report|reports|reported|discuss|discusses|"
    r"discussed|include|includes|included|about|on|of|concern|concerns|concerned)\b"
    r"|\b(?:zero|0|no)\s+(?:mentions?|support|occurrences?|instances?)\b", re.I)
_PLAN_PARTS = r"(?:themes?|topics?|atoms?|categories|category|bins?|ranks?)"
EXACT = re.compile(r"\b(?:exactly|precisely)\s+(?:[\d,.]+|\w+)\s+(?:\w+\s+){0,2}?(?:" + RECORD_NOUNS + "|" + PEOPLE_NOUNS
                   + r")\b|\bthe\s+(?:true|actual|real|precise|exact)\s+(?:count|number|total|figure|value|amount)\b"
                   r"(?!\s+of\s+" + _PLAN_PARTS + r")", re.I)
# causes and explanations, as a class (docs/VERIFIER.md, *Causes and explanations*): any connective,
# preposition, verb or noun that relates a theme to a cause, an effect or a reason
CAUSE = re.compile(
    r"\b(?:because|cause[sd]?|causing|caused\s+by|leads?\s+to|led\s+to|leading\s+to|results?\s+(?:in|from)|"
    r"resulted\s+(?:in|from)|resulting\s+(?:in|from)|as\s+a\s+(?:direct\s+)?(?:result|consequence)|"
    r"(?:the|a)\s+(?:direct\s+)?(?:result|consequence|product|function|by-?product)\s+of|drives?|drove|driving|"
    r"(?:driven|caused|explained|fueled|fuelled|powered|propelled|spurred|prompted|motivated|shaped|boosted|lifted|"
    r"pushed|pulled|dragged|held\s+back|weighed\s+down)\s+(?:\w+ly\s+|in\s+(?:large\s+)?part\s+|mostly\s+|mainly\s+|)by|"
    r"driver|drivers|due\s+to|owing\s+to|thanks\s+to|on\s+account\s+of|in\s+light\s+of|triggers?|triggered|"
    r"explains?|explained|explaining|explanation|explanations|"
    r"(?:is|are|was|were)\s+linked\s+to|linked\s+with|tied\s+to|correlates?|correlated|correlation|"
    r"associated\s+with|association\s+with|attribut(?:able|ed|es?)\s+to|stems?\s+from|stemming\s+from|"
    r"stemmed\s+from|arises?\s+from|arising\s+from|rooted\s+in|fuel(?:s|ed|led|ing)?|spurred|prompted|"
    r"prompts?|contribut(?:es?|ed|ing)\s+to|gives?\s+rise\s+to|brings?\s+about|behind\s+(?:the|its|their|this)\s+"
    r"(?:popularity|prominence|lead|rise|share|dominance|success|complaints?|frustration|dissatisfaction|praise)|"
    r"reasons?|reflect(?:s|ed|ing)?|which\s+is\s+why|that\s+is\s+why|this\s+is\s+why|that's\s+why|"
    r"hence|therefore|consequently|makes?\s+sense|(?:un)?surprising(?:ly)?\s+(?:given|since|as|because)|"
    r"given\s+(?:that|how|the\s+(?:importance|popularity|role|prevalence|price|cost))|"
    r"com(?:es|e|ing)\s+(?:mostly\s+|mainly\s+|largely\s+|chiefly\s+)?from|came\s+from|"
    r"(?:a\s+)?(?:sign|signal|evidence|indication|proof)\s+(?:that|of\s+how)|"
    r"(?:this|which|that|it)\s+(?:suggests|indicates|shows|means|implies|signals|reveals)\s+(?:that\s+)?"
    r"(?:(?:many|most|some|the|these)\s+)?" + PEOPLE_NOUNS + r"|"
    r"(?:suggest|indicat|impl|signal|mean)(?:s|es|ies|ed|ing)?\s+(?:that\s+)?(?:(?:many|most|some|the)\s+)?" + PEOPLE_NOUNS + r"|"
    r"since\b(?!\s+(?:¤|\d|then|the\s+(?:start|beginning|launch|last|first)|last|early|late|its\s+launch|"
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december)\b)))(?!\w)", re.I)
RELATION = re.compile(
    r"\b(?:who|that)\s+(?:mention|mentions|mentioned|raise|raises|raised|cite|cites|cited|complain\w*)\b[^.;!?]*?"
    r"\balso\b"
    r"|\b" + PEOPLE_NOUNS + r"\s+(?:with|who\s+(?:have|has|had))(?=\s+§)"
    r"|\bconcentrated\s+(?:among|in|with)\b|\b(?:especially|particularly|mostly|mainly|largely|chiefly|primarily)\s+"
    r"(?:among|for|in|with)\s+(?:\w+\s+){0,2}?" + PEOPLE_NOUNS + r"\b"
    r"|\b(?:among|for|with|from)\s+(?:\w+\s+){0,2}?" + PEOPLE_NOUNS + r"\s+(?:in|from|who|whose|aged|over|under|living|based|"
    r"located|at)\b"
    # "among reviewers with mature skin": a group of people qualified by what they have is a subgroup
    r"|\bamong\s+(?:\w+\s+){0,2}?" + PEOPLE_NOUNS + r"\s+(?:with|having|that\s+(?:have|has|had))\b"
    r"|\b(?:rural|urban|suburban|first-time|repeat|returning|new|loyal|elderly|senior|young|student|military|"
    r"low-income|high-income|wealthy|international|local|foreign|domestic)\s+" + PEOPLE_NOUNS + r"\b"
    r"|\b(?:women|men|female|male|older|younger|elderly|teen\w*|one-star|two-star|three-star|four-star|five-star|"
    r"[1-5]-star|negative\s+ratings?|positive\s+ratings?|low\s+ratings?|high\s+ratings?)\b", re.I)
# an effect of the method ("the difference is not meaningful because …"), never a theme's rank or share
METHOD_EFFECT = re.compile(r"\b(?:noise|noisy|margin|privacy|interval|intervals|uncertainty|difference|differences|gap|gaps|"
                           r"estimate|estimates|precision|accuracy|confidence|percentages?|shares?\s+(?:are|is)\s+not|"
                           r"denominator|values?|masses|figures|numbers)\b", re.I)
# the method's own reasons: a cause about noise, the margin, the plan … explains the release, not a theme
METHOD_CAUSE = re.compile(
    r"\b(?:noise|noisy|margin|privacy|private|privately|rounding|rounded|budget|epsilon|ε|delta|δ|interval|intervals|"
    r"uncertainty|plan|release|released|mechanism|denominator|calibration|sampling|randomness|random|dp|"
    r"differential(?:ly)?|clip\w*|bound|bounds|contribution|contributions|threshold|thresholds|cut-?off|bin\s+rule|"
    r"rule|ranks?|ranking|within|gap|difference|confidence|precision|accuracy|estimate|estimates|sigma|σ|scale|"
    r"protect\w*|guarantee|l\b|top-l|admission|selection|dictionary|assignment|only\s+one\s+plan|single\s+plan|"
    r"snapshot)\b", re.I)
# where themes come from (the records, the dictionary): provenance, not a cause
_PROVENANCE = re.compile(r"\s*(?:the\s+|these\s+|its\s+|their\s+|public\s+|auxiliary\s+|[\d,]+\s+)*(?:reviews?|complaints?|"
                         r"records?|documents?|data|corpus|texts?|dictionary|labels?|descriptions?|aux\w*)\b", re.I)
SUFFIXED = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)?(?:k|K|m|M|bn|pc|mn)\b")


def check(c: Check) -> None:
    txt = c.masked
    for m in ABSENCE.finditer(txt):
        if not c.is_consumed(*m.span()):
            c.add("unsupported_claim", *m.span(), f'"{m.group()}" claims that no record mentions a theme, which a '
                  "noisy release cannot show")
            c.consume(*m.span())
    for m in EXACT.finditer(txt):
        c.add("unsupported_number", *m.span(), f'"{m.group()}" presents a noisy released value as an exact count')
    for m in RELATION.finditer(txt):
        ss, se = c.sents[c.sentence_of(m.start())]
        if _about_themes(c, ss, se) and not c.is_consumed(*m.span()) and not METHOD.search(c.text[ss:se]):
            c.add("unsupported_claim", *m.span(), f'"{m.group()}" relates a theme to another theme or a '
                  "group of records; a plan releases only each theme's own mass")
    for m in CAUSE.finditer(txt):
        if c.is_consumed(*m.span()):
            continue
        k = c.sentence_of(m.start())
        ss, se = c.sents[k]
        if not _about_themes(c, ss, se) or is_bound_statement(txt[ss:se]):
            continue   # "each complaint contributes to no more than three themes": the assignment bound
        if re.search(r"\b(?:not|no|cannot|never|nothing|without|neither|nor)\b|n['’]t\b", c.masked[ss:m.start()], re.I):
            continue   # "it cannot speak to causes", "the plan does not explain why": a disclaimer of the method
        cs, ce = c.clause_at(m.start())
        reason = c.text[m.end():min(se, max(ce, m.end() + 60))]
        effect = c.text[cs:m.start()]
        if re.match(r"(?i)com|came", m.group()) and _PROVENANCE.match(reason):
            continue   # "all six themes come from reviews"
        if METHOD_CAUSE.search(reason) or (METHOD_EFFECT.search(effect) and "§" not in txt[cs:m.start()]):
            continue
        c.add("unsupported_claim", *m.span(), f'"{m.group()}" gives a cause or an explanation of a theme; a plan '
              "releases only each theme's noisy mass, never why")
    for m in SUFFIXED.finditer(txt):
        if not c.is_consumed(*m.span()):
            c.add("unsupported_number", *m.span(), f'"{m.group()}" is a number in a unit the verifier does not read')
            c.consume(*m.span())


# a sentence about themes: it names one, or refers to one (a pronoun or anaphor, read by `anaphora` later), or
# speaks of themes or ranks ("The top theme leads because …")
_THEMEISH = re.compile(r"\b(?:it|its|they|their|them|this|that|these|those|former|latter|both|themes?|topics?|"
                       r"categor(?:y|ies)|issues?|rank(?:s|ed)?|most\s+common|least\s+common|top|leader|leads?)\b", re.I)


def _about_themes(c: Check, ss: int, se: int) -> bool:
    if "§" in c.masked[ss:se] or _THEMEISH.search(c.masked[ss:se]):
        return True
    k = c.sentence_of(ss)   # "A leads; the reason is simple: …": a cause that opens the sentence after a theme's
    return k > 0 and "§" in c.masked[c.sents[k - 1][0]:c.sents[k - 1][1]] and bool(
        re.match(r"\s*(?:[-*•]\s*)?(?:\w+\s+){0,3}?(?:reasons?|because|why|cause|explanation|driver)\b", c.masked[ss:se], re.I))
