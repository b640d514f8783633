"""How many releases fit per accountant, for typical workloads (issue 26).

For each workload — a repeating sequence of releases built by `make_mechanism` (the same
OpenDP measurements a release stores) — and each budget, the number of releases admitted
before the first refusal:

- basic: Σε ≤ ε_total and Σδ ≤ δ_total (the ledger before issue 26);
- zcdp: the store's accountant (`dpspin_sql.accountant.compose`, what every charge calls);
- pld (reference only, when Google's `dp-accounting` is importable): its privacy-loss-
  distribution accountant on the same sequence, pure parts as generic ε-DP pairs and
  Gaussian parts as the *continuous* Gaussian of the same σ/Δ — composed as a sequence
  fixed in advance, which is not what the ledger is (the analyst picks each release after
  seeing plans), and with a Gaussian model OpenDP does not certify for the discrete one.

Then the cost of a charge against a ledger of n releases, per accountant (the whole
chain is re-verified and recomposed by every charge), as a ratio to basic in one run.

    nice .venv/bin/python bench/bench_accountant.py [--quick]
    PYTHONPATH=/path/to/site-with-dp-accounting nice .venv/bin/python bench/bench_accountant.py
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpspin_sql import accountant, ledger, store
from dpspin_sql.mechanisms import make_mechanism
from dpspin_sql.request import ReleaseRequest

M = 50


def req(mechanism: str, eps: float, **kw) -> ReleaseRequest:
    delta = None if mechanism == "laplace" else kw.pop("delta", 1e-6)
    return ReleaseRequest(mechanism=mechanism, epsilon=eps, delta=delta, unit="user", B=1.0, L=10, **kw)


WORKLOADS = {
    "all-Gaussian ε=1": [req("gaussian", 1.0)],
    "all-Gaussian ε=0.5": [req("gaussian", 0.5)],
    "all-Gaussian ε=0.1": [req("gaussian", 0.1)],
    "all-Laplace ε=1": [req("laplace", 1.0)],
    "all-Laplace ε=0.5": [req("laplace", 0.5)],
    "all-Laplace ε=0.1": [req("laplace", 0.1)],
    "mixed G/L ε=0.5": [req("gaussian", 0.5), req("laplace", 0.5)],
    "mixed G,G,G/L ε=1": [req("gaussian", 1.0)] * 3 + [req("laplace", 1.0)],
    "top-L ε=1 (sel 0.5)": [req("private_topL", 1.0)],
    "top-L ε=0.5 (sel 0.5)": [req("private_topL", 0.5)],
    "top-L ε=0.5 (sel 0.2)": [req("private_topL", 0.5, selection_fraction=0.2)],
}
BUDGETS = [(6.0, 1e-5), (1.0, 1e-5), (6.0, 1e-6)]


def count(name: str, releases: list[accountant.Release], E: float, D: float, limit: int) -> int:
    n = 0
    while n < limit and accountant.compose(name, E, D, [releases[i % len(releases)] for i in range(n + 1)]).fits:
        n += 1
    return n


def pld_count(mechs, E: float, D: float, limit: int) -> int | None:
    try:
        from dp_accounting import pld
    except ImportError:
        return None
    plds = []
    for mech in mechs:
        parts = None
        for p in mech.parts:
            if p.name == "gaussian":
                q = pld.privacy_loss_distribution.from_gaussian_mechanism(p.noise_scale / p.d_in, sensitivity=1.0)
            else:
                q = pld.privacy_loss_distribution.from_privacy_parameters(
                    pld.common.DifferentialPrivacyParameters(p.epsilon, 0.0))
            parts = q if parts is None else parts.compose(q)
        plds.append(parts)
    cur, n = None, 0
    while n < limit:
        nxt = plds[n % len(plds)] if cur is None else cur.compose(plds[n % len(plds)])
        if nxt.get_epsilon_for_delta(D) > E:
            break
        cur, n = nxt, n + 1
    return n


def counts_table(limit: int) -> str:
    lines = ["| workload | budget (ε, δ) | basic | zcdp | zcdp/basic | pld (reference) |", "|---|---|---|---|---|---|"]
    for wname, reqs in WORKLOADS.items():
        mechs = [make_mechanism(r, M) for r in reqs]
        rels = [accountant.release_of(*m.cost, m.audit_records()) for m in mechs]
        for E, D in BUDGETS:
            b, z = count("basic", rels, E, D, limit), count("zcdp", rels, E, D, limit)
            p = pld_count(mechs, E, D, limit)
            ratio = f"{z / b:.2f}" if b else "–"
            lines.append(f"| {wname} | ({E:g}, {D:g}) | {b} | {z} | {ratio} | {'–' if p is None else p} |")
    return "\n".join(lines)


def charge_cost(sizes: list[int]) -> str:
    from dpspin_sql.errors import BudgetExceeded

    mech = make_mechanism(req("gaussian", 0.01), M)
    eps, delta = mech.cost
    records = mech.audit_records()
    lines = ["| releases in the ledger | basic: s per charge | zcdp: s per charge | ratio zcdp/basic |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        cons = {}
        for name in ("basic", "zcdp"):
            con = store.connect(Path(tmp) / f"{name}.duckdb", create=True)
            ledger.set_accountant(con, name)
            ledger.set_budget(con, 60.0, 1e-3)
            ledger.check(con, eps, delta, measurements=records)   # warm: the ρ limit of this budget
            cons[name] = con
        done = 0
        for n in sizes:
            times = {}
            for name, con in cons.items():
                for _ in range(n - done):
                    ledger.charge(con, eps, delta, mechanism="gaussian", params={}, measurements=records, plan_path=None)
                t = time.perf_counter()
                for _ in range(3):
                    try:
                        ledger.check(con, eps, delta, measurements=records)
                        ledger.charge(con, eps, delta, mechanism="gaussian", params={}, measurements=records,
                                      plan_path=None)
                    except BudgetExceeded:
                        pass
                times[name] = (time.perf_counter() - t) / 3
            done = n + 3
            lines.append(f"| {n} | {times['basic']:.3f} | {times['zcdp']:.3f} | {times['zcdp'] / times['basic']:.2f} |")
        for con in cons.values():
            con.close()
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer releases at most, smaller ledgers")
    args = ap.parse_args()
    limit = 200 if args.quick else 1000
    print("## Releases admitted before the first refusal\n")
    print(counts_table(limit))
    print("\n## A charge against a ledger of n releases (check + charge; the chain verified and recomposed)\n")
    print(charge_cost([10, 50] if args.quick else [10, 50, 200]))


if __name__ == "__main__":
    main()
