"""The paper's comparison (§6 "Baselines"): DP histogram baselines over fixed public
vocabularies, a URANIA-style release, and the non-private references.

Every DP baseline is a real release: its OpenDP measurements are built with the
discipline of `mechanisms.py` (int64 fixed-point vectors in units of 2^-24, d_in the
sensitivity table's entry for the run's unit, adjacency and B, the scale found by
OpenDP's `binary_search_param` against the measurement's own map), all of them are
charged to the prep store's ledger in one row *before* any noise is drawn — through the one
release path, `release.release_composite`, which stores the plan with the row (a paid-for
baseline plan is recovered like any other) — and the ledger checks the charge against the
serialized measurements' maps.

The contribution bound is enforced by the computation, not assumed of the input: each
step's per-record (and per-user) vector goes through the very sketch SQL of DP-SPIN
(`queries/sketch_record.sql`, `sketch_user.sql`) on a scratch store whose "atoms" are
the step's coordinates. That SQL drops bad weights, keeps each record's K largest
coordinates, renormalises every record to L1 ≤ 1 and, at user level, clips every user's
sum to L1 ≤ B, exactly, in integers (docs/DESIGN.md §1). So every step's vector has the
sensitivities of docs/DESIGN.md §2 whatever a record claims.

Methods (grid key `method`):

- `keyword_hist` — a public keyword vocabulary (the top `keyword_vocab_size` content
  words of the auxiliary split by document frequency, or `keyword_vocabulary: FILE`).
  Each record spreads one unit over its ≤ K vocabulary words (the K with the highest
  aux TF-IDF weight in the record, equal weights 1/k); noise on all V coordinates
  (Laplace at Δ1, Gaussian at Δ2); the plan admits the top-L noisy keywords.
- `category_hist` — one public category per record (`category_field`: CFPB issue,
  Amazon star rating, Yelp business category), vocabulary = the categories of the aux
  split by frequency; weight 1 on the record's category (K = 1); noise; top-L.
- `urania` — URANIA-style (DP clustering → noisy size filter → DP per-cluster keyword
  histograms → summary from released keywords and sizes). Features: NMF topics of an
  aux-fitted TF-IDF (non-negative, each record's vector scaled to L1 = 1); initial
  centroids: k-means++ seeding on aux features (public). Then `urania_iterations`
  DP-Lloyd steps: a record adds ½ to its cluster's count coordinate and ½·h to its
  cluster's d sum coordinates (L1 = 1, K = 1 + d), the noisy sums/counts give the next
  centroids (post-processing: clipped to ≥ 0 and renormalised). A size step (weight 1 on
  the record's final cluster, K = 1) gives noisy sizes; clusters whose noisy size
  clears `urania_min_size` + 2 noise standard deviations are kept (at most L). A
  histogram step (each record of a kept cluster spreads one unit over its ≤ K keywords,
  coordinate (cluster, keyword)) gives per-cluster keyword counts; the top
  `urania_keywords` name the cluster. Budget: `urania_split` of ε (and δ) to clustering
  (evenly over iterations), sizes and histograms.
- `np_plan`, `np_kmeans` — non-private references: the DP-SPIN top-L plan with exact
  masses, and the same clustering without noise. Marked `non_private`, never charged,
  written as `reference_plan.json` (never `private_plan.json`).

User level. Every step runs the user-level sketch: a user's vectors for that step are
summed and clipped to L1 ≤ B, so each step alone is (ε_t, δ_t)-DP for adding or removing
a user (Δ = B, the DESIGN §2 table); the steps compose by basic sequential composition
(Σ ε_t, Σ δ_t) — adaptive composition holds for it — which is what the ledger sums.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from dpspin_sql.errors import BadInput

if TYPE_CHECKING:
    from dpspin_sql.mechanisms import Mechanism
    from dpspin_sql.plan import Plan
    from dpspin_sql.request import ReleaseRequest

DP_METHODS = ("keyword_hist", "category_hist", "urania")
REFERENCES = ("np_plan", "np_kmeans")
_WORD = re.compile(r"[a-z]+")


def check_settings(run: dict) -> None:
    """Refuse bad baseline settings when the grid is expanded."""
    def positive_int(key):
        v = run.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise BadInput(f"{key} must be a positive integer, not {v!r}")

    for key in ("keyword_vocab_size", "category_vocab_size", "urania_clusters", "urania_iterations", "urania_dim",
                "urania_keywords"):
        positive_int(key)
    if run["method"] == "category_hist" and not run.get("category_field"):
        raise BadInput(f"dataset {run['dataset']}: category_hist needs category_field")
    split = run.get("urania_split") or {}
    if set(split) != {"clustering", "sizes", "histograms"} or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in split.values()):
        raise BadInput("urania_split must give positive shares for clustering, sizes and histograms")
    if run["method"] == "urania" and 1 + int(run["urania_dim"]) > 1000:
        raise BadInput("urania_dim must be below 1000 (a record's step vector has 1 + d coordinates)")
    if run.get("keyword_vocabulary") and not Path(run["keyword_vocabulary"]).exists():
        raise BadInput(f"keyword_vocabulary file not found: {run['keyword_vocabulary']}")


# ================================================================== public vocabularies (aux only)

@dataclasses.dataclass
class Public:
    """Everything the baselines fit on the auxiliary split (public), once per preparation."""

    keywords: list[str]
    keyword_df: list[int]
    idf: dict[str, float]
    categories: list[str] | None = None
    category_counts: list[int] | None = None
    features: tuple[Any, Any] | None = None   # (vectorizer, nmf) for urania
    init_centroids: np.ndarray | None = None


def _stop_words() -> frozenset:
    from dpspin_sql.phrases import load_profile
    from dpspin_sql.scorers import STOP_WORDS

    prof = load_profile("default")
    return STOP_WORDS | prof.words("stop_words") | prof.words("ill_formed_words") | prof.words("generic_words")


def content_tokens(text: str, stop: frozenset) -> list[str]:
    return [w for w in _WORD.findall((text or "").lower()) if len(w) >= 3 and w not in stop]


def fit_public(con, run: dict) -> Public:
    """Vocabularies, IDF, NMF features and initial centroids from `records WHERE split = 'aux'`."""
    stop = _stop_words()
    rows = con.execute("SELECT text, metadata FROM records WHERE split = 'aux' ORDER BY record_id").fetchall()
    if not rows:
        raise BadInput("the baselines fit their public vocabularies on the auxiliary split, which is empty")
    texts = [r[0] or "" for r in rows]
    df: Counter = Counter()
    for t in texts:
        df.update(set(content_tokens(t, stop)))
    n = len(texts)
    if run.get("keyword_vocabulary"):
        words = [w.strip().lower() for w in Path(run["keyword_vocabulary"]).read_text(encoding="utf-8").splitlines()]
        keywords = list(dict.fromkeys(w for w in words if w and not w.startswith("#")))
    else:
        # document frequency ≤ half the aux split (a word in most documents names no theme)
        ranked = sorted(((w, c) for w, c in df.items() if c <= n / 2 and c >= 2), key=lambda wc: (-wc[1], wc[0]))
        keywords = [w for w, _ in ranked[: int(run["keyword_vocab_size"])]]
    if not keywords:
        raise BadInput("the keyword vocabulary is empty")
    idf = {w: math.log((1 + n) / (1 + df.get(w, 0))) + 1 for w in keywords}
    pub = Public(keywords, [int(df.get(w, 0)) for w in keywords], idf)
    if run.get("category_field"):
        cats: Counter = Counter(c for meta in (r[1] for r in rows) for c in record_categories(meta, run))
        ranked = sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))[: int(run["category_vocab_size"])]
        pub.categories = [c for c, _ in ranked]
        pub.category_counts = [int(k) for _, k in ranked]
    return pub


def fit_features(con, run: dict, pub: Public) -> None:
    """URANIA's features: NMF topics of a TF-IDF fitted on aux; k-means++ seeds on aux."""
    if pub.features is not None:
        return
    from sklearn.cluster import kmeans_plusplus
    from sklearn.decomposition import NMF
    from threadpoolctl import threadpool_limits

    from dpspin_sql.scorers import tfidf_vectorizer

    texts = [r[0] or "" for r in con.execute("SELECT text FROM records WHERE split = 'aux' ORDER BY record_id").fetchall()]
    vec = tfidf_vectorizer(ngrams=1, min_df=min(2, len(texts)), max_features=20_000)
    X = vec.fit_transform(texts)
    d = min(int(run["urania_dim"]), max(X.shape[1] - 1, 1))
    with threadpool_limits(1):
        nmf = NMF(n_components=d, init="nndsvda", random_state=0, max_iter=400).fit(X)
        H = _simplex_rows(nmf.transform(X))
    H = H[H.sum(axis=1) > 0]
    k = min(int(run["urania_clusters"]), len(H))
    centroids, _ = kmeans_plusplus(H, n_clusters=k, random_state=int(run.get("split_seed") or 0))
    pub.features = (vec, nmf)
    pub.init_centroids = np.asarray(centroids, dtype=np.float64)


