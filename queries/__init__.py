"""The project's SQL, shipped as package data (`dpspin_sql.queries`).

Queries are read from these `.sql` files, never assembled from strings in Python, so
that what runs is what a reviewer reads here.
"""
from functools import cache
from importlib.resources import files


@cache
def load(name: str) -> str:
    """Return the text of `queries/<name>.sql`."""
    return files(__name__).joinpath(f"{name}.sql").read_text(encoding="utf-8")
