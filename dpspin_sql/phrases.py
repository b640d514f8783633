"""The phrase builder: two-word review-theme atoms from auxiliary review text (paper §5.3, §6.4).

Every decision is a rule in a domain profile (`profiles/*.yaml`, data the user can copy
and edit): lowercase and token filtering, candidate bigrams of adjacent content words
inside one sentence, removal of generic / sentiment-only / off-domain / ill-formed
phrases, canonicalisation of variants, merging of duplicates that denote the same theme
(and only those the profile names, plus word-order variants), a minimum auxiliary
document support, and a ranking by support with ties broken by the label.
"""
from __future__ import annotations

import functools
import gzip
import re
from collections import Counter
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

import duckdb
import yaml

from dpspin_sql import queries
from dpspin_sql.atoms import Atom, aux_count, check_m
from dpspin_sql.errors import BadInput
from dpspin_sql.mentions import PhraseMatcher, phrase_forms, sentences
from dpspin_sql.scorers import STOP_WORDS

PROFILE_LISTS = ("stop_words", "keep_words", "keep_phrases", "generic_words", "weak_words", "sentiment_words",
                 "generic_phrases", "off_domain_words", "ill_formed_words", "place_words", "dish_words", "exclude")
EXCLUDE_KINDS = ("places", "dishes", "names")
NAME_SHARE = 0.5        # a phrase capitalised (both words, inside a sentence) this often is a name
NAME_MIN_OCCURRENCES = 5
PROFILE_MAPS = ("word_map", "phrase_map", "merge")
_VOWEL = re.compile(r"[aeiouy]")


@dataclass
class Profile:
    """A resolved domain profile (after `extends`)."""

    name: str
    min_support: int = 25
    min_word_length: int = 3
    merge_word_order: bool = True
    merge_plurals: bool = True
    pos_filter: bool = True
    lists: dict[str, frozenset] = field(default_factory=dict)
    maps: dict[str, dict[str, str]] = field(default_factory=dict)
    synonyms: tuple[frozenset, ...] = ()    # groups of interchangeable modifiers ("good", "great", …)
    source: str = ""

    def words(self, key: str) -> frozenset:
        return self.lists.get(key, frozenset())

    def excludes(self, kind: str) -> bool:
        return kind in self.lists.get("exclude", frozenset())

    def as_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "min_support": self.min_support,
                "min_word_length": self.min_word_length, "merge_word_order": self.merge_word_order,
                "merge_plurals": self.merge_plurals, "pos_filter": self.pos_filter,
                **{k: sorted(v) for k, v in self.lists.items()}, **{k: dict(sorted(v.items())) for k, v in self.maps.items()},
                "synonyms": [sorted(g) for g in self.synonyms]}


def profile_names() -> list[str]:
    return sorted(p.name[:-5] for p in files("dpspin_sql.profiles").iterdir() if p.name.endswith(".yaml"))


def load_profile(name_or_path: str | Path | None = None) -> Profile:
    """A profile by name (beauty, restaurants, default) or by path to a YAML file."""
    raw, source = _read_profile(name_or_path or "default")
    seen = {source}
    while raw.get("extends"):
        parent, psource = _read_profile(raw["extends"], relative_to=source)
        if psource in seen:
            raise BadInput(f"profile {source}: 'extends' loops back to {psource}")
        seen.add(psource)
        raw = _merge(parent, raw)
    return _resolve(raw, source)


def _read_profile(ref, relative_to: str | None = None) -> tuple[dict, str]:
    ref = str(ref)
    path = Path(ref)
    if not (path.suffix in (".yaml", ".yml") or path.exists()):
        if ref not in profile_names():
            raise BadInput(f"unknown profile {ref!r}; use one of {', '.join(profile_names())} or a path to a YAML file")
        text, source = files("dpspin_sql.profiles").joinpath(f"{ref}.yaml").read_text(encoding="utf-8"), ref
    else:
        if not path.is_absolute() and relative_to and Path(relative_to).exists() and not path.exists():
            path = Path(relative_to).parent / path
        if not path.exists():
            raise BadInput(f"profile file not found: {path}")
        text, source = path.read_text(encoding="utf-8"), str(path)
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise BadInput(f"cannot parse profile {source}: {str(exc).splitlines()[0]}") from None
    if not isinstance(raw, dict):
        raise BadInput(f"profile {source} must be a mapping of rule names to values")
    return raw, source


