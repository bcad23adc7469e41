"""The webhook target: POST each fire as signed JSON to an HTTP(S) URL (``kairos add --target webhook:URL``).

The request::

    POST <url>
    Content-Type: application/json
    User-Agent: kairos/<version>
    Idempotency-Key: <run id>            the same on every attempt, so a receiver can drop repeats
    X-Kairos-Run-Id: <run id>
    X-Kairos-Task-Id: <task id>
    X-Kairos-Attempt: <1, 2, ...>
    X-Kairos-Timestamp: <unix seconds of this attempt>
    X-Kairos-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>

    {"task_id", "run_id", "fired_at", "planned_for", "target", "prompt", "meta"}

``meta`` is the task's ``meta`` plus ``scheduled_for``, ``catch_up``, ``late_by_s``
and ``task_name``. A receiver verifies a request by recomputing the HMAC over
``timestamp + "." + raw body`` with the shared key, comparing with
``hmac.compare_digest``, and rejecting timestamps more than a few minutes old.

- **Signed, always.** The key comes from the config (``[webhook] secret`` or
  ``secret_file``), never from the command line, where it would sit in the task
  store and in ``ps``. Without a key every webhook run fails and says why:
  kairos does not send unsigned webhooks.
- **Outcomes.** 2xx is ``delivered``. Other 4xx (not 408 or 429) fail at once.
  408, 429, 5xx, time-outs and network errors are retried with exponential
  backoff (a ``Retry-After`` in seconds is honoured) until ``max_attempts`` or the
  overall time-out, then fail. Redirects are not followed (3xx fails): a redirect
  could lead off loopback.
- **Addresses.** The host is resolved and every address must be loopback unless
  the config sets ``allow_non_loopback``. The request then goes to the address
  that was checked, with the Host header and TLS server name of the URL, so a
  second lookup cannot answer differently; proxy settings in the environment are
  ignored for the same reason.
- **Idempotent per run id.** A repeated ``deliver`` of a run returns the first
  result (or waits for it), so this daemon never posts one run twice; the
  scheduler records a fire before delivering it, so a restart does not either.

Logs name the host, never the path or query (webhook URLs often carry tokens),
the key or the prompt.

Must not import the scheduler, the store or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import json
import logging
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from kairosd import __version__
from kairosd.core import redact
from kairosd.core.clock import Clock
from kairosd.core.errors import UsageError
from kairosd.core.models import Target, WebhookTarget
from kairosd.delivery.base import SKIP_LATER_CHECKS, Handoff, Result

if TYPE_CHECKING:
    import httpx

    from kairosd.config import WebhookConfig

log = logging.getLogger(__name__)

Resolver = Callable[[str, int], Awaitable[list[str]]]

SIGNATURE_HEADER = "X-Kairos-Signature"
TIMESTAMP_HEADER = "X-Kairos-Timestamp"
RETRY_STATUSES = frozenset({408, 429})
SNIPPET_BYTES = 512  # of a failing answer, quoted in the run's reason
RESOLVE_CHECK_S = 3.0  # how long `kairos add` waits for the host to resolve
_REMEMBERED_RESULTS = 1024


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The ``X-Kairos-Signature`` value for ``body`` sent at ``timestamp`` (what a receiver recomputes)."""
    digest = hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8, ::1 and IPv4-mapped loopback (``::ffff:127.0.0.1``)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone (%eth0) is not part of the address
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _resolve_error(exc: BaseException) -> str:
    """``[Errno -2] Name or service not known`` as ``Name or service not known``."""
    return str(getattr(exc, "strerror", None) or exc) or type(exc).__name__


async def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (TCP), in the resolver's order, without duplicates."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class _Attempt:
    """What one HTTP attempt came to: ``retry`` says whether another attempt may help."""

    delivered: bool
    retry: bool
    reason: str
    retry_after_s: float | None = None


class _Refused(Exception):
    """The run cannot be delivered and retrying would not change that."""


