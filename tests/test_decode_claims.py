"""Plan-constrained claims mode and honest outcomes.

The renderer and the menu are checked against the real verifier over many plans; the
protocol (constraint forms, detection, demotion, feedback, fallback, --no-fallback, an
unreachable endpoint) against the scripted OpenAI-compatible server on 127.0.0.1.
"""
from __future__ import annotations

import contextlib
import json
import random
import socket

import pytest

from dpspin_sql import claims as cl
from dpspin_sql.decode import (
    CONSTRAINTS,
    EndpointUnreachable,
    LLMConfig,
    public_view,
    summarize,
    template_summary,
    write_summary,
)
from dpspin_sql.verify import verify
from tests.helpers.llm import ScriptedServer, make_plan


def cfg(server, **kw) -> LLMConfig:
    kw.setdefault("mode", "claims")
    kw.setdefault("timeout", 10)
    return LLMConfig(base_url=server.base_url, model="scripted", api_key="test", max_retries=0, **kw)


def _plans():
    """Phrase and CFPB plans, with and without a public denominator, some with intervals."""
    out = []
    for seed in range(16):
        for kind in ("phrases", "cfpb"):
            p = make_plan(seed, kind, denominator=seed % 2 == 0)
            if seed % 3 == 0:
                p["interval_confidence"] = 0.95
                p["interval_half_width"] = round(p["comparison_margin"] / 2, 2)
            if seed % 3 == 1:
                p["interval_confidence"] = 0.9
                for a in p["atoms"]:
                    a["interval"] = [round(a["noisy_mass"] - 9.5, 2), round(a["noisy_mass"] + 9.5, 2)]
            out.append(p)
    return out


PLANS = _plans()
PLAN = make_plan(11, "phrases", L=5, denominator=True, margin=10.0)
A = [a["label"] for a in PLAN["atoms"]]


def _answer(*claims) -> str:
    return json.dumps({"claims": [c.as_json() if isinstance(c, cl.Claim) else c for c in claims]})


GOOD = _answer(cl.Claim("top_theme", A[0]), cl.Claim("bin", A[1]), cl.Claim("mass", A[2]), cl.Claim("rank", A[3]))


# ---------------------------------------------------------------- menu and renderer
def test_every_menu_claim_is_true_by_construction():
    """Each claim the schema allows, written alone, passes the verifier (counts of all
    themes name no theme, so they need a theme beside them)."""
    n = 0
    for p in PLANS:
        v = public_view(p)
        items = cl.menu(v)
        kinds = {c.kind for c in items}
        assert {"top_theme", "rank", "bin", "mass", "count"} <= kinds
        assert ("interval" in kinds) == ("interval_confidence" in p)
        for c in items:
            text, _ = cl.render([c] if c.theme else [c, cl.Claim("top_theme", v["atoms"][0]["label"])], v)
            verdict = verify(text, p, require_theme=True)
            assert verdict.accepted, (text, verdict.to_dict())
            n += 1
    assert n > 1000


def test_any_choice_of_claims_renders_to_accepted_prose():
    rng = random.Random(7)
    for p in PLANS:
        v = public_view(p)
        items = cl.menu(v)
        for _ in range(12):
            chosen = [rng.choice(items) for _ in range(rng.randint(cl.MIN_CLAIMS, cl.MAX_CLAIMS))]
            text, spans = cl.render(chosen, v)
            assert verify(text, p).accepted, text
            # prose, not data: sentences (and a Markdown table when one is chosen), every claim traced to one span
            prose = text.split("\n\n| ")[0]
            assert "{" not in text and '"' not in text and "\n" not in prose
            assert ("\n" in text) == any(c.kind == "table" for c in chosen)
            assert {c for _, _, cs in spans for c in cs} == set(chosen)
            for s, e, cs in spans:
                if cs[0].kind == "table":
                    assert text[s] == "|" and text[e - 1] == "|"
                else:
                    assert text[s].isupper() and text[e - 1] == "."


def test_menu_never_offers_an_unsupported_claim():
    for p in PLANS:
        v = public_view(p)
        m = v["comparison_margin"]
        mass = {a["label"]: a["noisy_mass"] for a in v["atoms"]}
        for c in cl.menu(v):
            if c.kind == "comparison":
                assert mass[c.theme] - mass[c.other] >= m
            if c.kind == "similar":
                assert abs(mass[c.theme] - mass[c.other]) < m
            if c.kind == "top_theme":
                assert c.theme == v["atoms"][0]["label"]