def _merge(parent: dict, child: dict) -> dict:
    """Child over parent: lists are unioned, maps updated, scalars replaced."""
    out = dict(parent)
    for key, value in child.items():
        if key == "extends":
            continue
        if key in PROFILE_LISTS and isinstance(value, list):
            out[key] = list(parent.get(key) or []) + value
        elif key in PROFILE_MAPS and isinstance(value, dict):
            out[key] = {**(parent.get(key) or {}), **value}
        elif key == "synonyms" and isinstance(value, list):
            out[key] = list(parent.get(key) or []) + value
        else:
            out[key] = value
    out["extends"] = parent.get("extends")   # the parent's own parent is merged next (a chain of extends)
    return out


def _resolve(raw: dict, source: str) -> Profile:
    unknown = set(raw) - set(PROFILE_LISTS) - set(PROFILE_MAPS) - {
        "name", "description", "extends", "min_support", "min_word_length", "merge_word_order", "merge_plurals",
        "pos_filter", "synonyms"}
    if unknown:
        raise BadInput(f"profile {source}: unknown rule(s) {', '.join(sorted(unknown))}")
    lists = {}
    for key in PROFILE_LISTS:
        value = raw.get(key) or []
        if not isinstance(value, list):
            raise BadInput(f"profile {source}: {key} must be a list")
        lists[key] = frozenset(_norm(v) for v in value)
    bad_kinds = sorted(lists["exclude"] - set(EXCLUDE_KINDS))
    if bad_kinds:
        raise BadInput(f"profile {source}: exclude takes {', '.join(EXCLUDE_KINDS)}, not {bad_kinds[0]!r}")
    groups = raw.get("synonyms") or []
    if not isinstance(groups, list) or not all(isinstance(g, list) and all(isinstance(w, str) for w in g)
                                               for g in groups):
        raise BadInput(f"profile {source}: synonyms must be a list of lists of words")
    synonyms = tuple(frozenset(_norm(w) for w in g) for g in groups if len(g) > 1)
    maps = {}
    for key in PROFILE_MAPS:
        value = raw.get(key) or {}
        if not isinstance(value, dict):
            raise BadInput(f"profile {source}: {key} must be a mapping")
        maps[key] = {_norm(k): _norm(v) for k, v in value.items()}
        if key != "word_map":
            bad = [v for v in maps[key].values() if len(v.split()) != 2]
            if bad:
                raise BadInput(f"profile {source}: {key} must map to two-word phrases, not {bad[0]!r}")
    try:
        return Profile(name=str(raw.get("name") or Path(source).stem), min_support=int(raw.get("min_support", 25)),
                       min_word_length=int(raw.get("min_word_length", 3)),
                       merge_word_order=bool(raw.get("merge_word_order", True)),
                       merge_plurals=bool(raw.get("merge_plurals", True)),
                       pos_filter=bool(raw.get("pos_filter", True)), lists=lists, maps=maps, synonyms=synonyms,
                       source=source)
    except (TypeError, ValueError):
        raise BadInput(f"profile {source}: min_support and min_word_length must be integers") from None


def _norm(value) -> str:
    return " ".join(str(value).lower().split())


# -- tokens and candidate bigrams --------------------------------------------------------

def raw_bigrams(text: str, profile: Profile) -> set[tuple[str, str]]:
    """Adjacent content-word pairs within a sentence (stop words break adjacency)."""
    stop = STOP_WORDS | profile.words("stop_words")
    keep = profile.words("keep_words")
    found = set()
    for words in sentences(text):
        for a, b in zip(words, words[1:]):
            if a and b and (a not in stop or a in keep) and (b not in stop or b in keep):
                found.add((a, b))
    return found


