"""The house rules of docs/ARCHITECTURE.md, checked on the code itself: no import cycles,
and no module outside `request.py` validates a release parameter."""
from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "dpspin_sql"


def _modules() -> dict[str, Path]:
    mods = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    mods["dpspin_sql.queries"] = REPO / "queries" / "__init__.py"
    mods["dpspin_sql.udfs"] = REPO / "udfs" / "__init__.py"
    return mods


def import_graph() -> dict[str, set[str]]:
    """module → project modules it imports (at module level or inside functions)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        pkg = m if f.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                    if target in mods and target != m:
                        graph[m].add(target)
            elif isinstance(node, ast.Import):
                graph[m].update(a.name for a in node.names if a.name in mods and a.name != m)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# A release parameter is validated where a range or a choice is tested against it. The
# fields of the request, as the code spells them on a request-like object or as names.
_FIELDS = ("epsilon", "delta", "selection_fraction", "public_denominator", "comparison_margin",
           "interval_confidence", "calibration", "adjacency")
_CHECK = re.compile(r"\b(?:if|elif|assert)\b[^\n]*\b(?:\w+\.)?(" + "|".join(_FIELDS) + r")\b\s*(?:<|>|<=|>=|not in|in)\s")


def test_only_the_request_validates_release_parameters():
    offenders = []
    for f in PACKAGE.rglob("*.py"):
        rel = f.relative_to(REPO).as_posix()
        if rel in ("dpspin_sql/request.py",) or rel.startswith("dpspin_sql/verify/"):
            continue   # the request owns the rules; the verifier reads released values, it validates nothing
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            if _CHECK.search(line):
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


def test_the_validation_grep_catches_a_range_check():
    assert _CHECK.search("    if epsilon <= 0:")
    assert _CHECK.search("    if opts.delta > 1:")
    assert not _CHECK.search("    eps = request.epsilon")


# ------------------------------------------------------------------ the public API

_IMPORTS = "from dpspin_sql import install, session, run_sql, release, ReleaseRequest, Plan, verify"


def test_the_public_api_is_the_same_whatever_was_imported_first():
    """`release` and `verify` are callable modules: `from dpspin_sql import release` gives the
    same object (calling it releases) whether or not `dpspin_sql.release` was imported before."""
    import subprocess
    import sys

    for first in ("", "import dpspin_sql.release, dpspin_sql.verify, dpspin_sql.sql.run\n"):
        code = (first + _IMPORTS + "\n"
                "import dpspin_sql.release as r, dpspin_sql.verify as v, dpspin_sql.request as q, dpspin_sql.plan as p\n"
                "assert release is r and verify is v and callable(release) and callable(verify)\n"
                "assert ReleaseRequest is q.ReleaseRequest and Plan is p.Plan\n"
                "assert callable(install) and callable(session) and callable(run_sql)\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
        assert done.returncode == 0, done.stderr


def test_the_public_api_releases_and_verifies(tmp_path):
    """The documented use: release a plan through the one release path, verify a summary."""
    from dpspin_sql import Plan, ReleaseRequest, release, verify
    from tests.helpers.core import synthetic_store

    con = synthetic_store(tmp_path / "s.duckdb", close=False)
    try:
        plan = release(con, ReleaseRequest(mechanism="laplace", epsilon=0.5, unit="record", L=3),
                       out=tmp_path / "plan.json")
    finally:
        con.close()
    assert isinstance(plan, Plan) and (tmp_path / "plan.json").exists()
    top = plan.to_dict()["atoms"][0]["label"]
    assert verify(f"The plan lists 3 themes; the most common is {top}.", plan.to_dict()).accepted
    assert not verify("The most common theme is hair loss.", plan.to_dict()).accepted


def _charge_calls(tree: ast.AST) -> list[int]:
    """Lines that call the ledger's charge (`ledger.charge(...)`, or `charge` imported from it)."""
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and (n.module or "").endswith("ledger") for a in n.names if a.name == "charge"}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "charge" and isinstance(f.value, ast.Name)
                    and f.value.id == "ledger") or (isinstance(f, ast.Name) and f.id in imported):
                lines.append(node.lineno)
    return lines


