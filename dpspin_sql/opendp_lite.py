"""The parts of OpenDP dpspin uses, under the names `opendp.prelude` gives them (`dp.m`,
`dp.c`, `dp.t`, `dp.i64`, `dp.enable_features`, ...), without the prelude's own imports of
OpenDP's sklearn, polars, numpy and mbi extras: those pull in scikit-learn and scipy.stats,
about 2 s of every release's start-up (docs/PERFORMANCE.md) for nothing dpspin calls.

    import dpspin_sql.opendp_lite as dp

OpenDP itself is imported on the first use of a name here (a module `__getattr__`), not by
the `import`: loading its library takes ~0.3 s and ~25 MB, which the commands that never
call it (`dpspin init`, `load`, `atoms load`, `assignments load`) paid at every start
(issue 28 item 4). The names are those the star imports gave, in the same order, and the
"contrib" features every caller enables are enabled when OpenDP is loaded.
"""
import threading

_LOCK = threading.Lock()
_LOADED = False


def _load() -> None:
    global _LOADED
    with _LOCK:
        if _LOADED:
            return
        import opendp.accuracy
        import opendp.combinators
        import opendp.domains
        import opendp.measurements
        import opendp.measures
        import opendp.metrics
        import opendp.mod
        import opendp.transformations
        import opendp.typing

        names = globals()
        names.update(c=opendp.combinators, m=opendp.measurements, t=opendp.transformations)
        for module in (opendp.accuracy, opendp.domains, opendp.measures, opendp.metrics, opendp.mod,
                       opendp.typing):   # what `from module import *` binds, in the star imports' order
            public = getattr(module, "__all__", None)
            if public is None:
                public = [n for n in vars(module) if not n.startswith("_")]
            names.update({n: getattr(module, n) for n in public})
        opendp.mod.enable_features("contrib")
        _LOADED = True


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    _load()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
