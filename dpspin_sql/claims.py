"""Plan-constrained claims (decoder `--mode claims`): the model chooses which facts of the
released plan to state and in what order; this module writes them.

Everything here reads only the public view of a released plan (`decode.public_view`), so
it is post-processing (docs/DESIGN.md §6).

* `menu(view)` — every claim the plan supports, true by construction: the rank-1 theme,
  each theme's rank, bin, released mass and accuracy interval, the comparisons the
  public margin supports, the "similar" pairs it does not separate, and counts of the
  plan's themes and bins.
* `claims_schema(items)` / `claims_gbnf(items)` — the same menu as a JSON schema (for
  OpenAI `json_schema`, llama-cpp-python `json_object` + `schema`, vLLM `guided_json`)
  and as a GBNF grammar (llama.cpp `grammar`): a list of 4–6 claims whose fields are
  enums of the admitted labels, the supported comparison pairs and the released bins.
* `read_claims(raw, items)` — the model's answer back into claims, with a violation for
  anything that is not on the menu (a server that ignored the constraint).
* `render(claims, view)` — deterministic prose from the plan's released values: the
  model picks facts, never numbers or words. The text still goes through the verifier.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from dpspin_sql import mechanism_kinds
from dpspin_sql.verify import Violation, margin_of

KINDS = ("top_theme", "rank", "bin", "mass", "interval", "range", "comparison", "similar", "count", "method", "table",
         "change", "no_change", "top_in")   # the last three: claims about a comparison (claims_change.py)
# public method fields a `method` claim may state (docs/PLAN.md); each is rendered from the plan's own value
METHOD_FIELDS = ("mechanism", "unit", "epsilon", "delta", "B", "K", "noise_scale", "comparison_margin",
                 "public_denominator", "interval_confidence", "bins")
MIN_CLAIMS, MAX_CLAIMS = 4, 6
MORE_PER_THEME, SIMILAR_PER_THEME = 5, 3  # pairs offered per theme: the nearest in rank (keeps big plans small)
ALL = "all"  # the `bin` of a count of all themes

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve")


@dataclass(frozen=True)
class Claim:
    kind: str
    theme: str | None = None
    other: str | None = None
    bin: str | None = None
    field: str | None = None

    def as_json(self) -> dict:
        d: dict = {"kind": self.kind}
        if self.kind == "count":
            d["bin"] = self.bin
        elif self.kind == "method":
            d["field"] = self.field
        elif self.kind != "table":
            d["theme"] = self.theme
        if self.kind in ("comparison", "similar"):
            d["other"] = self.other
        if self.kind == "top_in":
            d["field"] = self.field   # the side, "a" or "b"
        return d


# ---------------------------------------------------------------- the plan's facts
def themes(view: dict) -> list[dict]:
    """Admitted atoms in rank order, one per label (a repeated label is left out)."""
    seen, out = set(), []
    for a in view["atoms"]:
        if a["label"] not in seen:
            seen.add(a["label"])
            out.append(a)
    return out


def _mass(a: dict) -> float:
    return float(a.get("noisy_mass", a.get("display_mass", 0.0)) or 0.0)


def _interval(view: dict, a: dict) -> tuple[float, float] | None:
    iv = a.get("interval")
    if isinstance(iv, (list, tuple)) and len(iv) == 2:
        return float(min(iv)), float(max(iv))
    h = view.get("interval_half_width")
    if isinstance(h, (int, float)) and not isinstance(h, bool):
        return _mass(a) - float(h), _mass(a) + float(h)
    return None


def _confidence(view: dict) -> float | None:
    c = view.get("interval_confidence")
    return float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) and 0 < c < 1 else None


def menu(view: dict) -> list[Claim]:
    """Every claim the plan supports, in a fixed order (for each theme, comparisons with the
    next themes the margin separates from it and similar pairs with the next it does not)."""
    atoms = themes(view)
    if not atoms:
        return []
    margin = margin_of(view)
    out = [Claim("top_theme", atoms[0]["label"])]
    for a in atoms:
        out += [Claim("rank", a["label"]), Claim("bin", a["label"]), Claim("mass", a["label"])]
        if _confidence(view) is not None and _interval(view, a) is not None:
            out.append(Claim("interval", a["label"]))
    for i, a in enumerate(atoms):
        more = [b for b in atoms[i + 1:] if _mass(a) - _mass(b) >= margin][:MORE_PER_THEME]
        alike = [b for b in atoms[i + 1:] if abs(_mass(a) - _mass(b)) < margin][:SIMILAR_PER_THEME]
        out += [Claim("comparison", a["label"], b["label"]) for b in more]
        out += [Claim("similar", a["label"], b["label"]) for b in alike]
    out.append(Claim("count", bin=ALL))
    bins = []
    for a in atoms:
        if a.get("bin") and a["bin"] not in bins:
            bins.append(a["bin"])
    out += [Claim("count", bin=b) for b in bins]
    if _confidence(view) is not None and view.get("public_denominator"):
        out += [Claim("range", a["label"]) for a in atoms if _support_range(view, a) is not None]
    out += [Claim("method", field=f) for f in METHOD_FIELDS if method_clause(view, f) is not None]
    out.append(Claim("table"))
    return out


# ---------------------------------------------------------------- method fields, ranges, tables
_MECHANISM = {k.name: k.phrase for k in mechanism_kinds.KINDS.values()}


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def method_clause(view: dict, field: str) -> str | None:
    """One public method field in words, from the plan's own value (None when the plan lacks it)."""
    v = view.get(field)
    if field == "mechanism":
        return f"released with {_MECHANISM[v]}" if v in _MECHANISM else None
    if field == "unit":
        return f"{v}-level protection" if v in ("record", "user") else None
    if field == "bins":
        b = view.get("bins") or {}
        hi, mo = _num(b.get("high")), _num(b.get("moderate"))
        if hi is None or mo is None:
            return None
        if view.get("bin_basis") == "rank" or (view.get("bin_basis") is None and max(hi, mo) >= 1):
            return "bins by rank cut-offs"   # the cut-offs may exceed the plan's ranks: each theme's bin is stated
        return f"bin thresholds of {hi * 100:g}% and {mo * 100:g}% support"
    x = _num(v)
    if x is None:
        return None
    return {"epsilon": f"ε = {x:g}", "delta": f"δ = {x:g}", "B": f"B = {x:g}", "K": f"K = {int(x)}",
            "noise_scale": f"noise scale {_stated(x, 2)}", "comparison_margin": f"comparison margin {_stated(x, 1)}",
            "public_denominator": f"public denominator {int(x):,}",
            "interval_confidence": f"{x * 100:g}% confidence intervals"}.get(field)


