"""The segment flags of `dpspin release` (docs/DESIGN.md §11, docs/PLAN.md "Segmented plans").

    --segment-by product --segments "Mortgage,Credit card"     one segment per value
    --segment-by product --segments-file products.txt          the domain, one label a line
    --period-col date_received --boundaries 2017-01-01         periods cut at public dates
    --segment-top per_segment | joint                          top L of each segment, or in all

The domain is the curator's declaration, never read from the data; a record whose value is
outside it is left out of the release.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from dpspin_sql.errors import BadInput

PANEL = "Segments (one release over segment × atom)"

SEGMENT_BY = typer.Option(
    None, "--segment-by", rich_help_panel=PANEL,
    help="Release per segment: a records column, a metadata key (product = metadata ->> '$.product') or a SQL "
         "expression over the records, audited like a DP SQL WHERE term. Needs --segments or --segments-file.")
SEGMENTS = typer.Option(None, "--segments", rich_help_panel=PANEL,
                        help="The public segment domain, comma-separated: --segments 'Mortgage,Credit card'.")
SEGMENTS_FILE = typer.Option(None, "--segments-file", rich_help_panel=PANEL,
                             help="The segment domain, one label a line (UTF-8).")
PERIOD_COL = typer.Option(
    None, "--period-col", rich_help_panel=PANEL,
    help="Release per period of a date (a records column or metadata key, read as DATE): --period-col "
         "date_received --boundaries 2017-01-01 gives 'before 2017-01-01' and 'from 2017-01-01'.")
BOUNDARIES = typer.Option(None, "--boundaries", rich_help_panel=PANEL,
                          help="With --period-col: the public cut dates, increasing, e.g. 2016-01-01,2017-01-01.")
SEGMENT_TOP = typer.Option(None, "--segment-top", rich_help_panel=PANEL,
                           help="per_segment (default): the top L atoms of every segment; joint: the top L "
                                "(segment, atom) pairs in all.")


def read(segment_by: Optional[str], segments: Optional[str], segments_file: Optional[Path],
         period_col: Optional[str], boundaries: Optional[str], segment_top: Optional[str]):
    """(request.Segments, segments.SegmentPlacement), or (None, None) for an unsegmented release."""
    from dpspin_sql import segment_by as sb

    admission = segment_top if segment_top is not None else "per_segment"
    if segment_by is not None and period_col is not None:
        raise BadInput("--segment-by and --period-col are two ways to segment a release; give one")
    if segment_by is None and (segments is not None or segments_file is not None):
        raise BadInput("--segments / --segments-file declare the domain of --segment-by")
    if period_col is None and boundaries is not None:
        raise BadInput("--boundaries cut the dates of --period-col")
    if segment_by is not None:
        return sb.by_values(segment_by, sb.read_labels(segments, segments_file), admission=admission)
    if period_col is not None:
        if boundaries is None:
            raise BadInput("--period-col needs --boundaries DATE[,DATE...] (the public cut dates)")
        return sb.by_periods(period_col, sb.read_boundaries(boundaries), admission=admission)
    if segment_top is not None:
        raise BadInput("--segment-top applies to a segmented release (--segment-by or --period-col)")
    return None, None
