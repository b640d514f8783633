"""Property tests of the verifier/template contract (hypothesis)."""
from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dpspin_sql.decode import template_summary
from dpspin_sql.verify import _content, verify

from tests.helpers.llm import CFPB_LABELS, PHRASE_LABELS

ORD = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def plans(draw):
    pool = draw(st.sampled_from([PHRASE_LABELS, CFPB_LABELS]))
    m = draw(st.integers(4, min(40, len(pool))))
    dictionary = draw(st.permutations(pool))[:m]
    L = draw(st.integers(1, min(10, m - 1)))
    digits = draw(st.integers(0, 4))
    masses = sorted((round(x, digits) for x in draw(st.lists(st.floats(-50, 5000, allow_nan=False), min_size=L, max_size=L))),
                    reverse=True)
    margin = draw(st.floats(0.5, 200))
    denom = draw(st.one_of(st.none(), st.integers(100, 100_000)))
    atoms = []
    for r, mass in enumerate(masses, start=1):
        a = {"atom_id": r - 1, "label": dictionary[r - 1], "noisy_mass": mass, "display_mass": max(mass, 0.0), "rank": r}
        if denom:
            a["support"] = a["display_mass"] / denom
            a["bin"] = "high" if a["support"] >= 0.1 else "moderate" if a["support"] >= 0.03 else "low"
        else:
            a["bin"] = "high" if r <= 3 else "moderate" if r <= 7 else "low"
        atoms.append(a)
    plan = {"epsilon": draw(st.sampled_from([0.1, 0.5, 1.0, 2.0, 8.0])), "delta": 1e-6, "L": L, "m": m,
            "comparison_margin": margin, "bins": {"high": 0.1, "moderate": 0.03} if denom else {"high": 3, "moderate": 7},
            "dictionary_labels": [{"atom_id": i, "label": lbl} for i, lbl in enumerate(dictionary)], "atoms": atoms}
    if denom:
        plan["public_denominator"] = denom
    return plan


def _non_admitted(plan):
    admitted = [_content(a["label"]) for a in plan["atoms"]]
    out = []
    for d in plan["dictionary_labels"]:
        c = _content(d["label"])
        if d["atom_id"] >= len(plan["atoms"]) and not any(_sub(c, a) for a in admitted):
            out.append(d["label"])
    return out


def _sub(sub, seq):
    return any(seq[i:i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


@SETTINGS
@given(plans())
def test_template_always_accepted(plan):
    v = verify(template_summary(plan), plan)
    assert v.accepted, [x.to_dict() for x in v.violations]


@SETTINGS
@given(plans(), st.data())
def test_replacing_an_admitted_label_is_rejected(plan, data):
    """A label that is not literally part of an admitted label is always caught."""
    candidates = _non_admitted(plan)
    assume(candidates)
    text = template_summary(plan)
    i = data.draw(st.integers(0, len(plan["atoms"]) - 1))
    new = data.draw(st.sampled_from(candidates))
    style = data.draw(st.sampled_from(["same", "upper", "title", "plural", "hyphen"]))
    shown = {"same": new, "upper": new.upper(), "title": new.title(), "hyphen": new.replace(" ", "-", 1),
             "plural": new if new.endswith("s") else new + "s"}[style]
    old = plan["atoms"][i]["label"]
    swapped = text.replace(old, shown).replace(old[:1].upper() + old[1:], shown)
    assert swapped != text
    v = verify(swapped, plan)
    assert not v.accepted and "unadmitted_atom" in {x.code for x in v.violations}


def _swap(text, a, b):
    return text.replace(a, "\x00").replace(b, a).replace("\x00", b)


@SETTINGS
@given(plans(), st.data())
def test_swapping_ranks_beyond_margin_is_rejected(plan, data):
    atoms = plan["atoms"][:10]
    assume(len(atoms) >= 2 and len({a["label"] for a in atoms}) == len(atoms))
    i, j = sorted(data.draw(st.lists(st.integers(0, len(atoms) - 1), min_size=2, max_size=2, unique=True)))
    a, b = atoms[i], atoms[j]
    assume(abs(a["noisy_mass"] - b["noisy_mass"]) > plan["comparison_margin"])
    assume(not _sub(_content(a["label"]), _content(b["label"])) and not _sub(_content(b["label"]), _content(a["label"])))
    ranks = " ".join(f"{x['label'][:1].upper() + x['label'][1:]} ranks {ORD[x['rank'] - 1]}." for x in atoms)
    comps = f"{a['label'][:1].upper() + a['label'][1:]} is more common than {b['label']}."
    for text in (ranks, comps):
        assert verify(text, plan).accepted, [x.to_dict() for x in verify(text, plan).violations]
        swapped = _swap(text, a["label"], b["label"])
        ca, cb = (x["label"][:1].upper() + x["label"][1:] for x in (a, b))
        if (ca, cb) != (a["label"], b["label"]):
            swapped = _swap(swapped, ca, cb)
        v = verify(swapped, plan)
        assert not v.accepted
        assert {x.code for x in v.violations} & {"wrong_rank", "reversed_comparison"}
