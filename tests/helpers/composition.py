"""An independent computation of what the zcdp accountant may admit, from the formulas
alone (docs/DESIGN.md §4), for tests/test_accountant.py: no OpenDP map, no code of
`dpspin_sql.accountant`.

- ρ of a discrete Gaussian at L2 sensitivity Δ and scale σ: Δ²/(2σ²) (Canonne, Kamath &
  Steinke 2020, Thm 14); of a pure ε-DP release: ε²/2 (Bun & Steinke 2016, Prop. 1.4).
- ρ-zCDP → (ε, δ): ε = min over α > 1 of αρ + (ln(1/δ) + (α − 1)·ln(1 − 1/α) − ln α)/(α − 1)
  (Canonne, Kamath & Steinke 2020, Prop. 12), minimised here in 50-digit decimals.
- zcdp admits a history when Σε ≤ E and Σδ ≤ D/2 (exact rationals), or when every part has
  a ρ and the conversion of Σρ at D/2 is at most E.
"""
from __future__ import annotations

import decimal
import json
from decimal import Decimal
from fractions import Fraction

CTX = decimal.Context(prec=50)


def rho_of_record(record: dict) -> Fraction | None:
    """ρ of a stored measurement record, from its name, d_in and noise scale (and, for a
    pure part, its charged ε)."""
    name = record["name"]
    if name == "gaussian":
        return Fraction(int(record["d_in"])) ** 2 / (2 * Fraction(record["scale"]) ** 2)
    if name == "laplace":   # discrete Laplace at L1 sensitivity Δ and scale b: ε = Δ/b
        return (Fraction(int(record["d_in"])) / Fraction(record["scale"])) ** 2 / 2
    if name == "noisy_top_k":
        return Fraction(record["epsilon"]) ** 2 / 2
    return None


def rho_of_row(records: list[dict]) -> Fraction | None:
    total = Fraction(0)
    for r in records:
        rho = rho_of_record(r)
        if rho is None:
            return None
        total += rho
    return total


def _d(x: Fraction | float | int) -> Decimal:
    if isinstance(x, Fraction):
        return CTX.divide(Decimal(x.numerator), Decimal(x.denominator))
    return Decimal(x)


def _g(alpha: Decimal, rho: Decimal, log_inv_delta: Decimal) -> Decimal:
    one = Decimal(1)
    am1 = CTX.subtract(alpha, one)
    inner = CTX.add(CTX.subtract(log_inv_delta, CTX.ln(alpha)),
                    CTX.multiply(am1, CTX.ln(CTX.subtract(one, CTX.divide(one, alpha)))))
    return CTX.add(CTX.multiply(alpha, rho), CTX.divide(inner, am1))


def epsilon_cks(rho: Fraction, delta: Fraction | float) -> Decimal:
    """min over α of the conversion above (a log grid, then golden sections); every α gives a
    valid bound, so the value found is never below the true minimum."""
    if rho == 0:
        return Decimal(0)
    r, lid = _d(rho), CTX.ln(CTX.divide(Decimal(1), _d(Fraction(delta))))
    grid = [Decimal(1) + CTX.power(Decimal(10), Decimal(k) / 10) for k in range(-60, 61)]
    values = [_g(a, r, lid) for a in grid]
    i = min(range(len(grid)), key=values.__getitem__)
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    phi = CTX.divide(CTX.subtract(CTX.sqrt(Decimal(5)), Decimal(1)), Decimal(2))
    best = values[i]
    for _ in range(150):
        a = CTX.subtract(hi, CTX.multiply(phi, CTX.subtract(hi, lo)))
        b = CTX.add(lo, CTX.multiply(phi, CTX.subtract(hi, lo)))
        ga, gb = _g(a, r, lid), _g(b, r, lid)
        best = min(best, ga, gb)
        if ga < gb:
            hi = b
        else:
            lo = a
    return best


def zcdp_admits(rows: list[tuple[float, float, list[dict]]], epsilon_total: float, delta_total: float) -> tuple[bool, Decimal | None]:
    """Whether the zcdp rule admits these rows (charged ε, δ and records); with the zCDP
    path's ε (None when a part has no ρ)."""
    E, D = Fraction(epsilon_total), Fraction(delta_total)
    basic = (sum((Fraction(e) for e, _, _ in rows), Fraction(0)) <= E
             and sum((Fraction(d) for _, d, _ in rows), Fraction(0)) <= D / 2)
    rhos = [rho_of_row(rec) for _, _, rec in rows]
    if any(r is None for r in rhos):
        return basic, None
    eps = epsilon_cks(sum((r for r in rhos if r is not None), Fraction(0)), D / 2) if D > 0 else None
    if eps is None:
        return basic or all(r == 0 for r in rhos), None
    return basic or eps <= _d(E), eps


def basic_admits(rows: list[tuple[float, float, list[dict]]], epsilon_total: float, delta_total: float) -> bool:
    return (sum((Fraction(e) for e, _, _ in rows), Fraction(0)) <= Fraction(epsilon_total)
            and sum((Fraction(d) for _, d, _ in rows), Fraction(0)) <= Fraction(delta_total))


def stored_rows(con, dataset: str = "default") -> list[tuple[float, float, list[dict]]]:
    return [(float(e), float(d), json.loads(m) if m else [])
            for e, d, m in con.execute("SELECT epsilon, delta, measurements FROM ledger WHERE dataset = $d "
                                       "ORDER BY seq", {"d": dataset}).fetchall()]
