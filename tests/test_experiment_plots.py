"""The experiment figures, read back from the matplotlib objects: a log ε axis with every
grid value labelled as a plain number and no overlapping labels, y axes that name their
unit and never go below 0, and a bar chart for a single-ε grid."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")

from dpspin_sql.experiment import plots  # noqa: E402

PAPER_EPS = (0.1, 0.25, 0.5, 1, 2, 4, 10)


def rows(eps=PAPER_EPS, mechs=plots.MECHANISMS, loss_scale=400.0):
    out = []
    for k, mech in enumerate(mechs):
        for e in eps:
            mr = 1 - 0.5 * math.exp(-e) * (1 + 0.1 * k)
            r = dict(dataset="cfpb", unit="record", B=1.0, n=5000, m=50, K=3, L=10, mechanism=mech,
                     epsilon=float(e), delta=0.0 if mech == "laplace" else 1e-6)
            for metric, v in (("mass_retained", mr), ("overlap_at_L", mr - 0.05), ("loss_L", loss_scale * (1 - mr))):
                r |= {f"{metric}_mean": v, f"{metric}_min": v * 0.9, f"{metric}_max": min(v * 1.05, 1.0)
                      if metric != "loss_L" else v * 1.1}
            out.append(r)
    return out


def labels(ax):
    return [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


def assert_no_overlap(fig, ax):
    boxes = sorted(plots.tick_label_boxes(fig, ax, layout=False), key=lambda b: b.x0)
    for a, b in zip(boxes, boxes[1:]):
        assert a.x1 <= b.x0, f"tick labels overlap on {ax.get_title()!r}: {labels(ax)}"


def assert_y_axes(axes):
    ylabels = [ax.get_ylabel() for ax in axes]
    assert all(ylabels), ylabels
    assert "share" in ylabels[0] and "share" in ylabels[1]
    assert "units of mass" in ylabels[2]            # loss_L is unnormalised: in units of mass
    for ax in axes:
        assert ax.get_ylim()[0] >= 0, (ax.get_title(), ax.get_ylim())
    assert axes[0].get_ylim()[1] <= 1.06 and axes[1].get_ylim()[1] <= 1.06


@pytest.mark.parametrize("eps", [PAPER_EPS, (0.5, 1, 4), (3, 4), (1, 2, 3, 4, 5),
                                 (0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 1, 2, 3, 4, 5, 10)],
                         ids=["paper", "smoke", "three-four", "one-to-five", "dense"])
def test_eps_axis_labels_every_grid_value(eps):
    fig = plots.utility_figure(rows(eps), "test")
    try:
        axes = fig.axes
        assert len(axes) == 3
        fig.draw_without_rendering()
        for ax in axes:
            assert ax.get_xscale() == "log"
            assert list(ax.get_xticks()) == [float(e) for e in eps]
            assert labels(ax) == [f"{e:g}" for e in eps]             # plain numbers, the smallest included
            assert not any("$" in t or "times" in t for t in labels(ax))   # no mathtext like 3×10^0
            assert [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()] == []
            lo, hi = ax.get_xlim()
            assert lo < min(eps) and hi > max(eps)                   # no point on the frame
            assert "ε" in ax.get_xlabel()
            assert_no_overlap(fig, ax)
        assert_y_axes(axes)
        # one line per mechanism, each with a point at every ε
        for ax in axes:
            lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(eps)]
            assert len(lines) == 3
        assert [t.get_text() for t in axes[0].get_legend().get_texts()] == [plots.LABELS[m] for m in plots.MECHANISMS]
    finally:
        plots._plt().close(fig)


def test_single_eps_grid_is_a_bar_chart():
    fig = plots.utility_figure(rows((1,)), "single")
    try:
        fig.draw_without_rendering()
        for ax in fig.axes:
            assert ax.get_xscale() == "linear"
            bars = [p for p in ax.patches if p.get_height() > 0]
            assert len(bars) == 3                                     # one bar per mechanism
            assert "ε = 1" in ax.get_xlabel()
            assert [t.replace("\n", " ") for t in labels(ax)] == [plots.SHORT[m].replace("\n", " ")
                                                                  for m in plots.MECHANISMS]
            top = max(b.get_height() for b in bars)
            assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] >= top
            assert_no_overlap(fig, ax)
        assert_y_axes(fig.axes)
    finally:
        plots._plt().close(fig)


def test_zero_loss_keeps_a_positive_axis():
    fig = plots.utility_figure(rows((1, 4), loss_scale=0.0), "zero loss")
    try:
        assert fig.axes[2].get_ylim() == (0.0, 1.0)
    finally:
        plots._plt().close(fig)
    fig = plots.utility_figure(rows((1,), loss_scale=0.0), "zero loss, one ε")
    try:
        assert fig.axes[2].get_ylim() == (0.0, 1.0)
    finally:
        plots._plt().close(fig)


def test_write_all_single_and_multi_eps(tmp_path):
    written = plots.write_all(tmp_path, {"rows": rows((1,)) + [dict(r, n=6000) for r in rows((0.5, 1))]})
    assert len(written) == 2 and all(p.stat().st_size > 10_000 for p in written)


def test_probe_figure_axes():
    probe_rows = [dict(dataset="cfpb", unit="record", n=60, m=7, K=2, L=3, mechanism="laplace", epsilon=4.0,
                       delta=0.0, probe_support=s, probe_admitted_mean=a, probe_mentioned_mean=a)
                  for s, a in ((0, 0.0), (20, 0.5), (40, 1.0))]
    fig = plots.probe_figure(probe_rows, "probe")
    try:
        for ax in fig.axes:
            assert ax.get_ylabel().startswith("share of") and ax.get_ylim() == (0.0, 1.05)
        assert "ε=4" in fig.axes[0].get_legend().get_texts()[0].get_text()
    finally:
        plots._plt().close(fig)


def test_plots_module_imports_matplotlib_lazily():
    code = ("import sys, dpspin_sql.experiment.plots, dpspin_sql.cli, dpspin_sql.card, dpspin_sql.cli.card; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
