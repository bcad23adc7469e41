"""The webhook target against a real HTTP receiver on 127.0.0.1: signing, retries, idempotence, refusals."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
from collections.abc import Coroutine, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import pytest
from paths_support import REPO
from pydantic import ValidationError

from kairosd.config import load_config
from kairosd.core.clock import SystemClock
from kairosd.core.errors import ConfigError
from kairosd.core.models import WebhookTarget
from kairosd.delivery.base import Handoff
from kairosd.delivery.webhook import WebhookDelivery, is_loopback, sign
from kairosd.system.paths import Paths

SECRET = b"0123456789abcdef0123456789abcdef"
WAIT_S = 20.0  # upper bound for anything a test waits on; passing runs take far less
PLANNED = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    async def bounded() -> T:
        async with asyncio.timeout(WAIT_S * 2):
            return await coro

    return asyncio.run(bounded())


class Receiver:
    """A real HTTP server: answers with the queued statuses (then 204), records every request."""

    def __init__(self) -> None:
        self.statuses: list[int | tuple[int, dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        self.arrived = threading.Condition()
        self.release = threading.Event()  # a held request waits for this
        self.hold = 0  # how many of the next requests to hold until `release` is set
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with outer.arrived:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    held = outer.hold > 0
                    outer.hold -= held
                    answer = outer.statuses.pop(0) if outer.statuses else 204
                    outer.arrived.notify_all()
                if held:
                    outer.release.wait(WAIT_S)
                status, headers = answer if isinstance(answer, tuple) else (answer, {})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"no")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a held answer written after kairos gave up fails with a broken pipe: expected

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/kairos?src=test"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(WAIT_S)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()
    try:
        yield rec
    finally:
        rec.close()


def handoff(url: str, run_id: str = "r0123456789ab", **target: Any) -> Handoff:
    return Handoff(
        run_id=run_id,
        task_id="a1b2c3d4",
        task_name="deploy check",
        prompt="check the deploy ✓",
        target=WebhookTarget(url=url, **target),
        scheduled_for=PLANNED,
        planned_for=PLANNED + timedelta(seconds=3),
        late_by_s=1.5,
        meta={"project": "kairos"},
    )


def delivery(**kw: Any) -> WebhookDelivery:
    kw.setdefault("secret", SECRET)
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("attempt_timeout_s", 5.0)
    return WebhookDelivery(SystemClock(), **kw)


async def deliver(hook: WebhookDelivery, *handoffs: Handoff) -> list[Any]:
    try:
        return list(await asyncio.gather(*(hook.deliver(j) for j in handoffs)))
    finally:
        await hook.close()


def load_example_receiver() -> Any:
    path = REPO / "examples" / "webhook_receiver.py"
    spec = importlib.util.spec_from_file_location("webhook_receiver", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- signing and the body ---------------------------------------------------------------------------


def test_a_2xx_is_delivered_with_the_documented_body_and_headers(receiver):
    """The receiver gets the JSON body and the idempotency headers; 2xx makes the run delivered."""
    [result] = run(deliver(delivery(), handoff(receiver.url)))
    assert result.outcome == "delivered"
    assert "HTTP 204" in result.reason
    [req] = receiver.requests
    assert req["path"] == "/hooks/kairos?src=test"
    body = json.loads(req["body"])
    assert set(body) == {"task_id", "run_id", "fired_at", "planned_for", "target", "prompt", "meta"}
    assert body["prompt"] == "check the deploy ✓"
    assert body["run_id"] == "r0123456789ab"
    assert body["planned_for"] == (PLANNED + timedelta(seconds=3)).isoformat()
    assert body["target"] == {"kind": "webhook", "url": receiver.url, "timeout_s": None}
    assert body["meta"]["project"] == "kairos"
    assert body["meta"]["scheduled_for"] == PLANNED.isoformat()
    assert body["meta"]["late_by_s"] == 1.5
    headers = req["headers"]
    assert headers["Idempotency-Key"] == headers["X-Kairos-Run-Id"] == "r0123456789ab"
    assert headers["X-Kairos-Task-Id"] == "a1b2c3d4"
    assert headers["Content-Type"] == "application/json"
    assert headers["Host"] == f"127.0.0.1:{receiver.server.server_address[1]}"


def test_the_signature_verifies_with_the_shared_secret_only(receiver):
    """HMAC-SHA256 over timestamp + '.' + body verifies with the key, and with no other key."""
    run(deliver(delivery(), handoff(receiver.url)))
    [req] = receiver.requests
    timestamp, signature = req["headers"]["X-Kairos-Timestamp"], req["headers"]["X-Kairos-Signature"]
    assert signature == sign(SECRET, timestamp, req["body"])
    assert signature != sign(b"another key of sixteen+", timestamp, req["body"])
    example = load_example_receiver()
    now = float(timestamp)
    assert example.verify(SECRET, timestamp, signature, req["body"], now)
    assert not example.verify(SECRET, timestamp, signature, req["body"] + b" ", now)
    assert not example.verify(b"wrong key wrong key", timestamp, signature, req["body"], now)
    assert not example.verify(SECRET, timestamp, signature, req["body"], now + 3600)  # a stale replay


def test_without_a_secret_nothing_is_sent(receiver):
    """kairos never posts unsigned: no key in the config makes the run fail without a request."""
    [result] = run(deliver(delivery(secret=None), handoff(receiver.url)))
    assert result.outcome == "failed"
    assert "never sends unsigned" in result.reason
    assert receiver.requests == []


# ---- retries ----------------------------------------------------------------------------------------


def test_5xx_is_retried_with_the_same_body_then_delivered(receiver):
    """Two 503s, then 200: three attempts, one body, one idempotency key, attempt numbers 1..3."""
    receiver.statuses = [503, 500, 200]
    [result] = run(deliver(delivery(), handoff(receiver.url)))
    assert result.outcome == "delivered"
    assert "attempt 3" in result.reason
    assert [r["headers"]["X-Kairos-Attempt"] for r in receiver.requests] == ["1", "2", "3"]
    assert len({r["body"] for r in receiver.requests}) == 1
    assert {r["headers"]["Idempotency-Key"] for r in receiver.requests} == {"r0123456789ab"}


def test_5xx_until_max_attempts_fails_with_the_last_answer(receiver):
    """max_attempts 5xx answers: failed, and the reason quotes the last one."""
    receiver.statuses = [500, 502, 503]
    [result] = run(deliver(delivery(max_attempts=3), handoff(receiver.url)))
    assert result.outcome == "failed"
    assert len(receiver.requests) == 3
    assert "gave up after 3 attempt(s)" in result.reason
    assert "HTTP 503" in result.reason


@pytest.mark.parametrize("status", [400, 401, 404, 410, 422])
def test_4xx_fails_at_once_without_retry(receiver, status):
    """A client error will not go away by itself: one attempt, failed, the status in the reason."""
    receiver.statuses = [status]
    [result] = run(deliver(delivery(), handoff(receiver.url)))
    assert result.outcome == "failed"
    assert f"HTTP {status}" in result.reason
    assert len(receiver.requests) == 1


@pytest.mark.parametrize("status", [408, 429])
def test_408_and_429_are_retried(receiver, status):
    """Request Timeout and Too Many Requests are the two 4xx worth retrying."""
    receiver.statuses = [status, 200]
    [result] = run(deliver(delivery(), handoff(receiver.url)))
    assert result.outcome == "delivered"
    assert len(receiver.requests) == 2


def test_retry_after_past_the_overall_timeout_gives_up_early(receiver):
    """A 429 asking for an hour's wait fails now instead of sleeping past the time-out."""
    receiver.statuses = [(429, {"Retry-After": "3600"})]
    [result] = run(deliver(delivery(timeout_s=5.0), handoff(receiver.url)))
    assert result.outcome == "failed"
    assert "would pass the 5s time-out" in result.reason
    assert len(receiver.requests) == 1