def test_renderer_writes_released_values_only():
    v = public_view(PLAN)
    a = v["atoms"][2]
    text, _ = cl.render([cl.Claim("rank", a["label"]), cl.Claim("bin", a["label"]), cl.Claim("mass", a["label"])], v)
    assert text == f"{a['label'].capitalize()} ranks third, with {a['bin']} support and a released mass of " \
                   f"{a['display_mass']:.1f}."


def test_claims_about_one_theme_make_one_sentence():
    v = public_view(PLAN)
    low = A[-1]
    chosen = [cl.Claim("top_theme", A[0]), cl.Claim("bin", A[1]), cl.Claim("mass", A[0]),
              cl.Claim("comparison", A[0], low), cl.Claim("count", bin=cl.ALL)]
    assert cl.Claim("comparison", A[0], low) in cl.menu(v)
    text, spans = cl.render(chosen, v)
    assert text.startswith("The plan lists five themes. ")   # a count of all themes opens
    assert len(spans) == 3
    assert f"{A[0].capitalize()} is the most common theme, with a released mass of" in text
    assert f"and is more common than {low}." in text
    assert verify(text, PLAN).accepted


def test_schema_and_grammar_are_the_menu():
    v = public_view(PLAN)
    items = cl.menu(v)
    schema = cl.claims_schema(items)
    arr = schema["properties"]["claims"]
    assert (arr["minItems"], arr["maxItems"]) == (cl.MIN_CLAIMS, cl.MAX_CLAIMS)
    offered = set()
    for var in arr["items"]["anyOf"]:
        assert var["additionalProperties"] is False and set(var["required"]) == set(var["properties"])
        enums = {k: p["enum"] for k, p in var["properties"].items()}
        (kind,) = enums.pop("kind")
        if kind == "count":
            offered |= {cl.Claim(kind, bin=b) for b in enums["bin"]}
        elif kind == "method":
            offered |= {cl.Claim(kind, field=f) for f in enums["field"]}
        elif kind == "table":
            offered.add(cl.Claim(kind))
        elif "other" in enums:
            offered |= {cl.Claim(kind, t, o) for t in enums["theme"] for o in enums["other"]}
        else:
            offered |= {cl.Claim(kind, t) for t in enums["theme"]}
    assert offered == set(items)
    gbnf = cl.claims_gbnf(items)
    assert gbnf.startswith("root ::= ") and all(json.dumps(a)[1:-1] in gbnf for a in A)


def test_schema_and_grammar_compile_in_llama_cpp():
    """The schema converts and the grammar parses with llama.cpp's own code (when installed)."""
    pytest.importorskip("llama_cpp")
    from llama_cpp.llama_grammar import LlamaGrammar

    for p in PLANS[:6] + [PLAN]:
        items = cl.menu(public_view(p))
        assert LlamaGrammar.from_json_schema(json.dumps(cl.claims_schema(items)), verbose=False)
        assert LlamaGrammar.from_string(cl.claims_gbnf(items), verbose=False)


def test_reading_an_answer():
    items = cl.menu(public_view(PLAN))
    chosen, vs, ok = cl.read_claims(cl.parse(GOOD), items)
    assert ok and not vs and [c.kind for c in chosen] == ["top_theme", "bin", "mass", "rank"]
    for bad in ({"claims": []}, {"claims": [{"kind": "rank", "theme": A[0], "extra": 1}] * 3}, [1, 2]):
        assert cl.read_claims(bad, items)[2] is False
    assert cl.parse("no json here") is None
    assert cl.parse('Sure! {"claims": []} Hope this helps.') == {"claims": []}


# ---------------------------------------------------------------- protocol
def test_constraint_forms_are_tried_in_order_and_remembered():
    """Each refused form (HTTP 500) moves on within the same attempt; the first that works
    is remembered for the endpoint, so the next plan starts there."""
    with ScriptedServer([GOOD, GOOD], refuse=("json_schema", "json_object_schema", "guided_json")) as srv:
        r1 = summarize(PLAN, decoder="llm", max_attempts=1, llm=cfg(srv))
        r2 = summarize(PLAN, decoder="llm", max_attempts=1, llm=cfg(srv))
    assert srv.forms() == ["json_schema", "json_object_schema", "guided_json", "grammar", "grammar"]
    assert r1.final_source == r2.final_source == "model" and r1.constraint == "grammar"
    assert r1.attempts[0]["refused"] == [f"{f}: HTTP 500" for f in ("json_schema", "json_object_schema", "guided_json")]
    assert srv.requests[3]["body"]["grammar"] == cl.claims_gbnf(cl.menu(public_view(PLAN)))


