"""Acceptance rates of the LLM decoder on released plans (reports, never asserts).

Runs the verifier-gated loop (R_max attempts, then the template fallback) over plans that
`dpspin release` or `dpspin experiment run` wrote, each with its public dictionary beside
it, against the local SmolLM2-135M server (`bash .ci/install-llm`) or `--base-url`, and
prints per dataset and overall: plans, model-written and accepted within R_max, accepted
on the first attempt, mean model attempts, template fallback, final summary accepted;
then a few example summaries. Plans are taken round-robin over the datasets found
(`dataset` in each run's config.yaml), evenly spaced within each.

    .venv/bin/dpspin experiment run bench/llm_plans.yaml --out runs/llm_plans --clean
    .venv/bin/python bench/llm_rates.py runs/llm_plans --plans 20 [--mode claims|text] [--r-max 3]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from tests.helpers.llm import llama_server, local_llm_skip_reason  # noqa: E402

from dpspin_sql.decode import LLMConfig, summarize  # noqa: E402
from dpspin_sql.plan import dictionary_sidecar  # noqa: E402


def dataset_of(plan_path: Path) -> str:
    cfg = plan_path.with_name("config.yaml")
    if cfg.exists():
        import yaml

        d = yaml.safe_load(cfg.read_text()) or {}
        if d.get("dataset") or d.get("preset"):
            return str(d.get("dataset") or d.get("preset"))
    return plan_path.parent.name.split("-")[0]


def pick_plans(dirs: list[Path], n: int) -> list[tuple[str, Path]]:
    """Up to `n` plans, round-robin over datasets, evenly spaced within each dataset."""
    by: dict[str, list[Path]] = {}
    for d in dirs:
        for p in sorted(d.rglob("private_plan.json")):
            if dictionary_sidecar(p).exists():
                by.setdefault(dataset_of(p), []).append(p)
    quota = dict.fromkeys(by, 0)
    while sum(quota.values()) < n and any(quota[k] < len(v) for k, v in by.items()):
        for k in sorted(by):
            if quota[k] < len(by[k]) and sum(quota.values()) < n:
                quota[k] += 1
    out = []
    for k in sorted(by):
        found, q = by[k], quota[k]
        out += [(k, found[round(i * len(found) / q)]) for i in range(q)] if q else []
    return out


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def table(rows: list[dict]) -> str:
    groups = {}
    for r in rows:
        groups.setdefault(r["dataset"], []).append(r)
    lines = ["| dataset | plans | model-written accepted | first attempt | mean attempts | fallback | final accepted |",
             "|---|---|---|---|---|---|---|"]
    for name, rs in [*sorted(groups.items()), ("overall", rows)]:
        n = len(rs)
        lines.append(f"| {name} | {n} | {_pct(sum(r['final_source'] == 'model' for r in rs) / n)} | "
                     f"{_pct(sum(bool(r['first']) for r in rs) / n)} | {sum(r['attempts'] for r in rs) / n:.2f} | "
                     f"{_pct(sum(r['final_source'] == 'template_fallback' for r in rs) / n)} | "
                     f"{_pct(sum(r['final_accepted'] for r in rs) / n)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--plans", type=int, default=20)
    ap.add_argument("--mode", default="claims", choices=("text", "claims"))
    ap.add_argument("--constraint", default=None, help="force one constraint form (default: detect)")
    ap.add_argument("--r-max", type=int, default=3)
    ap.add_argument("--temperature", type=float, default=0.3)
    ap.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint instead of the local server")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--examples", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "llm_rates.json")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # so that the local server is stopped too
    if not args.base_url and (reason := local_llm_skip_reason()):
        sys.exit(reason)
    plans = pick_plans(args.dirs, args.plans)
    if not plans:
        sys.exit("no private_plan.json with its dictionary sidecar under " + ", ".join(map(str, args.dirs)))
    rows = []
    server = contextlib.nullcontext(args.base_url) if args.base_url else llama_server()
    with server as base:
        cfg = LLMConfig(base_url=base, model=args.model, api_key="local", mode=args.mode, max_retries=0,
                        timeout=600, max_tokens=160, temperature=args.temperature, constraint=args.constraint)
        for dataset, path in plans:
            plan = json.loads(path.read_text())
            dictionary = json.loads(dictionary_sidecar(path).read_text())["atoms"]
            t0 = time.perf_counter()
            r = summarize(plan, decoder="llm", max_attempts=args.r_max, llm=cfg, dictionary=dictionary)
            rows.append({"dataset": dataset, "plan": str(path), "final_source": r.final_source,
                         "first": r.first_attempt_accepted, "attempts": r.attempts_used,
                         "final_accepted": r.accepted, "constraint": r.constraint,
                         "seconds": round(time.perf_counter() - t0, 1),
                         "codes": sorted({v["code"] for a in r.model_attempts for v in a["violations"]}),
                         "claims": [a.get("claims") for a in r.model_attempts], "text": r.text})
            print(json.dumps({k: v for k, v in rows[-1].items() if k not in ("text", "claims")}), flush=True)
    summary = {"plans": len(rows), "mode": args.mode, "r_max": args.r_max, "model": args.model,
               "model_written_accepted": sum(r["final_source"] == "model" for r in rows) / len(rows),
               "first_attempt_acceptance": sum(bool(r["first"]) for r in rows) / len(rows),
               "mean_attempts": sum(r["attempts"] for r in rows) / len(rows),
               "fallback_rate": sum(r["final_source"] == "template_fallback" for r in rows) / len(rows),
               "final_summary_accepted": sum(r["final_accepted"] for r in rows) / len(rows)}
    print()
    print(f"mode {args.mode}, R_max {args.r_max}, model {args.model}")
    print(table(rows))
    shown = set()
    print("\nExample summaries:")
    for r in rows:
        if len(shown) >= args.examples:
            break
        if r["dataset"] not in shown and r["final_source"] == "model":
            shown.add(r["dataset"])
            print(f"\n[{r['dataset']}] {Path(r['plan']).parent.name}\n{r['text']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, ensure_ascii=False) + "\n")
    print(f"\nreport: {args.out}")


if __name__ == "__main__":
    main()
