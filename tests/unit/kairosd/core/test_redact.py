"""Redaction holds for any URL shape, whatever it is quoted or wrapped in (issue 27, finding 7).

A ``'`` in a webhook URL once ended the match early and ``token=SECRET1`` reached
the log. The fuzz below builds URLs from pieces (quotes, brackets, backslashes,
non-ASCII, percent-encoding in user info, host, path, query and fragment),
wraps them the ways a log line or an exception text does, and checks that the
secret never survives while the host is still shown. Seeded: the same cases
on every run.
"""

from __future__ import annotations

import random

import pytest

from kairosd.core.redact import redact_urls

SCHEMES = ["http", "https", "HTTPS", "wss", "git+ssh"]
SEPARATORS = ["://", ":\\/\\/", "%3A%2F%2F"]
USERINFO = ["", "user:{S}@", "{S}@", "us'er:{S}@", 'u"s:{S}@', "u%40x:{S}@", "ü:{S}@", "u:p'a\"s<s>{S}@", "a@b:{S}@"]
HOSTS = ["127.0.0.1", "[::1]", "example.com", "bücher.example", "h-1.example", "[fe80::1%25eth0]"]
PORTS = ["", ":8080", ":1"]
PATHS = ["", "/", "/a'b", '/a"b/', "/[x]", "/é/ü", "/%27/", "/a(b)", "/{S}", "/a\\b/{S}", "/<x>", "/a'/{S}", "/\u202e/"]
QUERIES = [
    "", "?token={S}", "?a=1&token={S}", "?a='x'&token={S}", "?token='{S}'", "?x=[1]&t={S}", "?t=%27{S}%27",
    "?q=ü&t={S}", "?t={S}&u=1", "?'=&t={S}", '?t="{S}"', "?t={S}#", "?a=b;t={S}", "?t=\\'{S}",
]  # fmt: skip
FRAGMENTS = ["", "#{S}", "#t={S}", "#'x'&t={S}", "#[{S}]"]
WRAPS = ["{u}", "'{u}'", '"{u}"', "<{u}>", "({u})", "[{u}]", "URL('{u}')", "{u}.", "`{u}`", "{r}", "x={u},y", "_{u}"]
LINES = ['HTTP Request: POST {w} "HTTP/1.1 200 OK"', "error: {w}", "{w}", "cannot reach: {w}: refused"]


def cases(count: int, seed: int) -> list[tuple[str, str, str]]:
    """``count`` (line, secret, host) triples, each URL holding its secret in at least one place."""
    rnd = random.Random(seed)
    out = []
    while len(out) < count:
        secret = f"SECRET{rnd.randrange(10**6):06d}"
        pieces = [rnd.choice(group) for group in (USERINFO, PATHS, QUERIES, FRAGMENTS)]
        if not any("{S}" in piece for piece in pieces):
            continue
        user, path, query, fragment = (piece.replace("{S}", secret) for piece in pieces)
        host = rnd.choice(HOSTS)
        url = rnd.choice(SCHEMES) + rnd.choice(SEPARATORS) + user + host + rnd.choice(PORTS) + path + query + fragment
        wrapped = rnd.choice(WRAPS).replace("{u}", url).replace("{r}", repr(url))
        out.append((rnd.choice(LINES).replace("{w}", wrapped), secret, host))
    return out


def test_no_secret_survives_any_url_shape() -> None:
    leaks = [(line, redact_urls(line)) for line, secret, _ in cases(5000, 27) if secret in redact_urls(line)]
    assert not leaks, f"{len(leaks)} of 5000 leaked, for example: {leaks[:3]}"


def test_the_host_is_still_shown() -> None:
    hidden = [(line, redact_urls(line)) for line, _, host in cases(2000, 7) if host not in redact_urls(line)]
    assert not hidden, hidden[:3]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("POST 'http://h/a'b?token=SECRET1' failed", "POST 'http://h/… failed"),
        ("url='http://h:8080'.", "url='http://h:8080'."),
        ("http://us'er:SECRET1@h/", "http://h/…"),
        ("_http://h/SECRET1", "_http://h/…"),
        ("http:\\/\\/h\\/x?t=SECRET1", "http:\\/\\/h/…"),
        ("http%3A%2F%2Fh%2F%3Ft%3DSECRET1", "http%3A%2F%2Fh/…"),
        ("http://h/?a=b c&token=SECRET1 end", "http://h/… c&token=… end"),
        ("https://[::1]:9/x and http://h", "https://[::1]:9/… and http://h"),
    ],
)
def test_redaction_examples(line: str, expected: str) -> None:
    assert redact_urls(line) == expected
