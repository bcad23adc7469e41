"""The red-team script, quick: every probe against a real kairosd, and nothing may break (issue 27).

``scripts/redteam.py`` judges consequences (a daemon that stops answering, a hung CLI, a 500, a
secret in the log, a write through a link, growth past a bound, a surviving process). Its full run
gives README's figures; here it runs with ``--quick``, fewer inputs of each kind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from paths_support import REPO

SCRIPT = REPO / "scripts" / "redteam.py"


@pytest.mark.slow
@pytest.mark.stress
@pytest.mark.serial  # it plants /tmp/runtime-0 for a moment and starts many daemons: not beside other tests
def test_the_quick_red_team_run_breaks_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=tmp_path,
        check=False,
    )
    assert done.stdout.strip(), done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    broken = {name: probe["broke"] for name, probe in report["probes"].items() if probe["broke"]}
    assert report["broke"] == 0, json.dumps(broken, indent=1)
    assert report["tried"] > 1000
    assert done.returncode == 0
