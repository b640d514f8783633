"""Grid expansion, grouping keys, resume / clean-run behaviour, strict sample size and
failure isolation — on tiny synthetic corpora written in the presets' formats."""
from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path

import pytest
import yaml

from dpspin_sql.errors import BadInput
from dpspin_sql.experiment import grid as G
from dpspin_sql.experiment import report, runner

COMBOS = [("Loan", "Fees", "Unexpected fees"), ("Loan", "Payments", "Late payment"),
          ("Credit report", "Incorrect information", "Not mine"), ("Debt collection", "Debt not owed", None),
          ("Card", "Billing", "Wrong charge"), ("Mortgage", "Closing", "Escrow")]
WORDS = {"Loan": "loan lender", "Fees": "fees interest charged", "Payments": "payment late due",
         "Credit report": "credit report bureau", "Incorrect information": "incorrect wrong information",
         "Debt collection": "debt collector collection", "Debt not owed": "owe debt paid",
         "Card": "card credit", "Billing": "billing statement", "Mortgage": "mortgage home",
         "Closing": "closing escrow"}


def write_cfpb(path: Path, n: int = 240, seed: int = 1) -> Path:
    rng = random.Random(seed)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for i in range(n):
            p, iss, sub = COMBOS[min(int(rng.expovariate(0.6)), len(COMBOS) - 1)]
            text = f"My {WORDS[p]} complaint about {WORDS[iss]} {(sub or '').lower()} number {i}."
            fh.write(json.dumps({"complaint_id": 1000 + i, "narrative": text, "product": p, "sub_product": None,
                                 "issue": iss, "sub_issue": sub, "company": "X", "state": "CA",
                                 "date_received": "2020-01-01"}) + "\n")
    return path


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    return write_cfpb(tmp_path / "complaints.jsonl.gz")


def tiny_grid(data: Path, **over) -> dict:
    ds = {"input": str(data), "n_records": [60], "m": [6], "units": ["record"]}
    ds.update(over.pop("dataset", {}))
    raw = {"name": "tiny", "datasets": {"cfpb": ds},
           "defaults": {"K": [2], "L": [3], "mechanism": ["laplace", "private_topL"], "epsilon": [1.0],
                        "delta": [1e-6], "seeds": 2, "max_attempts": 1}}
    raw["defaults"].update(over)
    return raw


def test_expand_templates_and_dedup():
    raw = {"name": "g", "datasets": {"amazon": {"n_records": [100], "n_users": [50], "B": [1, 2]}},
           "defaults": {"mechanism": ["laplace", "gaussian"], "epsilon": [1], "delta": [1e-6, 1e-5], "seeds": [0, 3]}}
    g = G.expand(raw)
    runs = g.runs
    rec = [r for r in runs if r["unit"] == "record"]
    usr = [r for r in runs if r["unit"] == "user"]
    # record: laplace once (δ is 0 for laplace) + gaussian for 2 δ, × 2 seeds; user: × 2 B
    assert len(rec) == (1 + 2) * 2 and len(usr) == (1 + 2) * 2 * 2
    assert {r["B"] for r in rec} == {1.0} and {r["B"] for r in usr} == {1.0, 2.0}
    assert {r["delta"] for r in runs if r["mechanism"] == "laplace"} == {0.0}
    assert all(r["profile"] == "beauty" and r["builder"] == "phrases" for r in runs)   # from the template
    assert {r["seed"] for r in runs} == {0, 3}
    assert len({r["run_id"] for r in runs}) == len(runs)
    # one preparation per (unit, m, K, …), shared by mechanisms, ε, δ, B and seeds
    assert len({r["prep_key"] for r in runs}) == 2
    assert rec[0]["input"].endswith("amazon_all_beauty_2023/reviews.jsonl.gz")


def test_expand_rejects_bad_settings():
    with pytest.raises(BadInput):
        G.expand({"datasets": {"nope": {}}})
    with pytest.raises(BadInput):
        G.expand({"datasets": {"cfpb": {"epsilonn": [1]}}})
    with pytest.raises(BadInput):
        G.expand({"datasets": {"cfpb": {"mechanism": ["exponential"]}}})
    with pytest.raises(BadInput):
        G.expand({"datasets": {"cfpb": {"seeds": 0}}})


def test_data_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("DPSPIN_DATA", raising=False)
    assert G.data_dir({}) == G.REPO_ROOT.parent / "shared" / "data"
    monkeypatch.setenv("DPSPIN_DATA", str(tmp_path))
    assert G.data_dir({}) == tmp_path
    assert G.data_dir({"data_dir": "../elsewhere"}) == (G.REPO_ROOT / "../elsewhere").resolve()


