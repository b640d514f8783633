"""Acceptance rates of the LLM decoder on released plans (reports, never asserts).

Runs the verifier-gated loop (R_max attempts, then the template fallback) with the local
SmolLM2-135M server (`bash .ci/install-llm`) over plans that `dpspin release` or
`dpspin experiment run` wrote, each with its public dictionary beside it, and prints the
first-attempt acceptance, acceptance within R_max and fallback rates.

    .venv/bin/python bench/llm_rates.py RUN_DIR [RUN_DIR ...] [--per-dir 7] [--mode text]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fixtures_llm import llama_server, local_llm_skip_reason  # noqa: E402

from dpspin_sql.decode import LLMConfig, summarize  # noqa: E402
from dpspin_sql.plan import dictionary_sidecar  # noqa: E402


def pick_plans(dirs: list[Path], per_dir: int) -> list[Path]:
    plans = []
    for d in dirs:
        found = sorted(p for p in d.rglob("private_plan.json") if dictionary_sidecar(p).exists())
        step = max(1, len(found) // per_dir)
        plans += found[::step][:per_dir]
    return plans


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--per-dir", type=int, default=7)
    ap.add_argument("--mode", default="text", choices=("text", "claims"))
    ap.add_argument("--r-max", type=int, default=3)
    args = ap.parse_args()
    reason = local_llm_skip_reason()
    if reason:
        sys.exit(reason)
    plans = pick_plans(args.dirs, args.per_dir)
    rows = []
    with llama_server() as base:
        cfg = LLMConfig(base_url=base, model="smollm2", api_key="local", mode=args.mode, max_retries=0,
                        timeout=300, max_tokens=160, temperature=0.3)
        for path in plans:
            plan = json.loads(path.read_text())
            dictionary = json.loads(dictionary_sidecar(path).read_text())["atoms"]
            r = summarize(plan, decoder="llm", max_attempts=args.r_max, llm=cfg, dictionary=dictionary)
            llm = [a for a in r.attempts if a["source"] == "llm"]
            rows.append({"plan": str(path), "first": bool(llm and llm[0]["accepted"]),
                         "within": not r.fallback_used, "fallback": r.fallback_used,
                         "final_accepted": r.accepted,
                         "codes": sorted({v["code"] for a in llm for v in a["violations"]})})
            print(json.dumps(rows[-1]), flush=True)
    n = len(rows)
    summary = {"plans": n, "mode": args.mode, "r_max": args.r_max,
               "first_attempt_acceptance": sum(r["first"] for r in rows) / n,
               "acceptance_within_r_max": sum(r["within"] for r in rows) / n,
               "fallback_rate": sum(r["fallback"] for r in rows) / n,
               "final_summary_accepted": sum(r["final_accepted"] for r in rows) / n}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
