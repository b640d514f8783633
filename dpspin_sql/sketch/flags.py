"""The flags the DuckDB store query is specialised on (sketch.store_plan reads them from one
snapshot; transpile folds them in; sketch.compiled keys its pre-rendered queries on them)."""
from __future__ import annotations

# Each flag and the value it takes when not given: the conservative one (raw rows may exist,
# one query over every user, keys looked up, the slow branch kept, the dictionary joined).
STORE_FLAGS: dict[str, bool | int] = {"canonical": False, "keyed": False, "raw": True, "chunked": False,
                                      "all_keyed": False, "all_fast": False, "atoms_dense": False, "lo": 0, "hi": 0}