def test_only_the_release_path_charges_the_ledger():
    """Every release — a plan, a DP SQL statement, a warehouse sketch, an experiment's
    baseline — is charged by dpspin_sql/release.py, whose one charge stores the plan with the
    ledger row; nothing else calls `ledger.charge`."""
    found = {str(f.relative_to(REPO)): lines for f in PACKAGE.rglob("*.py")
             if (lines := _charge_calls(ast.parse(f.read_text(encoding="utf-8"))))}
    assert set(found) == {"dpspin_sql/release.py"} and len(found["dpspin_sql/release.py"]) == 1, found


def test_the_charge_finder_finds_a_charge():
    assert _charge_calls(ast.parse("from dpspin_sql import ledger\nledger.charge(con, 1, 0)\n")) == [2]
    assert _charge_calls(ast.parse("from dpspin_sql.ledger import charge as c\nc(con, 1, 0)\n")) == [2]
    assert _charge_calls(ast.parse("x.charge(1)\n")) == []


def _mechanism_branches(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines that branch on a mechanism's name as a literal (`x == "private_topL"`, `in (...)`)
    or list the mechanisms by hand (a tuple, list, set or dict keyed by two or more of them)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(c, ast.Constant) and c.value in names
                                                 for c in [node.left, *node.comparators]):
            lines.append(node.lineno)
        elems = (node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set))
                 else node.keys if isinstance(node, ast.Dict) else [])
        if sum(isinstance(e, ast.Constant) and e.value in names for e in elems) >= 2:
            lines.append(node.lineno)
    return lines


def test_a_mechanism_is_named_in_one_table():
    """What a layer asks of a mechanism it asks `mechanism_kinds` (one value object each): no
    module but that table branches on a mechanism's name or lists the mechanisms by hand,
    except the verifier, which imports nothing of the package."""
    from dpspin_sql import mechanism_kinds
    from dpspin_sql.request import MECHANISMS, ReleaseRequest

    assert MECHANISMS == mechanism_kinds.NAMES == ("laplace", "gaussian", "private_topL")
    for name, k in mechanism_kinds.KINDS.items():
        r = ReleaseRequest(mechanism=name, epsilon=1.0, delta=1e-6 if k.needs_delta else None, unit="record")
        assert (r.selection_fraction is not None) == k.private_selection
    names = {"private_topL"}   # laplace and gaussian also name the values' noise, which code may branch on
    found = {str(f.relative_to(REPO)): lines for f in PACKAGE.rglob("*.py")
             if f.name != "mechanism_kinds.py" and "verify" not in f.relative_to(PACKAGE).parts
             and (lines := _mechanism_branches(ast.parse(f.read_text(encoding="utf-8")), names))}
    assert found == {}, found


def test_the_branch_finder_finds_a_branch():
    names = {"private_topL"}
    assert _mechanism_branches(ast.parse('if m == "private_topL":\n    pass\n'), names) == [1]
    assert _mechanism_branches(ast.parse('X = {"private_topL": 1, "private_topL": 2}\n'), names) == [1]
    assert _mechanism_branches(ast.parse('raise E("use private_topL")\n'), names) == []


def _shared_runs(texts: dict[str, str], n: int) -> dict[tuple[str, ...], set[str]]:
    """Runs of `n` consecutive SQL lines (comments and blank lines left out) found in more than one text."""
    seen: dict[tuple[str, ...], set[str]] = {}
    for name, text in texts.items():
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("--")]
        for i in range(len(lines) - n + 1):
            seen.setdefault(tuple(lines[i:i + n]), set()).add(name)
    return {run: names for run, names in seen.items() if len(names) > 1}