@pytest.mark.parametrize("form", CONSTRAINTS)
def test_each_form_is_sent_the_way_its_servers_take_it(form):
    with ScriptedServer([GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=1, llm=cfg(srv, constraint=form))
    body = srv.requests[0]["body"]
    assert srv.forms() == [form] and r.final_source == "model"
    schema = cl.claims_schema(cl.menu(public_view(PLAN)))
    if form == "json_schema":
        assert body["response_format"]["json_schema"] == {"name": "plan_claims", "strict": True, "schema": schema}
    elif form == "json_object_schema":
        assert body["response_format"] == {"type": "json_object", "schema": schema}
    elif form == "guided_json":
        assert body["guided_json"] == schema
    elif form == "grammar":
        assert body["grammar"].startswith("root ::=")
    assert body["max_tokens"] >= cl.token_budget(cl.menu(public_view(PLAN)))


def test_forced_form_that_the_server_refuses_is_a_decoder_error():
    with ScriptedServer([GOOD], refuse=("grammar",)) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=1, llm=cfg(srv, constraint="grammar"))
    assert srv.forms() == ["grammar"] and r.attempts[0]["violations"][0]["code"] == "decoder_error"
    assert r.final_source == "template_fallback"


def test_a_form_the_server_takes_but_ignores_is_demoted():
    """An answer outside the schema (that was not cut off) shows the server did not enforce
    the form: the attempt is rejected and the next attempt uses the next form."""
    ignored = json.dumps({"claims": [{"kind": "rank", "theme": "something else"}]})
    with ScriptedServer([ignored, GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv))
    assert srv.forms() == ["json_schema", "json_object_schema"]
    assert r.attempts[0]["constraint_enforced"] is False and not r.attempts[0]["accepted"]
    assert r.final_source == "model" and r.attempts_used == 2 and r.first_attempt_accepted is False


def test_feedback_drops_the_blamed_claims_from_the_next_menu():
    only_count = json.dumps({"claims": [{"kind": "count", "bin": "all"}]})   # names no theme: no_theme
    with ScriptedServer([only_count, GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv, constraint="json_object_schema"))
    first = r.attempts[0]
    assert {v["code"] for v in first["violations"]} >= {"no_theme"}
    assert first["dropped_from_menu"] == [{"kind": "count", "bin": "all"}]
    assert '"kind": "count", "bin": "all"' in first["feedback"]
    second = srv.requests[1]["body"]
    assert second["messages"][-1]["content"] == first["feedback"]
    counts = [v for v in second["response_format"]["schema"]["properties"]["claims"]["items"]["anyOf"]
              if v["properties"]["kind"]["enum"] == ["count"]]
    assert counts and "all" not in counts[0]["properties"]["bin"]["enum"]
    assert r.final_source == "model" and r.accepted_on == 2


def test_prompt_is_the_public_view_only():
    canary = "CANARY-claims-7d1"
    plan = json.loads(json.dumps(PLAN))
    plan["raw_examples"] = [canary]
    plan["atoms"][0]["examples"] = [canary]
    with ScriptedServer([GOOD]) as srv:
        r = summarize(plan, decoder="llm", max_attempts=1, llm=cfg(srv))
    assert canary not in srv.all_text() and canary not in json.dumps(r.to_dict())
    prompt = srv.requests[0]["body"]["messages"][1]["content"]
    assert all(label in prompt for label in A)