def features_of(pub: Public, texts: list[str]) -> np.ndarray:
    from threadpoolctl import threadpool_limits

    assert pub.features is not None, "fit_features first"
    vec, nmf = pub.features
    with threadpool_limits(1):
        return _simplex_rows(nmf.transform(vec.transform(texts)))


def _simplex_rows(W: np.ndarray) -> np.ndarray:
    W = np.clip(np.nan_to_num(np.asarray(W, dtype=np.float64)), 0, None)
    s = W.sum(axis=1, keepdims=True)
    return np.divide(W, s, out=np.zeros_like(W), where=s > 0)


def record_categories(meta, run: dict) -> list[str]:
    """The record's public category values: CFPB issue or another plain field (one value),
    Amazon `rating` ("k stars"), Yelp `categories` (several per business, less the
    `category_exclude` ones)."""
    d = json.loads(meta) if isinstance(meta, str) else (meta or {})
    field = run["category_field"]
    value = d.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if field in ("rating", "stars"):
        try:
            k = int(round(float(value)))
        except (TypeError, ValueError):
            return []
        return [f"{k} star" + ("" if k == 1 else "s")]
    if field == "categories":
        exclude = {str(x) for x in run.get("category_exclude") or []}
        return list(dict.fromkeys(c.strip() for c in str(value).split(";") if c.strip() and c.strip() not in exclude))
    return [str(value).strip()]


