"""The parts of OpenDP dpspin uses, under the names `opendp.prelude` gives them (`dp.m`,
`dp.c`, `dp.t`, `dp.i64`, `dp.enable_features`, ...), without the prelude's own imports of
OpenDP's sklearn, polars, numpy and mbi extras: those pull in scikit-learn and scipy.stats,
about 2 s of every release's start-up (docs/PERFORMANCE.md) for nothing dpspin calls.

    import dpspin_sql.opendp_lite as dp
"""
import opendp.combinators as c  # noqa: F401
import opendp.measurements as m  # noqa: F401
import opendp.transformations as t  # noqa: F401
from opendp.accuracy import *  # noqa: F403
from opendp.domains import *  # noqa: F403
from opendp.measures import *  # noqa: F403
from opendp.metrics import *  # noqa: F403
from opendp.mod import *  # noqa: F403
from opendp.typing import *  # noqa: F403
