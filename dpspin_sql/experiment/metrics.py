"""Metric functions of docs/DESIGN.md §9. Pure: arrays and strings in, numbers out.

Notation: `C` is the non-private sketch (float, one entry per atom in dictionary order),
`S* = Top_L(C)` with the plan's tie-break (higher mass first, then lower index),
`M(S; C) = Σ_{j∈S} C_j`, and `S̃` the admitted positions of a released plan.

These numbers use non-private values; they are evaluation output of the curator's
experiment harness and never enter a plan or a decoder.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable, Sequence

import numpy as np

# ---------------------------------------------------------------- plan metrics


def top_l(values: Sequence[float], L: int) -> list[int]:
    """Top_L positions: higher value first, ties broken by the lower index."""
    v = np.asarray(values, dtype=np.float64)
    order = sorted(range(len(v)), key=lambda i: (-v[i], i))
    return order[: int(L)]


def plan_mass(S: Iterable[int], C: Sequence[float]) -> float:
    """M(S; C) = Σ_{j∈S} C_j (each position counted once)."""
    C = np.asarray(C, dtype=np.float64)
    return float(math.fsum(C[j] for j in set(int(j) for j in S)))


def nonprivate_rank(C: Sequence[float], position: int) -> int:
    """1-based rank of `position` in C under the Top_L order (ties: lower index first)."""
    v = np.asarray(C, dtype=np.float64)
    p = int(position)
    return 1 + int(sum(1 for i in range(len(v)) if (v[i] > v[p]) or (v[i] == v[p] and i < p)))


def boundary_gap(C: Sequence[float], L: int) -> float | None:
    """C_(L) − C_(L+1): the mass gap at the top-L boundary (None when m ≤ L)."""
    v = np.sort(np.asarray(C, dtype=np.float64))[::-1]
    if len(v) <= L:
        return None
    return float(v[L - 1] - v[L])


def plan_metrics(C: Sequence[float], admitted: Sequence[int], L: int, prefix: str = "") -> dict:
    """overlap_at_L, mass_retained and loss_L of an admitted set against C.

    - overlap_at_L = |S̃ ∩ S*| / L
    - mass_retained = M(S̃; C) / M(S*; C)  (None when M(S*; C) = 0: nothing to retain)
    - loss_L = M(S*; C) − M(S̃; C)
    """
    L = int(L)
    if L < 1:
        raise ValueError("L must be at least 1")
    C = np.asarray(C, dtype=np.float64)
    s_star = set(top_l(C, L))
    s_tilde = set(int(j) for j in admitted)
    m_star = plan_mass(s_star, C)
    m_tilde = plan_mass(s_tilde, C)
    return {
        f"{prefix}overlap_at_L": len(s_star & s_tilde) / L,
        f"{prefix}mass_retained": (m_tilde / m_star) if m_star > 0 else None,
        f"{prefix}loss_L": m_star - m_tilde,
        f"{prefix}mass_topL": m_star,
        f"{prefix}mass_admitted": m_tilde,
    }


def value_errors(true: Sequence[float], noisy: Sequence[float], prefix: str) -> dict:
    """‖noisy − true‖_∞, ‖·‖_1, ‖·‖_2 on raw noisy values (before display clipping)."""
    d = np.asarray(noisy, dtype=np.float64) - np.asarray(true, dtype=np.float64)
    if d.size == 0:
        return {f"{prefix}linf": 0.0, f"{prefix}l1": 0.0, f"{prefix}l2": 0.0}
    return {f"{prefix}linf": float(np.max(np.abs(d))), f"{prefix}l1": float(np.sum(np.abs(d))),
            f"{prefix}l2": float(np.sqrt(np.sum(d * d)))}


def full_errors(C: Sequence[float], C_tilde: Sequence[float]) -> dict:
    """Full-vector errors of a full-sketch release (laplace, gaussian)."""
    if len(C) != len(C_tilde):
        raise ValueError("the noisy vector must cover every atom")
    return value_errors(C, C_tilde, "full_err_")


def selected_errors(C: Sequence[float], admitted: Sequence[int], noisy_mass: Sequence[float]) -> dict:
    """Errors restricted to the admitted set S̃ (every mechanism)."""
    C = np.asarray(C, dtype=np.float64)
    idx = [int(j) for j in admitted]
    return value_errors(C[idx] if idx else [], list(noisy_mass), "sel_err_")


# ---------------------------------------------------------------- text metrics

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_SPLIT = re.compile(r"[.,;:!?()\[\]{}\"—–\-/|\n]+")


def _stop_words() -> frozenset:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def tokens(text: str) -> list[str]:
    return _WORD.findall((text or "").lower())


def bigrams(text: str) -> set[tuple[str, str]]:
    t = tokens(text)
    return set(zip(t, t[1:]))


def keyphrases(text: str) -> set[str]:
    """RAKE-style candidates: maximal runs of non-stop words between punctuation and
    stop words (numbers are dropped), lowercased."""
    stop = _stop_words()
    out: set[str] = set()
    for chunk in _SPLIT.split((text or "").lower()):
        run: list[str] = []
        for w in _WORD.findall(chunk) + [""]:
            if w and w not in stop and not w[0].isdigit():
                run.append(w)
                continue
            if run:
                out.add(" ".join(run))
            run = []
    return out


def jaccard(a: Iterable, b: Iterable) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets are identical (1.0)."""
    a, b = set(a), set(b)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def tfidf_cosine(a: str, b: str) -> float:
    """Cosine of TF-IDF vectors fitted on the pair (unigrams and bigrams)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not tokens(a) and not tokens(b):
        return 1.0
    if not tokens(a) or not tokens(b):
        return 0.0
    X = TfidfVectorizer(ngram_range=(1, 2), token_pattern=_WORD.pattern).fit_transform([a.lower(), b.lower()])
    num = float(X[0].multiply(X[1]).sum())
    den = float(np.sqrt(X[0].multiply(X[0]).sum()) * np.sqrt(X[1].multiply(X[1]).sum()))
    return num / den if den > 0 else 0.0


def text_metrics(summary: str, reference: str) -> dict:
    """DP summary vs the summary of the non-private top-L plan (same decoder)."""
    return {"text_token_jaccard": jaccard(tokens(summary), tokens(reference)),
            "text_bigram_jaccard": jaccard(bigrams(summary), bigrams(reference)),
            "text_keyphrase_jaccard": jaccard(keyphrases(summary), keyphrases(reference)),
            "text_tfidf_cosine": tfidf_cosine(summary, reference)}


# ---------------------------------------------------------------- theme coverage


def content_word_set(labels: Iterable[str]) -> set[str]:
    """Content words of labels: tokens of two letters or more that are not English stop words."""
    stop = _stop_words()
    return {w for lab in labels for w in tokens(lab) if len(w) >= 2 and w not in stop and not w[0].isdigit()}


def theme_coverage(themes: Sequence[str], released: Iterable[str], fields: Sequence[Sequence[str]] | None = None,
                   prefix: str = "") -> dict:
    """How much of a list of reference themes a release names (comparable across methods
    whose released labels differ in kind: atoms, keywords, categories, cluster keywords).

    - `exact`: fraction of themes released verbatim (case-insensitive);
    - `field` (with `fields`, a theme's taxonomy values, e.g. CFPB product / issue /
      sub-issue): fraction of themes one of whose values, or the label, is released;
    - `word_recall`: mean over themes of the fraction of the theme's content words found
      among the content words of all released labels.
    """
    rel = [r.strip().lower() for r in released if r and r.strip()]
    rel_set = set(rel)
    words = content_word_set(rel)
    n = len(themes)
    out: dict = {}
    if n == 0:
        return {f"{prefix}exact": None, f"{prefix}word_recall": None} | ({f"{prefix}field": None} if fields else {})
    out[f"{prefix}exact"] = sum(1 for t in themes if t.strip().lower() in rel_set) / n
    if fields is not None:
        hit = 0
        for t, fs in zip(themes, fields):
            names = {t.strip().lower()} | {str(f).strip().lower() for f in fs if f}
            hit += bool(names & rel_set)
        out[f"{prefix}field"] = hit / n
    recalls = []
    for t in themes:
        cw = content_word_set([t])
        recalls.append(len(cw & words) / len(cw) if cw else 0.0)
    out[f"{prefix}word_recall"] = math.fsum(recalls) / n
    return out


# ---------------------------------------------------------------- verifier metrics

_COMPARISON = re.compile(
    r"\b(?:more|less|fewer|higher|lower|greater|smaller|larger|bigger)\b[^.\n]{0,200}?\bthan\b"
    r"|\bsimilar\b|\bas (?:common|frequent|prevalent|often) as\b|\b(?:twice|half) as\b"
    r"|\bexceeds?\b|\boutnumbers?\b|\bcomparable\b", re.IGNORECASE)


def count_label_mentions(text: str, labels: Iterable[str]) -> int:
    """Case-insensitive whole-phrase occurrences of the given labels (longest first,
    non-overlapping)."""
    low = (text or "").lower()
    taken = [False] * len(low)
    n = 0
    for lab in sorted({l.strip().lower() for l in labels if l and l.strip()}, key=len, reverse=True):
        for m in re.finditer(r"(?<![a-z0-9])" + re.escape(lab) + r"(?![a-z0-9])", low):
            if not any(taken[m.start():m.end()]):
                taken[m.start():m.end()] = [True] * (m.end() - m.start())
                n += 1
    return n


def count_comparisons(text: str) -> int:
    """Comparison claims in a summary (a public phrase rule: 'more … than', 'similar', …)."""
    return len(_COMPARISON.findall(text or ""))


def verifier_metrics(summary: str, violations: Sequence[dict], admitted_labels: Iterable[str],
                     accepted: bool, attempts_used: int, fallback_used: bool = False) -> dict:
    """docs/DESIGN.md §9 verifier measures of one final summary.

    unsupported_atom_rate = mentions of atoms outside S̃ / all atom mentions, where the
    outside mentions are the verifier's `unadmitted_atom` violations and the inside ones
    are occurrences of admitted labels. unsupported_comparison_rate = comparisons the
    verifier rejected (`unsupported_comparison`, `reversed_comparison`) / comparison claims.
    """
    codes = Counter(v.get("code") for v in violations)
    outside = codes.get("unadmitted_atom", 0)
    inside = count_label_mentions(summary, admitted_labels)
    bad_cmp = codes.get("unsupported_comparison", 0) + codes.get("reversed_comparison", 0)
    n_cmp = max(count_comparisons(summary), bad_cmp)
    return {"verifier_accepted": 1.0 if accepted else 0.0,
            "verifier_attempts": int(attempts_used),
            "verifier_fallback": 1.0 if fallback_used else 0.0,
            "verifier_violations": int(sum(codes.values())),
            "atom_mentions": inside + outside,
            "unsupported_atom_rate": outside / (inside + outside) if inside + outside else 0.0,
            "comparisons": n_cmp,
            "unsupported_comparison_rate": bad_cmp / n_cmp if n_cmp else 0.0}


def mentions_label(text: str, label: str) -> bool:
    return count_label_mentions(text, [label]) > 0


# ---------------------------------------------------------------- aggregation helpers


def describe(values: Iterable) -> dict:
    """mean, min, max, sample std (ddof=1; 0 for one value) and n over finite values."""
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    xs = [x for x in xs if math.isfinite(x)]
    if not xs:
        return {"mean": None, "min": None, "max": None, "std": None, "n": 0}
    mean = math.fsum(xs) / len(xs)
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return {"mean": mean, "min": min(xs), "max": max(xs), "std": std, "n": len(xs)}
