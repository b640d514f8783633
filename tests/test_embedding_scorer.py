"""The embedding scorers: the real model where the [embed] extra is installed, a stand-in elsewhere.

Fitting, scoring, saving and the canary run everywhere with a deterministic stand-in
encoder (`encode=`), so the scorer logic is always tested; the tests marked `needs_model`
load the pinned all-MiniLM-L6-v2 and skip, saying why, when it is not installed.
"""
from __future__ import annotations

import hashlib
import io
import json
import math

import numpy as np
import pytest

from dpspin_sql import assign, builders, scorers
from dpspin_sql import embedding as embed
from dpspin_sql.errors import BadInput
from tests.helpers.atoms import assert_no_canary_in_scorer, cfpb_like, make_store

FIELDS = ["product", "issue", "sub_issue"]
CANARY = "zorblaxquint"
WHY = embed.available()
needs_model = pytest.mark.skipif(WHY is not None, reason=f"embedding model not installed: {WHY}")


class StandIn:
    """A deterministic bag-of-words 'embedding' that remembers every text it was shown."""

    def __init__(self, dim: int = 32):
        self.dim, self.seen = dim, []

    def __call__(self, texts):
        self.seen.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in scorers.content_words(t or ""):
                h = hashlib.sha256(w.encode()).digest()
                out[i, h[0] % self.dim] += 1.0 if h[1] % 2 else -1.0
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(n > 0, n, 1.0)


def fitted_store(tmp_path, canary=CANARY, target=True):
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = cfpb_like(12)
    if target:
        rows += cfpb_like(6, split="target", start=5000, canary=canary)
        rows += [{"record_id": "blank", "text": "nothing relevant here", "split": "target"}]
    con = make_store(tmp_path, rows)
    builders.build(con, "metadata", fields=FIELDS, m=10)
    return con


KINDS = [("embedding", {}), ("embedding", {"centroid": False}),
         ("embedding-supervised", {"features": "embedding"}),
         ("embedding-supervised", {"features": "embedding+tfidf"})]


@pytest.mark.parametrize("kind,opts", KINDS)
def test_fit_sees_only_public_texts_and_assignments_are_bounded(tmp_path, kind, opts):
    con = fitted_store(tmp_path)
    enc = StandIn()
    sc = assign.fit_scorer(con, kind, encode=enc, **opts)
    assert enc.seen and not any(CANARY in t for t in enc.seen)            # the model never saw a target text
    target = {t for (t,) in con.execute("SELECT text FROM records WHERE split = 'target'").fetchall()}
    assert not (set(enc.seen) & target)
    blob = sc.to_bytes()
    assert CANARY.encode() not in blob
    assert_no_canary_in_scorer(sc, CANARY)
    np.load(io.BytesIO(blob), allow_pickle=False)                          # npz, never a pickle
    assert len(blob) < 200_000                                             # a reference to the model, not its weights
    report = assign.assign(con, sc, K=2)
    per: dict[str, list] = {}
    for rid, aid, w in con.execute("SELECT record_id, atom_id, weight FROM assignments").fetchall():
        per.setdefault(rid, []).append((aid, w))
    for kept in per.values():
        assert len(kept) <= 2 and all(w > 0 for _, w in kept) and math.fsum(w for _, w in kept) <= 1.0
    assert report.scorer == kind and report.n_records == 22


@pytest.mark.parametrize("kind,opts", KINDS)
def test_fit_does_not_depend_on_the_target_split(tmp_path, kind, opts):
    a = assign.fit_scorer(fitted_store(tmp_path / "a"), kind, encode=StandIn(), **opts)
    b = assign.fit_scorer(fitted_store(tmp_path / "b", canary="another"), kind, encode=StandIn(), **opts)
    c = assign.fit_scorer(fitted_store(tmp_path / "c", target=False), kind, encode=StandIn(), **opts)
    assert same_state(a, b) and same_state(a, c)


def same_state(a, b) -> bool:
    (ma, xa), (mb, xb) = a.state(), b.state()
    return (ma == mb and a.renormalise == b.renormalise and np.array_equal(a.atom_ids, b.atom_ids)
            and xa.keys() == xb.keys() and all(np.asarray(xa[k]).tobytes() == np.asarray(xb[k]).tobytes() for k in xa))


def test_saved_state_is_a_model_reference(tmp_path):
    sc = assign.fit_scorer(fitted_store(tmp_path), "embedding-supervised", encode=StandIn())
    with np.load(io.BytesIO(sc.to_bytes()), allow_pickle=False) as z:
        meta = json.loads(z["__meta__"].tobytes().decode())
    assert meta["model"] == {"name": embed.MODEL_NAME, "revision": embed.MODEL_REVISION,
                             "weights_sha256": embed.WEIGHTS_SHA256, "tokenizer_sha256": embed.TOKENIZER_SHA256,
                             "max_tokens": embed.MAX_TOKENS}
    assert meta["renormalise"] is True and meta["kind"] == "embedding-supervised"
    again = assign.scorer_from_bytes(sc.to_bytes())
    assert isinstance(again, embed.EmbeddingSupervisedScorer) and again.vocabulary == sc.vocabulary
    np.testing.assert_array_equal(again.coef, sc.coef)


