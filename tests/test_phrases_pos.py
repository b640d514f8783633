"""Theme labels a person would write (phrases.py, "noun phrases"): the phrase builder keeps
adjective/noun + noun labels and drops verb and function-word pairs, by a public POS lexicon
(package data) and the phrase's own use in the auxiliary split — never by a list of the
labels it drops."""
from __future__ import annotations

import pytest

from dpspin_sql import phrases
from dpspin_sql.phrases import load_profile, noun_phrase_reason, pos_lexicon, word_class

from tests.helpers.atoms import make_store


@pytest.fixture(scope="module")
def lex():
    return pos_lexicon()


def test_lexicon_is_package_data_with_word_classes(lex):
    assert len(lex) > 50_000
    assert [word_class(w, lex) for w in ("good", "order", "look", "quickly", "the", "fried")] == \
        ["A", "N", "V", "R", "F", "A"]
    assert word_class("scottsdale", lex) is None          # unknown words are domain words (nouns)
    assert phrases.verb_capable("order", lex) and phrases.verb_capable("taste", lex)   # ordered, tasted
    assert not phrases.verb_capable("skin", lex)
    assert phrases.noun_capable("polish", lex)            # tagged VB, but 'polishes' is a plural noun
    assert not phrases.noun_capable("look", lex)          # 'looks' is a verb form
    assert not phrases.noun_capable("good", lex) and phrases.noun_capable("special", lex, plural_seen=True)


@pytest.mark.parametrize("label,share,plural,dropped", [
    ("taste good", 0.0, False, True),         # adjective head: a predicate
    ("feel soft", 0.0, False, True),
    ("hair look", 0.8, False, True),          # 'my hair looks great': subject + verb
    ("skin feel", 0.9, False, True),
    ("food taste", 0.7, False, True),         # 'the food tastes great'
    ("drink order", 0.1, False, True),        # used as a noun phrase, but its head is review vocabulary
    ("pizza place", 0.0, False, True),
    ("perfectly cooked", 0.0, False, True),   # -ly adverb modifier
    ("dry skin", 0.0, False, False),
    ("friendly staff", 0.0, False, False),
    ("happy hour", 0.0, False, False),        # a weak head after an adjective is fine
    ("nail polish", 0.05, False, False),
    ("face wash", 0.1, False, False),
    ("customer service", 0.1, False, False),
    ("fast shipping", 0.0, False, False),
    ("drink special", 0.0, True, False),      # "drink specials" in aux: a noun
    ("drink special", 0.0, False, True),
])
def test_noun_phrase_rule(lex, label, share, plural, dropped):
    prof = load_profile("restaurants")
    reason = noun_phrase_reason(label, prof, lex, share, plural)
    assert (reason is not None) is dropped, reason


def test_profile_themes_are_exempt(lex):
    prof = load_profile("restaurants")
    assert noun_phrase_reason("long wait", prof, lex, 0.9) is None        # keep_phrases
    assert noun_phrase_reason("slow service", prof, lex, 0.9) is None     # a merge target
    beauty = load_profile("beauty")
    assert noun_phrase_reason("absorbs quickly", beauty, lex, 0.9) is None   # a phrase_map target
    assert noun_phrase_reason("skin feel", beauty, lex, 0.9) is not None


def _reviews(n_each=12):
    texts = (["My hair looks great after this.", "Her hair looks amazing and soft.",
              "The dry skin cream helps my dry skin.", "I have dry skin and it helps.",
              "The waitress took our drink order and left.", "Our drink order was wrong.",
              "Great nail polish, the nail polish lasts."] * n_each)
    return [{"record_id": f"a{i}", "text": t, "split": "aux"} for i, t in enumerate(texts)]


@pytest.mark.parametrize("pos_filter", [True, False])
def test_builder_drops_them_and_says_why(tmp_path, pos_filter):
    con = make_store(tmp_path, _reviews())
    prof = load_profile("default")
    prof.pos_filter = pos_filter
    atoms, manifest = phrases.build_phrases(con, profile=prof, min_support=5)
    labels = {a.label for a in atoms}
    assert {"dry skin", "nail polish"} <= labels
    if pos_filter:
        assert not labels & {"hair look", "drink order"}
        why = {d["label"]: d["reason"] for d in manifest["not_noun_phrases"]}
        assert "verb" in why["hair look"] or "not a noun" in why["hair look"]
        assert "review vocabulary" in why["drink order"]
        assert manifest["counts"]["removed"]["not_noun_phrase"] > 0
        assert manifest["rules"]["pos_filter"] is True
    else:
        assert {"hair look", "drink order"} <= labels
        assert manifest["not_noun_phrases"] == []
    con.close()


def test_a_profile_extending_a_builtin_that_extends_default_gets_all_three(tmp_path):
    """extends is a chain: a file extending `beauty` (which extends `default`) keeps default's
    stop words and beauty's rules (a file that only turns the noun-phrase rule off is the
    beauty profile without it)."""
    f = tmp_path / "p.yaml"
    f.write_text("name: p\nextends: beauty\npos_filter: false\n")
    p, beauty = load_profile(str(f)), load_profile("beauty")
    assert p.pos_filter is False and beauty.pos_filter is True
    assert "dont" in p.words("stop_words") and p.lists == beauty.lists and p.maps == beauty.maps