def doc_words_and_bigrams(text: str, profile: Profile) -> tuple[set[str], set[tuple[str, str]]]:
    bigrams = raw_bigrams(text, profile)
    return {w for pair in bigrams for w in pair}, bigrams


# -- canonicalisation, filters, merging ---------------------------------------------------

REASONS = ("ill_formed", "generic", "sentiment_only", "off_domain", "place", "dish", "name", "not_noun_phrase")


def canonical_words(pair: tuple[str, str], profile: Profile, plural_of: dict[str, str]) -> str:
    """Word-level variants (word_map, plural/singular by aux frequency), then phrase_map."""
    wmap = profile.maps.get("word_map", {})
    targets = set(wmap.values())
    words = [wmap[w] if w in wmap else (w if w in targets else plural_of.get(w, w)) for w in pair]
    phrase = " ".join(words)
    return profile.maps.get("phrase_map", {}).get(phrase, phrase)


def removal_reason(phrase: str, profile: Profile) -> str | None:
    """Why a canonical phrase is not a theme (None: it may be one)."""
    words = phrase.split()
    keep = profile.words("keep_words")
    if phrase in profile.words("keep_phrases") and len(words) == 2:
        return None
    if (len(words) != 2 or words[0] == words[1] or phrase in profile.words("ill_formed_words")
            or any(w in profile.words("ill_formed_words") for w in words)
            or any((len(w) < profile.min_word_length or not _VOWEL.search(w)) and w not in keep for w in words)
            or any(len(w) > 20 for w in words)):
        return "ill_formed"
    sentiment, weak = profile.words("sentiment_words"), profile.words("weak_words")
    if all(w in sentiment for w in words):
        return "sentiment_only"
    if (phrase in profile.words("generic_phrases") or any(w in profile.words("generic_words") for w in words)
            or all(w in sentiment or w in weak for w in words)):
        return "generic"
    if any(w in profile.words("off_domain_words") for w in words):
        return "off_domain"
    if profile.excludes("places") and any(w in profile.words("place_words") for w in words):
        return "place"
    if profile.excludes("dishes") and (words[-1] in profile.words("dish_words") or phrase in profile.words("dish_words")):
        return "dish"
    return None


def plural_map(word_df: Counter, profile: Profile) -> dict[str, str]:
    """w and w+'s' both seen in aux text: both become the more frequent form (ties: w)."""
    if not profile.merge_plurals:
        return {}
    out = {}
    for word, n in word_df.items():
        if len(word) >= 3 and not word.endswith("s") and word + "s" in word_df:
            plural = word + "s"
            winner = plural if word_df[plural] > n else word
            out[word], out[plural] = winner, winner
    return out


def theme_map(raw_df: Counter, word_df: Counter, profile: Profile,
              names: set | frozenset = frozenset(), merges: dict | None = None) -> tuple[dict, Counter]:
    """raw bigram → final theme label, and removal counts by reason (over distinct raw bigrams).

    `names`: raw bigrams the auxiliary text writes as a proper name (`name_pairs`), removed
    when the profile excludes names. `merges`, when given, receives the synonym merges
    (label → the theme it joined)."""
    plural_of = plural_map(word_df, profile)
    removed: Counter = Counter()
    canon: dict[tuple[str, str], str] = {}
    weight: Counter = Counter()
    keep = profile.words("keep_phrases")
    for pair, n in raw_df.items():
        phrase = canonical_words(pair, profile, plural_of)
        reason = removal_reason(phrase, profile)
        if reason is None and profile.excludes("names") and pair in names and phrase not in keep:
            reason = "name"
        if reason:
            removed[reason] += 1
        else:
            canon[pair] = phrase
            weight[phrase] += n
    order = {}
    if profile.merge_word_order:
        for phrase in weight:
            a, b = phrase.split()
            other = f"{b} {a}"
            if other in weight and other not in profile.maps.get("phrase_map", {}).values():
                winner = min((phrase, other), key=lambda p: (-weight[p], p))
                if phrase in profile.maps.get("phrase_map", {}).values():
                    winner = phrase
                order[phrase] = winner
    merge = profile.maps.get("merge", {})
    merged = {pair: merge.get(order.get(p, p), order.get(p, p)) for pair, p in canon.items()}
    merged_weight: Counter = Counter()
    for pair, label in merged.items():
        merged_weight[label] += raw_df[pair]
    same = synonym_map(merged_weight, profile)
    if merges is not None:
        merges.update(same)
    final = {pair: same.get(label, label) for pair, label in merged.items()}
    return final, removed


