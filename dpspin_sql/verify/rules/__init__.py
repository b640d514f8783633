"""The rules of the verifier, in the order they run (docs/VERIFIER.md).

A rule is a module with one entry point, `check(c: Check) -> list[Check] | None`. To add a rule,
write the module and list it here. Order matters only through what a rule masks or
consumes: `mentions` and `details` mask the text every later rule reads, and a rule
that judges a number or phrase consumes it so that `numbers`, last, leaves it alone.
A rule may return a list of forked checks (`Check.fork`): the later rules then run on
each, and a violation on any of them counts (`anaphora`: one fork per reading).
"""
from . import (
    anaphora,
    anecdotes,
    beyond,
    bins,
    change,
    comparisons,
    counts,
    details,
    ellipsis,
    intervals,
    mentions,
    method,
    numbers,
    obfuscation,
    orders,
    quantifiers,
    ranks,
    tables,
    temporal,
    themes,
)

RULES = (
    obfuscation,   # invisible, combining, compatibility and look-alike characters: fail closed
    mentions,      # theme labels → mentions; unadmitted_atom
    tables,        # Markdown tables: rows of claims, headers as column roles
    details,       # contacts, identifiers, dates, money, quotes, names
    anecdotes,     # one person's or one record's experience or statement
    change,        # change between two releases, against a comparison (only then; rules/change.py)
    temporal,      # change over time: unsupported by a single plan
    beyond,        # absence, exact counts, causes / co-occurrence / subgroups, unread units
    ellipsis,      # "and so is B", "as does B": the antecedent's claim re-verified for B
    anaphora,      # "it", "the former", "both": claims about a theme by reference, one fork per reading
    comparisons,   # more/less/similar/ratio/gap under the margin
    orders,        # a whole order claimed supported (every adjacent pair, ranks a to b): each pair vs the margin
    ranks,         # rank 1, last, ordinals, top-N, rank ranges
    intervals,     # ± and interval statements against the released accuracy intervals
    method,        # public method fields: bound numbers, bin thresholds, mechanism, unit, calibration
    counts,        # numbers that count themes, ranks or bins: checked against the plan's structure
    bins,          # support words against released bins
    quantifiers,   # most/all/none of the records
    numbers,       # every remaining number: released value or cued metadata
    themes,        # every noun phrase in a theme position names a released theme: fail closed
)

# against a comparison (verify/comparison.py): what a sentence of change is read with. FIRST finds the
# themes of either side; the rest judge the change (`change`) and what needs no side.
COMPARISON_FIRST = (obfuscation, mentions)
COMPARISON_RULES = (obfuscation, mentions, details, anecdotes, change, beyond, themes)
