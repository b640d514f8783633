"""Support words ("high", "rare", "a minor share") against the attached theme's released bin."""
from __future__ import annotations

import re

from ..context import Check
from ..vocab import BIN_PATTERNS, META_NOUNS, SUPPORT_NOUNS


def bin_word_applies(txt: str, s: int, e: int, needs_noun: bool) -> bool:
    """Is the bin word at s..e a support claim (not "more frequent than", "low noise")?"""
    before = txt[max(0, s - 25):s].lower()
    after = txt[e:e + 30]
    if re.search(r"\b(?:more|less|most|least|as|not|never|no|equally|similarly)\s+$", before):
        return False
    if re.match(r"\s+than\b", after, re.I):
        return False
    if re.match(r"[\s-]+" + META_NOUNS, after, re.I):
        return False
    if needs_noun and not re.match(r"[\s-]+(?:\w+\s+)?" + SUPPORT_NOUNS + r"\b", after, re.I):
        return False
    return True


def check(c: Check) -> None:
    txt = c.masked
    for bin_name, needs_noun, rx in BIN_PATTERNS:
        for m in rx.finditer(txt):
            s, e = m.span()
            if c.is_consumed(s, e) or c.overlaps(s, e, c.rank_spans) or not bin_word_applies(txt, s, e, needs_noun):
                continue
            att = c.attach(s, e, back=False)
            if not att:
                continue
            bins = {str(c.atom(x).get("bin", "")).lower() for x in att[0].atoms}
            if bin_name not in bins:
                c.add("wrong_bin", s, e, f'"{att[0].text}" is in the released "{sorted(bins)[0]}" bin, not "{bin_name}"')
