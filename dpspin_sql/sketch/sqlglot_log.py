"""sqlglot's logger, muted: the sketch wing renders and transpiles with sqlglot, the DP SQL
front end parses with it, and neither may let its warnings reach stderr."""
from __future__ import annotations

import logging
from contextlib import contextmanager

# sqlglot reports through the `sqlglot` logger (e.g. "'CALL …' contains unsupported syntax");
# with no handler Python's last-resort handler prints it on stderr. A library's logger gets
# a NullHandler; `quiet()` also mutes it while we parse, whatever the embedding app set up.
_LOG = logging.getLogger("sqlglot")
_LOG.addHandler(logging.NullHandler())


@contextmanager
def quiet():
    """Nothing from sqlglot's logger reaches stderr while the block runs."""
    before = _LOG.disabled
    _LOG.disabled = True
    try:
        yield
    finally:
        _LOG.disabled = before
