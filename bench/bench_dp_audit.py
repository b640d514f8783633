"""Benchmark: the empirical DP audit of tests/test_dp_audit.py at larger sample sizes
(reports, never asserts). See docs/DP_AUDIT.md.

Sections:
1. sampling speed of the OpenDP measurements (calls/s at m = 2, noise draws/s replicated);
2. the audit table for the 12 cells and the 12 broken variants: cell, check, samples,
   p̂(D), p̂(D'), the exact p(D), p(D') of the mechanism sampled, ε_lb, the claimed ε (δ),
   verdict, seconds — with `--factor` × the CI sample sizes;
3. `--literal N`: the additive cells again with literal sampling (one call of the measurement
   on the m = 2 neighbouring sketches per sample), to cross-check the replica sampling;
4. exact power curves (no sampling): P(the audit rejects) at the CI and bench sample sizes
   for mechanisms whose true ε (laplace, selection) or noise ratio (gaussian) is off.

    .venv/bin/python bench/bench_dp_audit.py                 # factor 4
    .venv/bin/python bench/bench_dp_audit.py --factor 10 --literal 20000
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import test_dp_audit as A


def speed() -> None:
    print("## 1. OpenDP sampling speed (this machine)")
    print(f"{'measurement':<34} {'m':>6} {'calls/s':>10} {'draws/s':>10}")
    for mech, idx, label in (("laplace", 0, "discrete Laplace"), ("gaussian", 0, "discrete Gaussian → (ε,δ)"),
                             ("private_topL", 0, "noisy top-k (L=1)")):
        for m in (2, 4, 10_000):
            meas = A.build(mech, "record", "add_drop", 1.0, A.EPSILON[mech], A.DELTA, 1, m).parts[idx].measurement
            x = [int(v) for v in A._base(m)]
            calls = max(3, 4000 // m if m > 4 else 4000)
            t = time.perf_counter()
            for _ in range(calls):
                meas(x)
            dt = time.perf_counter() - t
            draws = calls * (1 if mech == "private_topL" else m) / dt
            print(f"{label:<34} {m:>6} {calls / dt:>10.0f} {draws:>10.0f}")
    print()


def fmt(x, spec=".4f"):
    return "—" if x is None else format(x, spec)


def table(factor: float) -> None:
    n_add = int(A.N_CI["gaussian"] * factor)
    n_lap = int(A.N_CI["laplace"] * factor)
    n_sel = int(A.N_CI["select"] * factor)
    print(f"## 2. Audit table (factor {factor:g}: gaussian/values n={n_add}, laplace n={n_lap}, select n={n_sel}; "
          f"CP bounds at α={A.ALPHA:g} each)")
    head = (f"{'cell':<52} {'check':<15} {'samples':>8} {'p̂(D)':>8} {'p̂(D′)':>8} {'p(D)':>8} {'p(D′)':>8} "
            f"{'ε_lb':>7} {'ε':>7} {'δ':>7} {'verdict':>9} {'s':>6}")
    print(head)
    print("-" * len(head))
    for cell in A.AUDIT_CELLS + A.POWER_CELLS:
        t = time.perf_counter()
        results = A.run_cell(cell, n_add=n_add, n_lap=n_lap, n_sel=n_sel)
        dt = time.perf_counter() - t
        for r in results:
            print(f"{cell.name:<52} {r.check:<15} {r.n:>8} {r.k_d / r.n:>8.4f} {r.k_d2 / r.n:>8.4f} "
                  f"{fmt(r.p_d)} {fmt(r.p_d2)} {r.eps_lb:>7.3f} {r.epsilon:>7.4f} {r.delta:>7.0e} "
                  f"{r.verdict:>9} {dt:>6.1f}")
            dt = 0.0
        sys.stdout.flush()
    print()


def literal(n: int) -> None:
    """Additive cells, sampled literally: m = 2, one call per sample, D = base + (Δ, 0),
    D' = base (add_drop) or base + (0, Δ) (replace)."""
    print(f"## 3. Literal sampling cross-check (m = 2, one measurement call per sample, n = {n})")
    print(f"{'cell':<40} {'check':<10} {'p(D) exact → p̂ literal':>26} {'p(D′) exact → p̂ literal':>26} {'ε_lb':>7} "
          f"{'verdict':>8} {'s':>6}")
    for cell in A.AUDIT_CELLS:
        if cell.mechanism == "private_topL":
            continue
        t = time.perf_counter()
        mech = cell.mechanism_for(2)
        (part,) = mech.parts
        d = cell.shift
        checks = A.additive_checks(cell, cell.mechanism, part, 2, part.noise_scale)
        base = A._base(2)
        blk_d, blk_d2 = ((np.array([d, 0]), np.array([0, d])) if cell.adjacency == "replace"
                         else (np.array([d, 0]), np.array([0, 0])))
        block = 2 if cell.adjacency == "replace" else 1
        counts = []
        for blk in (blk_d, blk_d2):
            x = [int(v) for v in base + blk]
            z = np.array([part.measurement(x) for _ in range(n)], dtype=np.int64) - base
            counts.append([int(np.count_nonzero(c.event(z[:, :block]))) for c in checks])
        dt = time.perf_counter() - t
        for c, a, b in zip(checks, *counts):
            r = A.Result(cell.name, c.name, n, a, b, c.epsilon, c.delta)
            print(f"{cell.name:<40} {c.name:<10} {c.p_d:>11.4f} → {a / n:<10.4f} {c.p_d2:>11.4f} → {b / n:<10.4f} "
                  f"{r.eps_lb:>7.3f} {r.verdict:>8} {dt:>6.1f}")
            dt = 0.0
        sys.stdout.flush()
    print()


