"""The README's examples run as written (Typer's rule: docs examples are tested), and
.ci/run runs exactly the README's test command."""
from __future__ import annotations

import re
import shlex
from pathlib import Path


from dpspin_sql import cli

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def bash_blocks(after_heading: str) -> list[str]:
    section = README.split(after_heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)```", section, flags=re.S)


def test_ci_runs_exactly_the_readme_test_command():
    test_command = bash_blocks("## Two commands")[1].strip()
    ci_lines = [ln for ln in (REPO / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith("#")]
    assert ci_lines[-1] == test_command


def test_the_pipeline_example_runs(shared_data, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for line in bash_blocks("## The pipeline")[0].strip().splitlines():
        argv = shlex.split(line.replace("../shared/data", str(shared_data)))
        assert argv[0] == "dpspin"
        rc = cli.run(argv[1:])
        assert rc == 0, f"{line!r} exited {rc}: {capsys.readouterr().err}"
    assert (tmp_path / "plan.json").exists() and (tmp_path / "summary.txt").exists()