# ---------------------------------------------------------------- honest outcomes
def test_outcome_fields_model(tmp_path):
    with ScriptedServer([GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=3, llm=cfg(srv))
    write_summary(r, tmp_path / "summary.txt", tmp_path / "verifier_attempts.json")
    rec = json.loads((tmp_path / "verifier_attempts.json").read_text())
    assert rec["final_source"] == "model" and rec["attempts_used"] == 1 and rec["first_attempt_accepted"] is True
    assert rec["accepted_on_attempt"] == 1 and rec["fallback_used"] is False and rec["mode"] == "claims"
    assert (tmp_path / "summary.txt").read_text().strip() == r.text == rec["final_text"]


def test_outcome_fields_fallback_and_template():
    with ScriptedServer(["nope"] * 2) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv))
    d = r.to_dict()
    assert d["final_source"] == "template_fallback" and d["attempts_used"] == 2 and d["first_attempt_accepted"] is False
    assert d["accepted_on_attempt"] is None and r.text == template_summary(PLAN) and r.accepted
    t = summarize(PLAN, decoder="template").to_dict()
    assert t["final_source"] == "template" and t["attempts_used"] == 0 and t["first_attempt_accepted"] is None


def test_no_fallback_returns_no_text(tmp_path):
    with ScriptedServer(["nope"] * 2) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv), fallback=False)
    assert r.final_source is None and not r.accepted and r.text == "" and not r.fallback_used
    assert all(a["source"] == "llm" for a in r.attempts)
    write_summary(r, tmp_path / "summary.txt", tmp_path / "a.json")
    assert not (tmp_path / "summary.txt").exists()
    assert json.loads((tmp_path / "a.json").read_text())["final_source"] is None


def _closed_port_url() -> str:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_unreachable_endpoint_raises_unless_fallback_is_asked_for():
    c = LLMConfig(base_url=_closed_port_url(), model="m", api_key="k", max_retries=0, timeout=5, mode="claims")
    for fb in (None, False):
        with pytest.raises(EndpointUnreachable, match="cannot reach the LLM endpoint"):
            summarize(PLAN, decoder="llm", max_attempts=3, llm=c, fallback=fb)
    r = summarize(PLAN, decoder="llm", max_attempts=3, llm=c, fallback=True)
    assert r.final_source == "template_fallback" and r.accepted and r.attempts_used == 1   # no retries into a void
    assert "cannot reach" in r.note and "cannot reach" in r.status_line()


def test_a_slow_answer_is_a_rejected_attempt_not_an_unreachable_endpoint():
    with ScriptedServer([(3, GOOD), GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv, timeout=0.5), fallback=False)
    first = r.attempts[0]["violations"][0]
    assert first["code"] == "decoder_error" and "Timeout" in first["message"]
    assert r.note is None and r.attempts_used == 2


def test_http_errors_are_rejected_attempts_not_unreachable():
    with ScriptedServer([503, 503]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv, mode="text"))
    assert r.final_source == "template_fallback" and r.attempts_used == 2 and r.note is None


# ---------------------------------------------------------------- CLI
class _Result:
    def __init__(self, exit_code: int, stdout: str, stderr: str):
        self.exit_code, self.stdout, self.stderr = exit_code, stdout, stderr


@pytest.fixture()
def cli(capsys):
    from dpspin_sql.cli import run

    def invoke(*args):
        capsys.readouterr()
        rc = run([str(a) for a in args])
        captured = capsys.readouterr()
        return _Result(rc, captured.out, captured.err)
    return invoke


@pytest.fixture()
def plan_file(tmp_path):
    p = tmp_path / "private_plan.json"
    p.write_text(json.dumps(PLAN))
    return p


def test_cli_claims_mode_is_the_default_and_says_where_the_text_came_from(cli, plan_file, tmp_path):
    with ScriptedServer([GOOD]) as srv:
        res = cli("summarize", plan_file, "--decoder", "llm", "--base-url", srv.base_url,
                  "--out", tmp_path / "summary.txt")
    assert res.exit_code == 0
    assert srv.forms() == ["json_schema"]
    text = (tmp_path / "summary.txt").read_text().strip()
    assert text in res.stdout and text.startswith(A[0].capitalize())
    assert "summary: model-written (claims mode, constraint json_schema), accepted on attempt 1 of 3" in res.stderr
    assert "first attempt accepted" in res.stderr
    rec = json.loads((tmp_path / "verifier_attempts.json").read_text())
    assert rec["final_source"] == "model" and rec["first_attempt_accepted"] is True


def test_cli_fallback_is_said_on_stderr(cli, plan_file, tmp_path):
    with ScriptedServer(["x"] * 2) as srv:
        res = cli("summarize", plan_file, "--decoder", "llm", "--base-url", srv.base_url, "--max-attempts", 2,
                  "--out", tmp_path / "summary.txt")
    assert res.exit_code == 0 and template_summary(PLAN) in res.stdout
    assert "note: summary: template fallback (no model attempt accepted in 2 attempt(s)" in res.stderr
    assert json.loads((tmp_path / "verifier_attempts.json").read_text())["final_source"] == "template_fallback"


