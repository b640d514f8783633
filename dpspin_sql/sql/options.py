"""The OPTIONS (...) of a DP-SPIN statement: names, types and ranges.

Each option maps onto one parameter of `dpspin release` (SPEC §9). An option that is
unknown, repeated, of the wrong type or out of range is an audit refusal (exit 1) that
names the option; `privacy_unit_column` is resolved by the audit, which knows the
statement's tables.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from sqlglot import exp

from dpspin_sql.release import CALIBRATIONS, MECHANISMS
from dpspin_sql.sensitivity import ADJACENCIES
from dpspin_sql.sketch import SCALE_BITS, fixed_bound
from dpspin_sql.sql.errors import refuse


@dataclass(frozen=True)
class Option:
    name: str
    kind: str          # "number" | "integer" | "choice" | "column"
    release_name: str  # the ReleaseConfig field it sets
    doc: str
    choices: tuple[str, ...] = ()


OPTIONS = {o.name: o for o in (
    Option("epsilon", "number", "epsilon", "ε > 0 charged to the ledger (required)"),
    Option("delta", "number", "delta", "0 < δ < 1 for gaussian and private_topL (default 1e-6); laplace ignores it"),
    Option("mechanism", "choice", "mechanism", "laplace | gaussian | private_topL (required)", MECHANISMS),
    Option("privacy_unit_column", "column", "unit", "user_id → unit=user; record_id or omitted → unit=record"),
    Option("contribution_bound", "number", "B", "B > 0, the per-user L1 bound (user level only; default 1)"),
    Option("max_atoms_per_record", "integer", "K", "K ≥ 1 atoms kept per record (default 3)"),
    Option("top", "integer", "L", "L ≥ 1 atoms admitted to the plan (default 10)"),
    Option("adjacency", "choice", "adjacency", "add_drop | replace (default add_drop)", ADJACENCIES),
    Option("selection_fraction", "number", "selection_fraction", "0 < ε_sel/ε < 1 (private_topL only)"),
    Option("public_denominator", "integer", "public_denominator", "d_public ≥ 1 for support = mass / d_public"),
    Option("calibration", "choice", "calibration", "zcdp (default, any ε) | classical (ε < 1 only)",
           CALIBRATIONS),
)}


@dataclass
class DPOptions:
    """The validated options; `values` holds only what the statement set (release defaults fill the rest)."""

    values: dict[str, object] = field(default_factory=dict)
    nodes: dict[str, exp.Expression] = field(default_factory=dict)

    def get(self, name: str, default=None):
        return self.values.get(name, default)


def read_options(clause: exp.Expression) -> DPOptions:
    """Type- and range-check every option of a DifferentialPrivacy clause (not privacy_unit_column's target)."""
    opts = DPOptions()
    for prop in clause.expressions:
        name = prop.name.lower()
        value = prop.args.get("value")
        spec = OPTIONS.get(name)
        if spec is None:
            refuse(f"unknown option {name!r} (known: {', '.join(OPTIONS)})", prop)
        if name in opts.values:
            refuse(f"option {name!r} is given twice", prop)
        opts.nodes[name] = prop
        opts.values[name] = _value(spec, value, prop)
    _check_ranges(opts)
    return opts


def _value(spec: Option, value: exp.Expression, prop: exp.Expression):
    if spec.kind in ("number", "integer"):
        number = _number(value)
        if number is None:
            refuse(f"option {spec.name} must be a number literal", prop)
        if spec.kind == "integer":
            if isinstance(number, float):
                if not number.is_integer():
                    refuse(f"option {spec.name} must be an integer", prop)
                number = int(number)
        return number
    if spec.kind == "choice":
        if isinstance(value, exp.Literal) and value.is_string:
            text = value.this
        elif isinstance(value, exp.Column) and not value.table:
            text = value.name
        else:
            refuse(f"option {spec.name} must be one of {', '.join(spec.choices)}", prop)
        lookup = {c.lower(): c for c in spec.choices}
        if text.lower() not in lookup:
            refuse(f"option {spec.name} = {text!r} is not one of {', '.join(spec.choices)}", prop)
        return lookup[text.lower()]
    # column: the audit resolves it against the statement's tables
    if not isinstance(value, exp.Column) or not isinstance(value.this, exp.Identifier):
        refuse("option privacy_unit_column must name a column (user_id for user level)", prop)
    return value


def _number(value: exp.Expression) -> int | float | None:
    sign = 1
    while isinstance(value, (exp.Neg, exp.Paren)):
        if isinstance(value, exp.Neg):
            sign = -sign
        value = value.this
    if not isinstance(value, exp.Literal) or value.is_string:
        return None
    text = value.this
    try:
        number = int(text) if text.lstrip("+-").isdigit() else float(text)
    except ValueError:
        return None
    return sign * number


def _check_ranges(opts: DPOptions) -> None:
    v, node = opts.values, opts.nodes

    def bad(name: str, why: str):
        refuse(f"option {name} = {v[name]} is out of range: {why}", node[name])

    for required in ("epsilon", "mechanism"):
        if required not in v:
            refuse(f"option {required} is required in WITH DIFFERENTIAL_PRIVACY OPTIONS (...)", None)
    if not (math.isfinite(v["epsilon"]) and v["epsilon"] > 0):
        bad("epsilon", "it must be a finite number > 0")
    mechanism = v["mechanism"]
    if "delta" in v and not (0 <= v["delta"] < 1):
        bad("delta", "it must be in [0, 1)")
    if mechanism in ("gaussian", "private_topL") and v.get("delta", 1e-6) <= 0:
        bad("delta", f"mechanism {mechanism} needs delta > 0")
    if "contribution_bound" in v:
        B = v["contribution_bound"]
        if not (math.isfinite(B) and B > 0):
            bad("contribution_bound", "it must be a finite number > 0")
        if fixed_bound(B) < 1:
            bad("contribution_bound", f"it is below the fixed-point resolution 2^-{SCALE_BITS}")
        if B > 1e6:
            bad("contribution_bound", "it must be at most 1e6")
    for name, top in (("max_atoms_per_record", 1000), ("top", 100000), ("public_denominator", 10**15)):
        if name in v and not (1 <= v[name] <= top):
            bad(name, f"it must be an integer in [1, {top}]")
    if "selection_fraction" in v:
        if mechanism != "private_topL":
            refuse("option selection_fraction applies to mechanism private_topL only", node["selection_fraction"])
        if not (0 < v["selection_fraction"] < 1):
            bad("selection_fraction", "it must be in (0, 1)")
    if "calibration" in v and mechanism == "laplace":
        refuse("option calibration applies to gaussian and private_topL only", node["calibration"])
    if v.get("calibration") == "classical" and v["epsilon"] >= 1:
        bad("calibration", "the classical Gaussian calibration is valid only for epsilon < 1")
