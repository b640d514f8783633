"""The release request: every public parameter of one release, validated once.

A `ReleaseRequest` is built by whatever front end the user chose (CLI flags, the
OPTIONS of a DP SQL statement, a row of an experiment grid) and then passed whole to
`release.release`. It is frozen and checks itself on construction, so an instance that
exists is a valid request; a bad parameter raises `RequestError` naming the *field*,
which each front end maps back to its own name (`-L`, `top`, `L:`) — never by parsing
message text.

The request also owns what follows from its parameters alone: the per-unit L1 bound in
fixed point (`bound_fix`), the sensitivity table entry (docs/DESIGN.md §2) in real and
fixed-point units, and the public defaults (δ, calibration, selection share) a user did
not set, so that no other module re-derives "record level means B = 1".
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from dpspin_sql import mechanism_kinds
from dpspin_sql.errors import BadInput
from dpspin_sql.fixed_point import MAX_B, SCALE, SCALE_BITS, fixed_bound
from dpspin_sql.sensitivity import ADJACENCIES, Sensitivity, fixed_point_d_in, sensitivity

UNITS = ("record", "user")
MECHANISMS = mechanism_kinds.NAMES
CALIBRATIONS = ("zcdp", "classical")
MAX_K = 1000
MAX_PUBLIC_DENOMINATOR = 10 ** 15
DEFAULT_DELTA = 1e-6
DEFAULT_SELECTION_FRACTION = 0.5
DEFAULT_SUPPORT_BINS = {"high": 0.10, "moderate": 0.03}
DEFAULT_RANK_BINS = {"high": 3, "moderate": 7}
# Segmented releases (docs/DESIGN.md §11): how many segments a curator may declare, and how
# atoms are admitted: the top L of each segment, or the top L (segment, atom) pairs in all.
MAX_SEGMENTS = 1000
MAX_SEGMENT_LABEL = 200
SEGMENT_ADMISSIONS = ("per_segment", "joint")
SEGMENT_KINDS = ("values", "periods")


class RequestError(BadInput):
    """A release parameter out of range; `field` is the ReleaseRequest field to blame."""

    def __init__(self, field: str, value: Any, reason: str):
        self.field, self.value, self.reason = field, value, reason
        super().__init__(f"{field} = {value!r}: {reason}")

    def named(self, name: str) -> str:
        """The message with the front end's own name for the field (a flag, an option)."""
        return f"{name} {self.value!r}: {self.reason}" if self.value is not None else f"{name}: {self.reason}"


def _finite(x: Any) -> bool:
    try:
        return not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _integer(x: Any) -> bool:
    return _finite(x) and float(x).is_integer()


