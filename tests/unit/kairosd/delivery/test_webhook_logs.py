"""A webhook URL's secrets never reach the log, with httpx's and httpcore's loggers at DEBUG (issue 13).

httpx logs every request's whole URL (``HTTP Request: POST http://...?token=...``)
on every attempt; the records are captured as they are emitted, so every
logger's output counts, and so does the run's reason.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest
from registry_support import run

from kairosd.core.clock import SystemClock
from kairosd.core.models import WebhookTarget
from kairosd.core.redact import redact_urls
from kairosd.delivery.base import Handoff, Result
from kairosd.delivery.webhook import WebhookDelivery

TOKEN = "S3CR3T-t0ken"
PASSWORD = "pw-Hunter2"
WAIT_S = 20.0
T = TypeVar("T")


class Receiver:
    """Answers the queued statuses, then 204; records the paths it was asked for."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.paths.append(self.path)
                self.send_response(outer.statuses.pop(0) if outer.statuses else 204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(WAIT_S)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver([503, 500])
    try:
        yield rec
    finally:
        rec.close()


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "kairosd"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def post(url: str) -> Result:
    delivery = WebhookDelivery(
        SystemClock(), secret=b"k" * 32, backoff_s=0.01, attempt_timeout_s=5.0, max_attempts=3, timeout_s=15.0
    )
    planned = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
    handoff = Handoff(
        run_id="r0123456789ab",
        task_id="a1b2c3d4",
        task_name="deploy",
        prompt="check",
        # Not validated: no task can hold a URL with a user name, yet the logs are checked for one too.
        target=WebhookTarget.model_construct(url=url),
        scheduled_for=planned,
        planned_for=planned,
        late_by_s=0.0,
    )

    async def main() -> Result:
        try:
            return await delivery.deliver(handoff)
        finally:
            await delivery.close()

    return run(main())


def everything_logged(logs: pytest.LogCaptureFixture) -> str:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in logs.records)


def test_a_token_in_the_query_is_not_logged_on_retries(receiver: Receiver, logs: pytest.LogCaptureFixture) -> None:
    result = post(f"http://127.0.0.1:{receiver.port}/hook?token={TOKEN}")
    assert result.outcome == "delivered", result.reason
    assert receiver.paths == [f"/hook?token={TOKEN}"] * 3  # two retries: the query is still sent
    text = everything_logged(logs)
    assert "HTTP Request: POST http://127.0.0.1" in text  # httpx did log each attempt
    assert any(record.name.startswith("httpcore") for record in logs.records)
    assert TOKEN not in text
    assert "/hook" not in text


def test_a_token_is_not_logged_when_the_post_fails() -> None:
    """A closed port: connection errors on every attempt, then a failed run."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nobody listens there
    caplog_records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caplog_records.append(record)

    handler = Keep(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        result = post(f"http://127.0.0.1:{port}/hook?token={TOKEN}")
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    assert result.outcome == "failed"
    shown = "\n".join(record.getMessage() for record in caplog_records) + (result.reason or "")
    assert "cannot reach 127.0.0.1" in shown
    assert TOKEN not in shown


def test_user_info_and_token_are_not_logged(receiver: Receiver, logs: pytest.LogCaptureFixture) -> None:
    result = post(f"http://user:{PASSWORD}@127.0.0.1:{receiver.port}/hook?token={TOKEN}")
    text = everything_logged(logs) + (result.reason or "")
    assert PASSWORD not in text
    assert TOKEN not in text


def test_redact_urls() -> None:
    line = f'HTTP Request: POST http://u:{PASSWORD}@127.0.0.1:8765/a/b?token={TOKEN} "HTTP/1.1 200 OK"'
    assert redact_urls(line) == 'HTTP Request: POST http://127.0.0.1:8765/… "HTTP/1.1 200 OK"'
    assert redact_urls("https://[::1]:9/x and http://h") == "https://[::1]:9/… and http://h"


def test_a_quote_in_the_url_does_not_stop_the_redaction(receiver: Receiver, logs: pytest.LogCaptureFixture) -> None:
    """Issue 27: a ``'`` in the path once ended the redacted part, and the token after it was logged."""
    result = post(f"http://127.0.0.1:{receiver.port}/ho'ok?token={TOKEN}")
    assert result.outcome == "delivered", result.reason
    text = everything_logged(logs) + (result.reason or "")
    assert "HTTP Request: POST http://127.0.0.1" in text
    assert TOKEN not in text
