"""Optional dependencies, each behind one extra of the package (pyproject.toml).

The core install is what a release needs (DuckDB, sqlglot, OpenDP, NumPy/SciPy/scikit-learn
for the scorers, Typer). Everything else is an extra, and code that needs one fails with
one line naming it, for the source install this project is installed as.
"""
from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from dpspin_sql.errors import BadInput

EXTRAS = {   # import name -> (extra, what needs it)
    "matplotlib": ("plots", "plots (dpspin experiment run/report; --no-plots skips them)"),
    "openai": ("llm", "the llm decoder (dpspin summarize --decoder llm)"),
    "pyspark": ("spark", "the Spark engine (--engine spark)"),
    "grpc": ("spark", "Spark Connect (--spark-master sc://HOST:PORT)"),
    "psycopg": ("postgres", "the PostgreSQL engine and dpspin warehouse push"),
}


def hint(module: str) -> str:
    extra, what = EXTRAS[module]
    return f"{what} needs {module}: install the {extra} extra: pip install -e '.[{extra}]'"


def require(module: str) -> ModuleType:
    """Import an optional dependency, or raise BadInput (exit 2) with the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise BadInput(hint(module)) from None


def available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