def test_redirects_are_not_followed(receiver):
    """A 3xx fails: following it could leave loopback."""
    receiver.statuses = [(302, {"Location": "http://192.0.2.1/elsewhere"})]
    [result] = run(deliver(delivery(), handoff(receiver.url)))
    assert result.outcome == "failed"
    assert "redirects are not followed" in result.reason
    assert len(receiver.requests) == 1


def test_a_slow_receiver_times_out_per_attempt_and_is_retried(receiver):
    """An attempt with no answer within attempt_timeout is abandoned and retried; the retry succeeds."""
    receiver.hold = 1
    [result] = run(deliver(delivery(attempt_timeout_s=0.3), handoff(receiver.url)))
    receiver.release.set()
    assert result.outcome == "delivered"
    assert len(receiver.requests) == 2


def test_the_overall_timeout_bounds_a_delivery(receiver):
    """A receiver that never answers: failed after the target's own timeout_s, not later."""
    receiver.hold = 100
    hook = delivery(attempt_timeout_s=5.0)
    [result] = run(deliver(hook, handoff(receiver.url, timeout_s=0.5)))
    receiver.release.set()
    assert result.outcome == "failed"
    assert "timed out after 0.5s" in result.reason
    assert (result.finished_at - result.started_at).total_seconds() < 5.0


