"""Start-up failures of kairosd are one line on stderr and exit 1, never a traceback (issues #13, #15 item 9)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kairosd.app.daemon
from kairosd import __main__ as kairosd_main


def test_an_unexpected_error_in_start_up_is_one_line_and_exit_1(monkeypatch: Any, capsys: Any) -> None:
    def boom() -> int:
        raise OverflowError("date value out of range\nsecond line")

    monkeypatch.setattr(kairosd.app.daemon, "serve_forever", boom)
    monkeypatch.setattr(kairosd.app.daemon, "configure_logging", lambda verbose: None)
    with pytest.raises(SystemExit) as info:
        kairosd_main.main([])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("kairosd: OverflowError: date value out of range\\nsecond line")
    assert "kairosd -v" in err
    assert "Traceback" not in err


def test_verbose_logs_the_traceback_at_debug(monkeypatch: Any, caplog: Any, capsys: Any) -> None:
    def boom() -> int:
        raise OverflowError("date value out of range")

    monkeypatch.setattr(kairosd.app.daemon, "serve_forever", boom)
    monkeypatch.setattr(kairosd.app.daemon, "configure_logging", lambda verbose: None)
    caplog.set_level("DEBUG", logger="kairosd")
    with pytest.raises(SystemExit):
        kairosd_main.main(["-v"])
    [record] = [r for r in caplog.records if r.exc_info]
    assert isinstance(record.exc_info[1], OverflowError)
    assert "kairosd -v" not in capsys.readouterr().err


@pytest.fixture
def home() -> Iterator[Path]:
    # Short: the socket path must fit AF_UNIX's ~107 bytes.
    with tempfile.TemporaryDirectory(prefix="kq", dir="/tmp") as folder:
        yield Path(folder)


def _start(home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAIROS_", "XDG_"))}
    env.update(KAIROS_HOME=str(home), TZ="UTC")
    return subprocess.run(
        [sys.executable, "-m", "kairos", "daemon", "start", "--no-systemd"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_daemon_start_on_a_corrupt_store_says_why_once_and_copies_it_once(home: Path) -> None:
    store = home / "state" / "scheduled_tasks.json"
    store.parent.mkdir(parents=True, mode=0o700)
    store.write_text('{"schema_version": 2, "tasks": [')
    for _ in range(2):
        result = _start(home)
        assert result.returncode == 1
        assert result.stderr.count("is not valid JSON") == 1, result.stderr
        assert "Traceback" not in result.stderr
    copies = [p.name for p in store.parent.iterdir() if ".corrupt-" in p.name]
    assert len(copies) == 1
    assert store.read_text() == '{"schema_version": 2, "tasks": ['


def test_the_corrupt_store_reason_is_raised_not_logged_as_well(tmp_path: Path, caplog: Any) -> None:
    """kairosd prints the error it gets as its one line; a log line with the same text made it twice."""
    from kairosd.core.errors import StoreCorruptError
    from kairosd.store.store import JsonStore
    from kairosd.testing import FakeClock

    store = tmp_path / "scheduled_tasks.json"
    store.write_text("{")
    caplog.set_level("DEBUG")
    with pytest.raises(StoreCorruptError, match="is not valid JSON"):
        JsonStore(store, FakeClock(), local_zone="UTC").load()
    assert not [r for r in caplog.records if "is not valid JSON" in r.getMessage()]
