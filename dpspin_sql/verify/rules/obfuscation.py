"""Characters that hide words from every other rule: invisible format characters (zero-width
space, soft hyphen, word joiner), combining marks, compatibility forms (fullwidth or
mathematical letters, "½") and letters of another script that the plan's own text does not
use (a Cyrillic "о" in "most"). None has a place in a faithful summary, and each would let
a claim word or a label pass unread, so the summary fails closed (`obfuscated_text`)
instead of being guessed at."""
from __future__ import annotations

import re
import unicodedata

from ..context import Check

# superscript and subscript digits ("δ = 10⁻⁶", which the number rule reads) are not hiding anything
_SCRIPTS = set("¹²³") | {chr(x) for x in range(0x2070, 0x20A0)}


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def _plan_scripts(c: Check) -> set[str]:
    text = " ".join(str(a.get(k, "")) for a in c.plan["atoms"] for k in ("label", "description"))
    text += " " + " ".join(map(str, c.lex.label_of.values()))
    return {_script(ch) for ch in text if ch.isalpha()}


_EMOJI_JOIN = {"\u200d", "\ufe0e", "\ufe0f", "\u20e3"}


def _emoji_part(word: str, i: int) -> bool:
    """A joiner or variation selector inside an emoji ("⚠️", "👩‍🔬"): next to symbols, not letters."""
    near = [word[j] for j in (i - 1, i + 1) if 0 <= j < len(word) and word[j] not in _EMOJI_JOIN]
    return word[i] in _EMOJI_JOIN and bool(near) and all(unicodedata.category(ch).startswith("S") for ch in near)


def _hidden(word: str, allowed: set[str]) -> str | None:
    for i, ch in enumerate(word):
        cat = unicodedata.category(ch)
        if _emoji_part(word, i):
            continue
        if cat == "So" and any(x.isalnum() for x in unicodedata.normalize("NFKC", ch)):
            return f"a compatibility form of {unicodedata.normalize('NFKC', ch)!r} (U+{ord(ch):04X})"
        if cat == "Cf":
            return f"an invisible formatting character (U+{ord(ch):04X})"
        if cat.startswith("M"):
            return f"a combining mark (U+{ord(ch):04X})"
        if cat[0] in "LN" and unicodedata.normalize("NFKC", ch) != ch and ch not in _SCRIPTS:
            return f"a compatibility form of {unicodedata.normalize('NFKC', ch)!r} (U+{ord(ch):04X})"
    for run in re.findall(r"[^\W\d_]+", "".join(ch if ch.isalpha() else " " for ch in word)):
        # letters only: "ε-DP" is two runs, "mоst" one
        scripts = {_script(ch) for ch in run}
        if len(scripts) > 1:
            return "letters of two scripts (" + ", ".join(sorted(x.lower() for x in scripts)) + ")"
        if not scripts <= allowed:
            return f"letters of a script the plan does not use ({next(iter(scripts)).lower()})"
    return None


def check(c: Check) -> None:
    allowed = {"LATIN", "GREEK"} | _plan_scripts(c)   # Greek for ε and δ, written alone
    for m in re.finditer(r"\S+", c.text):
        why = _hidden(m.group(), allowed)
        if why:
            c.add("obfuscated_text", m.start(), m.end(), f"{m.group()!r} contains {why}, which hides the word from the check")
