"""The release mechanisms, one value object each: what every layer asks of a mechanism's
name — the request, the calibration, the plan, the card, the claims decoder, the grids,
the plots — instead of comparing strings.

The measurements themselves (domain, metric, privacy map, calibration) are built in
`mechanisms.py` from OpenDP; this table holds what those builders and the readers of a plan
branch on. A new mechanism is a row here and its builder there.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MechanismKind:
    """A release mechanism as the rest of the package sees it."""

    name: str                 # the request's, the plan's, the CLI's and DP SQL's value
    values_noise: str         # the noise on the released values: "laplace" | "gaussian"
    private_selection: bool   # admits by a private selection (L rounds of top-k) rather than by its noisy values
    card: str                 # the card's one line on how it releases
    phrase: str               # the decoder's name for it in a sentence
    plot: str                 # the experiments' legend
    plot_short: str           # ... on two lines
    color: str                # ... its colour

    @property
    def needs_delta(self) -> bool:
        """Gaussian values are approximate DP: the release needs δ > 0."""
        return self.values_noise == "gaussian"


KINDS: dict[str, MechanismKind] = {k.name: k for k in (
    MechanismKind("laplace", "laplace", False,
                  "discrete Laplace noise on all m masses; the top L noisy masses are admitted",
                  "the Laplace mechanism", "Laplace sketch + top-L", "Laplace\n+ top-L", "tab:blue"),
    MechanismKind("gaussian", "gaussian", False,
                  "discrete Gaussian noise on all m masses; the top L noisy masses are admitted",
                  "the Gaussian mechanism", "Gaussian sketch + top-L", "Gaussian\n+ top-L", "tab:orange"),
    MechanismKind("private_topL", "gaussian", True,
                  "L rounds of private top-k admission (exponential mechanism), then discrete Gaussian "
                  "noise on the admitted masses",
                  "the private top-L mechanism (Gaussian values)", "private top-L + Gaussian values",
                  "private top-L\n+ Gaussian", "tab:green"),
)}
NAMES: tuple[str, ...] = tuple(KINDS)


def selects_privately(name: object) -> bool:
    """Whether `name` (a plan's field, possibly anything) is a mechanism that admits by a private selection."""
    return isinstance(name, str) and name in KINDS and KINDS[name].private_selection
