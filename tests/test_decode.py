"""Decoders and the verifier loop, against a scripted OpenAI-compatible server on 127.0.0.1."""
from __future__ import annotations

import json

import pytest

from dpspin_sql.decode import LLMConfig, public_view, summarize, template_summary, write_summary
from dpspin_sql.verify import verify
from tests.helpers.llm import ScriptedServer, make_plan

PLAN = make_plan(11, "phrases", L=5, denominator=True, margin=10.0)
A1, A2 = PLAN["atoms"][0]["label"], PLAN["atoms"][1]["label"]
NON_ADMITTED = next(d["label"] for d in PLAN["dictionary_labels"] if d["label"] not in {a["label"] for a in PLAN["atoms"]})
GOOD = f"{A1.capitalize()} is the most common theme in the plan."
BAD_ATOM = f"{NON_ADMITTED.capitalize()} is discussed a lot."
BAD_RANK = f"{A2.capitalize()} is the most common theme."


def cfg(server, **kw) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="scripted", api_key="test", max_retries=0, timeout=10, **kw)


def test_template_accepted_single_attempt():
    r = summarize(PLAN, decoder="template")
    assert r.accepted and not r.fallback_used and r.text == template_summary(PLAN)
    assert len(r.attempts) == 1 and r.attempts[0]["accepted"] is True


def test_template_on_cfpb_and_rank_bins():
    for seed in range(30):
        for plan in (make_plan(seed, "cfpb"), make_plan(seed, "phrases", denominator=False)):
            assert verify(template_summary(plan), plan).accepted


def test_loop_accepts_after_feedback():
    with ScriptedServer([BAD_ATOM, BAD_RANK, GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=3, llm=cfg(srv))
    assert r.accepted and not r.fallback_used and r.text == GOOD
    assert [a["accepted"] for a in r.attempts] == [False, False, True]
    assert {v["code"] for v in r.attempts[0]["violations"]} == {"unadmitted_atom", "no_theme"}
    assert {v["code"] for v in r.attempts[1]["violations"]} == {"wrong_rank"}
    assert len(srv.requests) == 3
    # feedback from attempt k is what the server receives in request k+1
    for k in (0, 1):
        fb = r.attempts[k]["feedback"]
        assert fb and r.attempts[k]["violations"][0]["code"] in fb
        assert srv.requests[k + 1]["body"]["messages"][-1]["content"] == fb
        assert r.attempts[k + 1]["feedback_in"] == fb
    assert all(req["path"].endswith("/chat/completions") for req in srv.requests)


def test_fallback_after_r_max_rejections():
    with ScriptedServer([BAD_ATOM] * 5) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv))
    assert len(srv.requests) == 2  # R_max is a hard cap
    assert r.fallback_used and r.accepted and r.text == template_summary(PLAN)
    assert [a["attempt"] for a in r.attempts] == [1, 2, "fallback"]
    assert r.attempts[-1]["source"] == "template"


