"""The kairosd console script: its arguments without argparse, and asyncio imported without ssl (issue 16)."""

from __future__ import annotations

import datetime
import gc
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kairosd.app.daemon
from kairosd import __main__ as kairosd_main


@pytest.fixture(autouse=True)
def _collector_back_on() -> Iterator[None]:
    # main() turns the cycle collector off for the start; the real serve_forever turns it back on.
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()


@pytest.mark.parametrize(("argv", "verbose"), [([], False), (["-v"], True), (["--verbose"], True), (["--verb"], True)])
def test_the_arguments_give_the_same_verbosity_with_or_without_the_parser(
    monkeypatch: Any, argv: list[str], verbose: bool
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(kairosd.app.daemon, "configure_logging", seen.append)
    monkeypatch.setattr(kairosd.app.daemon, "serve_forever", lambda: 0)
    with pytest.raises(SystemExit) as info:
        kairosd_main.main(argv)
    assert info.value.code == 0
    assert seen == [verbose]


@pytest.mark.parametrize(("argv", "code", "out", "err"), [
    (["--version"], 0, "kairosd 0.1.0\n", ""),
    (["--help"], 0, "usage: kairosd [-h] [--version] [-v]", ""),
    (["-v", "extra"], 2, "", "kairosd: error: unrecognized arguments: extra"),
])  # fmt: skip
def test_other_arguments_go_through_the_parser(capsys: Any, argv: list[str], code: int, out: str, err: str) -> None:
    with pytest.raises(SystemExit) as info:
        kairosd_main.main(argv)
    assert info.value.code == code
    captured = capsys.readouterr()
    assert captured.out.startswith(out)
    assert err in captured.err


def test_the_daemon_starts_without_ssl_and_https_still_works_through_httpx(tmp_path: Path) -> None:
    """What the start leaves out (ssl) comes back for the webhook delivery's HTTPS, which httpx does itself."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    script = textwrap.dedent(
        """
        import sys
        from kairosd.__main__ import _import_asyncio_without_ssl

        _import_asyncio_without_ssl()
        import kairosd.app.daemon
        assert "ssl" not in sys.modules and "_ssl" not in sys.modules, "ssl was imported at start"

        import asyncio, http.server, ssl, threading
        import httpx

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1] + "/cert.pem", sys.argv[1] + "/key.pem")
        server.socket = context.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()

        async def post():
            # As the webhook delivery builds its client, trusting the test's certificate.
            trusted = sys.argv[1] + "/cert.pem"
            async with httpx.AsyncClient(trust_env=False, follow_redirects=False, verify=trusted) as c:
                response = await c.post(f"https://localhost:{server.server_address[1]}/hook", content=b"fired")
            return response.status_code, response.content

        print(asyncio.run(post()))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(200, b'fired')"