def _stated(x: float, places: int) -> str:
    """x to `places` decimals, one more while the value lies exactly halfway between two such
    numbers (1.25 at one decimal): the verifier reads an exact half as no statement of the value."""
    while places < 8:
        text = f"{x:.{places}f}"
        if abs(abs(float(text) - x) - 0.5 * 10 ** -places) > 1e-9 * max(1.0, abs(x)):
            return text
        places += 1
    return f"{x:g}"


def _support_range(view: dict, a: dict) -> tuple[float, float] | None:
    iv = a.get("support_interval")
    if isinstance(iv, (list, tuple)) and len(iv) == 2:
        return float(min(iv)), float(max(iv))
    d, m = _num(view.get("public_denominator")), _interval(view, a)
    return (max(m[0], 0.0) / d, max(m[1], 0.0) / d) if d and m else None


def table(view: dict) -> str:
    """The plan's themes as a Markdown table (rank, theme, support or mass, bin): each row a claim."""
    atoms = themes(view)
    share = all(a.get("support") is not None for a in atoms)
    head = "| Rank | Theme | " + ("Support" if share else "Released mass") + " | Bin |"
    rows = [head, "|---|---|---|---|"]
    for a in atoms:
        value = (f"{_fmt(float(a['support']) * 100)}%" if share
                 else _fmt(float(a.get("display_mass", max(_mass(a), 0.0)))))
        rows.append(f"| {int(a['rank'])} | {a['label']} | {value} | {a.get('bin', 'low')} |")
    return "\n".join(rows)


# ---------------------------------------------------------------- schema and grammar
def _variants(items: list[Claim]) -> list[dict]:
    """Menu items grouped into schema variants: {kind, theme[, other]} / {kind, bin}."""
    groups: dict[tuple, list] = {}
    for c in items:
        if c.kind in ("comparison", "similar"):
            groups.setdefault((c.kind, c.theme), []).append(c.other)
        elif c.kind == "count":
            groups.setdefault(("count",), []).append(c.bin)
        elif c.kind == "method":
            groups.setdefault(("method",), []).append(c.field)
        elif c.kind == "table":
            groups.setdefault(("table",), [])
        elif c.kind == "top_in":
            groups.setdefault(("top_in", c.field), []).append(c.theme)
        else:
            groups.setdefault((c.kind,), []).append(c.theme)
    out = []
    for key, values in groups.items():
        kind = key[0]
        if kind == "count":
            props = {"kind": [kind], "bin": values}
        elif kind == "method":
            props = {"kind": [kind], "field": values}
        elif kind == "table":
            props = {"kind": [kind]}
        elif kind in ("comparison", "similar"):
            props = {"kind": [kind], "theme": [key[1]], "other": values}
        elif kind == "top_in":
            props = {"kind": [kind], "theme": values, "field": [key[1]]}
        else:
            props = {"kind": [kind], "theme": values}
        out.append(props)
    return out


