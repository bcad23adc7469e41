"""``POST /v1/export`` and ``kairos export``: each task's command built as a fire builds it, then rendered.

The exporter runs with the real config model, agent catalog and adapters (what
kairosd wires), so an exported agent task carries exactly the argv the adapter
gives a fire: the configured model and extra arguments, the permission ceiling,
the prompt on stdin. The end-to-end test runs a real kairosd and the CLI: one ``kairos export`` as
a real process, the other calls in this process (tests/cli_inprocess_support.py; what they print,
write and refuse is the test).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import pytest
from cli_inprocess_support import kairos_here
from cli_support import kairosd_answers

from kairosd.agents.adapters import adapter_for
from kairosd.agents.base import TurnRequest
from kairosd.api.requests import parse_body
from kairosd.app.wiring import agent_policy
from kairosd.config import Config
from kairosd.core.errors import NotFoundError, UsageError
from kairosd.core.models import AgentTarget, InboxTarget, ShellTarget, Task, new_task
from kairosd.core.wire import verbs as documents
from kairosd.export import ENGINES
from kairosd.export.api import Exporter
from kairosd.export.requests import Engine, ExportRequest

NOW = datetime(2026, 11, 24, 6, 0, tzinfo=UTC)


def make_config() -> Config:
    return Config.model_validate(
        {
            "agents": {
                "claude": {"model": "sonnet", "extra_args": ["--max-turns", "5"], "permission_mode": "plan"},
            }
        }
    )


def exporter(tasks: list[Task], config: Config | None = None, path: str = "/usr/bin:/bin", **environ: str) -> Exporter:
    cfg = config or make_config()
    return Exporter(
        lambda: tasks,
        lambda cli: adapter_for(cli, cfg),
        lambda name, cwd: agent_policy(cfg, name, cwd),
        3600.0,
        lambda: NOW,
        {"PATH": path, **environ},
    )


def agent_task(**fields) -> Task:
    fields.setdefault("target", AgentTarget(agent="claude", cwd="/srv/app"))
    return new_task(prompt="summarise open PRs", created_at=NOW - timedelta(days=1), tz="Europe/Berlin", **fields)


def test_agent_task_gets_the_adapters_own_argv(tmp_path):
    task = agent_task(cron="0 9 * * mon-fri")
    cfg = make_config()
    expected = adapter_for("claude", cfg).command(
        TurnRequest(prompt=task.prompt, cwd="/srv/app", permissions=cfg.ceiling("claude"))
    )
    job = exporter([task], cfg).job(task)
    assert list(job.argv) == expected.argv
    assert list(job.argv[job.argv.index("--model") : job.argv.index("--model") + 2]) == ["--model", "sonnet"]
    assert "--max-turns" in job.argv
    assert "--permission-mode=plan" in job.argv  # the configured ceiling
    assert job.stdin == task.prompt
    assert job.timeout_s == cfg.timeout_s("claude")
    assert dict(job.env)["KAIROS_SPAWNED"] == "1"
    assert job.secret_env == ("ANTHROPIC_API_KEY",)


def test_systemd_gets_the_binary_kairosd_would_find(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\n")
    (bin_dir / "claude").chmod(0o755)
    task = agent_task(cron="0 9 * * *")
    doc = exporter([task], path=f"{bin_dir}:/usr/bin").export(_request({"to": "systemd", "ids": [task.id]}))
    (item,) = doc["exports"]
    service = next(f["text"] for f in item["files"] if f["name"].endswith(".service"))
    assert f'ExecStart="{bin_dir}/claude" "-p"' in service
    assert f'Environment="PATH={bin_dir}:/usr/bin"' in service
    missing = exporter([task], path="/nowhere").export(_request({"to": "systemd", "ids": [task.id]}))
    assert any("not on kairosd's PATH" in w for w in missing["exports"][0]["warnings"])


def test_systemd_unit_runs_in_the_folder_the_task_records():
    """Issue 24, item 1: kairos ran a task in one folder and its systemd export in another. The unit
    runs where kairos runs the task: its recorded folder, and without one the home folder (the
    systemd user manager's default, so no WorkingDirectory= line)."""
    task = agent_task(cron="0 9 * * *")
    doc = exporter([task]).export(_request({"to": "systemd", "ids": [task.id]}))
    service = next(f["text"] for f in doc["exports"][0]["files"] if f["name"].endswith(".service"))
    assert "WorkingDirectory=/srv/app\n" in service
    bare = agent_task(cron="0 9 * * *", target=AgentTarget(agent="claude"))
    doc = exporter([bare]).export(_request({"to": "systemd", "ids": [bare.id]}))
    service = next(f["text"] for f in doc["exports"][0]["files"] if f["name"].endswith(".service"))
    assert "WorkingDirectory=" not in service


def test_systemd_asks_for_an_api_key_only_if_kairosd_has_one():
    """On this machine the CLI has its own login; kairosd's own ANTHROPIC_API_KEY goes to the env file."""
    task = agent_task(cron="0 9 * * *")

    def service(ex: Exporter) -> tuple[str, list[str]]:
        (item,) = ex.export(_request({"to": "systemd", "ids": [task.id]}))["exports"]
        return next(f["text"] for f in item["files"] if f["name"].endswith(".service")), item["warnings"]

    text, warnings = service(exporter([task]))
    assert "EnvironmentFile" not in text
    text, warnings = service(exporter([task], ANTHROPIC_API_KEY="sk-secret"))
    assert "EnvironmentFile=-%h/.config/kairos/export.env" in text
    assert "sk-secret" not in text
    assert any(w.startswith("ANTHROPIC_API_KEY: not written into the unit") for w in warnings)


def test_refusals_are_listed_and_do_not_stop_the_others():
    good = agent_task(cron="0 9 * * *")
    inbox = agent_task(cron="0 9 * * *", target=InboxTarget())
    shell = agent_task(cron="0 9 * * *", target=ShellTarget(argv=["make", "report"]))
    doc = exporter([good, inbox, shell]).export(_request({"to": "kubernetes", "all": True, "image": "node:22"}))
    assert [e["task_id"] for e in doc["exports"]] == [good.id]
    reasons = {r["task_id"]: r["reason"] for r in doc["refused"]}
    assert "inbox target" in reasons[inbox.id]
    assert "shell target" in reasons[shell.id]
    systemd = exporter([shell]).export(_request({"to": "systemd", "ids": [shell.id]}))
    assert systemd["refused"] == []  # a shell target runs on this machine
    assert any("KAIROS_PROMPT" in f["text"] for f in systemd["exports"][0]["files"])


def test_an_agent_the_config_does_not_know_is_a_refusal():
    task = agent_task(cron="0 9 * * *", target=AgentTarget(agent="nosuch"))
    doc = exporter([task]).export(_request({"to": "systemd", "ids": [task.id]}))
    assert doc["exports"] == []
    assert "nosuch" in doc["refused"][0]["reason"]


def test_bad_requests():
    task = agent_task(cron="0 9 * * *")
    ex = exporter([task])
    with pytest.raises(NotFoundError, match="no task starts with '00000000'"):
        ex.export(_request({"to": "systemd", "ids": [task.id, "00000000"]}))
    with pytest.raises(UsageError, match="to: Input should be 'systemd', 'kubernetes' or 'github-actions'"):
        ex.export(_request({"to": "cron", "ids": [task.id]}))
    with pytest.raises(UsageError, match="ids"):
        ex.export(_request({"to": "systemd"}))
    with pytest.raises(UsageError, match="ids"):
        ex.export(_request({"to": "systemd", "ids": []}))
    with pytest.raises(UsageError, match=r"secret_env\.0: 'not a name' is not an environment variable name"):
        ex.export(_request({"to": "systemd", "ids": [task.id], "secret_env": ["not a name"]}))
    with pytest.raises(UsageError, match="secret_env: List should have at most 20 items"):
        ex.export(_request({"to": "systemd", "ids": [task.id], "secret_env": ["A"] * 21}))
    with pytest.raises(UsageError, match="image: must be a non-empty string"):
        ex.export(_request({"to": "kubernetes", "all": True, "image": "  "}))
    with pytest.raises(UsageError, match="colour: unknown field"):
        ex.export(_request({"to": "systemd", "all": True, "colour": 1}))


def test_the_request_model_names_every_engine():
    assert get_args(Engine) == ENGINES


def _request(body: dict[str, Any]) -> ExportRequest:
    """The body as the route parses it (one UsageError line for a malformed one)."""
    return parse_body(ExportRequest, body)


# ---- end to end: a real kairosd, the CLI ------------------------------------------------------------


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kx"))
    # kairos refuses an agent target whose CLI is not installed: a stand-in `claude` (never run here).
    bin_dir = home / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\necho 2.1.0\n")
    (bin_dir / "claude").chmod(0o755)
    environ = {**os.environ, "KAIROS_HOME": str(home / "k"), "TZ": "UTC", "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kairosd"], env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 15
        while not kairosd_answers(environ):
            assert proc.poll() is None, "kairosd exited"
            assert time.monotonic() < deadline, "kairosd did not answer"
            time.sleep(0.05)
        yield environ
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(home, ignore_errors=True)


def kairos(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``kairos ARGS`` in this process, with ``environ``."""
    return kairos_here(*args, env=environ)


def kairos_process(environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kairos", *args], env=environ, capture_output=True, text=True, timeout=30, check=False
    )


@pytest.mark.slow
def test_cli_exports_writes_prints_and_refuses(env, tmp_path):
    add = kairos(env, "add", "30 2 * * *", "--tz", "Europe/Berlin", "--agent", "claude", "nightly report", "--json")
    assert add.returncode == 0, add.stderr
    task_id = json.loads(add.stdout)["task"]["id"]
    inbox_id = json.loads(kairos(env, "add", "0 9 * * *", "stand-up", "--json").stdout)["task"]["id"]

    out = tmp_path / "units"
    proc = kairos_process(env, "export", task_id, "--to", "systemd", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"kairos-{task_id}.service", f"kairos-{task_id}.timer"]
    assert "OnCalendar=*-*-* 02:30:00 Europe/Berlin" in (out / f"kairos-{task_id}.timer").read_text()
    assert f"wrote {out}/kairos-{task_id}.timer" in proc.stdout
    assert "warning: task" in proc.stderr
    assert "2027-03-28" in proc.stderr

    printed = kairos(env, "export", task_id, "--to", "kubernetes", "--image", "node:22")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith(f"# ==> kairos-{task_id}.yaml <==\napiVersion: ")

    both = kairos(env, "export", "--all", "--to", "github-actions", "--json")
    assert both.returncode == 1  # the inbox task was refused
    doc = json.loads(both.stdout)
    documents.check("export", doc)
    assert [e["task_id"] for e in doc["exports"]] == [task_id]
    assert doc["refused"][0]["task_id"] == inbox_id
    assert f"refused: task {inbox_id}: an inbox target" in both.stderr

    usage = kairos(env, "export", task_id, "--to", "kubernetes")
    assert usage.returncode == 2
    assert "--image" in usage.stderr
    missing = kairos(env, "export", "00000000", "--to", "systemd")
    assert missing.returncode == 1
    assert "no task starts with '00000000'" in missing.stderr


def test_export_takes_a_prefix_in_any_case():
    """Issue 24, item 10: export resolves ids as every other verb does."""
    task = agent_task(cron="0 9 * * *")
    doc = exporter([task]).export(_request({"to": "systemd", "ids": [task.id[:5].upper()]}))
    assert [e["task_id"] for e in doc["exports"]] == [task.id]