def test_a_closed_port_is_retried_then_fails():
    """Connection refused is a network error: retried up to max_attempts, then failed."""
    with ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) as probe:
        port = probe.server_address[1]  # free once the probe closes
    [result] = run(deliver(delivery(max_attempts=2), handoff(f"http://127.0.0.1:{port}/")))
    assert result.outcome == "failed"
    assert "gave up after 2 attempt(s)" in result.reason
    assert "cannot reach 127.0.0.1" in result.reason


# ---- idempotence ------------------------------------------------------------------------------------


def test_the_same_run_is_never_posted_twice(receiver):
    """A repeated delivery of a run returns the first result without a second request."""
    hook = delivery()

    async def twice() -> list[Any]:
        try:
            first = await hook.deliver(handoff(receiver.url))
            second = await hook.deliver(handoff(receiver.url))
            return [first, second]
        finally:
            await hook.close()

    first, second = run(twice())
    assert first is second
    assert len(receiver.requests) == 1


def test_concurrent_deliveries_of_one_run_share_one_post(receiver):
    """Two deliveries of the same run at once: one request, both get its result; another run posts."""
    receiver.hold = 1
    hook = delivery()

    async def together() -> list[Any]:
        try:
            first = asyncio.ensure_future(hook.deliver(handoff(receiver.url)))
            second = asyncio.ensure_future(hook.deliver(handoff(receiver.url)))
            await asyncio.to_thread(_wait_requests, receiver, 1)
            receiver.release.set()
            other = await hook.deliver(handoff(receiver.url, run_id="r999"))
            return [await first, await second, other]
        finally:
            await hook.close()

    first, second, other = run(together())
    assert first is second
    assert first.outcome == other.outcome == "delivered"
    assert [r["headers"]["X-Kairos-Run-Id"] for r in receiver.requests] == ["r0123456789ab", "r999"]


def test_close_stops_a_post_in_flight_with_a_failed_result(receiver):
    """close() at shutdown ends a hanging post; the run is failed, not left hanging or re-posted."""
    receiver.hold = 1
    hook = delivery()

    async def stop_midway() -> Any:
        task = asyncio.ensure_future(hook.deliver(handoff(receiver.url)))
        await asyncio.to_thread(_wait_requests, receiver, 1)
        await hook.close()
        result = await task
        again = await hook.deliver(handoff(receiver.url))
        return result, again

    result, again = run(stop_midway())
    receiver.release.set()
    assert result.outcome == "failed"
    assert "stopped at daemon shutdown" in result.reason
    assert again is result
    assert len(receiver.requests) == 1


def _wait_requests(receiver: Receiver, count: int) -> None:
    with receiver.arrived:
        assert receiver.arrived.wait_for(lambda: len(receiver.requests) >= count, WAIT_S)


# ---- addresses --------------------------------------------------------------------------------------


def test_a_non_loopback_address_is_refused_without_connecting():
    """192.0.2.1 (TEST-NET-1) is not loopback: refused at once, with the config key to change in the reason."""
    [result] = run(deliver(delivery(), handoff("http://192.0.2.1:9/hook")))
    assert result.outcome == "failed"
    assert "not a loopback address" in result.reason
    assert "allow_non_loopback" in result.reason


def test_every_resolved_address_must_be_loopback(receiver):
    """A name resolving to loopback AND another address is refused; the request is never sent."""

    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1", "198.51.100.7"]

    port = receiver.server.server_address[1]
    [result] = run(deliver(delivery(resolve=resolve), handoff(f"http://kairos.test:{port}/")))
    assert result.outcome == "failed"
    assert "198.51.100.7" in result.reason
    assert receiver.requests == []


def test_a_name_is_posted_to_the_address_that_was_checked(receiver):
    """The request goes to the checked address, with the URL's own name in the Host header."""

    async def resolve(host: str, port: int) -> list[str]:
        assert host == "kairos.test"
        return ["127.0.0.1"]

    port = receiver.server.server_address[1]
    [result] = run(deliver(delivery(resolve=resolve), handoff(f"http://kairos.test:{port}/in")))
    assert result.outcome == "delivered"
    assert receiver.requests[0]["headers"]["Host"] == f"kairos.test:{port}"


