"""Keeping secrets that travel in URLs out of log lines and run reasons.

Webhook URLs often carry a token in their query (``?token=...``) or path, and a
URL may carry ``user:password@``. kairos' own log lines name only the host, but
httpx logs every request's full URL (``HTTP Request: POST http://...``), and an
exception's text may quote it. :func:`redact_urls` cuts every URL in a text
down to its scheme and host (``http://127.0.0.1:8765/…``): no user info, no
path, no query. :func:`install` puts a filter doing that on the loggers of
httpx and httpcore, whatever level they are set to.

Must not import anything from kairosd: it is used by the webhook target only.
"""

from __future__ import annotations

import logging
import re

# scheme://[userinfo@]host[:port] then the rest up to whitespace or a quote.
_URL = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)(?:[^\s/?#@\"'<>]*@)?([^\s/?#\"'<>]*)([^\s\"'<>]*)")
_LIBRARIES = ("httpx", "httpcore")


def redact_urls(text: str) -> str:
    """``text`` with every URL reduced to ``scheme://host[:port]`` (plus ``/…`` where something followed)."""
    return _URL.sub(lambda m: m[1] + m[2] + ("/…" if m[3] else ""), text)


class RedactUrls(logging.Filter):
    """Rewrites a record's message with :func:`redact_urls` (the arguments are merged into it first)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact_urls(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


_FILTER = RedactUrls()


def install() -> None:
    """Put the filter on every logger of httpx and httpcore that exists now (call after importing httpx)."""
    names = [name for name in logging.root.manager.loggerDict if name.split(".", 1)[0] in _LIBRARIES]
    for name in {*_LIBRARIES, *names}:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
