"""The probe-atom experiment and the `dpspin experiment` commands on a tiny corpus."""
from __future__ import annotations

import json

import yaml

from dpspin_sql.experiment import grid as G
from dpspin_sql.experiment import report, runner
from tests.test_experiment_runner import tiny, tiny_grid, write_cfpb  # noqa: F401


def test_probe_runs(tiny, tmp_path):
    raw = tiny_grid(tiny)
    raw["datasets"] = {}
    raw["probe"] = {"dataset": "cfpb", "label": "Crypto / Frozen withdrawal", "description": "crypto frozen",
                    "texts": ["crypto withdrawal frozen", "frozen crypto withdrawal again"],
                    "support": [0, 40], "mechanism": ["laplace"], "epsilon": [4.0], "seeds": 2,
                    "n_records": 60, "m": 6, "L": 3, "K": 2}
    raw["datasets"] = {"cfpb": {"input": str(tiny)}}
    raw["datasets"]["cfpb"]["n_records"] = [60]
    raw["datasets"]["cfpb"]["m"] = [6]
    raw["defaults"]["mechanism"] = []          # only probe runs
    raw["defaults"]["scorer"] = "keyword"      # label words score directly (no aux document frequency)
    g = G.expand(raw)
    assert len(g.runs) == 4 and all(r["probe"] for r in g.runs)
    assert len({r["prep_key"] for r in g.runs}) == 1     # s is not part of the preparation
    out = tmp_path / "out"
    res = runner.run_grid(g, out, show_progress=False)
    assert (res.ok, res.failed) == (4, 0), res.failures
    mets = {r["run_id"]: json.loads((out / "runs" / r["run_id"] / "metrics.json").read_text()) for r in g.runs}
    for r in g.runs:
        m = mets[r["run_id"]]
        s = r["probe"]["support"]
        cfg = yaml.safe_load((out / "runs" / r["run_id"] / "config.yaml").read_text())
        assert m["probe_support"] == s and cfg["probe_records"] == s
        assert cfg["m_effective"] == 7                   # 6 aux atoms + the probe
        if s == 0:
            assert m["probe_admitted"] == 0.0 and m["probe_np_mass"] == 0.0
        else:
            # 40 records ≫ the 60-record sample's other atoms: rank 1, admitted at ε=4
            assert m["probe_np_rank"] == 1 and m["probe_admitted"] == 1.0 and m["probe_mentioned"] == 1.0
        assert cfg["n_records_effective"] == 60 + s
    rows = report.write_report(out)["probe_rows"]
    assert [(r["probe_support"], r["probe_admitted_mean"]) for r in rows] == [(0, 0.0), (40, 1.0)]
    assert (out / "report" / "probe.csv").exists()
    assert list((out / "plots").glob("probe-*.png"))
    # probe records never stay in the store
    from dpspin_sql import store

    con = store.connect(next((out / "prep").glob("*.duckdb")), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM records WHERE starts_with(record_id, 'probe-')").fetchall()[0][0] == 0
    finally:
        con.close()


def test_cli_run_and_report(tiny, tmp_path, capsys):
    from dpspin_sql.cli import run

    gpath = tmp_path / "g.yaml"
    gpath.write_text(yaml.safe_dump(tiny_grid(tiny, mechanism=["gaussian"], seeds=[0, 1])))
    out = tmp_path / "out"
    assert run(["experiment", "run", str(gpath), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "## cfpb — record level" in printed and "gaussian" in printed
    table = [ln for ln in printed.splitlines() if ln.startswith("| 60 |")]
    assert len(table) == 1
    assert run(["experiment", "report", str(out)]) == 0
    again = capsys.readouterr().out
    assert table[0] in again                             # the report reprints the same table
    assert run(["experiment", "report", str(tmp_path / "nothing")]) == 2
    assert run(["experiment", "run", str(gpath), "--out", str(out), "--clean", "--no-progress"]) == 0