def test_grouping_keys_user_level_effective_records_not_a_key():
    base = {"dataset": "amazon", "unit": "user", "n_records": None, "n_users": 50, "m": 46, "m_effective": 46,
            "K": 3, "L": 10, "mechanism": "gaussian", "epsilon": 1.0, "delta": 1e-6, "B": 1.0}
    runs = []
    for seed, eff in ((0, 120), (1, 131), (2, 127)):
        cfg = dict(base, seed=seed, n_records_effective=eff)
        runs.append({"config": cfg, "metrics": {"mass_retained": 0.9 + seed / 100, "n_records_effective": eff},
                     "error": None})
    runs.append({"config": dict(base, seed=0, B=2.0), "metrics": {"mass_retained": 0.5}, "error": None})
    runs.append({"config": dict(base, seed=3), "metrics": None, "error": {"message": "x"}})
    rows = report.group_runs(runs)
    assert len(rows) == 2
    row = next(r for r in rows if r["B"] == 1.0)
    assert row["runs"] == 3 and row["failed"] == 1
    assert row["n"] == 50 and row["mass_retained_mean"] == pytest.approx(0.91)
    assert row["mass_retained_min"] == pytest.approx(0.9) and row["mass_retained_max"] == pytest.approx(0.92)
    assert row["mass_retained_std"] == pytest.approx(0.01)
    assert (row["n_records_effective_min"], row["n_records_effective_max"]) == (120, 131)
    assert report.group_key(runs[0]["config"]) == ("amazon", "user", 50, 46, 3, 10, "gaussian", 1.0, 1e-6, 1.0)
    csv_text = report.to_csv(rows)
    assert csv_text.splitlines()[0].startswith("dataset,unit,n,m,K,L,mechanism,epsilon,delta,B,runs,failed")
    assert "n_records_effective_mean" in csv_text


def test_run_artifacts_resume_and_report(tiny, tmp_path):
    out = tmp_path / "out"
    g = G.expand(tiny_grid(tiny))
    assert len(g.runs) == 4
    res = runner.run_grid(g, out, show_progress=False)
    assert (res.ok, res.failed) == (4, 0), res.failures
    for r in g.runs:
        d = out / "runs" / r["run_id"]
        for f in runner.RUN_FILES:
            assert (d / f).exists(), f
        cfg = yaml.safe_load((d / "config.yaml").read_text())
        assert cfg["n_records_effective"] == 60 and cfg["dictionary"].startswith("sha256:")
        assert cfg["m_effective"] == 6 and cfg["privacy_cost"]["epsilon"] <= 1.0
        met = json.loads((d / "metrics.json").read_text())
        assert 0 <= met["overlap_at_L"] <= 1 and met["truth_overlap_at_L"] is not None
        assert (met["full_err_l2"] is None) == (r["mechanism"] == "private_topL")
        plan = json.loads((d / "private_plan.json").read_text())
        assert len(plan["atoms"]) == 3 and "mass_topL" not in json.dumps(plan)
    assert (out / "report" / "grouped.csv").exists() and (out / "report" / "grouped.md").exists()
    assert list((out / "plots").glob("*.png"))
    assert (out / "stats" / "cfpb.json").exists()
    first = report.write_report(out)["markdown"]

    # resume: finished runs are kept; a half-written one (temp dir) and a removed one are redone
    keep = out / "runs" / g.runs[0]["run_id"] / "metrics.json"
    stamp = keep.stat().st_mtime_ns
    victim = out / "runs" / g.runs[1]["run_id"]
    shutil.rmtree(victim)
    half = out / "runs" / f".{g.runs[2]['run_id']}.tmp"
    half.mkdir()
    (half / "config.yaml").write_text("partial")
    broken = out / "runs" / g.runs[3]["run_id"] / "metrics.json"
    broken.unlink()                              # a run dir without its metrics is not finished
    res2 = runner.run_grid(g, out, show_progress=False, post=False)
    assert (res2.done_before, res2.ok, res2.failed) == (2, 2, 0)
    assert keep.stat().st_mtime_ns == stamp
    assert not half.exists() and (victim / "metrics.json").exists() and broken.exists()
    assert runner.run_grid(g, out, show_progress=False, post=False).ok == 0   # nothing left to do
    # the report reprints the same grouped table layout
    again = report.write_report(out)["markdown"]
    assert again.splitlines()[:6] == first.splitlines()[:6]


def test_clean_run_and_grid_isolation(tiny, tmp_path):
    out = tmp_path / "out"
    g1 = G.expand(tiny_grid(tiny, seeds=[0], mechanism=["laplace"]))
    runner.run_grid(g1, out, show_progress=False, post=False)
    g2 = G.expand(tiny_grid(tiny, seeds=[5], mechanism=["laplace"]))
    with pytest.raises(BadInput, match="different grid"):
        runner.run_grid(g2, out, show_progress=False, post=False)
    runner.run_grid(g2, out, clean_first=True, show_progress=False, post=False)
    names = sorted(p.name for p in (out / "runs").iterdir())
    assert names == [g2.runs[0]["run_id"]]          # g1's run is gone: summaries never mix grids


