"""The README's first two commands are what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert block[0] in ci and block[1] in ci
    assert ci.index(block[0]) < ci.index(block[1])
