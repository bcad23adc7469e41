"""Access: only kairosd's own user may use it. Another uid cannot reach the socket (0700 folder), and if
the modes are loosened by mistake, the SO_PEERCRED check still answers 403 before any handler runs."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from reliability_support import Here, Home, InProcessDaemon, parse_response, raw_exchange, wait_for

from kairosd.api.unixsocket import peer_credentials
from kairosd.testing import FakeClock

NOBODY = 65534
# Runs as the other user: stdlib only, prints one JSON line with what happened.
PROBE = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print(json.dumps({"connect": exc.__class__.__name__, "errno": exc.errno}))
    sys.exit(0)
body = b'{"prompt": "from another user", "cron": "0 9 * * *"}'
s.sendall(b"POST /v1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
s.shutdown(socket.SHUT_WR)
data = b""
while chunk := s.recv(65536):
    data += chunk
print(json.dumps({"answer": data.decode("latin-1")}))
"""


def as_nobody(socket_path: Path) -> dict[str, str]:
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or python is None or setpriv is None:
        pytest.skip("needs root, setpriv and a system python3 to run a client as another uid")
    argv = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-I", "-c", PROBE]
    proc = subprocess.run([*argv, str(socket_path)], capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot run a process as uid {NOBODY} here: {proc.stderr.strip()[:200]}")
    result: dict[str, str] = json.loads(proc.stdout)
    return result


@pytest.mark.slow
def test_other_uid_cannot_reach_the_socket(home: Home) -> None:
    """As uid 65534, connecting to a running kairosd's socket fails: its folders are private (0700)."""
    proc = home.start()
    result = as_nobody(home.socket)
    assert result.get("connect") == "PermissionError", result
    assert home.stop(proc) == 0


@pytest.mark.slow
def test_other_uid_is_refused_by_peer_credentials_even_with_loose_modes(home: Home) -> None:
    """With the modes opened up by mistake, uid 65534 connects but gets 403; nothing is added; the log says so."""
    proc = home.start()
    before = home.status()["tasks"]
    for folder in (home.path, home.path / "run"):
        folder.chmod(0o711)
    home.socket.chmod(0o666)
    result = as_nobody(home.socket)
    assert "answer" in result, result
    status, _, body = parse_response(result["answer"].encode("latin-1"))
    assert status == 403
    assert json.loads(body)["error"]["code"] == "forbidden"
    assert home.status()["tasks"] == before
    assert f"uid {NOBODY}" in home.log(proc)
    assert home.stop(proc) == 0


def test_peer_credentials_name_the_connecting_process() -> None:
    """_peer_credentials reads (pid, uid, gid) of the client from the kernel (SO_PEERCRED)."""

    async def main() -> tuple[int, int, int] | None:
        left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with left, right:
            _, writer = await asyncio.open_unix_connection(sock=left)
            try:
                return peer_credentials(writer)
            finally:
                writer.close()

    assert asyncio.run(main()) == (os.getpid(), os.getuid(), os.getgid())


@pytest.fixture
def foreign_daemon() -> Iterator[InProcessDaemon]:
    """The real API served for a uid that is not ours, as if another user's client connected."""
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="ka"))
    d = InProcessDaemon(root, FakeClock(datetime(2026, 3, 2, tzinfo=UTC)), uid=os.getuid() + 1)
    try:
        yield d
    finally:
        d.close()
        shutil.rmtree(root, ignore_errors=True)


def test_every_route_refuses_a_foreign_uid_before_its_handler(foreign_daemon: InProcessDaemon) -> None:
    """Every route, read or write, answers 403 forbidden to another uid; no file changes."""
    before = foreign_daemon.files_digest()
    for method, path in [
        ("GET", "/v1/status"),
        ("GET", "/v1/tasks"),
        ("POST", "/v1/tasks"),
        ("POST", "/v1/shutdown"),
        ("GET", "/v1/inbox"),
        ("GET", "/v1/events"),
    ]:
        body = b'{"prompt": "x", "cron": "0 9 * * *"}' if method == "POST" else b""
        request = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        status, _, answer = parse_response(raw_exchange(foreign_daemon.socket, request))
        assert status == 403, (path, answer)
        assert json.loads(answer)["error"]["code"] == "forbidden"
    assert not foreign_daemon.shutdown_requested
    assert len(foreign_daemon.book) == 0
    assert foreign_daemon.files_digest() == before


HOOK = "#!/bin/sh\ncat > /dev/null\necho ran >> {marker}\n"


def _hook_config(home: Home, scripts: dict[str, Path]) -> None:
    folder = home.path / "config"
    folder.mkdir(mode=0o700, exist_ok=True)
    lines = [f'[[hooks.scheduled_task_fired]]\nargv = ["{script}"]\n' for script in scripts.values()]
    (folder / "config.toml").write_text("\n".join(lines))
    (folder / "config.toml").chmod(0o600)


@pytest.mark.slow
@pytest.mark.parametrize("mode", [0o775, 0o757])
def test_group_or_world_writable_hook_file_is_not_run(home: Home, here: Here, mode: int) -> None:
    """kairosd (its main, in this process: the hook's file mode is the point, not kairosd's process): a
    hook script others can change is refused at each event (and named by the doctor); the same event
    runs the safe hook; once the mode is fixed, the next event runs it."""
    hooks = home.path / "hooks"
    hooks.mkdir(mode=0o700)
    scripts, markers = {}, {}
    for name in ("safe", "loose"):
        markers[name] = home.path / f"{name}.ran"
        scripts[name] = hooks / f"{name}.sh"
        scripts[name].write_text(HOOK.format(marker=markers[name]))
        scripts[name].chmod(0o755)
    scripts["loose"].chmod(mode)
    _hook_config(home, scripts)

    def serving() -> None:
        client = home.client()
        task_id = client.call("POST", "/tasks", {"prompt": "hook check", "cron": "0 9 1 1 *"})["task"]["id"]

        client.call("POST", f"/tasks/{task_id}/run")
        wait_for(lambda: markers["safe"].exists(), what="the safe hook to run")
        wait_for(lambda: "was not run" in here.log(), what="the refusal in the log")
        assert not markers["loose"].exists()
        refusal = next(line for line in here.log().splitlines() if "was not run" in line)
        assert str(scripts["loose"]) in refusal
        assert f"chmod go-w {scripts['loose']}" in refusal
        doctor = client.call("GET", "/doctor")["doctor"]
        assert any(str(scripts["loose"]) in problem for problem in doctor["problems"]), doctor["problems"]

        scripts["loose"].chmod(0o755)
        client.call("POST", f"/tasks/{task_id}/run")
        wait_for(lambda: markers["loose"].exists(), what="the fixed hook to run")

    code, log, _ = here.start(serving)
    assert code == 0, log