def test_strict_sample_size_and_failed_run_does_not_stop_grid(tiny, tmp_path):
    out = tmp_path / "out"
    # 60 fits the target split, 5000 does not: strict runs fail, the grid goes on
    g = G.expand(tiny_grid(tiny, dataset={"n_records": [60, 5000]}, mechanism=["laplace"], seeds=[0]))
    res = runner.run_grid(g, out, show_progress=False)
    assert (res.ok, res.failed) == (1, 1)
    bad = next(r for r in g.runs if r["n_records"] == 5000)
    err = json.loads((out / "runs" / bad["run_id"] / "error.json").read_text())
    assert "strict_sample_size" in err["message"]
    assert runner.run_state(out / "runs" / bad["run_id"]) == "failed"
    md = (out / "report" / "grouped.md").read_text()
    assert "failed runs" in md and bad["run_id"] in md
    # without strict sampling the run uses the units there are, and says so in its config
    g2 = G.expand(tiny_grid(tiny, dataset={"n_records": [5000]}, mechanism=["laplace"], seeds=[0],
                            strict_sample_size=False))
    res2 = runner.run_grid(g2, tmp_path / "out2", show_progress=False, post=False)
    assert res2.ok == 1
    cfg = yaml.safe_load((tmp_path / "out2" / "runs" / g2.runs[0]["run_id"] / "config.yaml").read_text())
    assert cfg["n_records"] == 5000 and cfg["sampled_units"] == cfg["n_records_effective"] < 5000


def test_failure_inside_a_run_is_recorded(tiny, tmp_path, monkeypatch):
    g = G.expand(tiny_grid(tiny, mechanism=["laplace"], epsilon=[1.0, 2.0], seeds=[0]))
    calls = {"n": 0}
    real = runner.release_capturing

    def flaky(prep, config, *a, **k):
        calls["n"] += 1
        if config.epsilon == 1.0:
            raise RuntimeError("boom")
        return real(prep, config, *a, **k)

    monkeypatch.setattr(runner, "release_capturing", flaky)
    res = runner.run_grid(g, tmp_path / "out", show_progress=False, post=False)
    assert (res.ok, res.failed) == (1, 1) and calls["n"] == 2
    assert res.failures[0][1] == "boom"
    monkeypatch.setattr(runner, "release_capturing", real)
    res = runner.run_grid(g, tmp_path / "out", show_progress=False, post=False)   # the failed run is retried
    assert (res.done_before, res.ok, res.failed) == (1, 1, 0)


def test_each_release_is_charged_to_the_ledger(tiny, tmp_path):
    from dpspin_sql import ledger, store

    g = G.expand(tiny_grid(tiny, seeds=[0]))
    runner.run_grid(g, tmp_path / "out", show_progress=False, post=False)
    con = store.connect(next((tmp_path / "out" / "prep").glob("*.duckdb")), read_only=True)
    try:
        rows = con.execute("SELECT dataset, epsilon FROM ledger").fetchall()
    finally:
        con.close()
    assert len(rows) == len(g.runs)
    assert {d.split("#")[0] for d, _ in rows} == {r["run_id"] for r in g.runs}
    assert all(0 < e <= 1.0 for _, e in rows)
    assert ledger  # imported for the schema


def test_release_capturing_sees_the_released_noise(tiny, tmp_path):
    """The full noisy vector read for the value errors is the one the plan's masses come from."""
    from dpspin_sql import ledger
    from dpspin_sql.request import ReleaseRequest
    from dpspin_sql.sketch import compute_sketch

    run = G.expand(tiny_grid(tiny, seeds=[0], mechanism=["laplace"])).runs[0]
    (tmp_path / "prep").mkdir()
    prep = runner.Prep.open(tmp_path / "prep", run)
    try:
        sk = compute_sketch(prep.con, "record", 2, 1.0)
        cfg = ReleaseRequest(mechanism="laplace", epsilon=1.0, unit="record", K=2, L=3)
        ledger.set_budget(prep.con, 1.0, 0.0, "t", experiment_run=True)
        plan, noisy = runner.release_capturing(prep, cfg, sk, "t", tmp_path / "plan.json")
        pos = {a.atom_id: i for i, a in enumerate(prep.atoms)}
        assert noisy is not None and len(noisy) == len(prep.atoms)
        assert [a.noisy_mass for a in plan.atoms] == [noisy[pos[a.atom_id]] for a in plan.atoms]
        assert ledger.status(prep.con, "t").epsilon_spent == pytest.approx(1.0)
        assert "apply" not in prep.mechanism(cfg).__dict__
        # a second release on the exhausted budget is refused, and the observer is gone again
        from dpspin_sql.errors import BudgetExceeded

        with pytest.raises(BudgetExceeded):
            runner.release_capturing(prep, cfg, sk, "t", tmp_path / "plan2.json")
        assert not (tmp_path / "plan2.json").exists()
    finally:
        prep.close()