class WebhookDelivery:
    """Delivers webhook targets; see the module docstring for the contract."""

    kind = "webhook"

    def __init__(
        self,
        clock: Clock,
        *,
        secret: bytes | None,
        allow_non_loopback: bool = False,
        timeout_s: float = 30.0,
        attempt_timeout_s: float = 10.0,
        max_attempts: int = 5,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        resolve: Resolver | None = None,
    ) -> None:
        self._clock = clock
        self._secret = secret
        self._allow_non_loopback = allow_non_loopback
        self._timeout_s = timeout_s
        self._attempt_timeout_s = attempt_timeout_s
        self._max_attempts = max(1, max_attempts)
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._resolve = resolve or resolve_host
        self._client: httpx.AsyncClient | None = None
        self._pending: dict[str, asyncio.Future[Result]] = {}
        self._results: OrderedDict[str, Result] = OrderedDict()
        self._running: set[asyncio.Task[Result]] = set()
        self._closed = False

    @classmethod
    def from_config(cls, config: WebhookConfig, clock: Clock) -> WebhookDelivery:
        """The delivery the ``[webhook]`` section of the config describes."""
        return cls(
            clock,
            secret=config.secret_bytes(),
            allow_non_loopback=config.allow_non_loopback,
            timeout_s=config.timeout,
            attempt_timeout_s=config.attempt_timeout,
            max_attempts=config.max_attempts,
        )

    def reconfigure(self, config: WebhookConfig) -> None:
        """Take new ``[webhook]`` settings (a config reload): deliveries from now on use them."""
        self._secret = config.secret_bytes()
        self._allow_non_loopback = config.allow_non_loopback
        self._timeout_s = config.timeout
        self._attempt_timeout_s = config.attempt_timeout
        self._max_attempts = max(1, config.max_attempts)

    # ---- the Delivery protocol -------------------------------------------

    async def check(self, target: Target) -> None:
        """At add time: a webhook without a key, to a host that resolves off loopback without the
        allowance, or to a host that does not resolve (unless ``SKIP_LATER_CHECKS``), would fail every fire."""
        if self._secret is None:
            raise UsageError(
                "webhook target: kairosd has no webhook key, and kairos does not send unsigned webhooks; set "
                "[webhook] secret_file in config.toml and restart kairosd (see the README's Webhook target)"
            )
        if not isinstance(target, WebhookTarget):
            return
        parts = urlsplit(target.url)
        host = parts.hostname or ""
        try:
            # Bounded: add must answer even when DNS hangs (getaddrinfo itself runs in a thread).
            async with asyncio.timeout(RESOLVE_CHECK_S):
                addresses = await self._resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        except (OSError, ValueError, TimeoutError) as exc:
            if SKIP_LATER_CHECKS.get():
                return
            why = f"no answer within {RESOLVE_CHECK_S:g}s" if isinstance(exc, TimeoutError) else _resolve_error(exc)
            raise UsageError(
                f"webhook target: cannot resolve {host} ({why}), so every fire would fail; check the URL, "
                "or add it with --no-check if name lookups fail only for now"
            ) from None
        outside = [a for a in addresses if not is_loopback(a)]
        if outside and not self._allow_non_loopback:
            raise UsageError(
                f"webhook target: {host} resolves to {', '.join(outside)}, not a loopback address; set "
                "[webhook] allow_non_loopback = true in config.toml to post to other hosts"
            )

    async def deliver(self, handoff: Handoff) -> Result:
        """POST ``handoff`` (with retries); return once the receiver accepted it or kairos gave up."""
        known = self._results.get(handoff.run_id)
        if known is not None:
            log.info("webhook run %s was already delivered or given up (%s); not posting it again", handoff.run_id,
                     known.outcome)  # fmt: skip
            return known
        pending = self._pending.get(handoff.run_id)
        if pending is not None:
            # Shielded: a second caller giving up must not cancel the first caller's delivery.
            return await asyncio.shield(pending)
        started_at = self._clock.now()
        if self._closed:
            return Result("failed", started_at, started_at, reason="webhook delivery is closed (kairosd is stopping)")

        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending[handoff.run_id] = future
        work = asyncio.ensure_future(self._run(handoff, started_at))
        self._running.add(work)
        try:
            result = await asyncio.shield(work)
        except asyncio.CancelledError:
            # The receiver may have seen the request already: the run counts as handled, never re-posted.
            current = asyncio.current_task()
            if self._closed and work.cancelled() and (current is None or current.cancelling() == 0):
                # close() stopped the post, not our caller: report it like any other failure.
                result = Result("failed", started_at, self._clock.now(), reason="stopped at daemon shutdown "
                                "while posting the webhook")  # fmt: skip
                self._finish(handoff.run_id, future, result)
                return result
            work.cancel()
            result = Result("failed", started_at, self._clock.now(), reason="cancelled while posting the webhook")
            self._finish(handoff.run_id, future, result)
            raise
        except Exception as exc:
            reason = f"target error: {redact.redact_urls(str(exc))}"
            result = Result("failed", started_at, self._clock.now(), reason=reason)
            self._finish(handoff.run_id, future, result)
            raise
        finally:
            self._running.discard(work)
        self._finish(handoff.run_id, future, result)
        return result

    async def close(self) -> None:
        """Abandon in-flight posts (they report a failed "stopped" result) and close the connections.

        Idempotent; later deliveries are refused.
        """
        self._closed = True
        running = list(self._running)
        for work in running:
            work.cancel()
        if running:
            log.info("stopping %d webhook post(s) in flight", len(running))
            await asyncio.gather(*running, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    # ---- one run -----------------------------------------------------------

    async def _run(self, handoff: Handoff, started_at: datetime) -> Result:
        try:
            url, timeout_s = _parse_target(handoff.target, self._timeout_s)
        except ValueError as exc:
            return self._failed(started_at, str(exc))
        if not self._secret:
            return self._failed(
                started_at,
                "no webhook secret is configured, and kairos never sends unsigned webhooks: set "
                "[webhook] secret_file (or secret) in config.toml and restart kairosd",
            )
        body = _body(handoff, started_at)
        host = url.hostname or "?"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        attempts = 0
        last = "no attempt was made"
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    attempts += 1
                    outcome = await self._attempt(handoff, url, body, attempts, deadline)
                    if outcome.delivered:
                        log.info("webhook run %s of task %s delivered to %s: %s", handoff.run_id, handoff.task_id, host,
                                 outcome.reason)  # fmt: skip
                        return Result("delivered", started_at, self._clock.now(), reason=outcome.reason)
                    last = outcome.reason
                    if not outcome.retry:
                        return self._failed(started_at, outcome.reason, handoff)
                    if attempts >= self._max_attempts:
                        return self._failed(started_at, f"gave up after {attempts} attempt(s); last: {last}", handoff)
                    delay = min(self._backoff_s * 2 ** (attempts - 1), self._max_backoff_s)
                    if outcome.retry_after_s is not None:
                        delay = max(delay, outcome.retry_after_s)
                    if loop.time() + delay >= deadline:
                        return self._failed(
                            started_at,
                            f"gave up after {attempts} attempt(s): the next one (in {delay:g}s) would pass the "
                            f"{timeout_s:g}s time-out; last: {last}",
                            handoff,
                        )
                    log.info("webhook run %s to %s: %s; retrying in %gs", handoff.run_id, host, last, delay)
                    await asyncio.sleep(delay)
        except TimeoutError:
            return self._failed(started_at, f"timed out after {timeout_s:g}s ({attempts} attempt(s); last: {last})",
                                handoff)  # fmt: skip
        except _Refused as exc:
            return self._failed(started_at, str(exc), handoff)

    async def _attempt(self, handoff: Handoff, url: SplitResult, body: bytes, number: int, deadline: float) -> _Attempt:
        host = url.hostname or ""
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            addresses = await self._resolve(host, port)
        except socket.gaierror as exc:
            # A busy or unreachable resolver may answer later; a name that does not exist will not.
            transient = exc.errno == socket.EAI_AGAIN
            return _Attempt(False, transient, f"cannot resolve {host}: {exc.strerror or exc}")
        if not addresses:
            return _Attempt(False, False, f"{host} resolves to no address")
        if not self._allow_non_loopback:
            outside = [a for a in addresses if not is_loopback(a)]
            if outside:
                raise _Refused(
                    f"refused: {host} resolves to {', '.join(outside)}, not a loopback address; set "
                    "[webhook] allow_non_loopback = true in config.toml to post to other hosts"
                )
        import httpx  # here, not at the top: it costs ~0.1 s of every daemon start, and most never post

        timestamp = str(int(self._clock.now().timestamp()))
        assert self._secret is not None  # checked by _run
        headers = {
            "Host": url.netloc,
            "Content-Type": "application/json",
            "User-Agent": f"kairos/{__version__}",
            "Idempotency-Key": handoff.run_id,
            "X-Kairos-Run-Id": handoff.run_id,
            "X-Kairos-Task-Id": handoff.task_id,
            "X-Kairos-Attempt": str(number),
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(self._secret, timestamp, body),
        }
        # Connect to the address we checked: the URL's name is kept for Host and the TLS server name.
        extensions = {"sni_hostname": host} if url.scheme == "https" else {}
        left = deadline - asyncio.get_running_loop().time()
        timeout = httpx.Timeout(max(0.001, min(self._attempt_timeout_s, left)))
        request = self._http().build_request(
            "POST", _pinned(url, addresses[0], port), content=body, headers=headers, extensions=extensions,
            timeout=timeout,
        )  # fmt: skip
        try:
            response = await self._http().send(request, stream=True)
        except httpx.TimeoutException:
            return _Attempt(False, True, f"no answer from {host} within {timeout.read:g}s")
        except httpx.HTTPError as exc:
            return _Attempt(False, True, f"cannot reach {host}: {type(exc).__name__}: {redact.redact_urls(str(exc))}")
        try:
            snippet = await _read_snippet(response)
        finally:
            await response.aclose()
        code = response.status_code
        said = f"HTTP {code} from {host}" + (f": {snippet}" if snippet else "")
        if 200 <= code < 300:
            return _Attempt(True, False, f"HTTP {code} from {host} (attempt {number})")
        if code in RETRY_STATUSES or code >= 500:
            return _Attempt(False, True, said, _retry_after(response.headers))
        if 300 <= code < 400:
            return _Attempt(False, False, f"{said} (redirects are not followed)")
        return _Attempt(False, False, said)

    # ---- helpers -------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            # httpx logs each request's whole URL, and webhook URLs often hold tokens.
            redact.install()
            # trust_env=False: an HTTP(S)_PROXY from the environment would send loopback posts elsewhere.
            self._client = httpx.AsyncClient(trust_env=False, follow_redirects=False)
        return self._client

    def _failed(self, started_at: datetime, reason: str, handoff: Handoff | None = None) -> Result:
        if handoff is not None:
            log.warning("webhook run %s of task %s failed: %s", handoff.run_id, handoff.task_id, reason)
        return Result("failed", started_at, self._clock.now(), reason=reason)

    def _finish(self, run_id: str, future: asyncio.Future[Result], result: Result) -> None:
        self._pending.pop(run_id, None)
        self._results[run_id] = result
        while len(self._results) > _REMEMBERED_RESULTS:
            self._results.popitem(last=False)
        if not future.done():
            future.set_result(result)


def _parse_target(target: Target, default_timeout_s: float) -> tuple[SplitResult, float]:
    """The URL, split, and the timeout of a webhook target (its URL was checked when the task was made)."""
    if not isinstance(target, WebhookTarget):
        raise ValueError(f"not a webhook target: {target.kind}")
    timeout = target.timeout_s if target.timeout_s is not None else default_timeout_s
    return urlsplit(target.url), timeout


def _body(handoff: Handoff, fired_at: datetime) -> bytes:
    meta = {
        **handoff.meta,
        "scheduled_for": handoff.scheduled_for.isoformat(),
        "catch_up": handoff.catch_up,
        "late_by_s": round(handoff.late_by_s, 3),
        "task_name": handoff.task_name,
    }
    doc = {
        "task_id": handoff.task_id,
        "run_id": handoff.run_id,
        "fired_at": fired_at.isoformat(),
        "planned_for": handoff.planned_for.isoformat(),
        "target": handoff.target.model_dump(mode="json"),
        "prompt": handoff.prompt,
        "meta": meta,
    }
    # Built once per run: every attempt sends the same bytes (only the timestamp and signature change).
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8")


def _pinned(url: SplitResult, address: str, port: int) -> str:
    host = f"[{address}]" if ":" in address else address
    path = url.path or "/"
    return f"{url.scheme}://{host}:{port}{path}" + (f"?{url.query}" if url.query else "")


async def _read_snippet(response: httpx.Response) -> str:
    """The start of the answer's body, one line, for a reason text (never the whole of a huge body)."""
    import httpx

    data = b""
    with contextlib.suppress(httpx.HTTPError):
        async for chunk in response.aiter_raw():
            data += chunk
            if len(data) >= SNIPPET_BYTES:
                break
    text = " ".join(data[:SNIPPET_BYTES].decode("utf-8", "replace").split())
    return text[:200]


def _retry_after(headers: httpx.Headers) -> float | None:
    raw = headers.get("retry-after", "").strip()
    # Only the delta-seconds form: an HTTP date would need the receiver's clock to agree with ours.
    # ASCII digits, bounded: str.isdigit() takes "²", which float() refuses.
    return float(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 9 else None