def claims_schema(items: list[Claim]) -> dict:
    """The menu as a JSON schema (strict-mode compatible: every property required, no extras)."""
    variants = [{"type": "object", "additionalProperties": False, "required": list(p),
                 "properties": {k: {"type": "string", "enum": v} for k, v in p.items()}} for p in _variants(items)]
    n = min(MAX_CLAIMS, len(items))
    return {"type": "object", "additionalProperties": False, "required": ["claims"],
            "properties": {"claims": {"type": "array", "minItems": min(MIN_CLAIMS, n), "maxItems": n,
                                      "items": {"anyOf": variants}}}}


def _lit(s: str) -> str:
    """A GBNF literal matching the JSON encoding of string `s`."""
    j = json.dumps(s, ensure_ascii=False)
    return '"' + j.replace("\\", "\\\\").replace('"', '\\"') + '"'


def claims_gbnf(items: list[Claim]) -> str:
    """The menu as a GBNF grammar (llama.cpp `grammar`): the same objects the schema allows."""
    rules, alts = [], []
    for i, p in enumerate(_variants(items)):
        fields = []
        for k, values in p.items():
            name = f"v{i}-{k}"
            rules.append(f"{name} ::= " + " | ".join(_lit(v) for v in values))
            fields.append(f'"\\"{k}\\":" ws {name}')
        alts.append(f"v{i}")
        rules.append(f'v{i} ::= "{{" ws ' + ' "," ws '.join(fields) + ' ws "}"')
    n = min(MAX_CLAIMS, len(items))
    lo = min(MIN_CLAIMS, n)
    rep = " ".join(['"," ws claim'] * (lo - 1)) + " " + " ".join(['("," ws claim'] * (n - lo)) + ")?" * (n - lo)
    head = [f'root ::= "{{" ws "\\"claims\\":" ws "[" ws claim {rep.strip()} ws "]" ws "}}"',
            "claim ::= " + " | ".join(alts), 'ws ::= " "?']
    return "\n".join(head + rules) + "\n"


def token_budget(items: list[Claim]) -> int:
    """Enough completion tokens for the longest allowed answer (about 3 characters a token)."""
    longest = max((len(json.dumps(c.as_json(), ensure_ascii=False)) for c in items), default=40)
    return int((longest + 4) * min(MAX_CLAIMS, max(1, len(items))) / 3) + 40


# ---------------------------------------------------------------- the answer
def parse(raw: str):
    """The JSON object in `raw` (the first `{` to the last `}`), or None."""
    start, end = raw.find("{"), raw.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(raw[start:end + 1])
    except json.JSONDecodeError:
        return None