def power_curves(factor: float) -> None:
    print("## 4. Exact power: P(audit rejects), record/add_drop cells, at n = CI | bench")
    n_lap, n_sel, n_g = A.N_CI["laplace"], A.N_CI["select"], A.N_CI["gaussian"]
    eps_lap = A.EPSILON["laplace"]
    eps_sel = A.EPSILON["private_topL"] / 2
    print(f"pure checks (laplace at ε = {eps_lap:g}, select at ε_sel = {eps_sel:g}): by the true ε of the sampled "
          f"mechanism, as a multiple of the claim")
    print(f"{'true/claim':>10} {'laplace n=' + str(n_lap) + '|' + str(int(n_lap * factor)):>30} "
          f"{'select n=' + str(n_sel) + '|' + str(int(n_sel * factor)):>30}")
    for mult in (1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.75, 2.0):
        row = []
        for eps, n in ((eps_lap, n_lap), (eps_sel, n_sel)):
            p_d, p_d2 = 0.5, 0.5 * math.exp(-eps * mult)     # both events: ½ vs ½e^{−ε} (exactly / to 1e-7)
            row.append(f"{A.reject_probability(eps, 0.0, p_d, p_d2, n):>13.3g} | "
                       f"{A.reject_probability(eps, 0.0, p_d, p_d2, int(n * factor)):<12.3g}")
        print(f"{mult:>10.2f} " + " ".join(f"{r:>30}" for r in row))
    cell = A.Cell("gaussian", "record", "add_drop")
    part = cell.mechanism_for(A.REPLICA_BLOCKS).parts[0]
    print(f"gaussian (ε={part.epsilon:.3g}, δ={part.delta:g}): by the sampled noise as a fraction of the calibrated σ")
    print(f"{'σ ratio':>10} {'profile n=' + str(n_g) + '|' + str(int(n_g * factor)):>30} "
          f"{'claim n=' + str(n_g) + '|' + str(int(n_g * factor)):>30}")
    for ratio in (1.0, 0.8, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 1 / 3, 0.3):
        checks = A.additive_checks(cell, "gaussian", part, A.REPLICA_BLOCKS, part.noise_scale * ratio)
        row = [f"{A.reject_probability(c.epsilon, c.delta, c.p_d, c.p_d2, n_g):>13.3g} | "
               f"{A.reject_probability(c.epsilon, c.delta, c.p_d, c.p_d2, int(n_g * factor)):<12.3g}" for c in checks]
        print(f"{ratio:>10.3f} " + " ".join(f"{r:>30}" for r in row))
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--factor", type=float, default=4.0, help="sample sizes as a multiple of the CI sizes")
    ap.add_argument("--literal", type=int, default=0, help="also sample the additive cells literally, N per side")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-table", action="store_true")
    args = ap.parse_args()
    if not args.no_speed:
        speed()
    power_curves(args.factor)
    if not args.no_table:
        table(args.factor)
    if args.literal:
        literal(args.literal)


if __name__ == "__main__":
    main()
