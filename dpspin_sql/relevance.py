"""Calibrated relevance: what it means for a record to *express* an atom, the per-atom
thresholds that decide it, and how faithful the assignment map is (docs/DESIGN.md §1).

Everything here runs on the auxiliary split (public, so fitting and measuring there
cost no privacy) and on the public dictionary; no target record is ever read.

**Definition.** Each dictionary says what expressing one of its atoms means, and that is
what the labels for calibration and fidelity are:

- phrase atoms (`builder = phrases`): the record mentions the phrase, one of the variants
  the builder merged into it, or either with its head word in the other number
  (dpspin_sql.mentions) — the auxiliary records' own mentions are free labels;
- metadata atoms (`builder = metadata`): the record's metadata fields are the atom's
  combination (the auxiliary split carries its categories);
- any other dictionary (a taxonomy file): the record contains every content word of the
  atom's label.

**Calibration.** A scorer is fitted on the auxiliary split; its scores of auxiliary
records are taken *out of fold* (5 folds by a hash of the record id: each fold scored by
a scorer fitted on the other four, `fit_on`), so an atom's centroid or a classifier never
scores the records it was fitted on. Per atom, the threshold is the score cut that
maximises F1 of "score ≥ threshold" against the labels on those out-of-fold scores —
except for exclusive categories (metadata atoms: a record has one, its best-scoring atom),
where it maximises top-1 accuracy, an abstaining record counting as a miss: every cut at
or below an atom's lowest-scoring correct out-of-fold assignment keeps all of them
(`top1_cut`); the highest such cut is taken (records scoring below every correct one
abstain) unless the lowest (no abstention) gives more correct assignments on held-out
auxiliary records (nested, as the fidelity below) — abstain only when it pays. The
calibration record keeps both held-out figures. An atom with fewer than
`MIN_POSITIVES` labelled records takes the cut fitted on all atoms' scores pooled; where
no record is labelled at all the threshold is +inf (never reached).

**Fidelity.** The same rule applied to held-out scores with thresholds fitted without
that fold (nested: fold f's assignments use thresholds fitted on the other folds' scores),
then per atom: precision = share of the atom's assigned mass that comes from records
expressing it, recall = share of the records expressing it that give it mass. Stored with
the scorer (and so with the dictionary), shown by `dpspin assign` and the release card;
a release whose dictionary's fidelity is below `FIDELITY_MIN` warns.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from dpspin_sql import scorers
from dpspin_sql.atoms import Atom
from dpspin_sql.errors import BadInput

FOLDS = 5
MIN_POSITIVES = 3          # fewer labelled aux records than this: the atom takes the pooled cut
MAX_RECORDS = 20_000       # calibration sample (by record-id hash) on larger auxiliary splits
# The documented fidelity thresholds: below either, a release over the dictionary warns.
FIDELITY_MIN = {"precision": 0.8, "recall": 0.5}


@dataclass(frozen=True)
class Definition:
    """What expressing an atom means for a dictionary (the labels' source)."""

    kind: str          # "mention" | "category" | "label_words"
    text: str          # in words, for reports, plans and cards
    atoms: tuple[Atom, ...]
    manifest: dict

    @property
    def exclusive(self) -> bool:
        """Categories exclude each other: a record expresses one atom at most."""
        return self.kind == "category"

    def labels(self, texts: list[str], metadata: list | None = None) -> np.ndarray:
        """(n × m) booleans: record i expresses atom j (atoms in dictionary order)."""
        m, n = len(self.atoms), len(texts)
        Y = np.zeros((n, m), dtype=bool)
        if self.kind == "category":
            from dpspin_sql.fit import aux_labels

            col = {a.atom_id: j for j, a in enumerate(self.atoms)}
            ids = aux_labels(list(metadata or [None] * n), list(self.atoms), self.manifest)
            assert ids is not None   # a category definition has metadata fields
            for i, a in enumerate(ids.tolist()):
                if a >= 0:
                    Y[i, col[a]] = True
            return Y
        if self.kind == "mention":
            from dpspin_sql.phrases import mention_matcher

            return mention_matcher(self.manifest).counts(list(texts)).toarray() > 0
        words = [scorers.content_words(a.label) for a in self.atoms]
        counts = scorers.KeywordScorer([a.atom_id for a in self.atoms], words).raw_scores(list(texts))
        need = np.array([len(w) if w else np.inf for w in words])
        return np.asarray(sparse.csr_matrix(counts).toarray() >= need)


def definition_of(atoms: list[Atom], manifest: dict) -> Definition:
    """The dictionary's definition of expressing an atom (see the module doc)."""
    builder = manifest.get("builder")
    if builder == "phrases" and manifest.get("atoms") and all("variants" in e for e in manifest["atoms"]):
        return Definition("mention", "the record mentions the theme's phrase, a variant the builder merged into it, "
                                     "or either with its head word in the other number", tuple(atoms), manifest)
    if builder == "metadata" and manifest.get("fields"):
        fields = " / ".join(manifest["fields"])
        return Definition("category", f"the record's {fields} are the atom's combination", tuple(atoms), manifest)
    return Definition("label_words", "the record contains every content word of the atom's label", tuple(atoms),
                      manifest)


def mention_based(scorer_kind: str, definition_kind: str) -> bool:
    """Whether a mass counts records that mention the atom (the keyword scorer counts the
    definition's own words or phrases; every other scorer is a model of it)."""
    return scorer_kind == "keyword" and definition_kind in ("mention", "label_words")


# -- thresholds ------------------------------------------------------------------------

def best_cut(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(threshold, F1) of the cut "s ≥ threshold" with the highest F1 against labels y.

    Among the best cuts the highest is taken, and the threshold is set halfway down to the
    next lower score (the same records pass on these scores; a new record between them is
    judged by the margin, not by the last labelled record's exact score). Only positive
    scores are cuts; (inf, 0) when no labelled record scores above 0."""
    s = np.asarray(s, dtype=np.float64)
    y = np.asarray(y, dtype=bool)
    P = int(y.sum())
    pos = np.isfinite(s) & (s > 0)
    if P == 0 or not (pos & y).any():
        return float("inf"), 0.0
    below = s[np.isfinite(s) & ~pos]
    s, yy = s[pos], y[pos]
    order = np.argsort(-s, kind="stable")
    s, yy = s[order], yy[order]
    tp = np.cumsum(yy)
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True])      # the end of each run of equal scores
    f1 = 2.0 * tp[last] / (last + 1 + P)
    best = int(np.flatnonzero(f1 == f1.max())[0])             # the first (highest) cut among the best
    cut = float(s[last[best]])
    nxt = float(s[last[best] + 1]) if last[best] + 1 < s.size else (0.0 if below.size else cut)
    return (cut + nxt) / 2 if nxt < cut and (cut + nxt) / 2 > 0 else cut, float(f1[best])


def top1_cut(s: np.ndarray, y: np.ndarray, *, every: bool = False) -> tuple[float, float]:
    """(threshold, top-1 hits) of a cut "s ≥ threshold" that keeps the most records with y
    true (each a correct top-1 assignment). Every cut at or below the lowest-scoring
    correct record keeps them all; this is the highest such cut (only records scoring below
    every correct one abstain: it costs no hit on these scores), or with `every` the lowest
    (every record with a positive score is kept: no abstention). Halfway down to the next
    lower score as in `best_cut`; (inf, 0) when no labelled record scores above 0."""
    s = np.asarray(s, dtype=np.float64)
    y = np.asarray(y, dtype=bool)
    pos = np.isfinite(s) & (s > 0)
    if not (pos & y).any():
        return float("inf"), 0.0
    cut = float(s[pos].min() if every else s[pos & y].min())
    lower = s[np.isfinite(s) & (s < cut)]
    nxt = max(float(lower.max()) if lower.size else cut, 0.0)
    return ((cut + nxt) / 2 if nxt < cut and (cut + nxt) / 2 > 0 else cut), float((pos & y).sum())


def _top1_every(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    return top1_cut(s, y, every=True)


CRITERIA = {"f1": best_cut, "top1": top1_cut, "top1-every": _top1_every}


def fit_thresholds(S, Y: np.ndarray, min_positives: int = MIN_POSITIVES, exclusive: bool = False,
                   criterion: str = "f1") -> np.ndarray:
    """Per-atom thresholds on scores S (n × m) against labels Y (see the module doc).

    `exclusive`: a record can only express its best-scoring atom, so each atom's cut is
    fitted on the records it is the best of (its other scores never assign it).
    `criterion`: "f1" (the cut with the highest F1, `best_cut`), "top1" (the highest cut
    that loses no correct top-1 assignment, `top1_cut`) or "top1-every" (the lowest one)."""
    cut_of = CRITERIA[criterion]
    S = S.toarray() if sparse.issparse(S) else np.array(S, dtype=np.float64)
    Y = np.asarray(Y, dtype=bool)
    if exclusive and S.size:
        S = scorers.best_only(S)
    m = S.shape[1]
    tau = np.full(m, np.inf)
    enough = Y.sum(axis=0) >= min_positives
    for j in np.flatnonzero(enough):
        tau[j] = cut_of(S[:, j], Y[:, j])[0]
    rest = ~enough
    if rest.any() and Y.any():
        pooled, _ = cut_of(S.reshape(-1), Y.reshape(-1))
        tau[rest] = pooled
    return tau


# -- fidelity --------------------------------------------------------------------------

def weights_of(S, tau: np.ndarray, K: int, renormalise: bool, keep: int | None = None) -> np.ndarray:
    """The calibrated rule's (n × m) weights on a score matrix (scorers.top_k_columns)."""
    n, m = S.shape
    rows, cols, w = scorers.top_k_columns(S, K, renormalise=renormalise, thresholds=tau, per_record=keep)
    W = np.zeros((n, m))
    W[rows, cols] = w
    return W


def fidelity(W: np.ndarray, Y: np.ndarray, atoms: list[Atom]) -> dict:
    """Per-atom and overall precision / recall of weights W against labels Y."""
    from scipy.stats import spearmanr

    Y = np.asarray(Y, dtype=bool)
    mass = W.sum(axis=0)
    good = (W * Y).sum(axis=0)
    expressing = Y.sum(axis=0)
    assigned = (W > 0).sum(axis=0)
    hit = ((W > 0) & Y).sum(axis=0)
    per = []
    for j, a in enumerate(atoms):
        per.append({"atom_id": int(a.atom_id),
                    "precision": _r(good[j] / mass[j]) if mass[j] > 0 else None,
                    "recall": _r(hit[j] / expressing[j]) if expressing[j] > 0 else None,
                    "expressing": int(expressing[j]), "assigned": int(assigned[j]), "mass": _r(mass[j])})
    precisions = [p["precision"] for p in per if p["precision"] is not None]
    recalls = [p["recall"] for p in per if p["recall"] is not None]
    rho = None
    if len(atoms) > 2 and np.ptp(mass) > 0 and np.ptp(expressing) > 0:
        rho = _r(float(spearmanr(mass, expressing).statistic))
    n = W.shape[0]
    return {"precision": _r(good.sum() / mass.sum()) if mass.sum() > 0 else None,
            "recall": _r(hit.sum() / expressing.sum()) if expressing.sum() > 0 else None,
            "macro_precision": _r(float(np.mean(precisions))) if precisions else None,
            "macro_recall": _r(float(np.mean(recalls))) if recalls else None,
            "spearman_mass_expressing": rho,
            "records": int(n), "abstained": _r(float((W.sum(axis=1) == 0).mean())) if n else None,
            "atoms": per}


def _r(x) -> float:
    return round(float(x), 4)


# -- the calibration -------------------------------------------------------------------

def record_folds(record_ids: list[str], folds: int = FOLDS) -> np.ndarray:
    """Fold of each record: a SHA-256 of its id, so the folds do not depend on row order."""
    return np.array([int.from_bytes(hashlib.sha256(str(r).encode()).digest()[:8], "big") % folds
                     for r in record_ids], dtype=np.int64)


def _sample(record_ids: list[str], limit: int) -> np.ndarray:
    """Indices of at most `limit` records, the ones with the smallest id hash (deterministic)."""
    if len(record_ids) <= limit:
        return np.arange(len(record_ids))
    keys = np.array([int.from_bytes(hashlib.sha256(b"sample:" + str(r).encode()).digest()[:8], "big")
                     for r in record_ids], dtype=np.uint64)
    return np.sort(np.argsort(keys, kind="stable")[:limit])


def definition_thresholds(scorer: scorers.Scorer, definition: Definition) -> np.ndarray | None:
    """Thresholds the definition itself fixes, with nothing to fit: the keyword scorer
    counts the definition's own phrases (a mention: ≥ 1) or label words (all of them)."""
    if not isinstance(scorer, scorers.KeywordScorer):
        return None
    if definition.kind == "mention" and scorer.phrases is not None:
        return np.ones(len(scorer.atom_ids))
    if definition.kind == "label_words" and scorer.phrases is None:
        return np.array([float(len(w)) if w else np.inf for w in scorer.words])
    return None


def calibrate(full: scorers.Scorer, fit_on: Callable[[list[str], list], scorers.Scorer] | None,
              texts: list[str], metadata: list, record_ids: list[str], atoms: list[Atom], manifest: dict, *,
              K: int, folds: int = FOLDS, max_records: int = MAX_RECORDS) -> scorers.Scorer:
    """Thresholds and fidelity for `full` (fitted on all of `texts`, the auxiliary split),
    set on it in place and returned. `fit_on(texts, metadata)` refits the same kind on a
    part of them (None: the scorer fits nothing on auxiliary records, like the keyword one).

    Where the definition fixes the thresholds (`definition_thresholds`) they are used as
    they are, and the auxiliary records (if any) only measure the fidelity."""
    definition = definition_of(atoms, manifest)
    fixed = definition_thresholds(full, definition)
    if not texts:
        if fixed is None:
            raise BadInput("the scorer is calibrated on the auxiliary split, which is empty: run dpspin split "
                           "first, or load public records with --split aux (or pass --no-calibrate)")
        return full.calibrate(fixed, {"definition": definition.kind, "definition_text": definition.text,
                                      "criterion": "fixed by the definition", "folds": 0, "held_out": False,
                                      "aux_records": 0, "K": int(K), "exclusive": False,
                                      "renormalise": bool(full.renormalise), "fidelity": None})
    keep = _sample(record_ids, max_records)
    texts = [texts[i] or "" for i in keep]
    metadata = [metadata[i] for i in keep] if metadata is not None else [None] * len(keep)
    ids = [record_ids[i] for i in keep]
    Y = definition.labels(texts, metadata)
    n, m = Y.shape
    fold = record_folds(ids, folds) if n >= 2 * folds else np.zeros(n, dtype=np.int64)
    n_folds = int(fold.max()) + 1 if n else 0
    held_out = fit_on is not None and n_folds > 1
    S = np.zeros((n, m))
    if fit_on is None or n_folds <= 1:
        S = _dense(full.raw_scores(texts))
    else:
        for f in range(n_folds):
            test = np.flatnonzero(fold == f)
            train = np.flatnonzero(fold != f)
            try:
                part = fit_on([texts[i] for i in train], [metadata[i] for i in train])
            except (BadInput, ValueError):
                part, held_out = full, False    # a fold too small to fit: score it in-sample
            S[test] = _dense(part.raw_scores([texts[i] for i in test]))
    exclusive = definition.exclusive
    kept = 1 if exclusive else None

    def held_out_weights(criterion: str) -> np.ndarray:
        """Fold f's records assigned with thresholds fitted on the other folds' scores (nested)."""
        W = np.zeros((n, m))
        for f in range(n_folds):
            test, train = fold == f, fold != f
            tau_f = (fit_thresholds(S[train], Y[train], exclusive=exclusive, criterion=criterion)
                     if n_folds > 1 and fixed is None else tau)
            held = scorers.best_only(S[test]) if exclusive else S[test]
            W[test] = weights_of(held, tau_f, int(K), full.renormalise, keep=kept)
        return W

    criterion = criterion_of(definition)
    tau = np.zeros(0)
    choice = None
    if criterion == "top1" and fixed is None:
        # abstain only when it pays: the highest cut is kept unless the lowest (no abstention)
        # gives more correct assignments on held-out auxiliary records (an abstention is a miss)
        hits = {}
        for c in ("top1", "top1-every"):
            tau = fit_thresholds(S, Y, exclusive=exclusive, criterion=c)
            hits[c] = int(((held_out_weights(c) > 0) & Y).sum())
        criterion = "top1-every" if hits["top1-every"] > hits["top1"] else "top1"
        labelled = int(Y.any(axis=1).sum())
        choice = {c: (_r(h / labelled) if labelled else None) for c, h in hits.items()}
    tau = fixed if fixed is not None else fit_thresholds(S, Y, exclusive=exclusive, criterion=criterion)
    W = held_out_weights(criterion)
    fid = fidelity(W, Y, atoms)
    record = {"definition": definition.kind, "definition_text": definition.text,
              "criterion": ("fixed by the definition (the scorer counts it)" if fixed is not None else
                            CRITERION_TEXT[criterion]),
              "folds": n_folds, "held_out": bool(held_out), "aux_records": int(n), "K": int(K),
              "exclusive": bool(exclusive),
              "renormalise": bool(full.renormalise), "labelled_atoms": int((Y.sum(axis=0) >= MIN_POSITIVES).sum()),
              "fidelity": fid}
    if choice is not None:   # held-out auxiliary top-1 of each candidate rule (what chose the criterion)
        record["held_out_top1"] = {"highest cut": choice["top1"], "no abstention": choice["top1-every"]}
    json.dumps(record)   # plain JSON only (it is saved with the scorer)
    return full.calibrate(tau, record)


CRITERION_TEXT = {
    "f1": "per atom, the score cut with the highest F1 on out-of-fold auxiliary scores",
    "top1": ("per atom, the highest score cut that keeps every out-of-fold auxiliary record whose best atom it "
             "correctly is (top-1 accuracy maximised: a record abstains only where no correct auxiliary record "
             "scored as low)"),
    "top1-every": ("per atom, the lowest score cut that keeps every out-of-fold auxiliary record whose best atom "
                   "it correctly is (top-1 accuracy maximised: abstaining below the correct records cost "
                   "correct assignments on held-out auxiliary records, so a record abstains only when its best "
                   "atom has no labelled auxiliary record)"),
}


def criterion_of(definition: Definition) -> str:
    """How thresholds are chosen: exclusive categories (a record has one, its best atom)
    maximise top-1 accuracy, where an abstaining record is a miss ("top1"; `calibrate`
    takes "top1-every" instead where that keeps more held-out hits); every other
    definition (a record may express several atoms, or none) the F1 of each atom."""
    return "top1" if definition.exclusive else "f1"


def _dense(S) -> np.ndarray:
    return S.toarray() if sparse.issparse(S) else np.asarray(S, dtype=np.float64)


# -- reading it back -------------------------------------------------------------------

def below_minimum(fid: dict | None) -> list[str]:
    """The documented thresholds a fidelity record misses ([] when it meets them)."""
    if not fid:
        return ["not measured"]
    out = []
    for key, floor in FIDELITY_MIN.items():
        v = fid.get(key)
        if v is None or v < floor:
            out.append(f"{key} {'n/a' if v is None else f'{v:.2f}'} < {floor:g}")
    return out


# -- what a mass measures --------------------------------------------------------------

def describe(scorer: scorers.Scorer, manifest: dict) -> dict:
    """The unit of a mass under this scorer and dictionary, in words (public).

    `mass_unit`: one unit of an atom's mass, a noun phrase without numbers (the template
    decoder states it and the verifier reads it); `measure`: a template with `{label}` for
    one atom's line ('records that mention "{label}"' only where the mass is mention-based);
    `split`: how a record's unit is shared among its atoms."""
    definition = definition_of([], manifest)
    split = ("a record gives 1/k of its unit to each of the k ≤ K atoms it expresses" if scorer.renormalise
             else "a record gives 1/K of its unit to each atom it expresses (at most K)")
    calibration = scorer.calibration or {}
    mention = scorer.calibrated and mention_based(scorer.kind, definition.kind)
    if not scorer.calibrated:
        unit = (f"weight of records assigned to the theme by the {scorer.kind} scorer's uncalibrated top-K rule, "
                "a record spending its unit on its best-scoring themes whether or not it expresses them")
        measure = f'weight of records assigned to "{{label}}" by the {scorer.kind} scorer (uncalibrated)'
        split = "a record spreads its unit over its K best-scoring atoms, whatever their scores"
    elif mention and definition.kind == "mention":
        unit = "records that mention the theme; a record that mentions several themes gives each an equal share of its unit"
        measure = 'records that mention "{label}"'
    elif mention:
        unit = ("records that contain every word of the theme's label; a record that contains several themes "
                "gives each an equal share of its unit")
        measure = 'records that mention "{label}"'
    else:
        unit = (f"weight of records assigned to the theme by the {scorer.kind} scorer, calibrated on public "
                "records: a record gives mass only to themes it scores above their thresholds, an equal share "
                "of its unit to each")
        measure = f'weight of records assigned to "{{label}}" by the {scorer.kind} scorer'
    return {"scorer": scorer.kind, "calibrated": scorer.calibrated, "mention_based": mention,
            "definition": calibration.get("definition_text", definition.text), "mass_unit": unit,
            "split": split, "measure": measure, "fidelity": calibration.get("fidelity"),
            "fidelity_minimum": dict(FIDELITY_MIN)}


def describe_loaded(source: str) -> dict:
    """The unit of masses from assignments the user brought (their classifier's meaning)."""
    return {"scorer": "loaded", "calibrated": False, "mention_based": False, "definition": None,
            "mass_unit": f"weight of the {source}, in the unit of the classifier that wrote them",
            "split": "as the loaded rows give it (the sketch clips each record to one unit)",
            "measure": 'weight of records assigned to "{label}" by the loaded assignments',
            "fidelity": None, "fidelity_minimum": dict(FIDELITY_MIN)}


def release_warning(info: dict) -> str | None:
    """One line when the assignment map's fidelity is below the documented minimum, or when
    it is the uncalibrated rule (not measured). Loaded assignments are the user's
    classifier's: the plan states their unit and nothing here can measure them."""
    if not info or info.get("scorer") in (None, "loaded"):
        return None
    missed = below_minimum(info.get("fidelity"))
    if not missed:
        return None
    if not info.get("fidelity"):
        return (f"warning: the {info.get('scorer')} assignment map is uncalibrated, its fidelity not measured: "
                "a mass need not count records that express its theme (dpspin assign calibrates by default)")
    return (f"warning: the {info.get('scorer')} assignment map is below the documented fidelity on held-out "
            f"auxiliary records ({'; '.join(missed)}): some masses include records that do not express their theme")
