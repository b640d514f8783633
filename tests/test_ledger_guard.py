"""The ledger's and the release's checks in the fast loop, at library level (cheap): the
hash chain catches what the maps cannot see, the δ budget is enforced like ε, a total
lowered below what is spent is reported, and an engine that hands back a sketch of other
bounds than the release's is refused before anything is charged. (The CLI forms of these
refusals are in tests/test_ledger.py and tests/test_boundary.py.)"""
from __future__ import annotations

import pytest

from dpspin_sql import ledger
from dpspin_sql.errors import BadInput, BudgetExceeded, LedgerTampered
from dpspin_sql.release import release
from dpspin_sql.request import Bounds, ReleaseRequest
from dpspin_sql.sketch import compute_sketch
from tests.helpers.core import open_copy, synthetic_store

pytestmark = pytest.mark.guard

LAPLACE = ReleaseRequest(mechanism="laplace", epsilon=0.3, unit="user", L=3)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A store (basic composition: these guards are about its sums) with two releases of
    ε = 0.3 (of 1.0) charged; each test edits a copy. The zcdp accountant has its own guards
    (tests/test_accountant*.py)."""
    path = tmp_path_factory.mktemp("ledger") / "template.duckdb"
    c = synthetic_store(path, epsilon_budget=1.0, delta_budget=1e-5, close=False, accountant="basic")
    for _ in range(2):
        release(c, LAPLACE)
    c.close()
    return path


@pytest.fixture
def con(template, tmp_path):
    yield from open_copy(template, tmp_path)


def rows(con):
    return con.execute("SELECT seq, prev_hash, row_hash, release_id, dataset, created_at, mechanism, epsilon, delta, "
                       "params, measurements, plan_path FROM ledger ORDER BY seq").fetchall()


def digest(seq, prev, r) -> str:
    return ledger._Row(seq, prev, r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]).digest()


def problems(con, maps: bool) -> list[str]:
    return [f.line() for f in ledger.verify(con, maps=maps)]


def test_an_intact_ledger_checks(con):
    assert problems(con, maps=True) == [] and problems(con, maps=False) == []


@pytest.mark.parametrize("edit", ["epsilon = epsilon / 2", "delta = 1e-9", "mechanism = 'gaussian'",
                                  "params = '{}'", "plan_path = 'elsewhere.json'"])
def test_an_edited_row_breaks_its_hash_without_the_maps(con, edit):
    """The chain alone (what every charge checks first) catches an edit of any field."""
    first = con.execute("SELECT min(seq) FROM ledger").fetchone()[0]   # the first release's row of the chain
    con.execute(f"UPDATE ledger SET {edit} WHERE seq = ?", [first])
    found = problems(con, maps=False)
    assert any(f"row {first}" in p and "does not match its hash" in p for p in found), found
    with pytest.raises(LedgerTampered):
        release(con, LAPLACE)


def test_a_deleted_row_is_caught_when_the_rows_after_it_are_renumbered_and_rehashed(con):
    """Delete row 1 (giving back its ε), renumber row 2 and recompute its own hash and the
    head: the sequence and every row's hash check; only the chain (row 2 still names row 1's
    hash) shows the deletion."""
    _, second = rows(con)
    con.execute("DELETE FROM ledger WHERE seq = 1")
    new_hash = digest(1, second[1], second)
    con.execute("UPDATE ledger SET seq = 1, row_hash = ? WHERE release_id = ?", [new_hash, second[3]])
    con.execute("UPDATE ledger_head SET seq = 1, head_hash = ?", [new_hash])
    found = problems(con, maps=False)
    assert found and any("does not chain" in p for p in found), found
    with pytest.raises(LedgerTampered):
        release(con, LAPLACE)


def test_a_total_lowered_below_what_is_spent_is_reported_and_refuses(con):
    con.execute("UPDATE budget SET epsilon_total = 0.5")
    found = problems(con, maps=True)
    assert any("beyond its total" in p for p in found), found
    with pytest.raises(BudgetExceeded):
        release(con, LAPLACE)


def test_the_delta_budget_is_enforced_like_epsilon(con):
    """δ left: 1e-5. A Gaussian release of δ = 6e-6 fits once, not twice; the ε it would
    have spent stays (a pure-DP release still fits)."""
    gaussian = ReleaseRequest(mechanism="gaussian", epsilon=0.1, delta=6e-6, unit="user", L=3)
    release(con, gaussian)
    spent = ledger.status(con)
    with pytest.raises(BudgetExceeded):
        release(con, gaussian)
    assert ledger.status(con).epsilon_spent == spent.epsilon_spent and len(ledger.status(con).releases) == 3
    release(con, ReleaseRequest(mechanism="laplace", epsilon=0.1, unit="user", L=3))


class LyingEngine:
    """An engine that hands back a sketch computed with other bounds than asked for."""

    name = "lying"

    def __init__(self, B: float):
        self.B = B

    def sketch(self, con, bounds: Bounds):
        return compute_sketch(con, bounds.unit, bounds.K, self.B)

    def details(self) -> dict:
        return {"engine": self.name}


def test_a_sketch_of_other_bounds_is_refused_before_the_charge(con):
    before = ledger.status(con)
    with pytest.raises(BadInput, match="other bounds"):
        release(con, LAPLACE, LyingEngine(B=4.0))
    assert ledger.status(con).epsilon_spent == before.epsilon_spent
    release(con, LAPLACE, LyingEngine(B=1.0))               # the honest answer is released


def test_a_cost_edit_consistent_with_the_hashes_and_the_stored_plan_is_refused_by_the_charge(con):
    """Give the first release's ε back (0), in its row and in its stored plan, and re-hash the
    chain and the plan pins: every check but the maps passes (`verify` without them is
    clean), so only the charge's own re-derivation of each row's cost from its measurements
    stands between the forgery and a budget spent twice."""
    import json

    from tests.helpers.ledger_tamper import rehash

    first = con.execute("SELECT min(seq) FROM ledger").fetchone()[0]
    rid = con.execute("SELECT release_id FROM ledger WHERE seq = ?", [first]).fetchone()[0]
    con.execute("UPDATE ledger SET epsilon = 0 WHERE seq = ?", [first])
    plan = json.loads(con.execute("SELECT plan FROM release_plans WHERE release_id = ?", [rid]).fetchone()[0])
    plan["privacy_cost"]["epsilon"] = 0.0
    con.execute("UPDATE release_plans SET plan = ? WHERE release_id = ?", [json.dumps(plan, indent=2), rid])
    rehash(con, plans=True)
    assert problems(con, maps=False) == []
    assert any(f"row {first}" in p and "maps give" in p for p in problems(con, maps=True))
    with pytest.raises(LedgerTampered):
        release(con, LAPLACE)