def test_cli_no_fallback_exits_1_and_writes_no_summary(cli, plan_file, tmp_path):
    with ScriptedServer(["x"] * 2) as srv:
        res = cli("summarize", plan_file, "--decoder", "llm", "--base-url", srv.base_url, "--max-attempts", 2,
                  "--no-fallback", "--out", tmp_path / "summary.txt")
    assert res.exit_code == 1 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "--no-fallback" in res.stderr
    assert not (tmp_path / "summary.txt").exists()
    rec = json.loads((tmp_path / "verifier_attempts.json").read_text())
    assert rec["final_source"] is None and rec["attempts_used"] == 2 and not rec["accepted"]


def test_cli_no_fallback_with_a_passing_attempt_is_ordinary(cli, plan_file, tmp_path):
    with ScriptedServer(["x", GOOD]) as srv:
        res = cli("summarize", plan_file, "--decoder", "llm", "--base-url", srv.base_url, "--no-fallback",
                  "--out", tmp_path / "summary.txt")
    assert res.exit_code == 0 and "accepted on attempt 2 of 3; first attempt rejected" in res.stderr


def test_cli_unreachable_endpoint(cli, plan_file, tmp_path):
    url = _closed_port_url()
    for extra in ((), ("--no-fallback",)):
        res = cli("summarize", plan_file, "--decoder", "llm", "--base-url", url, *extra, "--out", tmp_path / "s.txt")
        assert res.exit_code == 2 and res.stdout == ""
        assert len(res.stderr.strip().splitlines()) == 1 and "cannot reach the LLM endpoint" in res.stderr
        assert not (tmp_path / "s.txt").exists() and not (tmp_path / "verifier_attempts.json").exists()
    res = cli("summarize", plan_file, "--decoder", "llm", "--base-url", url, "--fallback", "--out", tmp_path / "s.txt")
    assert res.exit_code == 0 and template_summary(PLAN) in res.stdout
    assert "note: summary: template fallback (cannot reach the LLM endpoint" in res.stderr
    assert json.loads((tmp_path / "verifier_attempts.json").read_text())["final_source"] == "template_fallback"


def test_cli_rejects_an_unknown_constraint(cli, plan_file):
    res = cli("summarize", plan_file, "--decoder", "llm", "--base-url", "http://127.0.0.1:9/v1", "--constraint", "xml")
    assert res.exit_code == 2 and "--constraint" in res.stderr


def test_a_plan_without_themes_asks_the_model_nothing():
    empty = json.loads(json.dumps(PLAN))
    empty["atoms"] = []
    with ScriptedServer([GOOD]) as srv:
        r = summarize(empty, decoder="llm", max_attempts=3, llm=cfg(srv))
    assert srv.requests == [] and r.final_source == "template_fallback" and r.accepted
    assert "no themes" in r.note and r.attempts_used == 0


def test_big_plans_keep_a_small_menu():
    big = make_plan(5, "cfpb", L=30, m=60, margin=3.0)
    items = cl.menu(public_view(big))
    pairs = [c for c in items if c.kind in ("comparison", "similar")]
    assert len(pairs) <= 30 * (cl.MORE_PER_THEME + cl.SIMILAR_PER_THEME)
    assert len(json.dumps(cl.claims_schema(items))) < 400_000
    rng = random.Random(1)
    text, _ = cl.render([rng.choice(items) for _ in range(cl.MAX_CLAIMS)], public_view(big))
    assert verify(text, big).accepted


def test_a_bin_count_says_the_bins_of_its_themes():
    v = public_view(PLAN)
    b = v["atoms"][1]["bin"]
    members = [a["label"] for a in v["atoms"] if a["bin"] == b]
    text, spans = cl.render([cl.Claim("bin", A[1]), cl.Claim("mass", A[1]), cl.Claim("count", bin=b)], v)
    assert f"{b} support" not in text.split(". ")[0]   # not said twice
    assert all(m in text.split(". ")[-1] for m in members)
    assert cl.Claim("bin", A[1]) in spans[-1][2] and verify(text, PLAN).accepted
