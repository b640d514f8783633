"""Public word lists shared by several rules (bins, ranks, plan nouns)."""
from __future__ import annotations

import re

from .numeric import ORDINALS
from .text import content, stem

BIN_WORDS = {
    "high": ["high", "highly", "very common", "very frequent", "widespread", "dominant", "prevalent", "frequent", "heavy",
             "extremely common", "exceptionally common", "extremely frequent", "very prevalent", "top bin", "top tier",
             "upper tier", "highest bin", "ubiquitous", "pervasive"],
    "moderate": ["moderate", "moderately", "medium", "middling", "intermediate", "mid-level", "mid-range", "midrange", "average",
                 "middle bin", "middle tier", "mid tier"],
    "low": ["low", "rare", "rarely", "uncommon", "infrequent", "scarce", "marginal", "occasional", "negligible",
            "fringe", "bottom bin", "lowest bin", "bottom tier", "lower tier", "sparse", "seldom"],
}
BIN_NEEDS_NOUN = {"high": ["major", "large", "substantial", "big", "sizable", "considerable", "strong", "robust", "solid"],
                  "moderate": ["modest", "middle"],
                  "low": ["minor", "small", "limited", "niche", "slight", "little", "weak", "tiny"]}
BIN_PATTERNS = [(b, needs, re.compile(r"\b" + re.escape(w).replace(r"\ ", r"\s+").replace(r"\-", r"[\s-]?") + r"\b", re.I))
                for src, needs in ((BIN_WORDS, False), (BIN_NEEDS_NOUN, True)) for b, ws in src.items() for w in ws]
SUPPORT_NOUNS = (r"(?:support|share|shares|portion|part|fraction|proportion|presence|volume|number|amount|prevalence|"
                 r"level|bin|category|group|minority|concern|frequency|mass|theme|topic)")
META_NOUNS = r"(?:privacy|noise|epsilon|ε|delta|δ|budget|margin|confidence|uncertainty|precision|sensitivity|risk)"
RANK1 = (r"(?:most[\s-]+(?:common(?:ly)?|frequent(?:ly)?|prevalent|reported|cited|mentioned|discussed|popular|widespread|"
         r"raised|frequently\s+\w+|commonly\s+\w+)|largest|biggest|highest|greatest|leading|top-ranked|top|number[\s-]+one|"
         r"front[\s-]?runner|highest[\s-]ranked|"
         r"no\.\s*1|#\s*1)")
RANKLAST = (r"(?:least[\s-]+(?:common(?:ly)?|frequent(?:ly)?|prevalent|reported|cited|mentioned|discussed|popular|"
            r"widespread|raised)|lowest|smallest|rarest|fewest|bottom[\s-]ranked|lowest[\s-]ranked)")
ORD = r"(?P<ord>" + "|".join(ORDINALS) + r"|\d+(?:st|nd|rd|th))"
# a rank shared by a conjunction of themes: "A and B are tied for second place", "share the top spot", "joint third"
SHARED_RANK = re.compile(
    r"(?<![\w-])(?:(?:are|were|is|was|sit|sits|rank|ranks|ranked|come|comes|came|finish|finished)\s+)?"
    r"(?:tied|tie|ties|tying|joint(?:ly)?|equal|level|share|shares|shared|sharing|split|splits)"
    r"(?:\s+(?:with\s+)?§+)?(?:\s+(?:for|at|in|on|as))?(?:\s+(?:the|a))?\s+"
    r"(?:(?P<sord>" + "|".join(ORDINALS) + r"|\d+(?:st|nd|rd|th))(?:[\s-]+(?:place|position|spot|rank|slot))?"
    r"|(?:rank|position|place|number|no\.|#)\s*(?P<snum>\d+)"
    r"|(?P<stop>top|lead|first)(?:[\s-]+(?:place|position|spot|rank|slot))?"
    r"|(?P<slast>last|bottom)(?:[\s-]+(?:place|position|spot|rank|slot))?)\b"
    # not "share the top two spots", "share second and third place", "the top of the list"
    r"(?!\s*(?:-|\s)\s*(?:\d|" + "|".join(ORDINALS) + r"|two|three|four|five|six|seven|eight|nine|ten)\b"
    r"|\s+(?:and|or|to|through|thru)\s+(?:\d|" + "|".join(ORDINALS) + r")|\s+of\b)", re.I)