def record_category(meta, run: dict, vocab: dict | None) -> str | None:
    """The record's one category: of its values in the vocabulary, the one the aux split
    ranks highest (None: none is in it). Without a vocabulary: its first value."""
    cands = record_categories(meta, run)
    if vocab is None:
        return cands[0] if cands else None
    known = [c for c in cands if c in vocab]
    return min(known, key=lambda c: vocab[c]) if known else None


def keyword_rows(texts_by_id: list[tuple[str, str]], pub: Public, K: int) -> list[tuple[str, int, float]]:
    """(record_id, keyword index, weight): each record's ≤ K vocabulary words with the
    highest TF-IDF weight in it (ties: the lower vocabulary index), weight 1/k each."""
    index = {w: i for i, w in enumerate(pub.keywords)}
    out: list[tuple[str, int, float]] = []
    for rid, text in texts_by_id:
        tf = Counter(w for w in _WORD.findall((text or "").lower()) if w in index)
        if not tf:
            continue
        kept = sorted(tf, key=lambda w: (-(1 + math.log(tf[w])) * pub.idf[w], index[w]))[: int(K)]
        out.extend((rid, index[w], 1.0 / len(kept)) for w in kept)
    return out


# ================================================================== the enforced step sketch

class StepStore:
    """A scratch DuckDB store holding the run's protected sample; each step writes its
    coordinates as atoms and its per-record rows as assignments, and the DP-SPIN sketch
    SQL enforces the bounds (module docstring)."""

    def __init__(self, units: list[tuple[str, str | None]]):
        from dpspin_sql import store

        self.con = store.connect(":memory:", create=True)
        ids = [r for r, _ in units]
        users = [u if u is not None else r for r, u in units]
        self.con.register("step_records", pa.table({"record_id": pa.array(ids, pa.string()),
                                                     "user_id": pa.array(users, pa.string())}))
        self.con.execute("INSERT INTO records (record_id, user_id, text, split) "
                         "SELECT record_id, user_id, NULL, 'target' FROM step_records")
        self.con.unregister("step_records")

    def close(self) -> None:
        self.con.close()

    def sketch(self, m: int, rows, unit: str, K: int, B: float):
        """The enforced sketch of `rows` (record_id, coordinate, weight) over m coordinates."""
        from dpspin_sql.request import Bounds
        from dpspin_sql.sketch import run_sketch

        con = self.con
        con.execute("DELETE FROM assignments")
        con.execute("DELETE FROM atoms")
        con.register("step_atoms", pa.table({"atom_id": pa.array(range(m), pa.int32()),
                                             "label": pa.array([f"c{j}" for j in range(m)], pa.string())}))
        con.execute("INSERT INTO atoms (atom_id, label) SELECT atom_id, label FROM step_atoms")
        con.unregister("step_atoms")
        rows = list(rows)
        con.register("step_rows", pa.table({
            "record_id": pa.array([r[0] for r in rows], pa.string()),
            "atom_id": pa.array([int(r[1]) for r in rows], pa.int32()),
            "weight": pa.array([float(r[2]) for r in rows], pa.float64())}))
        con.execute("INSERT INTO assignments SELECT record_id, atom_id, weight FROM step_rows")
        con.unregister("step_rows")
        return run_sketch(con, Bounds(unit, int(K), None if unit == "record" else B))