def read_claims(obj, items: list[Claim]) -> tuple[list[Claim], list[Violation], bool]:
    """(claims on the menu, violations for the rest, whether `obj` conforms to the schema)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("claims"), list):
        return [], [Violation("malformed_output", "", 'the answer is not a JSON object with a "claims" list')], False
    on_menu = set(items)
    labels = {c.theme for c in items if c.theme} | {c.other for c in items if c.other}
    n = min(MAX_CLAIMS, len(items))
    conforms = set(obj) == {"claims"} and min(MIN_CLAIMS, n) <= len(obj["claims"]) <= n
    out, vs = [], []
    for x in obj["claims"]:
        if not isinstance(x, dict) or x.get("kind") not in KINDS:
            vs.append(Violation("malformed_output", json.dumps(x, ensure_ascii=False)[:80],
                                "not a claim of a known kind"))
            conforms = False
            continue
        c = Claim(x["kind"], x.get("theme") if x["kind"] not in ("count", "method", "table") else None,
                  x.get("other") if x["kind"] in ("comparison", "similar") else None,
                  x.get("bin") if x["kind"] == "count" else None,
                  x.get("field") if x["kind"] in ("method", "top_in") else None)
        if set(x) != set(c.as_json()):
            conforms = False
        if c in on_menu:
            out.append(c)
            continue
        conforms = False
        span = json.dumps(x, ensure_ascii=False)[:120]
        bad = [t for t in (c.theme, c.other) if isinstance(t, str) and t not in labels]
        if bad:
            vs.append(Violation("unadmitted_atom", bad[0], "the claim names a theme that is not in the released plan"))
        elif c.kind == "comparison":
            vs.append(Violation("unsupported_comparison", span, "the margin does not support this comparison"))
        elif c.kind == "similar":
            vs.append(Violation("unsupported_comparison", span, "these themes differ by at least the margin"))
        elif c.kind in ("top_theme", "top_in"):
            vs.append(Violation("wrong_rank", span, "this theme is not the rank-1 theme"))
        elif c.kind in ("change", "no_change"):
            vs.append(Violation("unsupported_change", span, "the comparison does not support this claim of change"))
        else:
            vs.append(Violation("malformed_output", span, "the plan supports no such claim"))
    return out, vs, conforms


# ---------------------------------------------------------------- rendering
def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fmt(x: float) -> str:
    return f"{x + 0.0:.1f}"


def _ordinal(r: int) -> str:
    if 1 <= r <= len(_ORDINALS):
        return _ORDINALS[r - 1]
    suffix = "th" if 10 <= r % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(r % 10, "th")
    return f"{r}{suffix}"


def _count_word(n: int) -> str:
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


_THEME_ORDER = ("top_theme", "rank", "bin", "mass", "interval")


def _theme_sentence(a: dict, kinds: set[str], view: dict, said_bins: set[str | None] | None = None) -> str:
    """One sentence about one theme: its rank (or the top spot), bin, mass and interval
    ("also" when an earlier sentence gave another theme the same bin)."""
    head: str | None = None
    nouns: list[str] = []
    if "top_theme" in kinds:
        head = "is the most common theme"
    elif "rank" in kinds:
        head = "is the most common theme" if int(a["rank"]) == 1 else f"ranks {_ordinal(int(a['rank']))}"
    shown = float(a.get("display_mass", max(_mass(a), 0.0)))
    if "bin" in kinds:
        nouns.append(f"{a.get('bin', 'low')} support")
    if "mass" in kinds:
        nouns.append(f"a released mass of {_fmt(shown)}")
    if head and nouns:
        s: str | None = f"{_cap(a['label'])} {head}, with " + _join(nouns)
    elif head:
        s = f"{_cap(a['label'])} {head}"
    elif nouns:
        also = "also " if "bin" in kinds and a.get("bin") in (said_bins or set()) else ""
        s = f"{_cap(a['label'])} {also}has " + _join(nouns)
    else:
        s = None
    if "interval" in kinds:
        iv, confidence = _interval(view, a), _confidence(view)
        assert iv is not None and confidence is not None  # menu() offers interval claims only then
        lo, hi = iv
        span = f"between {_fmt(lo) if lo > 0 else '0'} and {_fmt(hi)}"
        conf = f"{confidence * 100:g}%"
        s = (f"{s}, and with {conf} confidence its mass lies {span}" if s
             else f"With {conf} confidence, the mass of {a['label']} lies {span}")
    assert s is not None  # kinds is non-empty: a head, a noun or an interval said something
    return s + "."


def _count_sentence(c: Claim, atoms: list[dict]) -> str:
    if c.bin == ALL:
        return f"The plan lists {_count_word(len(atoms))} themes."
    members = [a["label"] for a in atoms if a.get("bin") == c.bin]
    n = len(members)
    verb = "theme has" if n == 1 else "themes have"
    return f"{_cap(_count_word(n))} {verb} {c.bin} support: {_join(members)}."


def _other(c: Claim) -> str:
    assert c.other is not None, c  # comparison and similar claims always name the other theme
    return c.other


def _relations(subject: str, cs: list[Claim], facts: bool) -> tuple[str | None, str | None]:
    """(the comparison verb phrase, the similar sentence) of one subject theme."""
    more = [_other(c) for c in cs if c.kind == "comparison"]
    alike = [_other(c) for c in cs if c.kind == "similar"]
    vp = f"is {'also ' if facts else ''}more common than {_join(more)}" if more else None
    sim = f"{_cap(subject)} has similar support to {_join(alike)}." if alike else None
    return vp, sim


def render(claims: list[Claim], view: dict) -> tuple[str, list[tuple[int, int, list[Claim]]]]:
    """Prose for `claims` from the plan's released values, and for each sentence its
    (start, end, claims) so that a verifier violation can be traced to the claims behind it.

    Claims are grouped by the theme they are about, in the order the model first named
    each theme (counts stay where they were chosen): one sentence for a theme's rank, bin,
    mass and interval, joined by its comparisons ("… ranks fourth, with moderate support,
    and is more common than A and B"), then one for the themes of similar support.
    A theme's bin is left to a chosen count of that bin, which lists it ("Three themes have
    low support: A, B and C"). Duplicates go. Every subject is named: no pronoun carries a
    claim."""
    atoms = {a["label"]: a for a in themes(view)}
    order: list = []
    groups: dict[str, list[Claim]] = {}
    seen = set()
    claims = sorted(claims, key=lambda c: c != Claim("count", bin=ALL))  # "The plan lists N themes." opens
    counted = {c.bin: [c] for c in claims if c.kind == "count" and c.bin != ALL}
    methods = [c for c in claims if c.kind == "method"]
    tabled = [c for c in claims if c.kind == "table"]
    for c in claims:
        if c in seen:
            continue
        seen.add(c)
        if c.kind in ("method", "table"):
            continue   # one method sentence and one table, after the theme sentences
        if c.kind == "range":
            a = atoms.get(str(c.theme))
            r = _support_range(view, a) if a is not None else None
            conf = _confidence(view)
            if r is not None and conf is not None:
                order.append(("range", c))
            continue
        if c.kind == "count":
            order.append(c)
            continue
        assert c.theme is not None, c  # every kind but count is about a theme
        if c.kind == "bin" and atoms[c.theme].get("bin") in counted:
            counted[atoms[c.theme]["bin"]].append(c)   # said by the count sentence
            continue
        if c.theme not in groups:
            groups[c.theme] = []
            order.append(c.theme)
        groups[c.theme].append(c)
    sentences: list[tuple[str, list[Claim]]] = []
    said_bins: set[str | None] = set()
    for x in order:
        if isinstance(x, tuple):
            rc = x[1]
            lo, hi = _support_range(view, atoms[rc.theme])  # type: ignore[misc]  # menu() offers ranges only then
            conf = _confidence(view)
            assert conf is not None
            sentences.append((f"With {conf * 100:g}% confidence, {rc.theme} accounts for between {_fmt(lo * 100)}% "
                              f"and {_fmt(hi * 100)}% of records.", [rc]))
            continue
        if isinstance(x, Claim):
            sentences.append((_count_sentence(x, list(atoms.values())), counted.get(x.bin, [x])))
            continue
        cs = groups[x]
        facts = [c for c in cs if c.kind in _THEME_ORDER]
        rel = [c for c in cs if c.kind == "comparison"]
        vp, sim = _relations(x, cs, bool(facts))
        if facts:
            kinds = {c.kind for c in facts}
            s = _theme_sentence(atoms[x], kinds, view, said_bins)
            if "bin" in kinds:
                said_bins.add(atoms[x].get("bin"))
            if vp and "interval" not in kinds:
                sentences.append((s[:-1] + f", and {vp.replace('also ', '')}.", facts + rel))
            else:
                sentences.append((s, facts))
                if vp:
                    sentences.append((f"{_cap(x)} {vp}.", rel))
        elif vp:
            sentences.append((f"{_cap(x)} {vp}.", rel))
        if sim:
            sentences.append((sim, [c for c in cs if c.kind == "similar"]))
    parts = [p for p in (method_clause(view, str(c.field)) for c in dict.fromkeys(methods)) if p]
    if parts:
        sentences.append(("Method: " + "; ".join(parts) + ".", list(dict.fromkeys(methods))))
    text, spans = "", []
    for s, cs in sentences:
        start = len(text) + (1 if text else 0)
        text = f"{text} {s}" if text else s
        spans.append((start, len(text), cs))
    if tabled:   # the table stands on lines of its own
        start = len(text) + (2 if text else 0)
        text = f"{text}\n\n{table(view)}" if text else table(view)
        spans.append((start, len(text), tabled[:1]))
    return text, spans


def blamed(violations: list[Violation], text: str, spans) -> set[Claim]:
    """The claims whose sentences hold a violation (by offset, else by the span's text)."""
    out: set[Claim] = set()
    for v in violations:
        pos = v.start if 0 <= v.start < len(text) else (text.find(v.span) if v.span else -1)
        for s, e, cs in spans:
            if s <= pos < e:
                out.update(cs)
    return out


def describe(c: Claim) -> str:
    """A claim in words, for the prompt's menu and for feedback."""
    return json.dumps(c.as_json(), ensure_ascii=False)