PLAN_NOUNS = (r"(?:themes?|topics?|atoms?|issues?|categories|category|concepts?|items?|entries|entry|areas?|subjects?|"
              r"complaint\s+types?|phrases?|labels?|coordinates?)")
# a sentence about the method itself, not about the data ("no individual can be identified")
METHOD = re.compile(r"\b(?:privacy|private|protect\w*|identif\w*|differential\w*|anonym\w*|noise|"
                    r"counts?\s+(?:(?:toward|towards|for|in|to)\s+)?at\s+most|counts?\s+(?:only\s+|just\s+)?once|contribut\w*|ε|epsilon|"
                    r"weights?|split\s+(?:over|among|between|across))\b", re.I)
# the per-record contribution bound K: a clause about what one record counts toward (docs/VERIFIER.md, Counts rule 0)
PER_RECORD = re.compile(r"\b(?:per\s+(?:record|review|complaint|document|user)|(?:each|every|a|one|any)\s+(?:single\s+)?"
                        r"(?:record|review|complaint|document)\b[^.;]*\b(?:counts?|counted|contributes?|assigned|maps?|belongs?|"
                        r"spread|split|weighted)|"
                        r"assign(?:ed|ment)s?)\b", re.I)
_BOUND_COUNT = re.compile(r"\b(?:at\s+most|up\s+to|no\s+more\s+than|only|exactly|k\b|\d+|one|a\s+single|two|three|four|"
                          r"five|six|seven|eight|nine|ten)\b(?:\s+[\w-]+){0,2}?\s+" + PLAN_NOUNS + r"\b|\bk\s*(?:=|themes?)", re.I)


def is_bound_statement(sentence: str) -> bool:
    """'Each review is assigned to at most 3 themes': a sentence about the assignment bound K is a
    method statement (its count is checked against K by *Counts*; it is no quantifier over records)."""
    m = PER_RECORD.search(sentence)
    return bool(m and _BOUND_COUNT.search(sentence, m.start()))


BIN_NOUNS = r"(?:bins?|support\s+(?:levels?|bins?|bands?|tiers?)|levels?|tiers?|bands?)"
RANK_ADJ = r"(?:common(?:ly)?|frequent(?:ly)?|prevalent|reported|cited|mentioned|discussed|popular|widespread|raised)"
# singular and plural nouns for records and the people who wrote them (never plan parts)
RECORD_NOUNS = (r"(?:reviews?|complaints?|records?|reports?|mentions?|posts?|comments?|tickets?|cases?|submissions?|"
                r"narratives?|documents?|ratings?|responses?|times|points?|percent|percentage|votes?)")
PEOPLE_NOUNS = (r"(?:consumers?|customers?|reviewers?|users?|people|persons?|guests?|diners?|respondents?|clients?|"
                r"borrowers?|patients?|buyers?|shoppers?|visitors?|members?|complainants?)")


def bin_word_applies(txt: str, s: int, e: int, needs_noun: bool, negatable: bool = False) -> bool:
    """Is the bin word at s..e a support claim (not "more frequent than", "low noise")?
    With `negatable`, "not high" is one too (the bins rule judges it through "high")."""
    before = txt[max(0, s - 25):s].lower()
    after = txt[e:e + 30]
    if re.search(r"\b(?:more|less|most|least|as|equally|similarly)\s+$", before):
        return False
    if not negatable and re.search(r"\b(?:not|never|no)\s+$", before):
        return False
    if re.match(r"\s+than\b", after, re.I):
        return False
    if re.match(r"[\s-]+" + META_NOUNS, after, re.I):
        return False
    return not needs_noun or bool(re.match(r"[\s-]+(?:\w+\s+)?" + SUPPORT_NOUNS + r"\b", after, re.I))