# ================================================================== the DP steps and their charge

@dataclasses.dataclass
class Step:
    name: str
    m: int
    K: int
    request: ReleaseRequest
    mechanism: Mechanism


def step_request(run: dict, eps: float, delta: float, K: int, L: int, noise: str):
    """The step's ReleaseRequest: the run's unit, adjacency and B (so every step's d_in is
    the DESIGN §2 table entry), the step's share of ε and δ, the step's K."""
    from dpspin_sql.request import ReleaseRequest

    return ReleaseRequest(mechanism=noise, epsilon=eps, delta=delta if noise != "laplace" else None,
                          unit=run["unit"], adjacency=run["adjacency"], B=run["B"] if run["unit"] == "user" else None,
                          K=int(K), L=int(L), calibration=run.get("calibration") if noise != "laplace" else None,
                          public_denominator=run.get("public_denominator"))


def make_step(run: dict, name: str, m: int, K: int, L: int, eps: float, delta: float) -> Step:
    from dpspin_sql.mechanisms import make_mechanism

    noise = run["mechanism"]
    req = step_request(run, eps, delta, K, min(int(L), int(m)), noise)
    return Step(name, int(m), int(K), req, make_mechanism(req, int(m)))


def total_cost(steps: list[Step]) -> tuple[float, float]:
    """Basic sequential composition of every step's OpenDP maps."""
    eps = math.fsum(p.epsilon for s in steps for p in s.mechanism.parts)
    delta = math.fsum(p.delta for s in steps for p in s.mechanism.parts)
    return eps, delta


def composite_of(con, run: dict, steps: list[Step], dataset: str | None):
    """The whole baseline release as one `release.Composite` (one ledger row, charged by
    `release.release_composite` before any noise is drawn): the budget of the run's own
    dataset is the composed cost; the row carries every step's serialized measurements,
    whose maps the ledger re-evaluates."""
    from dpspin_sql import ledger
    from dpspin_sql.release import Composite

    assert dataset is not None, "a non-private reference is never charged"
    eps, delta = total_cost(steps)
    ledger.set_budget(con, eps, delta, dataset, experiment_run=True)
    params = {"method": run["method"], "unit": run["unit"], "adjacency": run["adjacency"],
              "B": run["B"] if run["unit"] == "user" else None, "K": int(run["K"]), "L": int(run["L"]),
              "noise": run["mechanism"], "requested_epsilon": run["epsilon"],
              "requested_delta": run["delta"],
              "steps": [{"name": s.name, "m": s.m, "K": s.K, "epsilon": s.mechanism.cost[0],
                         "delta": s.mechanism.cost[1]} for s in steps],
              "composition": "basic sequential (sum of the steps' maps)"}
    records = [dict(r, step=s.name) for s in steps for r in s.mechanism.audit_records()]
    return Composite(f"{run['method']}:{run['mechanism']}", eps, delta, records, params)


