"""Keeping secrets that travel in URLs out of log lines and run reasons.

Webhook URLs often carry a token in their query (``?token=...``) or path, and a
URL may carry ``user:password@``. kairos' own log lines name only the host, but
httpx logs every request's full URL (``HTTP Request: POST http://...``), and an
exception's text may quote it. :func:`redact_urls` cuts every URL in a text
down to its scheme and host (``http://127.0.0.1:8765/…``): no user info, no
path, no query, no fragment. :func:`install` puts a filter doing that on the
loggers of httpx and httpcore, whatever level they are set to.

**A URL ends only at ASCII whitespace.** Quotes, brackets, backslashes, control
and non-ASCII characters are all part of it: a URL is never cut short by a
character inside it (a ``'`` in a path once let ``?token=...`` through). So a
closing quote or bracket right after a URL may go with it; the host stays.
What follows the host is only kept when it is closing punctuation alone. A
JSON-escaped (``http:\\/\\/host``) or percent-encoded URL counts too, and as a last net any
``?name=value`` / ``&name=value`` left in the text (a URL split by a space) has
its value replaced by ``…``.

Must not import anything from kairosd: it is used by the webhook target only.
"""

from __future__ import annotations

import logging
import re

# scheme:// (also scheme:\/\/ as JSON writes it, with any backslashes, and %3A%2F%2F), then everything
# up to ASCII whitespace. The scheme is the longest run of scheme characters (\b would miss "_http://").
_URL = re.compile(r"(?<![a-zA-Z0-9+.-])([a-zA-Z][a-zA-Z0-9+.-]*(?::|%3[aA])(?:\\*/|%2[fF]){2})([^\t\n\v\f\r ]*)")
# The start of an authority up to where its host must end: user info is what comes before the last @.
_AUTHORITY_END = re.compile(r"[/?#]")
# What a host may be shown as: a name (IDN too), IPv4 or [IPv6], then a numeric port.
_HOST = re.compile(r"(?:\[[0-9a-fA-F:.%\w]*\]|[\w.\-~]*)(?::[0-9]*)?")
_CLOSING = re.compile(r"[\"'`)\]}>,.;:!]*")
# A query or fragment parameter that is no longer inside a URL: its value goes whatever it is.
_PARAMETER = re.compile(r"([?&;#][\w.~%+\-\[\]]+=)[^\t\n\v\f\r &;#]+")
_LIBRARIES = ("httpx", "httpcore")


def redact_urls(text: str) -> str:
    """``text`` with every URL reduced to ``scheme://host[:port]`` (plus ``/…`` where something followed)."""
    return _PARAMETER.sub(r"\1…", _URL.sub(_redact_one, text))


def _redact_one(match: re.Match[str]) -> str:
    scheme, rest = match[1], match[2]
    cut = _AUTHORITY_END.search(rest)
    authority = rest[: cut.start()] if cut else rest
    if "@" in authority:
        rest = rest[authority.rindex("@") + 1 :]
    host = _HOST.match(rest)
    shown = host[0] if host else ""
    after = rest[len(shown) :]
    if _CLOSING.fullmatch(after):
        # Only closing quotes, brackets or sentence punctuation follow: nothing secret, so they stay.
        return scheme + shown + after
    return scheme + shown + "/…"


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
