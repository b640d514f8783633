"""The OPTIONS (...) of a DP-SPIN statement: names and literal types, translated into a request.

Each option maps onto one field of the `ReleaseRequest` (`release_name`). This module
only reads literals: an option that is unknown, repeated or of the wrong literal type
is refused here; every range and consistency rule is the request's own, and its errors
come back by field and are refused pointing at the option that set it (exit 1).
`privacy_unit_column` is resolved by the audit, which knows the statement's tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

from sqlglot import exp

from dpspin_sql import names
from dpspin_sql.request import CALIBRATIONS, MECHANISMS, ReleaseRequest, RequestError
from dpspin_sql.sensitivity import ADJACENCIES
from dpspin_sql.sql.errors import refuse


@dataclass(frozen=True)
class Option:
    name: str
    kind: str          # "number" | "integer" | "choice" | "column"
    release_name: str  # the ReleaseConfig field it sets
    doc: str
    choices: tuple[str, ...] = ()


# the literal kind of each option (its name, field and meaning are dpspin_sql.names's)
_KINDS = {"epsilon": "number", "delta": "number", "mechanism": "choice", "privacy_unit_column": "column",
          "record_id_column": "column", "contribution_bound": "number", "max_atoms_per_record": "integer",
          "top": "integer", "adjacency": "choice", "selection_fraction": "number", "public_denominator": "integer",
          "calibration": "choice"}
_CHOICES = {"mechanism": MECHANISMS, "adjacency": ADJACENCIES, "calibration": CALIBRATIONS}
OPTIONS = {key: Option(key, _KINDS[key], n.field, n.meaning, tuple(_CHOICES.get(key, ())))
           for key, n in names.SQL_KEYS.items()}


@dataclass
class DPOptions:
    """The validated options; `values` holds only what the statement set (release defaults fill the rest)."""

    values: dict[str, object] = field(default_factory=dict)
    nodes: dict[str, exp.Expr] = field(default_factory=dict)

    def get(self, name: str, default=None):
        return self.values.get(name, default)


def read_options(clause: exp.Expr) -> DPOptions:
    """Type- and range-check every option of a DifferentialPrivacy clause (not privacy_unit_column's target)."""
    opts = DPOptions()
    for prop in clause.expressions:
        name = prop.name.lower()
        value = prop.args.get("value")
        spec = OPTIONS.get(name)
        if spec is None:
            refuse(f"unknown option {name!r}{names.suggestion(name, OPTIONS)} (known: {', '.join(OPTIONS)})", prop)
        if name in opts.values:
            refuse(f"option {name!r} is given twice", prop)
        opts.nodes[name] = prop
        opts.values[name] = _value(spec, value, prop)
    _check_required(opts)
    return opts


def _value(spec: Option, value: exp.Expr, prop: exp.Expr):
    if spec.kind in ("number", "integer"):
        number = _number(value)
        if number is None:
            refuse(f"option {spec.name} must be a number literal", prop)
        if spec.kind == "integer" and isinstance(number, float):
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
            refuse(f"option {spec.name} = {text!r} is not one of {', '.join(spec.choices)}"
                   + names.suggestion(text, spec.choices), prop)
        return lookup[text.lower()]
    # column: the audit resolves it against the statement's tables
    if not isinstance(value, exp.Column) or not isinstance(value.this, exp.Identifier):
        refuse(f"option {spec.name} must name a column" + (" (user_id for user level)"
               if spec.name == "privacy_unit_column" else ""), prop)
    return value


def _number(value: exp.Expr) -> int | float | None:
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


def _check_required(opts: DPOptions) -> None:
    for required in ("epsilon", "mechanism"):
        if required not in opts.values:
            refuse(f"option {required} is required in WITH DIFFERENTIAL_PRIVACY OPTIONS (...): add "
                   + _REQUIRED_EXAMPLE[required], None)


_REQUIRED_EXAMPLE = {
    "epsilon": "epsilon = 1 (the privacy cost the release is charged)",
    "mechanism": "mechanism = 'laplace' (pure ε), 'gaussian' (with delta) or 'private_topL'",
}


# request field -> the option that sets it (for pointing a request error back at the statement)
OPTION_OF = {o.release_name: o.name for o in OPTIONS.values() if o.kind != "column"}


def to_request(opts: DPOptions, unit: str, clause: exp.Expr) -> ReleaseRequest:
    """The request the statement asks for; a request error is refused at its option."""
    # each value has its option's type (checked by _value); ReleaseRequest checks the ranges
    kwargs: dict[str, Any] = {OPTIONS[name].release_name: value for name, value in opts.values.items()
              if OPTIONS[name].kind != "column"}
    try:
        return ReleaseRequest(unit=unit, **kwargs)
    except RequestError as exc:
        refuse_field(exc, opts, clause)


def refuse_field(exc: RequestError, opts: DPOptions, clause: exp.Expr) -> NoReturn:
    """Refuse a request error at the option that set the field (or the whole clause)."""
    name = OPTION_OF.get(exc.field, exc.field)
    node = opts.nodes.get(name, clause)
    value = opts.values.get(name, exc.value)
    refuse(f"option {name} = {value} is out of range: {exc.reason}", node)
