"""Measure the verifier on held-out summary corpora: false rejections and misses, overall,
per style and per defect class, and the time per summary.

    python bench/verifier_corpus.py /work/heldout/round1/*.yaml
    python bench/verifier_corpus.py --plans /work/heldout/plans --details CORPUS.yaml ...
    python bench/verifier_corpus.py --triage tests/data/verifier_heldout_triage.yaml CORPUS.yaml

A corpus is a YAML list of cases (the held-out writers' format, /work/heldout/WRITER.md):
`id`, `plan` (a plan file name, relative to --plans), `style`, `expected` (accept | reject),
`defect` (for reject), `note`, `summary`. The plan's public dictionary is read from the sidecar
`NAME.dictionary.json` beside it (its `atoms` list, or a plain list of labels) when present.

A triage file (optional) is a YAML mapping `id → {expected: accept|reject, reason: ...}` for
cases whose writer's verdict is wrong under the documented contract (docs/VERIFIER.md): they
are scored against the corrected verdict and counted apart as writer errors, with the reason.

False rejection = a faithful (accept) case the verifier rejects; miss = an unfaithful (reject)
case it accepts. The timing is the mean wall time of one `verify` call over all cases (best
of --repeat runs), in milliseconds.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

DEFAULT_PLANS = Path("/work/heldout/plans")


def load_plan(plans: Path, name: str, cache: dict) -> tuple[dict, list | None]:
    if name not in cache:
        path = plans / name
        plan = json.loads(path.read_text(encoding="utf-8"))
        side = path.with_name(path.name[: -len(".json")] + ".dictionary.json") if path.name.endswith(".json") else None
        dictionary = None
        if side is not None and side.exists():
            body = json.loads(side.read_text(encoding="utf-8"))
            dictionary = body["atoms"] if isinstance(body, dict) else body
        cache[name] = (plan, dictionary)
    return cache[name]


def load_cases(paths: list[str]) -> list[dict]:
    cases: list[dict] = []
    for p in paths:
        body = yaml.safe_load(Path(p).read_text(encoding="utf-8"))
        if isinstance(body, dict):
            body = body.get("cases", [])
        for c in body or []:
            c = dict(c)
            c["_file"] = Path(p).name
            cases.append(c)
    return cases


def run(cases: list[dict], plans: Path, triage: dict, repeat: int = 1,
        impl: str = "dpspin_sql.verify") -> tuple[list[dict], float]:
    verify = importlib.import_module(impl).verify
    cache: dict = {}
    rows = []
    best = float("inf")
    for r in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = []
        for c in cases:
            plan, dictionary = load_plan(plans, c["plan"], cache)
            v = verify(c.get("summary") or "", plan, dictionary=dictionary)
            out.append(v)
        best = min(best, time.perf_counter() - t0)
        if r == 0:
            for c, v in zip(cases, out):
                t = triage.get(str(c["id"])) or {}
                expected = t.get("expected", c.get("expected"))
                rows.append({"id": c["id"], "file": c["_file"], "plan": c["plan"], "style": c.get("style") or "?",
                             "writer": c.get("expected"), "expected": expected,
                             "defect": (t.get("defect") or "writer error" if t else c.get("defect") or "?")
                             if expected == "reject" else "(faithful)",
                             "writer_defect": c.get("defect") or "-",
                             "writer_error": t.get("reason") if t else None,
                             "accepted": v.accepted, "violations": [x.to_dict() for x in v.violations],
                             "note": c.get("note"), "summary": c.get("summary")})
    return rows, 1000.0 * best / max(1, len(cases))


def _table(title: str, key, rows: list[dict]) -> list[str]:
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])   # [false rejections, accept cases]
    rej: dict[str, list[int]] = defaultdict(lambda: [0, 0])   # [misses, reject cases]
    for r in rows:
        k = key(r)
        if r["expected"] == "accept":
            acc[k][1] += 1
            acc[k][0] += not r["accepted"]
        else:
            rej[k][1] += 1
            rej[k][0] += r["accepted"]
    keys = sorted(set(acc) | set(rej))
    out = [f"| {title} | accept cases | false rejections | reject cases | misses |", "|---|---:|---:|---:|---:|"]

    def cell(x):
        return f"{x[0]} ({100 * x[0] / x[1]:.0f}%)" if x[1] else "–"
    for k in keys:
        out.append(f"| {k} | {acc[k][1]} | {cell(acc[k])} | {rej[k][1]} | {cell(rej[k])} |")
    return out


def report(rows: list[dict], ms: float, details: bool) -> str:
    n_acc = sum(r["expected"] == "accept" for r in rows)
    n_rej = len(rows) - n_acc
    fr = sum(r["expected"] == "accept" and not r["accepted"] for r in rows)
    miss = sum(r["expected"] == "reject" and r["accepted"] for r in rows)
    out = [f"{len(rows)} cases: {n_acc} accept, {n_rej} reject; "
           f"false rejections {fr}/{n_acc} ({100 * fr / max(1, n_acc):.1f}%), "
           f"misses {miss}/{n_rej} ({100 * miss / max(1, n_rej):.1f}%); {ms:.2f} ms per summary", ""]
    out += _table("style", lambda r: r["style"], rows) + [""]
    out += _table("defect class", lambda r: r["defect"], rows) + [""]
    out += _table("plan", lambda r: r["plan"], rows) + [""]
    errs = [r for r in rows if r["writer_error"]]
    if errs:
        out += [f"writer errors (scored against the corrected verdict): {len(errs)}"]
        out += [f"- {r['id']}: writer {r['writer']}/{r['writer_defect']} → {r['expected']}: {r['writer_error']}"
                for r in errs] + [""]
    bad = [r for r in rows if (r["expected"] == "accept") != r["accepted"]]
    out.append(f"wrong verdicts: {len(bad)}")
    for r in bad:
        kind = "FALSE REJECTION" if r["expected"] == "accept" else "MISS"
        out.append(f"- {r['id']} [{r['style']}, {r['defect']}] {kind}")
        if details:
            if r["note"]:
                out.append(f"    note: {r['note']}")
            for v in r["violations"]:
                out.append(f"    [{v['code']}] {v['span']!r}: {v['message']}")
            out.append("    summary: " + (r["summary"] or "").rstrip().replace("\n", "\n             "))
    return "\n".join(out) + "\n"


def speed(cases: list[dict], plans: Path, impls: list[str], repeat: int) -> str:
    """ms per summary of each implementation, interleaved pass by pass (best of `repeat`), side by side."""
    cache: dict = {}
    fns = [importlib.import_module(m).verify for m in impls]
    best = [float("inf")] * len(fns)
    for _ in range(max(1, repeat)):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            for c in cases:
                plan, dictionary = load_plan(plans, c["plan"], cache)
                fn(c.get("summary") or "", plan, dictionary=dictionary)
            best[i] = min(best[i], time.perf_counter() - t0)
    ms = [1000.0 * b / max(1, len(cases)) for b in best]
    out = ["", "| verifier | ms per summary | ratio to anchor |", "|---|---:|---:|"]
    for m, x in zip(impls, ms):
        out.append(f"| {m} | {x:.2f} | {x / ms[-1]:.2f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="+", help="YAML corpus files")
    ap.add_argument("--plans", type=Path, default=DEFAULT_PLANS, help="folder the cases' plan names are relative to")
    ap.add_argument("--triage", type=Path, help="YAML: id → {expected, reason} for writer errors")
    ap.add_argument("--details", action="store_true", help="print violations and text of every wrong verdict")
    ap.add_argument("--repeat", type=int, default=3, help="timing: best of N passes")
    ap.add_argument("--json", type=Path, help="also write the per-case rows here")
    ap.add_argument("--impl", default="dpspin_sql.verify", help="the module whose `verify` is measured")
    ap.add_argument("--anchor", help="time this module's `verify` too, interleaved in the same run (a copy of an "
                                     "earlier verifier on PYTHONPATH), and print the ratio")
    a = ap.parse_args(argv)
    triage = yaml.safe_load(a.triage.read_text(encoding="utf-8")) if a.triage else {}
    if isinstance(triage, dict) and "writer_errors" in triage:   # tests/data/heldout/triage.yaml
        triage = triage.get("writer_errors") or {}
    rows, ms = run(load_cases(a.corpus), a.plans, triage or {}, a.repeat, a.impl)
    sys.stdout.write(report(rows, ms, a.details))
    if a.anchor:
        sys.stdout.write(speed(load_cases(a.corpus), a.plans, [a.impl, a.anchor], a.repeat))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