def test_allow_non_loopback_lets_other_addresses_through(receiver):
    """With the config's allow_non_loopback, a name that resolves elsewhere is posted (here: to our receiver)."""

    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1", "198.51.100.7"]

    port = receiver.server.server_address[1]
    [result] = run(deliver(delivery(resolve=resolve, allow_non_loopback=True), handoff(f"http://kairos.test:{port}/")))
    assert result.outcome == "delivered"


@pytest.mark.parametrize(
    ("address", "loopback"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("::ffff:127.0.0.1", True), ("0.0.0.0", False),
     ("10.0.0.1", False), ("::ffff:10.0.0.1", False), ("fe80::1%eth0", False), ("not an address", False)],
)  # fmt: skip
def test_is_loopback(address, loopback):
    """Loopback is 127/8, ::1 and their IPv4-mapped form; nothing else."""
    assert is_loopback(address) is loopback


# ---- the model and the config -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/x", "http://", "http://user:pw@127.0.0.1/", "http://127.0.0.1/#frag", "http://127.0.0.1:0/",
     "http://127.0.0.1:99999/", "http://127.0.0.1/a b"],
)  # fmt: skip
def test_bad_webhook_urls_are_rejected_by_the_model(url):
    """The task model refuses URLs that could never be posted (scheme, host, credentials, port, spaces)."""
    with pytest.raises(ValidationError):
        WebhookTarget(url=url)


def test_a_good_webhook_url_is_accepted():
    """http and https URLs with a host, port, path and query are fine."""
    assert WebhookTarget(url="https://hooks.example.com:8443/a/b?c=d").kind == "webhook"


def write_config(paths: Paths, text: str, mode: int = 0o600) -> Path:
    paths.config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = paths.config_dir / "config.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths.from_env({"KAIROS_HOME": str(tmp_path / "home")})


def test_config_secret_file_is_read_and_used(paths):
    """[webhook] secret_file (owner-only) becomes the signing key; the rest of the section is applied."""
    secret = paths.config_dir / "webhook.secret"
    write_config(paths, '[webhook]\nsecret_file = "webhook.secret"\nallow_non_loopback = true\nmax_attempts = 2\n')
    secret.write_text(SECRET.decode() + "\n")
    secret.chmod(0o600)
    config = load_config(paths, {})
    assert config.webhook.secret_bytes() == SECRET
    hook = WebhookDelivery.from_config(config.webhook, SystemClock())
    assert hook._allow_non_loopback
    assert hook._max_attempts == 2


def test_config_refuses_a_secret_file_others_can_read(paths):
    """A key file readable by the group is refused at load, naming the file and the fix."""
    secret = paths.config_dir / "webhook.secret"
    write_config(paths, f'[webhook]\nsecret_file = "{secret}"\n')
    secret.write_text(SECRET.decode())
    secret.chmod(0o640)
    with pytest.raises(ConfigError, match=r"chmod 600"):
        load_config(paths, {})


def test_config_refuses_an_inline_secret_in_a_readable_file(paths):
    """An inline secret needs a config only its owner can read."""
    write_config(paths, f'[webhook]\nsecret = "{SECRET.decode()}"\n', mode=0o644)
    with pytest.raises(ConfigError, match=r"webhook.secret is in a file others can read"):
        load_config(paths, {})
    os.chmod(paths.config_dir / "config.toml", 0o600)
    assert load_config(paths, {}).webhook.secret_bytes() == SECRET


@pytest.mark.parametrize(
    ("text", "error"),
    [('secret = "short"', "at least 16"), ('secret = "0123456789abcdef"\nsecret_file = "x"', "not both"),
     ("max_attempts = 0", "max_attempts"), ("timeout = -1", "timeout"), ("retries = 3", "unknown key")],
)  # fmt: skip
def test_config_webhook_section_is_strict(paths, text, error):
    """Bad values and unknown keys in [webhook] are errors that name the key."""
    write_config(paths, f"[webhook]\n{text}\n")
    with pytest.raises(ConfigError, match=error):
        load_config(paths, {})


# ---- through the scheduler ----------------------------------------------------------------------------