def release_steps(con, composite, draw, out: Path, dataset: str | None):
    """`release.release_composite` of the baseline's composite into `out` (replacing an
    earlier run's plan there)."""
    from dpspin_sql import store
    from dpspin_sql.outputs import Outputs
    from dpspin_sql.release import release_composite

    assert dataset is not None, "a non-private reference is never charged"
    return release_composite(con, composite, draw, out=out, dataset=dataset,
                             outputs=Outputs(store=store.path_of(con), force=True))


def publication(plan, atoms, extra: dict):
    """The plan file's text (the plan's fields and the method's `extra`) and its dictionary's."""
    from dpspin_sql.plan import dictionary_body
    from dpspin_sql.release import Published

    d = plan.to_dict() | extra
    return Published(plan, json.dumps(d, indent=2, ensure_ascii=False, default=float),
                     dictionary_body(atoms, plan.dictionary))


def noisy_vector(step: Step, sketch) -> np.ndarray:
    """The step's full noisy vector (mass units), drawn by the step's OpenDP measurement."""
    got: dict = {}
    step.mechanism.apply(sketch.mass, observe=lambda v: got.__setitem__("v", np.asarray(v, dtype=np.float64)))
    return got["v"]


def split_budget(run: dict, n_steps_clustering: int) -> dict[str, tuple[float, float]]:
    """URANIA's public budget split: (ε, δ) of each step."""
    shares = {k: float(v) for k, v in run["urania_split"].items()}
    total = math.fsum(shares.values())
    eps, delta = float(run["epsilon"]), float(run["delta"])
    out = {}
    for name, share in (("clustering", shares["clustering"] / n_steps_clustering), ("sizes", shares["sizes"]),
                        ("histograms", shares["histograms"])):
        out[name] = (eps * share / total * (1 - 1e-12), delta * share / total * (1 - 1e-12))
    return out


# ================================================================== plans

def vocabulary_atoms(labels: list[str], descriptions: list[str], support: Sequence[float]):
    from dpspin_sql.atoms import Atom

    return [Atom(i, lab, desc, float(s)) for i, (lab, desc, s) in enumerate(zip(labels, descriptions, support))]


def nonprivate_plan(atoms, positions: list[int], values: list[float], run: dict, m: int):
    """A plan-shaped object with exact (non-private) values: the template decoder and the
    verifier read it like a plan. Marked non-private; the comparison margin and intervals
    are those of a negligible-noise Laplace (≈ 0), and no ε is stated."""
    from dpspin_sql.mechanisms import NoisyRelease, make_mechanism
    from dpspin_sql.plan import make_plan
    from dpspin_sql.request import ReleaseRequest

    L = max(1, min(int(run["L"]), m))
    req = ReleaseRequest(mechanism="laplace", epsilon=1e6, unit=run["unit"],
                         B=run["B"] if run["unit"] == "user" else None, K=int(run["K"]), L=L)
    mech = make_mechanism(req, m)
    order = sorted(zip(positions, values), key=lambda pv: (-pv[1], pv[0]))
    from dpspin_sql.atoms import dictionary_hash

    plan = make_plan(NoisyRelease([p for p, _ in order], [float(v) for _, v in order]), mech, atoms,
                     dictionary_hash(atoms))
    return dataclasses.replace(
        plan, mechanism="non_private", epsilon=None, delta=None, calibration="none", noise_scale=0.0,
        comparison_margin=0.0, noise_source="none (non-private reference)", privacy_cost={},
        atoms=[dataclasses.replace(a, interval=[a.noisy_mass, a.noisy_mass]) for a in plan.atoms],
        interval_half_width=0.0,
        mechanism_details={"non_private": True,
                           "note": "NON-PRIVATE reference: exact values of the protected sample; never charged, "
                                   "never published as DP"})