def synonym_map(weight: Counter, profile: Profile) -> dict[str, str]:
    """Near-duplicate themes: two-word labels with the same head whose modifiers are in one
    of the profile's synonym groups ("good food" / "great food") → the most supported of
    them (ties: the label). The profile's own theme labels (its merge and phrase_map
    targets) are deliberate: one of them wins a group, and two of them never merge."""
    if not profile.synonyms:
        return {}
    themes = profile_themes(profile)
    groups: dict[tuple[int, str], list[str]] = {}
    for label in weight:
        words = label.split()
        if len(words) != 2:
            continue
        for gi, group in enumerate(profile.synonyms):
            if words[0] in group:
                groups.setdefault((gi, words[1]), []).append(label)
                break
    out = {}
    for labels in groups.values():
        if len(labels) < 2:
            continue
        winner = min(labels, key=lambda lab: (lab not in themes, -weight[lab], lab))
        for lab in labels:
            if lab != winner and lab not in themes:
                out[lab] = winner
    return out


def name_pairs(seen: Counter, capitalised: Counter, share: float = NAME_SHARE,
               min_occurrences: int = NAME_MIN_OCCURRENCES) -> set[tuple[str, str]]:
    """Raw bigrams written as a proper name: both words capitalised in at least `share` of
    their occurrences inside a sentence (not its first word), over at least
    `min_occurrences` of them ("Old Town", "New York"; never "happy hour")."""
    return {pair for pair, n in seen.items() if n >= min_occurrences and capitalised[pair] >= share * n}


def cased_pairs(text: str) -> tuple[Counter, Counter]:
    """Occurrences of each adjacent word pair inside a sentence after its first word, and
    how many of them have both words capitalised (the text as written; `sentences` cuts it)."""
    from dpspin_sql.mentions import cased_sentences

    seen: Counter = Counter()
    caps: Counter = Counter()
    for words in cased_sentences(text):
        for i in range(1, len(words) - 1):
            a, b = words[i], words[i + 1]
            if a is None or b is None:
                continue
            pair = (a.lower(), b.lower())
            seen[pair] += 1
            if a[:1].isupper() and b[:1].isupper():
                caps[pair] += 1
    return seen, caps


# -- noun phrases: a public POS lexicon and the phrase's use in the aux split ---------------
#
# A theme label is a noun phrase: an adjective or noun (or an attributive participle)
# followed by a noun head. The lexicon (profiles/en_pos_lexicon.txt.gz, Brill's tagger
# lexicon: each word form's most frequent Penn tag; bench/build_pos_lexicon.py) gives the
# word classes; the auxiliary split resolves a head that can be a noun or a verb.

_CLASS = {"NN": "N", "NNS": "N", "JJ": "A", "JJR": "A", "JJS": "A", "VB": "V", "VBP": "V", "VBZ": "V", "MD": "V",
          "VBD": "P", "VBN": "P", "VBG": "P", "RB": "R", "RBR": "R", "RBS": "R", "WRB": "R"}
CLAUSE_SHARE = 0.5      # a head followed by a predicate complement this often is a verb


@functools.cache
def pos_lexicon() -> dict[str, str]:
    """word form → its most frequent Penn tag (lowercase forms; package data)."""
    with gzip.open(files("dpspin_sql.profiles").joinpath("en_pos_lexicon.txt.gz").open("rb"), "rt",
                   encoding="utf-8") as fh:
        return dict(line.rstrip("\n").split("\t", 1) for line in fh if not line.startswith("#"))


