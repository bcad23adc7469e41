"""Files that someone else names are read with bounds (issue 27, finding 1 and the import in 3).

A FIFO, /dev/zero or a link to either is refused at once; a long file is read up to a cap and says
so; the daemon's transcript reads never take the default pool, never queue without end and never
hold a request past their timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest
from consolidation_service_support import Harness
from registry_support import run

from kairos.app import run as kairos
from kairosd.consolidation import service as service_module
from kairosd.consolidation.transcripts.read import count_human_turns, read_file
from kairosd.core.errors import UnavailableError
from kairosd.system.boundedread import NotRegularFile, TooLarge, open_capped, open_regular, read_capped


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_without_waiting_for_a_writer(fifo):
    with pytest.raises(NotRegularFile, match="is a FIFO, not a regular file"):
        open_regular(fifo)


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null"])
def test_a_device_and_a_link_to_it_are_refused(tmp_path, target):
    link = tmp_path / "scheduled_tasks.json"
    link.symlink_to(target)
    for path in (Path(target), link):
        with pytest.raises(NotRegularFile, match="character device"):
            open_regular(path)


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(OSError, match="folder"):
        open_regular(tmp_path)


def test_a_link_to_a_regular_file_is_read(tmp_path):
    real = tmp_path / "real.jsonl"
    real.write_bytes(b"hello\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with open_regular(link) as file:
        assert file.read() == b"hello\n"


def test_read_capped_refuses_a_file_over_its_cap(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    assert read_capped(path, 101) == b"x" * 101
    with pytest.raises(TooLarge, match="larger than 100 bytes"):
        read_capped(path, 100)


def test_a_capped_file_ends_at_its_cap_and_says_more_was_there(tmp_path):
    path = tmp_path / "lines"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    file, capped = open_capped(path, 50)
    with file:
        first = file.readline()
        file.seek(0)
        data = file.read()
    assert first == b"line 0\n"
    assert len(data) == 50
    assert capped.truncated
    assert capped.size == path.stat().st_size
    file, capped = open_capped(path, path.stat().st_size)
    with file:
        file.read()
    assert not capped.truncated


def test_a_transcript_longer_than_the_cap_is_read_that_far_with_a_note(tmp_path):
    transcript = tmp_path / "long.jsonl"
    lines = [
        json.dumps({"role": role, "content": f"turn {i} " + "x" * 200})
        for i in range(40)
        for role in ("user", "assistant")
    ]
    transcript.write_text("\n".join(lines) + "\n")
    size = transcript.stat().st_size
    whole, _ = count_human_turns(transcript)
    part, stats = count_human_turns(transcript, max_bytes=size // 2)
    assert 0 < part < whole
    assert stats.truncated
    assert any("only the first" in note for note in stats.notes)
    assert stats.as_dict()["truncated"] is True


def test_reading_a_fifo_or_dev_zero_as_a_transcript_raises_at_once(fifo):
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(OSError, match="not a regular file"):
            list(read_file(path, "claude"))


def test_fifo_and_dev_zero_requests_are_skipped_and_the_daemon_goes_on(tmp_path, fifo):
    """Eight FIFO requests and one /dev/zero: each is answered at once at the turn gate, and the
    default pool (every store save) is still free afterwards."""

    async def main() -> None:
        h = await Harness(tmp_path).start()
        answers = []
        for path in (fifo, Path("/dev/zero")):  # eight at once (the cap), twice
            answers += await asyncio.wait_for(asyncio.gather(*(h.ask(f"s{i}", path) for i in range(8))), timeout=10)
        for answer in answers:
            assert (answer["status"], answer["gate"]) == ("skipped", "transcript")
            assert "not a regular file" in answer["reason"]
        # The default pool is free: a to_thread call completes at once.
        assert await asyncio.wait_for(asyncio.to_thread(lambda: 42), timeout=5) == 42
        await h.stop()

    run(main())


def test_reads_in_flight_are_capped_and_a_slow_read_times_out(monkeypatch):
    """A read past the timeout answers the request (it is not waited for); past the cap, refused."""
    release = threading.Event()
    monkeypatch.setattr(service_module, "READ_TIMEOUT_S", 0.2)

    async def main() -> None:
        pool = service_module._ReadPool(2)
        slow = [asyncio.ensure_future(pool.run(release.wait)) for _ in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(UnavailableError, match="2 transcript reads are going on already"):
            await pool.run(lambda: 1)
        for task in slow:
            with pytest.raises(TimeoutError):
                await task
        release.set()
        # The abandoned threads give their slots back when they end.
        for _ in range(200):
            if pool._busy == 0:
                break
            await asyncio.sleep(0.01)
        assert await pool.run(lambda: 7) == 7
        pool.shutdown()
        with pytest.raises(UnavailableError, match="shutting down"):
            await pool.run(lambda: 1)

    run(main())


def test_kairos_import_of_a_link_to_dev_zero_or_a_fifo_fails_at_once(tmp_path, fifo, capsys, kairos_home):
    link = tmp_path / "scheduled_tasks.json"
    link.symlink_to("/dev/zero")
    for path in (link, fifo):
        assert kairos(["import", str(path), "--dry-run"]) == 1
        err = capsys.readouterr().err
        assert "not a regular file" in err, err


def test_kairos_import_refuses_a_file_larger_than_its_cap(tmp_path, capsys, kairos_home, monkeypatch):
    """Files larger than one request go in batches (issue 28), up to a cap; past it, refused unread."""
    from kairos.commands import claudeimport

    monkeypatch.setattr(claudeimport, "IMPORT_FILE_MAX", 1 << 20)
    path = tmp_path / "scheduled_tasks.json"
    path.write_bytes(b" " * ((1 << 20) + 1))
    assert kairos(["import", str(path), "--dry-run"]) == 1
    assert "larger than" in capsys.readouterr().err
