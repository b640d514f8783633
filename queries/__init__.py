"""The project's SQL, shipped as package data (`dpspin_sql.queries`).

Queries are read from these `.sql` files, never assembled from strings in Python, so
that what runs is what a reviewer reads here. A line `-- @include NAME` stands for the
SQL of `queries/NAME.sql` (its leading comment, which says where it is included, left
out): a part two queries share — the record step of the sketch — is written once.
"""
import re
from functools import cache
from importlib.resources import files

_INCLUDE = re.compile(r"^-- @include ([a-z_]+)\n(,?)", re.M)   # a comma after it joins the part's last CTE


@cache
def load(name: str) -> str:
    """Return the text of `queries/<name>.sql`, its includes expanded."""
    text = files(__name__).joinpath(f"{name}.sql").read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda m: _part(m.group(1)) + m.group(2) + ("" if m.group(2) else "\n"), text)


def _part(name: str) -> str:
    lines = load(name).splitlines()
    while lines and lines[0].startswith("--"):
        lines.pop(0)
    return "\n".join(lines)
