"""What it means for a text to *mention* a phrase: one definition for the builder, the
keyword scorer and the fidelity labels.

A text is cut into sentences and words as the phrase builder cuts it (`sentences`:
lowercase, markup and links removed, apostrophes dropped, punctuation ends a sentence, a
token that is not a word breaks adjacency). A phrase is mentioned when its words occur
next to each other inside one sentence, in one of its *forms*: the label itself, the
variants the builder merged into it (recorded in the dictionary's manifest), and each of
those with its head word (the last word) in the other grammatical number ("mashed
potato" / "mashed potatoes", "french fry" / "french fries").

Nothing here reads a store: it is pure text processing, so applying it to auxiliary
records (fidelity labels, centroids) and to target records (the keyword scorer's
assignment) is the same function.
"""
from __future__ import annotations

import re

import numpy as np
from scipy import sparse

_TAG = re.compile(r"<[^>]*>|&[a-z]+;|https?://\S+")
_BREAK = re.compile(r"[.!?;:,()\[\]{}\"/\n\r\t*~|]+|\s-+\s|\.\.+")
_WORD = re.compile(r"^[a-z]+(?:-[a-z]+)*$")
_SIBILANT = ("s", "x", "z", "ch", "sh")
_VOWELS = "aeiou"


def sentences(text: str) -> list[list[str | None]]:
    """Lowercased word sequences per sentence; None marks a token that breaks adjacency."""
    text = _TAG.sub(" . ", (text or "").lower()).replace("’", "'").replace("'", "")
    out = []
    for part in _BREAK.split(text):
        words = []
        for tok in part.split():
            tok = tok.strip("-_'`&+#@$%=<>")
            words.append(tok if _WORD.match(tok) else None)
        if words:
            out.append(words)
    return out


def cased_sentences(text: str) -> list[list[str | None]]:
    """`sentences` with each word as written (its case kept): the same cuts and tokens."""
    text = _TAG.sub(" . ", text or "").replace("’", "'").replace("'", "")
    out = []
    for part in _BREAK.split(text):
        words = []
        for tok in part.split():
            tok = tok.strip("-_'`&+#@$%=<>")
            words.append(tok if _WORD.match(tok.lower()) else None)
        if words:
            out.append(words)
    return out


def inflections(word: str) -> list[str]:
    """The word and its other grammatical number, by the regular English rules (no
    dictionary): potato ↔ potatoes, fry ↔ fries, roll ↔ rolls, glass ↔ glasses. A rule
    may add a form that is not a word ('glasse'); no text mentions it, so it costs nothing."""
    forms = [word]
    if len(word) < 3:
        return forms
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):     # plural → singular
        if word.endswith("ies") and len(word) > 4:
            forms.append(word[:-3] + "y")
        if word.endswith(("ses", "xes", "zes", "ches", "shes", "oes")):
            forms.append(word[:-2])
        forms.append(word[:-1])
    elif word.endswith("y") and word[-2] not in _VOWELS:                   # singular → plural
        forms.append(word[:-1] + "ies")
    elif word.endswith(_SIBILANT) or (word.endswith("o") and word[-2] not in _VOWELS):
        forms.append(word + "es")
    else:
        forms.append(word + "s")
    return list(dict.fromkeys(forms))


def phrase_forms(label: str, variants: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The label, its recorded variants, and each with its head word in the other number."""
    out: dict[str, None] = {}
    for phrase in [label, *variants]:
        words = " ".join(str(phrase).lower().split()).split(" ")
        if not words or not words[0]:
            continue
        for head in inflections(words[-1]):
            out.setdefault(" ".join(words[:-1] + [head]))
    return list(out)


class PhraseMatcher:
    """Counts, per text and atom, the distinct forms of the atom's phrases the text mentions."""

    def __init__(self, forms_per_atom: list[list[str]]):
        self.forms = [list(f) for f in forms_per_atom]
        self._index: dict[tuple[str, ...], list[int]] = {}
        for j, forms in enumerate(self.forms):
            for form in forms:
                key = tuple(form.split())
                if key and j not in self._index.setdefault(key, []):
                    self._index[key].append(j)
        self._lengths = sorted({len(k) for k in self._index})
        self._form_id = {k: i for i, k in enumerate(self._index)}

    @property
    def m(self) -> int:
        return len(self.forms)

    def found(self, text: str) -> set[tuple]:
        """The phrase forms (word tuples) the text mentions."""
        hits: set[tuple] = set()
        for words in sentences(text):
            for n in self._lengths:
                for i in range(len(words) - n + 1):
                    key = tuple(words[i:i + n])
                    if key in self._index:
                        hits.add(key)   # a None inside never matches a key
        return hits

    def atoms_of(self, text: str) -> set[int]:
        return {j for key in self.found(text) for j in self._index[key]}

    def counts(self, texts: list[str]) -> sparse.csr_matrix:
        """(n × m) CSR of float64 counts: distinct forms of each atom found in each text."""
        rows: list[int] = []
        cols: list[int] = []
        for i, text in enumerate(texts):
            for key in self.found(text or ""):
                for j in self._index[key]:
                    rows.append(i)
                    cols.append(j)
        data = np.ones(len(rows), dtype=np.float64)
        M = sparse.csr_matrix((data, (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
                              shape=(len(texts), max(self.m, 1)))
        M.sum_duplicates()
        M.sort_indices()
        return M[:, :self.m] if self.m else M