def test_zero_attempts_is_straight_fallback():
    with ScriptedServer([GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=0, llm=cfg(srv))
    assert srv.requests == [] and r.fallback_used and r.accepted


def test_vacuous_answer_is_rejected_in_the_loop():
    with ScriptedServer(["The plan is interesting.", GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv))
    assert r.accepted and r.attempts[0]["violations"][0]["code"] == "no_theme"
    assert verify("The plan is interesting.", PLAN).accepted  # the plain verifier has nothing to object to


def test_http_error_counts_as_rejected_attempt():
    with ScriptedServer([503, GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=2, llm=cfg(srv))
    assert r.accepted and r.attempts[0]["violations"][0]["code"] == "decoder_error"


def test_claims_mode_falls_back_from_json_schema_to_json_object():
    A3 = PLAN["atoms"][2]["label"]
    claims = {"claims": [{"kind": "top_theme", "theme": A1}, {"kind": "bin", "theme": A2},
                         {"kind": "rank", "theme": A3}, {"kind": "mass", "theme": A3}]}
    with ScriptedServer([json.dumps(claims)], reject_json_schema=True) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=1, llm=cfg(srv, mode="claims"))
    assert srv.forms() == ["json_schema", "json_object_schema"]
    assert srv.requests[1]["body"]["response_format"]["schema"]["properties"]["claims"]["items"]["anyOf"]
    assert r.accepted and r.final_source == "model" and r.attempts[0]["claims"] == claims["claims"]
    assert r.attempts[0]["constraint"] == "json_object_schema" and r.attempts[0]["constraint_enforced"]
    assert r.text.startswith(f"{A1.capitalize()} is the most common theme.")


def test_claims_off_the_menu_are_rejected():
    """A server that ignores the constraint: claims the plan does not support are violations."""
    low = PLAN["atoms"][-1]["label"]
    wrong_top = {"claims": [{"kind": "top_theme", "theme": A2}, {"kind": "bin", "theme": A1},
                            {"kind": "rank", "theme": A1}]}
    unknown = {"claims": [{"kind": "rank", "theme": NON_ADMITTED}, {"kind": "bin", "theme": A1},
                          {"kind": "mass", "theme": A1}]}
    reversed_ = {"claims": [{"kind": "comparison", "theme": low, "other": A1}, {"kind": "bin", "theme": A1},
                            {"kind": "rank", "theme": A2}]}
    with ScriptedServer([json.dumps(wrong_top), json.dumps(unknown), json.dumps(reversed_), "not json"]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=4, llm=cfg(srv, mode="claims", constraint="json_object"))
    codes = [{v["code"] for v in a["violations"]} for a in r.attempts[:4]]
    assert "wrong_rank" in codes[0] and "unadmitted_atom" in codes[1] and "unsupported_comparison" in codes[2]
    assert "malformed_output" in codes[3]
    assert r.fallback_used and r.final_source == "template_fallback"
    assert not any(a["constraint_enforced"] for a in r.model_attempts)
    assert NON_ADMITTED not in " ".join(a["text"] for a in r.model_attempts)   # never rendered


def test_attempts_file_and_summary(tmp_path):
    with ScriptedServer([BAD_ATOM, GOOD]) as srv:
        r = summarize(PLAN, decoder="llm", max_attempts=3, llm=cfg(srv))
    write_summary(r, tmp_path / "summary.txt", tmp_path / "verifier_attempts.json")
    assert (tmp_path / "summary.txt").read_text().strip() == GOOD
    rec = json.loads((tmp_path / "verifier_attempts.json").read_text())
    assert rec["accepted"] and rec["max_attempts"] == 3 and len(rec["attempts"]) == 2
    assert {"attempt", "text", "accepted", "violations", "feedback"} <= set(rec["attempts"][0])


def test_decoder_sees_only_public_fields():
    canary = "CANARY-5c1e-private-record-text"
    plan = json.loads(json.dumps(PLAN))
    plan["raw_examples"] = [canary]
    plan["atoms"][0]["examples"] = [f"I wrote {canary}"]
    plan["atoms"][1]["user_ids"] = [canary]
    assert canary not in json.dumps(public_view(plan))
    with ScriptedServer([BAD_ATOM, BAD_RANK]) as srv:
        r = summarize(plan, decoder="llm", max_attempts=2, llm=cfg(srv))
    assert canary not in srv.all_text()
    assert canary not in json.dumps(r.to_dict()) and canary not in r.text


def test_llm_needs_base_url(monkeypatch):
    for k in ("DPSPIN_LLM_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(k, raising=False)
    from dpspin_sql.errors import BadInput

    with pytest.raises(BadInput):
        summarize(PLAN, decoder="llm", llm=LLMConfig())


def test_env_configuration(monkeypatch):
    with ScriptedServer([GOOD]) as srv:
        monkeypatch.setenv("DPSPIN_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("DPSPIN_LLM_MODEL", "env-model")
        r = summarize(PLAN, decoder="llm", max_attempts=1, llm=LLMConfig(max_retries=0))
    assert r.accepted and srv.requests[0]["body"]["model"] == "env-model"


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


def test_cli_verify_exit_codes_and_json(cli, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(GOOD)
    bad.write_text(BAD_ATOM)
    assert cli("verify", plan, good).exit_code == 0
    res = cli("verify", plan, bad, "--json")
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["accepted"] is False and out["violations"][0]["code"] == "unadmitted_atom"
    assert set(out["violations"][0]) == {"code", "span", "message"}


def test_cli_bad_input(cli, tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "s.txt").write_text("x")
    for args in (("verify", tmp_path / "missing.json", tmp_path / "s.txt"),
                 ("verify", tmp_path / "bad.json", tmp_path / "s.txt"),
                 ("summarize", tmp_path / "missing.json")):
        res = cli(*args)
        assert res.exit_code == 2
        assert len(res.stderr.strip().splitlines()) == 1


def test_cli_summarize_template_and_llm(cli, tmp_path):
    plan = tmp_path / "private_plan.json"
    plan.write_text(json.dumps(PLAN))
    res = cli("summarize", plan, "--out", tmp_path / "summary.txt")
    assert res.exit_code == 0 and template_summary(PLAN) in res.stdout
    assert json.loads((tmp_path / "verifier_attempts.json").read_text())["accepted"]
    with ScriptedServer([BAD_ATOM, GOOD]) as srv:
        res = cli("summarize", plan, "--decoder", "llm", "--mode", "text", "--base-url", srv.base_url,
                  "--max-attempts", 2,
                  "--out", tmp_path / "s2.txt", "--attempts-out", tmp_path / "a2.json")
    assert res.exit_code == 0 and GOOD in res.stdout
    assert len(json.loads((tmp_path / "a2.json").read_text())["attempts"]) == 2


def test_cli_uses_dictionary_sidecar(cli, tmp_path):
    plan = dict(PLAN)
    labels = plan.pop("dictionary_labels")
    (tmp_path / "p.json").write_text(json.dumps(plan))
    (tmp_path / "s.txt").write_text(BAD_ATOM)
    assert cli("verify", tmp_path / "p.json", tmp_path / "s.txt").exit_code == 0  # nothing to compare against
    from dpspin_sql.atoms import hash_entries

    plan["dictionary"] = hash_entries(labels)
    (tmp_path / "p.json").write_text(json.dumps(plan))
    (tmp_path / "p.dictionary.json").write_text(json.dumps({"dictionary": plan["dictionary"], "atoms": labels}))
    assert cli("verify", tmp_path / "p.json", tmp_path / "s.txt").exit_code == 1
    # a sidecar whose content is not the plan's dictionary is refused, not trusted
    (tmp_path / "p.dictionary.json").write_text(json.dumps({"dictionary": plan["dictionary"], "atoms": labels[1:]}))
    assert cli("verify", tmp_path / "p.json", tmp_path / "s.txt").exit_code == 2


def test_canary_in_target_records_never_reaches_the_decoder(tmp_path):
    """Plant a canary in every target record, release a plan with the real pipeline, run the loop.
    The pipeline is the real one: an import failure of any of its modules fails this test."""
    from tests.helpers.llm import pipeline_plan_with_canary

    canary = "ZQXCANARY4471"
    plan = pipeline_plan_with_canary(tmp_path, canary)
    assert canary not in json.dumps(plan)
    label = plan["atoms"][0]["label"]
    with ScriptedServer(["Mr. Smith said hi.", "Oily skin is common.", f"{label} is discussed."]) as srv:
        r = summarize(plan, decoder="llm", max_attempts=3, llm=cfg(srv))
    assert len(srv.requests) == 3 and r.accepted
    assert canary not in json.dumps([req["body"] for req in srv.requests])  # prompts and feedback
    assert [a for a in r.attempts if a.get("feedback")] and canary not in json.dumps(r.to_dict())
    assert canary not in r.text
