"""Two kinds of failure, because scripts branch on them (docs/DESIGN.md §8 exit codes).

`BadInput` is the user's mistake (exit 2); `Refusal` is the tool declining on privacy
grounds — an over-budget release, an unsafe SQL statement, a rejected summary (exit 1).
Both carry one line meant for stderr.
"""


class DpspinError(Exception):
    exit_code = 2


class BadInput(DpspinError):
    """Missing file or column, a value out of range, unparseable input."""

    exit_code = 2


class Refusal(DpspinError):
    """The tool refuses on privacy grounds; nothing is written."""

    exit_code = 1


class BudgetExceeded(Refusal):
    pass


class AuditRefusal(Refusal):
    pass


class StoreBusy(Refusal):
    """Another writer held the store for longer than the lock timeout (exit 1)."""


class LedgerTampered(Refusal):
    """The ledger's chain or a stored measurement does not check (exit 1)."""


class PlanNotWritten(DpspinError):
    """A release was charged and its plan stored, but the plan file could not be written
    (exit 2); the message says how to write it (`dpspin recover`)."""

    exit_code = 2
