"""What a consolidation worker imports to decide its mode: the config and the rem-agent's choice, without
asyncio, the hook runner or the agent adapters (a worker is a process per session end; each of those was
~30-50 ms of CPU of its start, and the test gate starts ~60 workers).

The worker reads config.toml to choose between agent and offline mode (kairosd.consolidation.worker._agent);
the config names the events a [hooks] command may have, which lived in kairosd.system.lifecycle (with
asyncio and the process runner) and are now kairosd.core.defaults'.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# The worker's imports at its start, then those of its agent-mode branch (in the order _agent makes them),
# a config loaded and a mode chosen; then what is in sys.modules.
PROBE = """
import json, sys
import kairosd.consolidation.worker
from kairosd.config import load_config
from kairosd.consolidation.remagent import modes
from kairosd.consolidation.remagent.protocol import chunks, prompt_for
from kairosd.consolidation.remagent.run import choose, run_rem_agent
from kairosd.system.paths import Paths

config = load_config(Paths.from_env({"KAIROS_HOME": sys.argv[1]}), {})
setup, why = choose(config, "auto", "claude", sys.argv[1], {"PATH": ""})
print(json.dumps({"setup": setup, "why": why, "modules": sorted(sys.modules)}))
"""


def test_choosing_the_mode_imports_no_asyncio_hook_runner_or_adapters(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["setup"] is None  # auto mode, no CLI integrated: offline
    assert seen["why"].startswith("auto: ")
    modules = set(seen["modules"])
    assert "kairosd.config" in modules  # the probe did read the config
    heavy = ("asyncio", "kairosd.system.lifecycle", "kairosd.system.runner", "kairosd.agents.adapters")
    assert sorted(m for m in heavy if m in modules) == []
