"""The compatibility suite's fixtures: the real CLIs, the fake model, a sandboxed user and kairosd.

The suite runs only when asked for (``pytest -m compat`` or ``KAIROS_COMPAT=1``, which
``scripts/compat`` sets): it installs five CLIs from npm and takes minutes. Without node and npm
every test skips and says so.

Each test that feeds the README's matrix carries ``@pytest.mark.feature(NAME)`` and a ``cli``
parameter; the outcome of every (cli, feature) pair is written to ``last-run.json`` in the cache
folder (``KAIROS_COMPAT_RESULTS`` moves it) for ``scripts/compat-matrix``. A test that skips with a
reason starting ``unsupported:`` counts as "not supported" there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from environment_support import suite_setting

from compat import clis
from compat.capture import capture
from compat.fakemodel import FakeModel, last_user_text
from kairosd import testing

UNSUPPORTED = "unsupported: "
_results: dict[tuple[str, str], dict[str, str]] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    selected = "compat" in (config.option.markexpr or "") or suite_setting("KAIROS_COMPAT") == "1"
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    for item in items:
        if here not in Path(str(item.fspath)).parents:
            continue
        item.add_marker(pytest.mark.compat)
        item.add_marker(pytest.mark.slow)
        cli = getattr(item, "callspec", None) and item.callspec.params.get("cli")
        low = clis.node_too_old(cli) if selected and cli and not missing else None
        if low:
            item.add_marker(pytest.mark.skip(reason=low))
        if not selected:
            item.add_marker(pytest.mark.skip(reason="real agent CLIs: run scripts/compat (or pytest -m compat)"))
        elif missing:
            item.add_marker(pytest.mark.skip(reason=f"real agent CLIs need {' and '.join(missing)}, not installed"))


def pytest_report_header(config: pytest.Config) -> list[str]:
    """What this run tests and where it writes: the versions (pinned, or ``--latest``'s) and the suite's
    settings, as the tests will read them."""
    versions = ", ".join(f"{cli} {clis.version(cli)}" for cli in clis.CLIS)
    chosen = "newest" if suite_setting("KAIROS_COMPAT_VERSIONS") else "pinned"
    return [
        f"compat versions ({chosen}): {versions}",
        f"compat results: {results_path()}",
        f"compat capture: {suite_setting('KAIROS_COMPAT_CAPTURE') or 'off'}; "
        f"keep sandboxes: {'on' if suite_setting('KAIROS_COMPAT_KEEP') == '1' else 'off'}; "
        f"long idle case: {'on' if suite_setting('KAIROS_COMPAT_LONG') == '1' else 'off'}",
    ]


def results_path() -> Path:
    return Path(suite_setting("KAIROS_COMPAT_RESULTS") or clis.cache_dir() / "last-run.json")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    marker = item.get_closest_marker("feature")
    params = getattr(item, "callspec", None)
    cli = params.params.get("cli") if params else None
    if marker is None or cli is None:
        return report
    if report.when == "call" or (report.when == "setup" and not report.passed):
        status = "verified" if report.passed else "failing"
        detail = ""
        if hasattr(report, "wasxfail"):  # a known failure (xfail): failing, with the reason
            status, detail = "failing", str(report.wasxfail).removeprefix("reason: ")
        elif report.skipped:
            reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
            reason = reason.removeprefix("Skipped: ")
            status = "unsupported" if reason.startswith(UNSUPPORTED) else "skipped"
            detail = reason.removeprefix(UNSUPPORTED)
        elif report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            detail = (getattr(crash, "message", "") or str(report.longrepr)).strip().splitlines()[0][:200]
        for feature in marker.args:
            key = (cli, feature)
            previous = _results.get(key)
            # One cell, several tests (interactive and headless MCP): the worst outcome wins.
            order = ["verified", "unsupported", "skipped", "failing"]
            if previous is None or order.index(status) >= order.index(previous["status"]):
                _results[key] = {"status": status, "detail": detail, "test": item.nodeid}
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not _results or all(r["status"] == "skipped" for r in _results.values()):
        return
    out = results_path()
    versions = {cli: clis.version(cli) for cli in clis.CLIS}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(merged_results(out, versions, _results), indent=2) + "\n")


def merged_results(
    path: Path, versions: dict[str, str], results: dict[tuple[str, str], dict[str, str]]
) -> dict[str, Any]:
    """What ``last-run.json`` holds after this run: a run of part of the suite (``-k``, one file) updates
    the cells it ran and keeps the others of an earlier run of the same versions; other versions start over."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError):
        earlier = None
    if isinstance(earlier, dict) and earlier.get("versions") == versions:
        for row in earlier.get("results") or []:
            cells[(row["cli"], row["feature"])] = {k: v for k, v in row.items() if k not in ("cli", "feature")}
    cells.update(results)
    return {"versions": versions, "results": [{"cli": c, "feature": f, **r} for (c, f), r in sorted(cells.items())]}


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    return testing.wait_for(condition, what, timeout, poll=0.1)


def due_during_a_held_turn(world: World, typed: str) -> str:
    """Type ``typed`` (a ``HOLD`` prompt) into the running TUI and, while the fake model holds that turn, make a
    prompt (``SAY:second``) due for the project: return the text the model then receives for it."""
    world.model.hold()
    try:
        world.type(typed, enter=False)
        wait_for(lambda: typed in world.screen(), "the typed prompt on screen", 60)

        def submitted() -> bool:  # a TUI may take the Enter only once it has read the pasted line
            world.tmux("send-keys", "-t", "cli", "Enter")
            return world.model.held.wait(5)

        try:
            wait_for(submitted, "the held turn to reach the model", 120)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{world.screen()}") from None
        wait_for(lambda: world.kairos_json("sessions")["sessions"], "the session to register", 60)
        world.kairos("add", "--in", "1s", "--project", str(world.project), "--fallback", "drop", "SAY:second")
        wait_for(lambda: any(s.get("pending") for s in world.kairos_json("sessions")["sessions"]), "a pending prompt")
    finally:
        world.model.release()
    delivered = wait_for(
        lambda: [u for u in (last_user_text(r) or "" for r in world.model.conversation()) if "SAY:second" in u],
        "the due prompt to reach the model",
        120,
    )
    return str(delivered[0])


def kairos_script() -> str:
    """The kairos console script of this environment: what integrate writes into the CLIs' files."""
    found = Path(sys.executable).parent / "kairos"
    if not found.exists():
        pytest.fail(f"no kairos script next to {sys.executable}: install kairos (pip install -e .)")
    return str(found)


def reap(home: Path, grace: float = 5.0) -> list[str]:
    """End every process still running as this world's user (``HOME`` is the sandbox's home): what a CLI
    left behind when its TUI went (MCP servers, waiters, Gemini's relauncher, which ignores SIGTERM).
    SIGTERM first, then SIGKILL by pid after ``grace`` seconds; returns the command lines it had to kill."""
    import psutil

    mine = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.pid != os.getpid() and proc.environ().get("HOME") == str(home):
                mine.append(proc)
        except psutil.Error:
            continue
    for proc in mine:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(mine, timeout=grace)
    killed = []
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            killed.append(" ".join(proc.cmdline()[:3]))
            proc.kill()
    psutil.wait_procs(alive, timeout=grace)
    return killed


class World:
    """One sandboxed user: a CLI, the fake model, kairosd, and helpers to drive them."""

    def __init__(self, cli: str, root: Path, model: FakeModel) -> None:
        self.cli = cli
        self.model = model
        self.binary = str(clis.install(cli))
        self.sandbox = clis.Sandbox(root, model.url, root / "k")
        self.env = self.sandbox.prepare(cli)
        self.daemon: subprocess.Popen[bytes] | None = None

    @property
    def project(self) -> Path:
        return self.sandbox.project

    @property
    def home(self) -> Path:
        return self.sandbox.home

    def kairos(self, *args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [kairos_script(), *args], env=self.env, cwd=cwd or self.project, capture_output=True, text=True, timeout=60
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kairos {' '.join(args)} exited {proc.returncode}: {proc.stderr}{proc.stdout}")
        return proc

    def kairos_json(self, *args: str) -> Any:
        return json.loads(self.kairos(*args, "--json").stdout)

    def start_daemon(self) -> None:
        self.sandbox.kairos_home.mkdir(parents=True, exist_ok=True)
        log = open(self.sandbox.root / "kairosd.log", "wb")  # noqa: SIM115 - the daemon outlives this call
        self.daemon = subprocess.Popen([sys.executable, "-m", "kairosd"], env=self.env, stdout=log, stderr=log)
        log.close()
        wait_for(lambda: self.kairos("status", check=False).returncode == 0, "kairosd to answer", 30)

    def integrate(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.kairos("integrate", self.cli, "--kairos", kairos_script(), *extra)

    def trust_codex_hooks(self) -> int:
        """What a user does in Codex's /hooks: trust every hook, written by Codex itself (its app-server).

        Returns how many hooks it trusted. Codex writes ``[hooks.state."KEY"] trusted_hash`` into
        config.toml with its own TOML editor, so the file ends up exactly as the TUI leaves it.
        """
        proc = subprocess.Popen(
            [self.binary, "app-server"], env=self.env, cwd=self.project, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert proc.stdin is not None
        assert proc.stdout is not None

        def call(request_id: int, method: str, params: dict[str, Any]) -> Any:
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            proc.stdin.write("\n")
            proc.stdin.flush()
            for line in proc.stdout:
                message = json.loads(line)
                if message.get("id") == request_id:
                    assert "error" not in message, message
                    return message["result"]
            raise AssertionError(f"codex app-server ended before answering {method}")

        try:
            call(1, "initialize", {"clientInfo": {"name": "kairos-compat", "version": "1"}})
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
            listed = call(2, "hooks/list", {"cwds": [str(self.project)]})
            hooks = [h for entry in listed["data"] for h in entry["hooks"] if h.get("trustStatus") != "trusted"]
            if hooks:
                state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks}
                call(3, "config/value/write", {"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"})
            return len(hooks)
        finally:
            proc.stdin.close()
            proc.stdout.close()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def run(
        self, argv: list[str], *, stdin: str | None = None, env: dict[str, str] | None = None, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            input=stdin or "",
            env={**self.env, **(env or {})},
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    # ---- interactive sessions under tmux (a private server per world) ----

    @property
    def tmux_socket(self) -> str:
        return str(self.sandbox.root / "tmux.sock")

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-S", self.tmux_socket, *args], capture_output=True, text=True, check=check)

    def start_interactive(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Start ``argv`` in the project folder in a 200x50 tmux window, with this world's environment and
        nothing else of the suite's: the tmux server inherits the test run's environment, and a CI runner's
        ``CI``/``CI_*`` variables make Gemini CLI skip its TUI (is-in-ci) and wait for a prompt on stdin. A
        user's terminal has only what tmux adds (``TMUX``, ``TMUX_PANE``), and so does this window."""
        script = self.sandbox.root / "interactive.sh"
        pairs = [f"{k}={v}" for k, v in {**self.env, **(env or {})}.items()]
        script.write_text(
            f"cd {shlex.quote(str(self.project))}\n"
            f'exec env -i TMUX="$TMUX" TMUX_PANE="$TMUX_PANE" {shlex.join(pairs)} {shlex.join(argv)}\n'
        )
        self.tmux("new-session", "-d", "-s", "cli", "-x", "200", "-y", "50", "bash", str(script))
        self.interactive = True

    def mcp_server_up(self, min_age: float = 3.0) -> bool:
        """A ``kairos mcp`` of this world has run for ``min_age`` seconds (time to answer the handshake)."""
        import psutil

        for proc in psutil.process_iter(["cmdline", "create_time"]):
            cmd = proc.info["cmdline"] or []
            if len(cmd) >= 2 and cmd[-1] == "mcp" and any(c.endswith("kairos") for c in cmd[:-1]):
                try:
                    mine = proc.environ().get("KAIROS_HOME") == str(self.sandbox.kairos_home)
                except psutil.Error:
                    continue
                if mine and time.time() - proc.info["create_time"] >= min_age:
                    return True
        return False

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "cli", check=False).stdout

    def type(self, text: str, *, enter: bool = True) -> None:
        self.tmux("send-keys", "-t", "cli", "-l", text)
        if enter:
            time.sleep(0.3)  # a TUI reads a pasted line and Enter apart only with a gap between them
            self.tmux("send-keys", "-t", "cli", "Enter")

    def stop(self) -> None:
        if getattr(self, "interactive", False):
            self.tmux("kill-server", check=False)
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            try:
                self.daemon.wait(15)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        self.reaped = reap(self.home)


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with FakeModel() as fake:
        yield fake


@pytest.fixture
def world_factory(model: FakeModel) -> Iterator[Callable[[str], World]]:
    made: list[tuple[World, Path]] = []

    def make(cli: str) -> World:
        root = Path(tempfile.mkdtemp(prefix="kc", dir="/tmp"))  # short: kairosd's socket path
        try:
            world = World(cli, root, model)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            shutil.rmtree(root, ignore_errors=True)
            pytest.skip(f"{cli} could not be installed from npm: {exc}")
        made.append((world, root))
        return world

    yield make
    for world, root in made:
        world.stop()
        # Reaped once by pid (SIGKILL for what ignored SIGTERM): nothing may come back after that.
        assert reap(world.home, grace=1.0) == [], f"processes of the {world.cli} world came back after it ended"
        captures = suite_setting("KAIROS_COMPAT_CAPTURE")
        if captures:  # sanitized transcripts for transcript readers (scripts/compat --capture DIR)
            test = os.environ.get("PYTEST_CURRENT_TEST", "test").split("::")[-1].split(" ")[0]
            capture(world.cli, world.home, root, Path(captures) / world.cli / test)
        if suite_setting("KAIROS_COMPAT_KEEP") != "1":
            shutil.rmtree(root, ignore_errors=True)
