"""Splits: seeded, stable, user-disjoint at user level; sampling by a hash rule."""
from __future__ import annotations

import pytest

from dpspin_sql import atoms, builders, split
from dpspin_sql.errors import BadInput
from tests.helpers.atoms import cfpb_like, make_store, splits


def user_rows(n_users: int = 60, per: int = 3, reverse: bool = False) -> list[dict]:
    rows = [{"record_id": f"u{u}-{k}", "user_id": f"user{u}", "text": f"text {u} {k}"}
            for u in range(n_users) for k in range(1 + (u % per))]
    return rows[::-1] if reverse else rows


def test_user_split_is_user_disjoint_and_stable(tmp_path):
    con = make_store(tmp_path, user_rows())
    report = split.split(con, "user", aux_fraction=0.4, seed=11)
    assert report.shared_users == 0
    assert report.aux_records > 0 and report.target_records > 0
    owner = dict(con.execute("SELECT record_id, user_id FROM records").fetchall())
    sides: dict[str, set] = {}
    for rid, side in splits(con).items():
        sides.setdefault(owner[rid], set()).add(side)
    assert all(len(s) == 1 for s in sides.values())
    first = splits(con)
    split.split(con, "user", aux_fraction=0.4, seed=11)
    assert splits(con) == first
    other = make_store(tmp_path, user_rows(reverse=True), name="t.duckdb")   # row order does not matter
    split.split(other, "user", aux_fraction=0.4, seed=11)
    assert splits(other) == first
    split.split(con, "user", aux_fraction=0.4, seed=12)
    assert splits(con) != first


def test_record_split_fraction_roughly_holds(tmp_path):
    con = make_store(tmp_path, [{"record_id": str(i), "text": "x"} for i in range(2000)])
    report = split.split(con, "record", aux_fraction=0.3, seed=1)
    assert 500 < report.aux_records < 700
    assert report.aux_records + report.target_records == 2000


def test_user_level_needs_every_user_id(tmp_path):
    con = make_store(tmp_path, user_rows() + [{"record_id": "anon", "user_id": None, "text": "x"}])
    with pytest.raises(BadInput, match="no user id"):
        split.split(con, "user")
    assert set(splits(con).values()) == {"target"}          # nothing changed


def test_sampling_keeps_exactly_n_units(tmp_path):
    con = make_store(tmp_path, user_rows())
    report = split.split(con, "user", aux_fraction=0.3, seed=3, n_users=10)
    assert report.sampled_units == 10 and report.target_users == 10
    users = con.execute("SELECT DISTINCT user_id FROM records WHERE split = 'target'").fetchall()
    for (u,) in users:   # every record of a sampled user is in the sample
        assert {s for (s,) in con.execute("SELECT split FROM records WHERE user_id = ?", [u]).fetchall()} == {"target"}
    again = split.sample(con, "user", 10, seed=3)
    assert again.target_users == 10
    rec = split.split(con, "record", aux_fraction=0.3, seed=3, n_records=25)
    assert rec.target_records == 25 and rec.excluded_records > 0


def test_strict_sample_size_refuses(tmp_path):
    con = make_store(tmp_path, user_rows())
    before = splits(con)
    with pytest.raises(BadInput, match="strict_sample_size"):
        split.split(con, "user", aux_fraction=0.5, seed=0, n_users=10_000, strict_sample_size=True)
    assert splits(con) == before                              # rolled back
    lenient = split.split(con, "user", aux_fraction=0.5, seed=0, n_users=10_000)
    assert lenient.sampled_units == lenient.target_users < 10_000


@pytest.mark.parametrize("kwargs", [dict(unit="team"), dict(aux_fraction=1.0), dict(aux_fraction=-0.1),
                                    dict(n_records=0), dict(unit="user", n_records=5), dict(seed="x")])
def test_bad_split_arguments(tmp_path, kwargs):
    con = make_store(tmp_path, user_rows())
    with pytest.raises(BadInput):
        split.split(con, **kwargs)


def test_resplit_drops_a_dictionary_built_on_the_old_aux_split(tmp_path):
    con = make_store(tmp_path, [dict(r, split="target") for r in cfpb_like(20)])
    split.split(con, "record", 0.5, seed=0)
    builders.build(con, "metadata", fields=["product", "issue", "sub_issue"], m=5)
    assert atoms.current_dictionary_id(con)
    report = split.split(con, "record", 0.5, seed=1)
    assert report.invalidated == "dictionary"
    assert atoms.current_dictionary_id(con) is None


def test_a_split_never_publishes_records_after_a_release(tmp_path, capsys):
    """Once the ledger has a release, no record outside aux may move into aux (it would be
    public from then on); a split that moves none, or one on a store with no release, runs."""
    from dpspin_sql import ledger, release, store
    from dpspin_sql.request import ReleaseRequest
    from tests.helpers.core import synthetic_store

    path = synthetic_store(tmp_path / "s.duckdb", n_users=30, records_per_user=2, m=6, epsilon_budget=5.0)
    con = store.connect(path)
    release.release(con, ReleaseRequest(mechanism="laplace", epsilon=0.5, unit="record", K=3, L=3),
                    out=tmp_path / "p.json")
    before = con.execute("SELECT record_id, split FROM records ORDER BY record_id").fetchall()
    with pytest.raises(BadInput, match="stay protected"):
        split.split(con, "user", 0.9, seed=99)
    assert con.execute("SELECT record_id, split FROM records ORDER BY record_id").fetchall() == before
    split.split(con, "user", 0.0, seed=3)                       # every record stays target: allowed
    assert con.execute("SELECT record_id, split FROM records ORDER BY record_id").fetchall() == before
    assert len(ledger.status(con).releases) == 1
    con.close()
    fresh = synthetic_store(tmp_path / "t.duckdb", n_users=30, records_per_user=2, m=6)
    con = store.connect(fresh)
    assert split.split(con, "user", 0.9, seed=99)               # no release yet: allowed
    con.close()