def write_plan(plan, path: Path, atoms, extra: dict) -> dict:
    from dpspin_sql.outputs import dictionary_sidecar, write_text_atomic

    published = publication(plan, atoms, extra)
    write_text_atomic(path, published.text)
    write_text_atomic(dictionary_sidecar(path), published.dictionary_text)
    return json.loads(published.text)


# ================================================================== one baseline run

@dataclasses.dataclass
class Context:
    """What the runner computed for the run (shared with DP-SPIN runs): the sample, the
    non-private DP-SPIN sketch, its top-L plan's summary (the text reference) and, for
    CFPB, the true label counts."""

    con: object
    atoms: list
    dictionary_id: str
    C: np.ndarray
    s_star: list[int]
    truth: np.ndarray | None
    truth_labels: list[str] | None
    truth_fields: list[list[str | None]] | None
    ref_text: str
    ledger_dataset: str | None   # None for a non-private reference (never charged)


def sample_units(con) -> list[tuple[str, str | None, str, object]]:
    return con.execute("SELECT record_id, user_id, text, metadata FROM records WHERE split = 'target' "
                       "ORDER BY record_id").fetchall()


def run_method(ctx: Context, run: dict, out: Path, pub: Public) -> tuple[dict, dict, Plan]:
    """Release (or, for a reference, compute) the method's object and write its plan.
    Returns (plan dict, metrics, plan object)."""
    method = run["method"]
    units = sample_units(ctx.con)
    if method == "np_plan":
        plan = nonprivate_plan(ctx.atoms, ctx.s_star, [float(ctx.C[j]) for j in ctx.s_star], run, len(ctx.atoms))
        d = write_plan(plan, out / "reference_plan.json", ctx.atoms, {"method": method, "non_private": True})
        return d, {}, plan
    if method in ("keyword_hist", "category_hist"):
        return _histogram(ctx, run, out, pub, units)
    return _urania(ctx, run, out, pub, units, private=(method == "urania"))


def _histogram(ctx: Context, run, out: Path, pub: Public, units):
    from dpspin_sql.experiment import metrics as M
    from dpspin_sql.plan import make_plan

    method = run["method"]
    K = int(run["K"])
    if method == "keyword_hist":
        labels = pub.keywords
        descr = [f'records that mention "{w}"' for w in labels]
        support = pub.keyword_df
        rows = keyword_rows([(u[0], u[2]) for u in units], pub, K)
        K_step = K
    else:
        if not pub.categories:
            raise BadInput(f"no {run['category_field']!r} category in the auxiliary split")
        labels = pub.categories
        descr = [f"{run['category_field']}: {c}" for c in labels]
        assert pub.category_counts is not None  # fit_public sets the categories and their counts together
        support = pub.category_counts
        vocab = {c: i for i, c in enumerate(labels)}
        rows = []
        for rid, _, _, meta in units:
            c = record_category(meta, run, vocab)
            if c is not None:
                rows.append((rid, vocab[c], 1.0))
        K_step = 1
    atoms = vocabulary_atoms(labels, descr, support)
    from dpspin_sql.atoms import dictionary_hash

    dict_id = dictionary_hash(atoms)
    step = make_step(run, "histogram", len(atoms), K_step, int(run["L"]), float(run["epsilon"]), float(run["delta"]))
    composite = composite_of(ctx.con, run, [step], ctx.ledger_dataset)
    st = StepStore([(u[0], u[1]) for u in units])
    try:
        sk = st.sketch(len(atoms), rows, run["unit"], K_step, float(run["B"]))
    finally:
        st.close()
    full: dict = {}

    def draw(charged):
        full["noisy"] = noisy = step.mechanism.apply(sk.mass, observe=lambda v: full.__setitem__("v", v))
        plan = make_plan(noisy, step.mechanism, atoms, dict_id, charged.release_id, charged.row_hash)
        return publication(plan, atoms, {"method": method,
                                         "vocabulary": "keywords" if method == "keyword_hist" else run["category_field"]})

    published = release_steps(ctx.con, composite, draw, out / "private_plan.json", ctx.ledger_dataset)
    plan, d, noisy = published.plan, json.loads(published.text), full["noisy"]
    C = sk.as_float()
    met = {}
    met.update(M.plan_metrics(C, noisy.admitted, step.request.L))
    met["boundary_gap"] = M.boundary_gap(C, step.request.L)
    met.update(M.full_errors(C, full["v"]))
    met.update(M.selected_errors(C, noisy.admitted, noisy.noisy_mass))
    met["noise_scale"] = plan.noise_scale
    met["vocabulary_size"] = len(atoms)
    met["records_with_vocabulary_item"] = len({r[0] for r in rows})
    return d, met, plan