@dataclass(frozen=True)
class Segments:
    """The public segment domain of a segmented release (docs/DESIGN.md §11), validated once.

    `labels` is the domain the curator declares, in order (never read from the data): the
    release is over (segment, atom) and a record whose segment is none of them is left
    out (a per-record predicate). `name` says what the segments are (a column, a metadata
    key, an expression), `definition` how a record is placed, in public words or SQL;
    `kind` is `values` (a record is in the segment its value equals) or `periods` (a date
    bucketed by the public `boundaries`, ISO dates in increasing order, one label more
    than boundaries). `admission`: `per_segment` admits the top L atoms of every segment,
    `joint` the top L (segment, atom) pairs in all.
    """

    labels: tuple[str, ...]
    name: str = "segment"
    definition: str = ""
    kind: str = "values"
    boundaries: tuple[str, ...] = ()
    admission: str = "per_segment"

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # (frozen)
        if isinstance(self.labels, str) or not isinstance(self.labels, (tuple, list)):
            raise RequestError("segments", self.labels, "must be a list of segment labels")
        labels = tuple(self.labels)
        if not labels:
            raise RequestError("segments", None, "declare at least one segment")
        if len(labels) > MAX_SEGMENTS:
            raise RequestError("segments", None, f"at most {MAX_SEGMENTS} segments ({len(labels)} given)")
        for label in labels:
            if not isinstance(label, str) or not label.strip():
                raise RequestError("segments", label, "a segment label must be non-empty text")
            if len(label) > MAX_SEGMENT_LABEL or any(ord(c) < 32 for c in label):
                raise RequestError("segments", label[:40], f"a segment label is one line of at most "
                                                           f"{MAX_SEGMENT_LABEL} characters")
        seen: set[str] = set()
        for label in labels:
            if label in seen:
                raise RequestError("segments", label, "is declared twice")
            seen.add(label)
        set_("labels", labels)
        if self.admission not in SEGMENT_ADMISSIONS:
            raise RequestError("segment_admission", self.admission, f"use one of {', '.join(SEGMENT_ADMISSIONS)}")
        if self.kind not in SEGMENT_KINDS:
            raise RequestError("segment_kind", self.kind, f"use one of {', '.join(SEGMENT_KINDS)}")
        if not isinstance(self.name, str) or not self.name.strip():
            raise RequestError("segment_name", self.name, "must be non-empty text")
        boundaries = tuple(self.boundaries)
        if self.kind == "periods":
            import datetime

            try:
                days = [datetime.date.fromisoformat(b) for b in boundaries]
            except (TypeError, ValueError):
                raise RequestError("boundaries", list(boundaries), "must be ISO dates (YYYY-MM-DD)") from None
            if not days:
                raise RequestError("boundaries", None, "periods need at least one boundary date")
            if any(later <= earlier for earlier, later in zip(days, days[1:])):
                raise RequestError("boundaries", list(boundaries), "must be distinct dates in increasing order")
            if len(labels) != len(days) + 1:
                raise RequestError("segments", None, f"{len(days)} boundaries make {len(days) + 1} periods, "
                                                     f"not {len(labels)}")
            set_("boundaries", tuple(d.isoformat() for d in days))
        elif boundaries:
            raise RequestError("boundaries", list(boundaries), "apply to periods only")
        else:
            set_("boundaries", ())

    @property
    def S(self) -> int:
        """The number of segments."""
        return len(self.labels)


@dataclass(frozen=True)
class Bounds:
    """The contribution bounds the sketch enforces: unit, K atoms per record, B per user.

    Record level is user level with one record per user and B = 1, decided here once.
    """

    unit: str = "record"
    K: int = 3
    B: float | None = None

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # (frozen)
        if self.unit not in UNITS:
            raise RequestError("unit", self.unit, "use record or user")
        if self.unit == "record":
            if self.B is not None and self.B != 1:
                raise RequestError("B", self.B, "bounds a user's contribution; record level has B = 1 "
                                                "(use unit user for a per-user bound)")
            set_("B", 1.0)
        elif self.B is None:
            set_("B", 1.0)
        elif not _finite(self.B) or self.B <= 0:
            raise RequestError("B", self.B, "must be a positive number")
        elif self.B > MAX_B:
            raise RequestError("B", self.B, f"is too large for the fixed-point sketch (at most {MAX_B:g})")
        elif fixed_bound(float(self.B)) < 1:
            raise RequestError("B", self.B, f"is below the fixed-point resolution 2^-{SCALE_BITS}")
        else:
            set_("B", float(self.B))
        if not _integer(self.K) or not 1 <= self.K <= MAX_K:
            raise RequestError("K", self.K, f"must be an integer in 1..{MAX_K}")
        set_("K", int(self.K))

    @property
    def bound_fix(self) -> int:
        """The per-unit L1 bound in fixed point: 2^S at record level, floor(B·2^S) at user level."""
        assert self.B is not None  # __post_init__ always sets B
        return SCALE if self.unit == "record" else fixed_bound(self.B)

    def params(self) -> dict[str, int]:
        """The named parameters of the enforced sketch query ($K, $scale, and $bound at user level)."""
        p = {"K": self.K, "scale": SCALE}
        if self.unit == "user":
            p["bound"] = self.bound_fix
        return p


