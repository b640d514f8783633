"""Where the tests find the real corpora: $DPSPIN_DATA, else ../shared/data beside the
checkout (README, "Datasets"); the same rule as the experiment grids (experiment/grid.py)."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def data_root() -> Path:
    value = os.environ.get("DPSPIN_DATA")
    if not value:
        return REPO.parent / "shared" / "data"
    path = Path(os.path.expanduser(value))
    return path if path.is_absolute() else (REPO / path).resolve()


# The columns of the CFPB's CSV download, in its order (its field reference).
CFPB_CSV_HEADER = ["Date received", "Product", "Sub-product", "Issue", "Sub-issue", "Consumer complaint narrative",
                   "Company public response", "Company", "State", "ZIP code", "Tags", "Consumer consent provided?",
                   "Submitted via", "Date sent to company", "Company response to consumer", "Timely response?",
                   "Consumer disputed?", "Complaint ID"]
