"""Claims mode over a comparison (issue 25 item 4; dpspin_sql/claims_change.py): the model picks
changes from a menu the comparison supports, the program writes them, the verifier checks them.

* Every claim on the menu, alone and all together, renders to text the verifier accepts, for
  Gaussian, Laplace and private top-L pairs and for dated, named and unnamed sides.
* Power: the verifier is not rubber-stamping the renderer's forms — the same sentences with
  the direction reversed, a change claimed for an atom without a supported one, or another
  side's top theme are rejected.
* The loop: a scripted OpenAI-compatible server on 127.0.0.1 answers claims; an off-menu
  answer is rejected with feedback and left off the next menu; `dpspin summarize
  comparison.json --decoder llm` writes a verified summary; the template is the fallback.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from dpspin_sql import claims as cl
from dpspin_sql import claims_change as cc
from dpspin_sql.atoms import Atom
from dpspin_sql.compare import compare, side_of
from dpspin_sql.decode import LLMConfig, build_messages, comparison_summary, summarize
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.plan import make_plan
from dpspin_sql.request import SCALE, ReleaseRequest
from dpspin_sql.verify import verify
from tests.helpers.core import cli
from tests.helpers.llm import ScriptedServer

M = 12
ATOMS = [Atom(i, f"theme {i}", "") for i in range(M)]
TRUE_A = [90.0, 70.0, 60.0, 55.0, 40.0, 30.0, 25.0, 10.0, 5.0, 0.0, 0.0, 2.0]
TRUE_B = [90.0, 140.0, 20.0, 56.0, 95.0, 30.0, 5.0, 60.0, 5.0, 45.0, 0.0, 2.0]
NAMES = [("before 2017-01-01", "from 2017-01-01"), ("2016", "2017"), ("a", "b")]
MECHANISMS = ("gaussian", "laplace", "private_topL")


def comparison(mechanism: str, names: tuple[str, str], L: int = 8) -> dict:
    req = ReleaseRequest(mechanism=mechanism, epsilon=2.0, unit="record", L=L,
                         delta=None if mechanism == "laplace" else 1e-6)
    mech = make_mechanism(req, M)

    def plan(masses, rid):
        sk = np.array([int(round(x * SCALE)) for x in masses], dtype=np.int64)
        return make_plan(mech.apply(sk), mech, ATOMS, "sha256:test", rid).to_dict()

    return compare(side_of(plan(TRUE_A, "ra"), name=names[0]), side_of(plan(TRUE_B, "rb"), name=names[1]))


CASES = [(m, n) for m in MECHANISMS for n in NAMES]


@pytest.mark.parametrize("mechanism, names", CASES, ids=[f"{m}-{n[0]}" for m, n in CASES])
def test_every_claim_on_the_menu_renders_to_an_accepted_summary(mechanism, names):
    for _ in range(3):   # each call draws fresh OpenDP noise
        c = comparison(mechanism, names)
        items = cc.menu(c)
        assert items, "a comparison of overlapping plans offers claims"
        assert {i.kind for i in items} <= set(cc.KINDS)
        for it in items:
            text, spans = cc.render([it], c)
            assert len(spans) == 1 and verify(text, c, require_theme=True).accepted, text
        text, spans = cc.render(items, c)
        assert len(spans) == len(items)
        assert verify(text, c, require_theme=True).accepted, text
        supported = {r["label"] for r in c["atoms"] if r["supported"]}
        assert {i.theme for i in items if i.kind == "change"} == supported
        assert {i.theme for i in items if i.kind == "no_change"} == {r["label"] for r in c["atoms"]} - supported


def test_the_verifier_rejects_what_the_menu_leaves_out():
    """Power: the renderer's own forms with a false fact in them are rejected."""
    seen = {"reversed": 0, "unsupported": 0, "top": 0}
    for mechanism, names in CASES:
        c = comparison(mechanism, names)
        pa, pb = cc.side_phrase(c, "a"), cc.side_phrase(c, "b")
        for r in c["atoms"]:
            a, b = f"{r['a']['noisy_mass']:.1f}", f"{r['b']['noisy_mass']:.1f}"
            if r["supported"]:
                wrong = "fell" if r["change"] == "rose" else "rose"
                text = f"{r['label'].capitalize()} {wrong} from about {a} {pa} to about {b} {pb}."
                codes = {v.code for v in verify(text, c).violations}
                assert codes & {"reversed_change", "unsupported_change", "wrong_number"}, (text, codes)
                seen["reversed"] += 1
            else:
                text = f"{r['label'].capitalize()} rose {pb}."
                assert not verify(text, c).accepted, text
                seen["unsupported"] += 1
        tops = {s: next(i.theme for i in cc.menu(c) if i.kind == "top_in" and i.field == s) for s in "ab"}
        if tops["a"] != tops["b"]:
            text = f"{tops['b'].capitalize()} was the most common theme {pa}."
            assert not verify(text, c).accepted, text
            seen["top"] += 1
    assert all(n > 0 for n in seen.values()), seen


