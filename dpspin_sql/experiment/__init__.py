"""Experiment harness (docs/DESIGN.md §9): grids of runs, metrics, grouped reports, plots.

- `grid`    — expand a grid YAML from per-dataset default templates into run configs
- `runner`  — run / resume / clean a grid, one directory of artifacts per run
- `metrics` — pure metric functions (plan, value error, verifier, text, probe)
- `report`  — grouping across seeds, CSV and Markdown
- `stats`   — dataset statistics per preset
- `plots`   — matplotlib PNGs (Agg backend)
- `probe`   — the probe-atom experiment
- `cli`     — `dpspin experiment run|report`
"""