def test_a_scheduled_webhook_task_is_posted_and_recorded_delivered(receiver, tmp_path):
    """A task with a webhook target fires through the scheduler: one signed POST, a delivered run in the ledger."""
    from kairosd.core.events import EventBus
    from kairosd.core.models import new_task
    from kairosd.core.records import Outcome
    from kairosd.scheduling.ledger import MissedLedger, RunLedger
    from kairosd.scheduling.scheduler import Scheduler, SchedulerConfig
    from kairosd.scheduling.taskbook import TaskBook
    from kairosd.store.store import StoreState
    from kairosd.testing import FakeClock, InMemoryStore

    clock = FakeClock(PLANNED)
    task = new_task(
        prompt="post me",
        created_at=PLANNED,
        tz="UTC",
        cron="0 12 * * *",
        target={"kind": "webhook", "url": receiver.url},
    )
    store = InMemoryStore(StoreState(schema_version=2, tasks=[task]))
    ledger = RunLedger(tmp_path / "runs.jsonl", clock)
    ledger.load()
    missed = MissedLedger(tmp_path / "missed.jsonl", clock)
    missed.load()
    hook = WebhookDelivery(clock, secret=SECRET, backoff_s=0.01)
    sched = Scheduler(
        TaskBook(store, store.load()), ledger, missed, {"webhook": hook}, clock, EventBus(clock.now), SchedulerConfig()
    )

    async def main() -> Any:
        await sched.start()
        fired = await sched.run_now(task.id)
        assert await sched.drain(WAIT_S)
        await sched.shutdown(1)
        return fired

    fired = run(main())
    [record] = ledger.list(task.id, 10)
    assert record.outcome is Outcome.DELIVERED
    [req] = receiver.requests
    assert json.loads(req["body"])["run_id"] == fired.run_id == req["headers"]["Idempotency-Key"]
    assert req["headers"]["X-Kairos-Timestamp"] == str(int(PLANNED.timestamp()))


# ---- the CLI ------------------------------------------------------------------------------------------


def add_body(*argv: str) -> dict[str, Any]:
    from kairos.app import build_parser
    from kairos.commands.add import build_add_request

    return build_add_request(build_parser("add").parse_args(["add", *argv]))


def test_cli_target_webhook_url_builds_a_webhook_target():
    """`kairos add --target webhook:URL` sends {"kind": "webhook", "url": ...} (with --timeout as timeout_s)."""
    body = add_body("--in", "5m", "--target", "webhook:http://127.0.0.1:8765/k?x=1", "--timeout", "12", "hi")
    assert body["target"] == {"kind": "webhook", "url": "http://127.0.0.1:8765/k?x=1", "timeout_s": 12.0}


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--target", "webhook"], "needs the URL"), (["--target", "webhook:ftp://x/"], "http:// or https://"),
     (["--target", "webhook:http://127.0.0.1/", "--cmd", "true"], r"do\(es\) not go with a webhook"),
     (["--target", "webhook:http://127.0.0.1/", "--session", "work"], "--session")],
)  # fmt: skip
def test_cli_target_webhook_usage_errors(argv, message):
    """A webhook target without a usable URL, or with options of other targets, is a usage error."""
    from kairosd.core.errors import UsageError

    with pytest.raises(UsageError, match=message):
        add_body("--in", "5m", *argv, "hi")


def test_cli_lists_a_webhook_by_host_only():
    """`kairos list` shows webhook:HOST, never the URL's path or query (they often hold tokens)."""
    from kairos.commands.tasks import target_text

    url = "https://hooks.example.com:8443/services/T0/B0/SECRET?token=abc"
    assert target_text({"kind": "webhook", "url": url}) == "webhook:hooks.example.com:8443"


def test_cli_unknown_target_kinds_are_refused_by_the_parser(capsys):
    """An unknown --target is a usage error (exit 2) naming the kinds, webhook: included."""
    with pytest.raises(SystemExit) as exc:
        add_body("--in", "5m", "--target", "carrier-pigeon", "hi")
    assert exc.value.code == 2
    assert "'webhook:'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "expected"), [("3", 3.0), ("²", None), ("9" * 5000, None), ("1e3", None), ("", None)]
)
def test_retry_after_takes_only_plain_ascii_seconds(value, expected):
    """A receiver's "Retry-After: ²" passed str.isdigit() and made float() raise inside the delivery."""
    import httpx

    from kairosd.delivery.webhook import _retry_after

    # As received: header bytes, which httpx decodes as Latin-1 (so byte 0xB2 is "²").
    assert _retry_after(httpx.Headers([(b"retry-after", value.encode("latin-1"))])) == expected