def word_class(word: str, lex: dict[str, str]) -> str | None:
    """N (noun), A (adjective), V (finite/base verb, modal), P (participle/gerund), R (adverb),
    F (function word); None when the lexicon does not know the word (a domain word)."""
    tag = lex.get(word)
    return None if tag is None else _CLASS.get(tag, "F")


def noun_capable(word: str, lex: dict[str, str], plural_seen: bool = False) -> bool:
    """The word can head a noun phrase: a noun, a gerund, a word the lexicon does not know,
    a verb-tagged word whose plural the lexicon lists as a plural noun ('polish' →
    'polishes'), or an adjective-tagged word used in the plural in the aux split with the
    same modifier ('lunch specials', 'hash browns'; never 'taste goods')."""
    tag = lex.get(word)
    cls = _CLASS.get(tag, "F") if tag is not None else None
    if cls is None or cls == "N" or tag == "VBG":
        return True
    if cls == "V":
        return any(lex.get(word + suffix) == "NNS" for suffix in ("s", "es"))
    return cls == "A" and plural_seen


def verb_capable(word: str, lex: dict[str, str]) -> bool:
    """The word can be a verb: a verb tag itself, or a verb-tagged inflection ('orders' →
    'ordered', 'taste' → 'tasted')."""
    if _CLASS.get(lex.get(word, ""), "") in ("V", "P"):
        return True
    forms = (word + "s", word + "es", word + "ed", word + "d", word + "ing", word[:-1] + "ing" if word.endswith("e") else "",
             word + word[-1:] + "ed")
    return any(lex.get(f) in ("VBZ", "VBD", "VBN") for f in forms if f)


def phrase_usage(text: str, profile: Profile, lex: dict[str, str]) -> tuple[Counter, Counter]:
    """Per candidate bigram in one text: occurrences, and occurrences followed by a predicate
    complement (an adjective, an adverb or 'like': 'my hair looks great', 'feels like')."""
    stop = STOP_WORDS | profile.words("stop_words")
    keep = profile.words("keep_words")
    seen: Counter[tuple[str, str]] = Counter()
    clause: Counter[tuple[str, str]] = Counter()
    for words in sentences(text):
        for i in range(len(words) - 1):
            a, b = words[i], words[i + 1]
            if a and b and (a not in stop or a in keep) and (b not in stop or b in keep):
                seen[(a, b)] += 1
                nxt = words[i + 2] if i + 2 < len(words) else None
                if nxt and (nxt == "like" or word_class(nxt, lex) in ("A", "R")):
                    clause[(a, b)] += 1
    return seen, clause


def profile_themes(profile: Profile) -> frozenset:
    """Labels the profile itself names as themes: keep_phrases and the targets of its
    phrase_map and merge rules (deliberate canonical forms, exempt from the POS rule)."""
    return (profile.words("keep_phrases") | frozenset(profile.maps.get("phrase_map", {}).values())
            | frozenset(profile.maps.get("merge", {}).values()))


def noun_phrase_reason(label: str, profile: Profile, lex: dict[str, str], clause_share: float | None,
                       head_plural_seen: bool = False) -> str | None:
    """Why a final label is not a noun phrase naming a theme (None: it is one).

    1. the modifier is a function word, an -ly adverb or a verb that cannot be a noun;
    2. the head cannot be a noun ('taste good', 'feel soft', 'bit pricey'; noun_capable);
    3. after a noun modifier, a head that can be a verb is one when the phrase is mostly
       followed by a predicate complement in the aux split ('hair look' ← 'my hair looks
       great', 'skin feel' ← 'skin feels soft'): subject + verb, not a theme;
    4. after a noun modifier, a head that is generic review vocabulary (the profile's
       weak_words: order, place, time, product, ...) names the reviewing, not a theme
       ('pizza place'; 'drink order' ← 'took our drink order').
    The profile's own theme labels are exempt (profile_themes).
    """
    if label in profile_themes(profile):
        return None
    words = label.split()
    if len(words) != 2:
        return None
    w1, w2 = words
    c1 = word_class(w1, lex)
    if c1 == "F" or (c1 == "R" and w1.endswith("ly")) or (c1 == "V" and not noun_capable(w1, lex)):
        return "the modifier is not an adjective or noun"
    if not noun_capable(w2, lex, head_plural_seen):
        return "the head is not a noun"
    adjectival = c1 in ("A", "P")
    if not adjectival and verb_capable(w2, lex) and clause_share is not None and clause_share >= CLAUSE_SHARE:
        return "subject + verb: the head is used as a verb in the auxiliary split"
    if not adjectival and w2 in profile.words("weak_words"):
        return "the head is generic review vocabulary"
    return None


