"""A sketch computed elsewhere, handed to the release as it is.

Experiments compute one sketch per sample and reuse it across mechanisms; the two-phase
warehouse release brings back the m-vector a warehouse computed. Either way the release
path is the same: the request's bounds must be the sketch's, and its atoms the current
dictionary's (`release.release` checks both before anything is charged).
"""
from __future__ import annotations

from typing import Any

from dpspin_sql.errors import BadInput
from dpspin_sql.request import Bounds
from dpspin_sql.sketch import Sketch


class GivenSketch:
    @staticmethod
    def admit(filters: Any) -> None:
        """A sketch computed elsewhere runs no filter here: nothing to refuse."""

    def __init__(self, sketch: Sketch, name: str = "given", details: dict | None = None):
        self._sketch, self.name, self._details = sketch, name, dict(details or {})

    def sketch(self, con: Any, bounds: Bounds) -> Sketch:
        if self._sketch.bounds != bounds:
            raise BadInput("the sketch was computed with other bounds (unit, K, B) than the release claims")
        return self._sketch

    def details(self) -> dict:
        return {"engine": self.name, **self._details}
