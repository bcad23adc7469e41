"""The CLI, the hooks and the MCP tools talk only to a server that runs as their own user (issue 13).

Whoever can bind the socket's path could otherwise answer in kairosd's place and
receive the prompts. The client reads the server's uid with ``SO_PEERCRED``
before it sends anything. A fake server run as another uid (with ``setpriv``,
as root) records every byte it receives: it must receive none.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kairos.client import Client, ForeignServer

NOBODY = 65534
WAIT_S = 20.0
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"

# Runs as the other user: serves canned answers and appends what it received to argv[2].
FAKE_SERVER = r"""
import socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1])
server.listen(16)
while True:
    conn, _ = server.accept()
    conn.settimeout(2)
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
            if b"\r\n\r\n" in data:
                break
    except OSError:
        pass
    with open(sys.argv[2], "ab") as log:
        log.write(data)
    try:
        conn.sendall(ANSWER)
    except OSError:
        pass
    conn.close()
""".replace("ANSWER", repr(ANSWER))


def wait_until(check: object) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@contextlib.contextmanager
def one_connection(path: str, answer: bytes | None = None) -> Iterator[list[bytes]]:
    """A socket at ``path`` that takes one connection in a thread; yields what it received (b"" when the
    client closed without sending), and sends ``answer`` back if there is one."""
    received: list[bytes] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(WAIT_S)
            received.append(conn.recv(65536))
            if answer is not None:
                conn.sendall(answer)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        yield received
    finally:
        thread.join(WAIT_S)
        server.close()


def test_a_server_of_another_uid_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    """Without root: the expected uid is injected, so our own server counts as another user's."""
    path = str(tmp_path / "s.sock")
    with one_connection(path) as received, pytest.raises(ForeignServer) as caught:
        Client(path, timeout=5, expected_uid=os.getuid() + 1).call("POST", "/tasks", {"prompt": "secret"})
    assert f"uid {os.getuid()}" in caught.value.message
    assert caught.value.exit_code == 1
    assert received == [b""]


def test_our_own_server_is_accepted(tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    with one_connection(path, ANSWER):
        assert Client(path, timeout=5).call("GET", "/status") == {}


@pytest.fixture
def foreign_home() -> Iterator[tuple[Path, Path]]:
    """A KAIROS_HOME whose socket is served by uid 65534; yields (home, file of received bytes)."""
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or python is None or setpriv is None:
        pytest.skip("needs root, setpriv and a system python3 to serve as another uid")
    home = Path(tempfile.mkdtemp(dir="/tmp", prefix="kp"))
    home.chmod(0o755)
    run = home / "run"
    run.mkdir()
    os.chown(run, NOBODY, NOBODY)
    received = run / "received"
    argv = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-I", "-c", FAKE_SERVER]
    server = subprocess.Popen([*argv, str(run / "kairosd.sock"), str(received)], stderr=subprocess.DEVNULL)
    try:
        if not wait_until(lambda: (run / "kairosd.sock").exists() or server.poll() is not None) or server.poll():
            pytest.skip(f"cannot serve as uid {NOBODY} here")
        yield home, received
    finally:
        server.kill()
        server.wait(WAIT_S)
        shutil.rmtree(home, ignore_errors=True)


def kairos(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAIROS_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "kairos", *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
def test_the_cli_refuses_a_server_of_another_uid(foreign_home: tuple[Path, Path]) -> None:
    home, received = foreign_home
    proc = kairos(home, "add", "--in", "1h", "the secret prompt")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert f"uid {NOBODY}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not received.exists() or received.read_bytes() == b""


@pytest.mark.slow
def test_the_hook_stays_silent_and_sends_nothing(foreign_home: tuple[Path, Path]) -> None:
    home, received = foreign_home
    payload = json.dumps({"session_id": "s1", "cwd": str(home), "hook_event_name": "Stop"})
    proc = kairos(home, "hook", "claude", "Stop", stdin=payload)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert not received.exists() or received.read_bytes() == b""


@pytest.mark.slow
def test_mcp_tools_return_the_refusal_as_their_error(
    foreign_home: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from kairos.integrations.mcptools import _blocking_call
    from kairosd.core.wire.tasks import ListDoc

    home, received = foreign_home
    monkeypatch.setenv("KAIROS_HOME", str(home))
    with pytest.raises(ToolError, match=f"uid {NOBODY}"):
        _blocking_call(ListDoc, "GET", "/tasks", None, None, 5.0)
    assert not received.exists() or received.read_bytes() == b""