def _urania(ctx: Context, run, out: Path, pub: Public, units, private: bool):
    """DP-Lloyd → noisy sizes → size filter → per-cluster keyword histograms (module docstring)."""
    from dpspin_sql.atoms import Atom, dictionary_hash
    from dpspin_sql.mechanisms import NoisyRelease
    from dpspin_sql.outputs import dictionary_sidecar, write_text_atomic
    from dpspin_sql.plan import make_plan

    fit_features(ctx.con, run, pub)
    ids = [u[0] for u in units]
    H = features_of(pub, [u[2] or "" for u in units])
    has = H.sum(axis=1) > 0
    assert pub.init_centroids is not None  # set by fit_features
    cent = pub.init_centroids.copy()
    k, d = cent.shape
    T = int(run["urania_iterations"])
    V = len(pub.keywords)
    L = int(run["L"])
    unit, B, K = run["unit"], float(run["B"]), int(run["K"])
    kw_rows = keyword_rows([(u[0], u[2]) for u in units], pub, K)
    steps: list[Step] = []
    composite = None
    if private:   # every step is calibrated from public parameters and charged before any noise
        budget = split_budget(run, T)
        steps = [make_step(run, f"lloyd{t + 1}", k * (1 + d), 1 + d, 1, *budget["clustering"]) for t in range(T)]
        steps.append(make_step(run, "sizes", k, 1, min(L, k), *budget["sizes"]))
        steps.append(make_step(run, "histograms", k * V, K, 1, *budget["histograms"]))
        composite = composite_of(ctx.con, run, steps, ctx.ledger_dataset)
    got: dict = {}
    cost = (composite.epsilon, composite.delta) if composite is not None else (0.0, 0.0)

    def clusters(charged):
        """The pipeline after the charge (every noisy step inside it); `charged` is None for the
        non-private reference."""
        st = StepStore([(u[0], u[1]) for u in units])
        trace: list[dict] = []
        try:
            for t in range(T):
                assign = _nearest(H, cent)
                rows = []
                for i in np.flatnonzero(has):
                    j = int(assign[i])
                    base = j * (1 + d)
                    rows.append((ids[i], base, 0.5))
                    rows.extend((ids[i], base + 1 + c, 0.5 * float(H[i, c])) for c in np.flatnonzero(H[i] > 0))
                sk = st.sketch(k * (1 + d), rows, unit, 1 + d, B)
                vec = noisy_vector(steps[t], sk) if private else sk.as_float()
                vec = vec.reshape(k, 1 + d)
                counts, sums = 2 * vec[:, 0], 2 * vec[:, 1:]
                floor = float(run["urania_min_size"])
                for j in range(k):
                    s = np.clip(sums[j], 0, None)
                    if counts[j] >= floor and s.sum() > 0:
                        cent[j] = s / s.sum()
                trace.append({"step": f"lloyd{t + 1}", "noisy_counts" if private else "counts":
                              [round(float(c), 3) for c in counts]})
            assign = _nearest(H, cent)
            rows = [(ids[i], int(assign[i]), 1.0) for i in np.flatnonzero(has)]
            sk = st.sketch(k, rows, unit, 1, B)
            if private:
                sizes = noisy_vector(steps[T], sk)
                mech = steps[T].mechanism
                sd = mech.noise_scale * (math.sqrt(2) if mech.noise_kind == "laplace" else 1.0)
                threshold = float(run["urania_min_size"]) + 2 * sd
            else:
                sizes = sk.as_float()
                threshold = float(run["urania_min_size"])
            kept = sorted((j for j in range(k) if sizes[j] >= threshold), key=lambda j: (-sizes[j], j))[: min(L, k)]
            trace.append({"step": "sizes", "noisy_sizes" if private else "sizes": [round(float(x), 3) for x in sizes],
                          "threshold": threshold, "kept": kept})
            labels: dict[int, str] = {}
            if kept:
                # coordinates (cluster j, keyword w) for all k clusters (a public size); records of
                # clusters the filter dropped contribute nothing, so those coordinates are 0
                member = {ids[i]: int(assign[i]) for i in np.flatnonzero(has) if int(assign[i]) in set(kept)}
                rows = [(rid, member[rid] * V + w, wt) for rid, w, wt in kw_rows if rid in member]
                sk = st.sketch(k * V, rows, unit, K, B)
                hv = noisy_vector(steps[T + 1], sk) if private else sk.as_float()
                hist = np.stack([hv[j * V:(j + 1) * V] for j in kept])
                used: set[str] = set()
                for s_, j in enumerate(kept):
                    order = sorted(range(V), key=lambda w: (-hist[s_, w], w))
                    n_kw = int(run["urania_keywords"])
                    words = [pub.keywords[w] for w in order[:n_kw]]
                    label = " / ".join(words)
                    extra = n_kw
                    while label.lower() in used and extra < V:
                        words.append(pub.keywords[order[extra]])
                        extra += 1
                        label = " / ".join(words)
                    used.add(label.lower())
                    labels[j] = label
                trace.append({"step": "histograms", "clusters": {str(j): labels[j] for j in kept}})
        finally:
            st.close()
        atoms = [Atom(j, labels.get(j, f"cluster {j}"),
                      f"cluster {j} of {k} (URANIA-style): records whose topic vector is nearest its centroid", None)
                 for j in range(k)]
        kept_atoms = [atoms[j] for j in kept]
        got["kept"] = kept
        if private:
            plan = make_plan(NoisyRelease(kept, [float(sizes[j]) for j in kept]), steps[T].mechanism, atoms,
                             dictionary_hash(kept_atoms), charged.release_id, charged.row_hash)
            plan = dataclasses.replace(
                plan, privacy_cost={"epsilon": cost[0], "delta": cost[1]},
                epsilon=float(run["epsilon"]), delta=float(run["delta"]),   # the whole release's
                mechanism=f"urania:{run['mechanism']}",
                mechanism_details=dict(plan.mechanism_details, method="urania", composed_steps=[s.name for s in steps],
                                       size_filter_threshold=threshold))
            return publication(plan, kept_atoms, {"method": "urania", "release": trace})
        plan = nonprivate_plan(atoms, kept, [float(sizes[j]) for j in kept], run, k)
        plan = dataclasses.replace(plan, dictionary=dictionary_hash(kept_atoms))
        return publication(plan, kept_atoms, {"method": "np_kmeans", "non_private": True, "clustering": trace})

    if private:
        published = release_steps(ctx.con, composite, clusters, out / "private_plan.json", ctx.ledger_dataset)
    else:
        published = clusters(None)
        write_text_atomic(out / "reference_plan.json", published.text)
        write_text_atomic(dictionary_sidecar(out / "reference_plan.json"), published.dictionary_text)
    plan = published.plan
    met = {"urania_kept_clusters": len(got["kept"]), "urania_clusters": k, "noise_scale": plan.noise_scale}
    return json.loads(published.text), met, plan


def _nearest(H: np.ndarray, cent: np.ndarray) -> np.ndarray:
    d2 = (H * H).sum(1)[:, None] - 2 * H @ cent.T + (cent * cent).sum(1)[None, :]
    return np.argmin(d2 + 0.0, axis=1)   # ties: the lower cluster index (argmin is first-wins)