def pos_filter(final: dict, profile: Profile, seen: Counter | None, clause: Counter | None) -> tuple[dict, dict]:
    """Drop raw pairs whose final label is not a noun phrase; returns (kept map, {label: reason})."""
    if not profile.pos_filter:
        return final, {}
    lex = pos_lexicon()
    by_label: dict[str, list] = {}
    for pair, label in final.items():
        by_label.setdefault(label, []).append(pair)
    dropped = {}
    for label, pairs in by_label.items():
        n = sum(seen.get(p, 0) for p in pairs) if seen is not None else 0
        share = (sum(clause.get(p, 0) for p in pairs) / n) if n and clause is not None else None
        head = label.split()[-1]
        plural = any(p[-1] in (head + "s", head + "es") for p in pairs)
        reason = noun_phrase_reason(label, profile, lex, share, plural)
        if reason:
            dropped[label] = reason
    return {p: lab for p, lab in final.items() if lab not in dropped}, dropped


# -- the builder ------------------------------------------------------------------------

def iter_aux_texts(con: duckdb.DuckDBPyConnection, batch: int = 10_000):
    from dpspin_sql.store import cursor

    reader = cursor(con)
    try:
        result = reader.execute(queries.load("atoms_aux_texts"))
        while rows := result.fetchmany(batch):
            yield from (r[0] for r in rows)
    finally:
        reader.close()


