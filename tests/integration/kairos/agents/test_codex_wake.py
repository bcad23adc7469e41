"""Codex idle wake (issue 23): at fire time kairosd itself runs ``codex queue`` for a live, idle Codex
session, but only when Codex's shared app-server says the thread is loaded (``thread/loaded/list``);
otherwise nothing is queued and the prompt stays pending (or takes its fallback when the session ends).

A fake app-server answers on ``$CODEX_HOME/app-server-control/app-server-control.sock`` (a WebSocket over
a Unix socket, as Codex 0.169's is) and a fake ``codex`` records its argv.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from session_support import Kairosd, call_hook, fixture, hook_home, remove_home, session_of, short_home

from kairos.integrations.settings import merge
from kairosd.agents.codexqueue import AppServerError, loaded_threads
from kairosd.core.records import Outcome

FIXTURES = (hook_home,)


class FakeAppServer:
    """Codex's app-server control socket: the WebSocket upgrade, then JSON-RPC text frames."""

    def __init__(self, sock_path: Path, loaded: list[str], *, page_size: int = 0, answer: bool = True) -> None:
        self.sock_path = sock_path
        self.loaded = loaded
        self.page_size = page_size  # 0: one page
        self.answer = answer  # False: accept, upgrade, then never answer
        self.methods: list[str] = []
        sock_path.parent.mkdir(parents=True, exist_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(sock_path))
        self.server.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        # shutdown wakes the accept() blocked in the serving thread (close alone does not, on Linux)
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self.thread.join(5)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError, ValueError):
                self._session(conn)

    def _session(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(1024)
            if not chunk:
                return
            head += chunk
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n")
        while True:
            message = self._read(conn)
            if message is None:
                return
            self.methods.append(message["method"])
            if "id" not in message or not self.answer:
                continue
            if message["method"] == "thread/loaded/list":
                start = int(message["params"].get("cursor") or 0)
                size = self.page_size or len(self.loaded) or 1
                page = self.loaded[start : start + size]
                more = str(start + size) if start + size < len(self.loaded) else None
                result: dict[str, Any] = {"data": page, "nextCursor": more}
            else:
                result = {"userAgent": "fake"}
            self._write(conn, {"method": "configWarning", "params": {"summary": "a notification first"}})
            self._write(conn, {"id": message["id"], "result": result})

    @staticmethod
    def _read(conn: socket.socket) -> dict[str, Any] | None:
        def exact(size: int) -> bytes:
            data = b""
            while len(data) < size:
                chunk = conn.recv(size - len(data))
                if not chunk:
                    raise ValueError("closed")
                data += chunk
            return data

        try:
            _, second = exact(2)
        except ValueError:
            return None
        size = second & 0x7F
        if size == 126:
            size = struct.unpack(">H", exact(2))[0]
        elif size == 127:
            size = struct.unpack(">Q", exact(8))[0]
        mask = exact(4)
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(exact(size)))
        return json.loads(payload)

    @staticmethod
    def _write(conn: socket.socket, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        head = (
            bytes([0x81, len(payload)]) if len(payload) < 126 else bytes([0x81, 126]) + struct.pack(">H", len(payload))
        )
        conn.sendall(head + payload)


@pytest.fixture
def codex_home() -> Iterator[Path]:
    path = short_home("kx")
    try:
        yield path
    finally:
        remove_home(path)


def fake_codex(folder: Path) -> Path:
    """A ``codex`` that records each call's argv (one JSON line) and exits 0."""
    folder.mkdir(parents=True, exist_ok=True)
    calls = folder / "calls.jsonl"
    script = folder / "codex"
    script.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"with open({str(calls)!r}, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    script.chmod(0o755)
    return calls


def calls_of(calls: Path) -> list[list[str]]:
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def start_kd(home: Path, codex_home: Path, bin_dir: Path, config: str | None = None) -> Kairosd:
    """kairosd with Codex's home at ``codex_home``, whose config.toml is ``config`` (default: what
    ``kairos integrate codex`` writes first, thread_unload_delay_secs = 0)."""
    (codex_home / "config.toml").write_text(merge.UNLOAD_LINE + 'model = "o3"\n' if config is None else config)
    environ = {"CODEX_HOME": str(codex_home), "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    return Kairosd(home, environ=environ).start()


def register_codex(monkeypatch) -> str:
    payload = fixture("codex", "SessionStart")
    assert call_hook(monkeypatch, "codex", "SessionStart", payload).code == 0
    return session_of(payload)


def fire(kd: Kairosd, prompt: str, **target: Any) -> str:
    task_id = kd.add(prompt, {"kind": "session", **(target or {"user": True})}, overlap="queue")
    return kd.fire(task_id)


def test_a_prompt_for_an_idle_loaded_codex_thread_is_queued_into_it(home, codex_home, tmp_path, monkeypatch):
    calls = fake_codex(tmp_path / "bin")
    kd = start_kd(home, codex_home, tmp_path / "bin")
    try:
        sid = register_codex(monkeypatch)
        app = FakeAppServer(codex_home / "app-server-control" / "app-server-control.sock", ["other", sid], page_size=1)
        try:
            run_id = fire(kd, "look at the deploy")
        finally:
            app.close()
        assert app.methods[:3] == ["initialize", "initialized", "thread/loaded/list"]
        assert app.methods.count("thread/loaded/list") == 2  # both pages
        [argv] = calls_of(calls)
        assert argv[:4] == ["queue", "--thread", sid, "--message"]
        assert "--resume" not in argv
        assert "carry out this scheduled task now" in argv[4]
        assert "look at the deploy" in argv[4]
        run = kd.run_record(run_id)
        assert run.outcome is Outcome.DELIVERED
        assert run.reason.startswith(f"delivered into idle codex session {sid}: kairosd started a turn")
        assert kd.pending() == []  # the turn it started does not get it again at its Stop
        stop = call_hook(monkeypatch, "codex", "Stop", fixture("codex", "Stop"))
        assert stop.output is None
    finally:
        kd.stop()


@pytest.mark.parametrize("why", ["not loaded", "no app-server", "silent app-server"])
def test_nothing_is_queued_unless_the_app_server_says_the_thread_is_loaded(
    why, home, codex_home, tmp_path, monkeypatch
):
    """A quit TUI (not loaded), a TUI with --no-daemon or no daemon at all (no socket), an app-server that
    does not answer: codex queue never runs, the prompt stays pending and the next Stop delivers it."""
    calls = fake_codex(tmp_path / "bin")
    kd = start_kd(home, codex_home, tmp_path / "bin")
    app = None
    try:
        sid = register_codex(monkeypatch)
        sock = codex_home / "app-server-control" / "app-server-control.sock"
        if why == "not loaded":
            app = FakeAppServer(sock, ["another-thread"])
        elif why == "silent app-server":
            app = FakeAppServer(sock, [sid], answer=False)
        run_id = fire(kd, "look at the deploy")
        assert calls_of(calls) == []
        run = kd.run_record(run_id)
        assert (run.outcome, run.awaiting) == (Outcome.QUEUED, "session")
        assert run.reason.startswith(f"waiting for codex session {sid}'s next turn (not queued with codex queue")
        assert kd.pending() == [run_id]
        stop = call_hook(monkeypatch, "codex", "Stop", fixture("codex", "Stop"))
        assert "look at the deploy" in stop.output["reason"]
    finally:
        if app is not None:
            app.close()
        kd.stop()


def test_a_codex_session_in_a_turn_is_left_to_its_stop_hook(home, codex_home, tmp_path, monkeypatch):
    calls = fake_codex(tmp_path / "bin")
    kd = start_kd(home, codex_home, tmp_path / "bin")
    try:
        sid = register_codex(monkeypatch)
        assert call_hook(monkeypatch, "codex", "UserPromptSubmit", fixture("codex", "UserPromptSubmit")).code == 0
        app = FakeAppServer(codex_home / "app-server-control" / "app-server-control.sock", [sid])
        try:
            run_id = fire(kd, "look at the deploy")
        finally:
            app.close()
        assert app.methods == []
        assert calls_of(calls) == []
        assert kd.run_record(run_id).reason == f"waiting for codex session {sid}'s next turn"
    finally:
        kd.stop()


def test_a_failing_codex_queue_leaves_the_prompt_pending(home, codex_home, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "codex").write_text("#!/bin/sh\necho 'error: thread not found' >&2\nexit 3\n")
    (bin_dir / "codex").chmod(0o755)
    kd = start_kd(home, codex_home, bin_dir)
    try:
        sid = register_codex(monkeypatch)
        app = FakeAppServer(codex_home / "app-server-control" / "app-server-control.sock", [sid])
        try:
            run_id = fire(kd, "look at the deploy")
        finally:
            app.close()
        run = kd.run_record(run_id)
        assert run.outcome is Outcome.QUEUED
        assert run.reason.endswith("(codex queue exited with 3: error: thread not found)")
        assert kd.pending() == [run_id]
    finally:
        kd.stop()


@pytest.mark.parametrize("config", ['model = "o3"\n', "thread_unload_delay_secs = 60\n", "not toml ["])
def test_no_idle_wake_while_a_quit_tuis_thread_stays_loaded(config, home, codex_home, tmp_path, monkeypatch):
    """Without thread_unload_delay_secs = 0 the app-server keeps a quit TUI's thread loaded for a minute:
    loaded does not mean someone sees it, so nothing is queued (not even a question to the app-server)."""
    calls = fake_codex(tmp_path / "bin")
    kd = start_kd(home, codex_home, tmp_path / "bin", config)
    try:
        sid = register_codex(monkeypatch)
        app = FakeAppServer(codex_home / "app-server-control" / "app-server-control.sock", [sid])
        try:
            run_id = fire(kd, "look at the deploy")
        finally:
            app.close()
        assert app.methods == []
        assert calls_of(calls) == []
        run = kd.run_record(run_id)
        assert run.outcome is Outcome.QUEUED
        assert "does not set thread_unload_delay_secs = 0 (kairos integrate codex does)" in run.reason
    finally:
        kd.stop()


def test_the_loaded_list_query_reports_what_it_cannot_tell(codex_home):
    sock = codex_home / "s.sock"
    with pytest.raises(FileNotFoundError):
        loaded_threads(sock, timeout=1)
    app = FakeAppServer(sock, ["a"], answer=False)
    try:
        with pytest.raises(AppServerError, match="no answer within"):
            loaded_threads(sock, timeout=0.5)
    finally:
        app.close()
