"""The kairosd console script: its arguments without argparse, and a daemon process that can speak TLS."""

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


def test_asyncio_tls_works_in_the_daemon_process(tmp_path: Path) -> None:
    """The daemon's entry leaves ssl alone: asyncio's own TLS transport works in the kairosd process.

    (An earlier start-up trick imported asyncio with ssl hidden, which made any asyncio TLS fail with
    "stdlib ssl module not available".) The child runs ``kairosd.__main__.main`` as the console script
    does, with a stand-in ``serve_forever`` that does a TLS round trip over asyncio streams.
    """
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
        import sys, types

        folder = sys.argv[1]

        def serve_forever():
            # What a daemon part would do: asyncio streams over TLS, in the process main() prepared.
            import asyncio, ssl

            import kairosd.app.daemon  # the real one, loaded in this process too

            async def round_trip():
                server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                server_ctx.load_cert_chain(folder + "/cert.pem", folder + "/key.pem")
                client_ctx = ssl.create_default_context(cafile=folder + "/cert.pem")

                async def echo(reader, writer):
                    writer.write(await reader.readline())
                    await writer.drain()
                    writer.close()

                server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_ctx)
                port = server.sockets[0].getsockname()[1]
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", port, ssl=client_ctx, server_hostname="localhost"
                )
                writer.write(b"fired\\n")
                line = await reader.readline()
                writer.close()
                server.close()
                return line

            print(asyncio.run(round_trip()))
            return 0

        # main() imports these two names from kairosd.app.daemon; a stand-in module supplies them, so
        # nothing is imported before main() runs its own start-up.
        stand_in = types.ModuleType("kairosd.app.daemon")
        stand_in.configure_logging = lambda verbose: None
        stand_in.serve_forever = lambda: (sys.modules.pop("kairosd.app.daemon"), serve_forever())[1]
        sys.modules["kairosd.app.daemon"] = stand_in
        assert "asyncio" not in sys.modules

        from kairosd.__main__ import main

        main([])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "b'fired\\n'"


def test_a_start_builds_no_answer_model() -> None:
    """The answers' models (kairosd.core.wire) are built at the first answer that uses each, not when
    kairosd starts (``defer_build``): the handlers import them to make their answers, and a start, which
    every test with a real kairosd pays for, would otherwise build all of them (about 35 ms)."""
    probe = textwrap.dedent(
        """
        import sys
        from pydantic import BaseModel
        import kairosd.app.daemon
        wire = [m for name, m in list(sys.modules.items()) if name.startswith("kairosd.core.wire")]
        models = [v for m in wire for v in vars(m).values()
                  if isinstance(v, type) and issubclass(v, BaseModel) and v.__module__ == m.__name__]
        print(len(models), sorted(v.__name__ for v in models if v.__pydantic_complete__))
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    count, built = done.stdout.strip().split(" ", 1)
    assert int(count) > 0  # the handlers do import them
    assert built == "[]"