def build_phrases(con: duckdb.DuckDBPyConnection, *, profile: str | Path | Profile | None = None,
                  m: int | None = None, min_support: int | None = None) -> tuple[list[Atom], dict]:
    """Two-word theme atoms from the aux split; returns (atoms, manifest)."""
    prof = profile if isinstance(profile, Profile) else load_profile(profile)
    if m is not None:
        check_m(m)
    threshold = prof.min_support if min_support is None else min_support
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise BadInput(f"--min-support must be a positive integer, not {threshold!r}")
    n_aux = aux_count(con)
    if n_aux == 0:
        raise BadInput("the auxiliary split is empty: run dpspin split first, or load public records with --split aux")
    raw_df: Counter[tuple[str, str]] = Counter()
    word_df: Counter[str] = Counter()
    seen: Counter[tuple[str, str]] = Counter()
    clause: Counter[tuple[str, str]] = Counter()
    lex = pos_lexicon() if prof.pos_filter else None
    cased_seen: Counter[tuple[str, str]] = Counter()
    cased_caps: Counter[tuple[str, str]] = Counter()
    for text in iter_aux_texts(con):
        words, bigrams = doc_words_and_bigrams(text, prof)
        raw_df.update(bigrams)
        word_df.update(words)
        if lex is not None:
            s_, c_ = phrase_usage(text, prof, lex)
            seen.update(s_)
            clause.update(c_)
        if prof.excludes("names"):
            a_, b_ = cased_pairs(text)
            cased_seen.update(a_)
            cased_caps.update(b_)
    names = name_pairs(cased_seen, cased_caps) if prof.excludes("names") else set()
    synonym_merges: dict[str, str] = {}
    final, removed = theme_map(raw_df, word_df, prof, names, synonym_merges)
    before = final
    final, not_noun = pos_filter(final, prof, seen, clause)
    removed["not_noun_phrase"] = len(before) - len(final)   # raw bigrams, like the other reasons
    support: Counter = Counter()
    dropped_support: Counter = Counter()
    for text in iter_aux_texts(con):
        labels = {before[p] for p in raw_bigrams(text, prof) if p in before}
        support.update(lab for lab in labels if lab not in not_noun)
        dropped_support.update(lab for lab in labels if lab in not_noun)
    ranked = sorted(support.items(), key=lambda kv: (-kv[1], kv[0]))
    above = [(label, n) for label, n in ranked if n >= threshold]
    kept = above[:m] if m is not None else above
    variants: dict[str, list] = {}
    for pair, label in final.items():
        variants.setdefault(label, []).append((" ".join(pair), raw_df[pair]))
    atoms, entries = [], []
    for i, (label, n) in enumerate(kept):
        forms = [v for v, _ in sorted(variants[label], key=lambda vn: (-vn[1], vn[0]))]
        others = [f for f in forms if f != label][:3]
        # what the atom is; what its mass counts depends on the scorer (the plan's `measure`)
        description = f'the phrase "{label}" in a review' + (f" (also: {', '.join(others)})" if others else "")
        atoms.append(Atom(i, label, description, float(n)))
        entries.append({"atom_id": i, "label": label, "aux_support": float(n), "variants": forms})
    if not atoms:
        raise BadInput(f"no two-word phrase reaches --min-support {threshold} in {n_aux} auxiliary records "
                       "(lower --min-support, or use a larger auxiliary split)")
    n_candidates = len(raw_df)
    n_kept = len(final)
    canonicalised = sum(1 for pair, label in final.items() if label != " ".join(pair))
    manifest = {
        "builder": "phrases", "profile": prof.name, "profile_source": prof.source,
        "rules": prof.as_dict(), "aux_records": n_aux, "threshold": threshold,
        "m_requested": m, "m": len(atoms),
        "counts": {
            "candidates": n_candidates,
            "removed": {r: removed.get(r, 0) for r in REASONS},
            "kept_candidates": n_kept,
            "canonicalised": canonicalised,
            "themes": len(support),
            "merged_variants": n_kept - len(support),
            "below_threshold": len(support) - len(above),
            "above_threshold": len(above),
            "beyond_m": len(above) - len(kept),
            "final_m": len(atoms),
            "synonym_merges": len(synonym_merges),
        },
        # the synonym merges into the kept themes (their phrases are also the themes' variants)
        "synonym_merges": {a: b for a, b in sorted(synonym_merges.items()) if b in {lab for lab, _ in kept}},
        "shortfall": (f"{len(atoms)} atoms, not the {m} asked for (-m {m}): only {len(above)} phrases reach the "
                      f"minimum auxiliary support {threshold} in {n_aux} auxiliary records (lower --min-support, "
                      "or use a larger auxiliary split)" if m is not None and len(atoms) < m else None),
        "atoms": entries,
        # labels the noun-phrase rule dropped that would otherwise have reached the threshold
        "not_noun_phrases": [{"label": lab, "aux_support": float(n), "reason": not_noun[lab]}
                             for lab, n in sorted(dropped_support.items(), key=lambda kv: (-kv[1], kv[0]))
                             if n >= threshold],
    }
    return atoms, manifest


def atom_documents(texts: list[str], manifest: dict) -> list[set[int]]:
    """For each text, the phrase atoms (ids) it mentions: a recorded variant or the label,
    or one of them with its head word in the other number (dpspin_sql.mentions).

    Used to fit per-atom auxiliary centroids and as the fidelity labels of a phrase
    dictionary; reads the variants from the manifest, so it matches what the builder counted.
    """
    matcher = mention_matcher(manifest)
    ids = [int(e["atom_id"]) for e in manifest["atoms"]]
    return [{ids[j] for j in matcher.atoms_of(t or "")} for t in texts]


def atom_forms(manifest: dict) -> list[list[str]]:
    """Each phrase atom's forms, in manifest order (label, variants, head inflections)."""
    return [phrase_forms(e["label"], e.get("variants") or []) for e in manifest["atoms"]]


def mention_matcher(manifest: dict) -> PhraseMatcher:
    return PhraseMatcher(atom_forms(manifest))