def test_no_hand_written_query_repeats_another():
    """The enforcement SQL is written once: the record step both sketch forms run is one file
    each unit (`-- @include`), and no two hand-written queries share ten lines. The compiled
    renders are generated from the store forms (tests/test_compiled.py), so they are left out."""
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "queries").glob("*.sql"))
             if not p.name.startswith("compiled_")}
    assert _shared_runs(texts, 10) == {}
    assert _shared_runs({"a": "x\n" * 12, "b": "-- note\n" + "x\n" * 10}, 10)   # the finder finds a run


def test_the_store_and_portable_forms_include_the_same_record_step():
    from dpspin_sql import queries

    for unit in ("record", "user"):
        step = queries.load(f"record_step_{unit}").split("\n", 1)[1]
        for form in (f"sketch_{unit}", f"sketch_store_{unit}"):
            assert f"-- @include record_step_{unit}" in (REPO / "queries" / f"{form}.sql").read_text()
            assert "per_record AS (" in queries.load(form) and "@include" not in queries.load(form)
        assert step


# ------------------------------------------------------------------ the sketch wing

FRONT_END = "dpspin_sql.sql"


def front_end_imports(files: dict[str, str], front_end: str = FRONT_END) -> list[str]:
    """`path:line: module` for every import of the DP SQL front end (`front_end` or a module
    under it) in `files` (repository path → source): `import` and `from … import`, at module
    level or inside functions, absolute or relative."""
    found = []
    for path, text in sorted(files.items()):
        package = ".".join(Path(path).with_suffix("").parts[:-1])   # a module's package; an __init__'s own
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            else:
                continue
            hit = next((n for n in names if n == front_end or n.startswith(front_end + ".")), None)
            if hit is not None:
                found.append(f"{path}:{node.lineno}: {hit}")
    return found


def test_the_sketch_wing_never_imports_sql():
    """The sketch wing (`dpspin_sql/sketch/`: the enforced sketch, the rewrite and transpiler
    that compile its query, the engines that run it) needs nothing of the DP SQL front end:
    sql/ feeds it audited filters and may import it, never the other way."""
    files = {f.relative_to(REPO).as_posix(): f.read_text(encoding="utf-8")
             for f in sorted((PACKAGE / "sketch").rglob("*.py"))}
    assert {"dpspin_sql/sketch/__init__.py", "dpspin_sql/sketch/transpile.py",
            "dpspin_sql/sketch/engines/duckdb.py"} <= set(files)
    assert front_end_imports(files) == []


def test_the_front_end_import_finder_finds_an_import():
    def found(path: str, text: str) -> list[str]:
        return front_end_imports({path: text})

    inside = "def f():\n    if True:\n        from dpspin_sql.sql.errors import refuse\n"
    assert found("dpspin_sql/sketch/x.py", inside) == ["dpspin_sql/sketch/x.py:3: dpspin_sql.sql.errors"]
    assert found("dpspin_sql/sketch/x.py", "import os\nimport dpspin_sql.sql.run as r\n") == \
        ["dpspin_sql/sketch/x.py:2: dpspin_sql.sql.run"]
    assert found("dpspin_sql/sketch/x.py", "from dpspin_sql import sql\n") == ["dpspin_sql/sketch/x.py:1: dpspin_sql.sql"]
    assert found("dpspin_sql/sketch/engines/x.py", "from ...sql import dialect\n") == \
        ["dpspin_sql/sketch/engines/x.py:1: dpspin_sql.sql"]
    assert found("dpspin_sql/sketch/__init__.py", "from ..sql.totality import total_form\n") == \
        ["dpspin_sql/sketch/__init__.py:1: dpspin_sql.sql.totality"]
    clean = ("from dpspin_sql.sketch import totality\nfrom .sqlglot_log import quiet\nfrom . import errors\n"
             "import dpspin_sql.sqlish\nfrom dpspin_sql import sketch\n")
    assert found("dpspin_sql/sketch/x.py", clean) == []