@dataclass(frozen=True)
class ReleaseRequest:
    """One release's public parameters. Fields left `None` take the documented default.

    unit/adjacency define the neighbouring relation; K and B the contribution bounds the
    sketch enforces; mechanism, ε, δ, calibration and selection_fraction the OpenDP
    measurement; L the plan's length; public_denominator, bins and the comparison and
    interval settings are post-processing of the noisy masses.
    """

    mechanism: str = "gaussian"
    epsilon: float = 1.0
    delta: float | None = None
    unit: str = "record"
    adjacency: str = "add_drop"
    B: float | None = None
    K: int = 3
    L: int = 10
    selection_fraction: float | None = None
    calibration: str | None = None
    public_denominator: int | None = None
    bins: Mapping[str, float] | None = None
    comparison_confidence: float = 0.99
    comparison_margin: float | None = None
    interval_confidence: float = 0.95
    segments: Segments | None = None
    defaulted: tuple[str, ...] = field(default=(), compare=False)
    ignored: tuple[str, ...] = field(default=(), compare=False)   # given, but without effect (said to the user)

    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # (frozen)
        defaulted: list[str] = []
        if self.mechanism not in MECHANISMS:
            raise RequestError("mechanism", self.mechanism, f"use one of {', '.join(MECHANISMS)}")
        if self.adjacency not in ADJACENCIES:
            raise RequestError("adjacency", self.adjacency, "use add_drop or replace")
        if not _finite(self.epsilon) or self.epsilon <= 0:
            raise RequestError("epsilon", self.epsilon, "must be a positive number")
        set_("epsilon", float(self.epsilon))
        # δ: pure ε-DP for laplace; a default the release prints for the Gaussian ones
        ignored: list[str] = []
        if self.mechanism == "laplace":
            if self.delta is not None and not (_finite(self.delta) and 0 <= self.delta < 1):
                raise RequestError("delta", self.delta, "must lie in [0, 1)")
            if self.delta:
                ignored.append("delta")   # pure ε-DP: a δ asked for is not spent, and the user is told
            set_("delta", 0.0)
        elif self.delta is None:
            set_("delta", DEFAULT_DELTA)
            defaulted.append("delta")
        elif not (_finite(self.delta) and 0 < self.delta < 1):
            raise RequestError("delta", self.delta, f"must lie in (0, 1) for {self.mechanism}")
        else:
            set_("delta", float(self.delta))
        bounds = Bounds(self.unit, self.K, self.B)
        set_("B", bounds.B)
        set_("K", bounds.K)
        if not _integer(self.L) or self.L < 1:
            raise RequestError("L", self.L, "must be a positive integer")
        set_("L", int(self.L))
        if mechanism_kinds.selects_privately(self.mechanism):
            if self.selection_fraction is None:
                set_("selection_fraction", DEFAULT_SELECTION_FRACTION)
                defaulted.append("selection_fraction")
            elif not (_finite(self.selection_fraction) and 0 < self.selection_fraction < 1):
                raise RequestError("selection_fraction", self.selection_fraction, "must lie in (0, 1)")
            else:
                set_("selection_fraction", float(self.selection_fraction))
        elif self.selection_fraction is not None:
            raise RequestError("selection_fraction", self.selection_fraction, "applies to private_topL only")
        if self.mechanism == "laplace":
            if self.calibration not in (None, "laplace"):
                raise RequestError("calibration", self.calibration, "applies to gaussian and private_topL only")
            set_("calibration", None)
        elif self.calibration is None:
            set_("calibration", "zcdp")
        elif self.calibration not in CALIBRATIONS:
            raise RequestError("calibration", self.calibration, f"use one of {', '.join(CALIBRATIONS)}")
        elif self.calibration == "classical" and self.epsilon >= 1:
            raise RequestError("calibration", self.calibration,
                               "the classical Gaussian calibration is valid only for epsilon < 1; use zcdp")
        if self.public_denominator is not None:
            if not _integer(self.public_denominator) or not 1 <= self.public_denominator <= MAX_PUBLIC_DENOMINATOR:
                raise RequestError("public_denominator", self.public_denominator,
                                   f"must be an integer in 1..{MAX_PUBLIC_DENOMINATOR:g}")
            set_("public_denominator", int(self.public_denominator))
        if not (_finite(self.comparison_confidence) and 0.5 < self.comparison_confidence < 1):
            raise RequestError("comparison_confidence", self.comparison_confidence, "must lie in (0.5, 1)")
        if self.comparison_margin is not None and not (_finite(self.comparison_margin) and self.comparison_margin >= 0):
            raise RequestError("comparison_margin", self.comparison_margin, "must be a non-negative number")
        if not (_finite(self.interval_confidence) and 0.5 <= self.interval_confidence < 1):
            raise RequestError("interval_confidence", self.interval_confidence, "must lie in [0.5, 1)")
        if self.bins is not None:
            bins = dict(self.bins)
            if set(bins) != {"high", "moderate"}:
                raise RequestError("bins", bins, "must give exactly 'high' and 'moderate' thresholds")
            if not all(_finite(v) and v >= 0 for v in bins.values()):
                raise RequestError("bins", bins, "thresholds must be non-negative numbers")
            set_("bins", bins)
        if self.segments is not None:
            self._check_segments()
        set_("defaulted", tuple(defaulted))
        set_("ignored", tuple(ignored))

    def _check_segments(self) -> None:
        """A segmented release (docs/DESIGN.md §11): what the segment domain rules out."""
        segments = self.segments
        if not isinstance(segments, Segments):
            raise RequestError("segments", segments, "must be a Segments domain")
        if self.public_denominator is not None:
            raise RequestError("public_denominator", self.public_denominator,
                               "a segmented release has no single denominator (each segment has its own size)")
        if mechanism_kinds.selects_privately(self.mechanism) and segments.admission == "per_segment" and self.adjacency != "add_drop":
            raise RequestError("segment_admission", segments.admission,
                               "private top-L per segment is charged once by the parallel argument of "
                               "docs/DESIGN.md §11, which holds under add_drop only; use joint admission "
                               "or add_drop")

    # -- what follows from the parameters alone ---------------------------------------
    @property
    def bounds(self) -> Bounds:
        return Bounds(self.unit, self.K, self.B)

    @property
    def bound_fix(self) -> int:
        """The per-unit L1 bound the sketch enforces, in fixed point (2^S at record level)."""
        return self.bounds.bound_fix

    @property
    def sensitivity(self) -> Sensitivity:
        """docs/DESIGN.md §2's entry for this unit, adjacency and B (real mass units)."""
        assert self.B is not None  # __post_init__ always sets B (via Bounds)
        return sensitivity(self.unit, self.adjacency, self.B)

    @property
    def d_in(self) -> Sensitivity:
        """The same entry in fixed-point units: the d_in each OpenDP map is evaluated at."""
        return fixed_point_d_in(self.unit, self.adjacency, self.bound_fix)

    @property
    def noise(self) -> str:
        return "laplace" if self.mechanism == "laplace" else "gaussian"

    def plan_bins(self) -> tuple[dict, str]:
        """The public bin thresholds and what they are thresholds on (support or rank)."""
        basis = "support" if self.public_denominator else "rank"
        default = DEFAULT_SUPPORT_BINS if basis == "support" else DEFAULT_RANK_BINS
        return dict(self.bins or default), basis

    def check_m(self, m: int) -> None:
        """Refuse a plan longer than the dictionary (per segment, or over every (segment, atom)
        pair when a segmented release admits jointly)."""
        if self.segments is not None and self.segments.admission == "joint":
            if self.L > m * self.segments.S:
                raise RequestError("L", self.L, f"exceeds the {m * self.segments.S} (segment, atom) pairs")
        elif self.L > m:
            raise RequestError("L", self.L, f"exceeds the number of atoms m={m}; ask for at most {m}")

    @property
    def n_segments(self) -> int:
        """The number of segments (1 for an unsegmented release)."""
        return 1 if self.segments is None else self.segments.S

    def public_params(self) -> dict:
        """The request as recorded in the ledger (public parameters only)."""
        d = asdict(self)
        d.pop("defaulted")
        return d