def test_a_scorer_fitted_with_other_weights_is_refused(tmp_path):
    sc = assign.fit_scorer(fitted_store(tmp_path), "embedding", encode=StandIn())
    with np.load(io.BytesIO(sc.to_bytes()), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes().decode())
    meta["model"]["weights_sha256"] = "0" * 64
    buf = io.BytesIO()
    np.savez_compressed(buf, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    with pytest.raises(BadInput, match="pinned"):
        assign.scorer_from_bytes(buf.getvalue())


def test_weights_that_fail_the_hash_are_refused(tmp_path, monkeypatch):
    (tmp_path / "model.safetensors").write_bytes(b"\x08" + b"\x00" * 7 + b"{}")
    (tmp_path / "tokenizer.json").write_bytes(b"{}")
    monkeypatch.setenv("DPSPIN_EMBED_MODEL_DIR", str(tmp_path))
    with pytest.raises(BadInput, match="refusing"):
        embed.read_model_files()


def test_gelu_is_the_erf_gelu():
    from scipy.special import erf

    u = np.linspace(-10, 10, 200_001, dtype=np.float32)
    ref = u.astype(np.float64) * 0.5 * (1.0 + erf(u.astype(np.float64) / math.sqrt(2.0)))
    assert np.abs(embed.gelu_(u.copy()) - ref).max() < 1e-6


def test_safetensors_reader(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([7, -1], dtype=np.int64)
    header = {"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}, "__metadata__": {"format": "pt"}}
    h = json.dumps(header).encode()
    blob = len(h).to_bytes(8, "little") + h + a.tobytes() + b.tobytes()
    t = embed.load_safetensors(blob)
    np.testing.assert_array_equal(t["a"], a)
    np.testing.assert_array_equal(t["b"], b)


def test_missing_extra_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(embed, "_ENCODERS", {})
    monkeypatch.setattr(embed, "available", lambda: "the tokenizers package is missing; install it")
    with pytest.raises(BadInput, match="tokenizers package is missing"):
        assign.fit_scorer(fitted_store(tmp_path), "embedding")


# --- with the real model ------------------------------------------------------------------
@needs_model
def test_model_reproduces_the_published_similarities():
    # sentence-transformers' documented example for all-MiniLM-L6-v2 (sbert.net, usage):
    # similarities [[1, 0.6660, 0.1046], [0.6660, 1, 0.1411], [0.1046, 0.1411, 1]]
    E = embed.encoder().encode(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    S = E @ E.T
    assert E.shape == (3, 384) and np.allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    assert abs(S[0, 1] - 0.6660) < 5e-4 and abs(S[0, 2] - 0.1046) < 5e-4 and abs(S[1, 2] - 0.1411) < 5e-4


@needs_model
def test_batching_and_threads_do_not_change_embeddings():
    enc = embed.encoder()
    texts = ["short", "a somewhat longer text about a late fee on my credit card " * 3, "", None, "mid length text"]
    together = enc.encode(texts)
    alone = np.vstack([enc.encode([t]) for t in texts])
    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(enc.encode(texts, workers=1, token_budget=16) - together).max() < 1e-5


@needs_model
def test_weights_are_the_pinned_ones():
    weights, tok, _ = embed.read_model_files()
    assert hashlib.sha256(weights).hexdigest() == embed.WEIGHTS_SHA256
    assert hashlib.sha256(tok).hexdigest() == embed.TOKENIZER_SHA256


@needs_model
@pytest.mark.parametrize("kind", ["embedding", "embedding-supervised"])
def test_real_model_assign_reload_and_canary(tmp_path, kind):
    con = fitted_store(tmp_path)
    assign.assign(con, kind, K=3)
    fitted = assign.load_scorer(con)
    assert CANARY.encode() not in con.execute("SELECT scorer FROM dictionary").fetchall()[0][0]
    assert_no_canary_in_scorer(fitted, CANARY)
    texts = ["collector called about a debt", "late fee and interest on my card"]
    assert fitted.score_top_k(texts, 2) == assign.fit_scorer(con, kind).score_top_k(texts, 2)
    ev = assign.evaluate(con)
    # calibrated: a target record gives mass only above the thresholds fitted on the (near-
    # duplicate) aux texts; the canary moves these embeddings, so some abstain. What is
    # assigned is right, and texts like the aux ones are assigned their own atom.
    assert ev["n_true_assigned"] == 0 or ev["top1_accuracy_assigned"] >= 0.9
    aux = con.execute("SELECT text, metadata FROM records WHERE split = 'aux' ORDER BY record_id LIMIT 4").fetchall()
    from dpspin_sql.atoms import current_atoms, current_manifest
    from dpspin_sql.fit import aux_labels

    want = aux_labels([m for _, m in aux], current_atoms(con), current_manifest(con)).tolist()
    assert [kept[0][0] if kept else -1 for kept in fitted.score_top_k([t for t, _ in aux], 3)] == want