def test_off_menu_claims_are_named():
    c = comparison("gaussian", NAMES[0])
    items = cc.menu(c)
    quiet = next(r["label"] for r in c["atoms"] if not r["supported"])
    top_b = next(i for i in items if i.kind == "top_in" and i.field == "b")
    not_top = next(r["label"] for r in c["atoms"] if r["label"] != top_b.theme)
    answer = {"claims": [{"kind": "change", "theme": quiet}, {"kind": "top_in", "theme": not_top, "field": "b"},
                         {"kind": "change", "theme": "theme 99"}, items[0].as_json()]}
    got, vs, conforms = cl.read_claims(answer, items)
    assert got == [items[0]] and not conforms
    assert [v.code for v in vs] == ["unsupported_change", "wrong_rank", "unadmitted_atom"]


def test_schema_and_grammar_offer_exactly_the_menu():
    c = comparison("laplace", NAMES[1])
    items = cc.menu(c)
    offered = set()
    for var in cl.claims_schema(items)["properties"]["claims"]["items"]["anyOf"]:
        enums = {k: p["enum"] for k, p in var["properties"].items()}
        (kind,) = enums["kind"]
        fields = enums.get("field", [None])
        offered |= {cl.Claim(kind, t, field=f) for t in enums["theme"] for f in fields}
    assert offered == set(items)
    grammar = cl.claims_gbnf(items)
    assert all(json.dumps(i.theme) in grammar.replace('\\"', '"') for i in items)


def cfg(server, **kw) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="scripted", api_key="test", max_retries=0, timeout=10,
                     constraint="json_schema", **kw)


def test_the_loop_over_a_comparison_accepts_menu_claims_and_drops_rejected_ones():
    c = comparison("gaussian", NAMES[0])
    items = cc.menu(c)
    quiet = next(r["label"] for r in c["atoms"] if not r["supported"])
    bad = json.dumps({"claims": [{"kind": "change", "theme": quiet}] + [i.as_json() for i in items[:3]]})
    good = json.dumps({"claims": [i.as_json() for i in items[:4]]})
    with ScriptedServer([bad, good]) as srv:
        r = summarize(c, decoder="llm", max_attempts=3, llm=cfg(srv, mode="claims"))
    assert r.accepted and not r.fallback_used and r.final_source == "model"
    assert r.text == cc.render(items[:4], c)[0]
    assert [a["accepted"] for a in r.model_attempts] == [False, True]
    assert "unsupported_change" in r.model_attempts[0]["feedback"]
    first = srv.requests[0]["body"]
    schema = json.dumps(first["response_format"]["json_schema"]["schema"])
    assert quiet in schema and "no_change" in schema   # the theme is offered, as no_change only
    prompt = first["messages"][1]["content"]
    assert "no supported change" in prompt and cc.side_phrase(c, "a") in prompt


def test_text_mode_and_the_fallback_over_a_comparison():
    c = comparison("laplace", NAMES[1])
    r0 = next(r for r in c["atoms"] if r["supported"])
    verb = "rose" if r0["change"] == "rose" else "fell"
    good = f"{r0['label'].capitalize()} {verb} {cc.side_phrase(c, 'b')}."
    assert verify(good, c).accepted
    with ScriptedServer([f"{r0['label'].capitalize()} {'fell' if verb == 'rose' else 'rose'}.", good]) as srv:
        r = summarize(c, decoder="llm", max_attempts=2, llm=cfg(srv, mode="text"))
    assert r.accepted and r.text == good and [a["accepted"] for a in r.model_attempts] == [False, True]
    assert "supported" in build_messages(c, "text", [])[1]["content"]
    with ScriptedServer(["Everything doubled."] * 2) as srv:
        r = summarize(c, decoder="llm", max_attempts=2, llm=cfg(srv, mode="text"))
    assert r.fallback_used and r.accepted and r.text == comparison_summary(c)


def test_cli_summarizes_a_comparison_with_the_model(tmp_path, capsys):
    c = comparison("gaussian", NAMES[0])
    path = tmp_path / "change.json"
    path.write_text(json.dumps(c))
    items = cc.menu(c)
    good = json.dumps({"claims": [i.as_json() for i in items[:4]]})
    out = tmp_path / "summary.txt"
    with ScriptedServer([good]) as srv:
        rc, stdout, err = cli(capsys, "summarize", path, "--decoder", "llm", "--base-url", srv.base_url,
                              "--model", "scripted", "--api-key", "x", "--constraint", "json_schema", "--out", out)
    assert rc == 0, err
    assert out.read_text().strip() == cc.render(items[:4], c)[0]
    rc, stdout, err = cli(capsys, "verify", path, out)
    assert rc == 0 and "accepted" in stdout