# capitalised words that are never names (docs/VERIFIER.md, *Names and public vocabulary*: the list there is this list)
PUBLIC_VOCABULARY = (
    "I", "DP", "DP-SPIN", "SPIN", "CFPB", "Gaussian", "Laplace", "OpenDP", "zCDP", "ε", "δ", "Epsilon", "Delta",
    "Note", "Summary", "Plan", "Theme", "Themes", "Rank", "Bin", "High", "Moderate", "Low", "Support", "Product",
    "Sub-product", "Issue", "Sub-issue", "Sub", "Overall", "Top", "Top-L", "Atom", "Atoms", "Privacy", "Differential",
    "Differentially", "Private", "JSON", "OK", "L", "K", "M", "B", "English", "AI", "LLM", "PII", "ID", "CI", "No",
    "Spearman", "Pearson",
)


# the public vocabulary of the method and the plan: nouns that stand where a theme may stand
# without naming one (docs/VERIFIER.md, *Themes: fail closed*)
_PUBLIC = """theme topic atom category categories issue item entry entries area subject concept phrase label cluster
group bucket segment kind type sort set pair trio handful list lists table chart row column heading section
review complaint record report post comment ticket case submission narrative document rating response mention
text feedback data dataset corpus collection sample sampling population word words
consumer customer reviewer user people person guest diner respondent client borrower patient buyer shopper
visitor member complainant writer author reader analyst team stakeholder owner manager individual public
share support mass weight count number total sum proportion percentage percent per cent fraction frequency
prevalence volume rank ranking position place spot slot bin tier band level interval range value estimate
figure margin gap difference lead distance spread ratio majority minority half third quarter top bottom middle
end head tail cut cutoff threshold bound limit cap floor ceiling score magnitude size amount portion bulk rest
remainder others leader runner runner-up standout outlier order
plan release summary method mechanism noise scale privacy budget epsilon delta guarantee protection parameter
setting dictionary vocabulary taxonomy universe candidate denominator calibration confidence uncertainty accuracy
precision error sigma laplace gaussian dp zcdp selection admission assignment contribution unit algorithm
approach analysis output result finding caveat note takeaway headline highlight pattern picture signal insight
observation point message question answer conclusion recommendation implication priority focus attention
context detail view overview snapshot comparison claim statement reading interpretation way sense term
rule basis definition meaning fact line lines thing things side sides respect regard terms tally distribution
shape spread concentration emphasis evidence sign measure metric indicator proxy estimate approximation
precision variance deviation draw draws chance probability likelihood level levels degree extent scope
coverage version schema field fields file json id identifier denominator top-l l k m b
time moment glance while case cases example instance share shares attention limit
dp-spin opendp ε δ σ plan-level record-level user-level ci ± high moderate low medium bin-level mid middle
common frequent rare popular prevalent top-ranked ranked first second third fourth fifth sixth seventh eighth ninth
tenth eleventh twelfth last next final least most leading lowest highest largest smallest biggest neighbour neighbor
neighbours neighbors base baseline reader readers cutoff cut-off unit units point points step steps pack field
group groups cluster clusters tail middle run stretch block half-width halfwidth width family family-wise
familywise simultaneous joint remaining other others further additional following leading trailing existing
preceding rest one ones executive memo memorandum briefing brief digest recap update notes
ledger charge charges cost costs spend spending noised noising post-processing postprocessing coordinate coordinates
adjacency add/drop guarantee guarantees""".split()
THEME_PUBLIC = {stem(w) for w in _PUBLIC} | {t for w in _PUBLIC for t in content(w)}
