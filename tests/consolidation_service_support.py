"""The consolidation service as kairosd wires it, for the daemon-side tests: a :class:`Harness` (a
registry and the service on one root, on a fake clock), :func:`clean_environ`, and
:func:`consolidation_api` (their routes, as kairosd's socket server serves them).

Used by tests/unit/kairosd/consolidation/test_consolidation_service.py and the tests of the
consolidation API, the agent's answers, OpenCode, bounded reads and the wire's documents.

Also :func:`fork_workers`: the detached worker as a fork of this process rather than a new interpreter,
for the tests that check what a run computes and records, not how the worker is started
(:func:`real_worker` marks those that keep the real start).
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from consolidation_support import WAIT_S, write_transcript
from registry_support import FakeAdapter, make_registry

from kairosd.config import Config, ConsolidationConfig, with_environment
from kairosd.consolidation import spawn, worker
from kairosd.consolidation.api import consolidation_routes
from kairosd.consolidation.request import ConsolidationRequest
from kairosd.consolidation.runs import ConsolidationDeps
from kairosd.consolidation.service import Consolidation
from kairosd.core.events import EventBus
from kairosd.jobs.api import registry_routes
from kairosd.jobs.registry import Registry
from kairosd.scheduling.api import Api
from kairosd.system.paths import Paths
from kairosd.testing import FakeClock


def clean_environ(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAIROS_", "CLAUDE"))}
    return {**env, **extra}


class Harness:
    """A registry and the consolidation service on one root, as kairosd wires them."""

    def __init__(self, root: Path, *, clock: FakeClock | None = None, environ: dict[str, str] | None = None,
                 adapter: FakeAdapter | None = None, **config: Any) -> None:  # fmt: skip
        self.root = root
        self.paths = Paths(root / "state", root / "run", root / "data", root / "config")
        self.clock = clock or FakeClock()
        self.events = EventBus(self.clock.now)
        self.registry: Registry = make_registry(root, adapter, clock=self.clock, events=self.events)
        # A home of its own: auto mode (the default) looks there for `kairos integrate`'s hooks.
        self.environ = clean_environ(HOME=str(root / "home")) if environ is None else environ
        # As load_config makes it: kairosd's own KAIROS_CONSOLIDATE is read there, not by the service.
        self.config = with_environment(Config(consolidation=ConsolidationConfig(**config)), self.environ).consolidation
        self.service = self._service()
        self.project = root / "proj"
        (self.project / ".git").mkdir(parents=True, exist_ok=True)
        (self.project / "src").mkdir(exist_ok=True)

    def _service(self) -> Consolidation:
        return Consolidation(
            ConsolidationDeps(self.paths, self.clock, self.events, self.registry, self.config, self.environ, "UTC")
        )

    async def start(self) -> Harness:
        await self.registry.recover()
        await self.service.start()
        return self

    async def restart(self) -> None:
        """kairosd stops (workers go on) and starts again on the same files."""
        await self.service.stop()
        await self.registry.stop()
        self.events = EventBus(self.clock.now)
        self.registry = make_registry(self.root, clock=self.clock, events=self.events)
        self.service = self._service()
        await self.start()

    async def stop(self) -> None:
        await self.service.stop()
        await self.registry.stop()

    async def ask(self, session: str = "s1", transcript: Path | None = None, **extra: Any) -> dict[str, Any]:
        if transcript is None:
            transcript = write_transcript(self.root / "transcripts" / session, "claude", str(self.project))
        body = {"agent": "claude", "session_id": session, "transcript_path": str(transcript),
                "cwd": str(self.project / "src"), "reason": "prompt_input_exit", **extra}  # fmt: skip
        return await self.service.request(ConsolidationRequest(**body))

    async def settled(self, task_id: str) -> Any:
        record, timed_out = await self.registry.wait(task_id, WAIT_S)
        assert not timed_out, f"run {task_id} did not settle"
        return record

    def board(self) -> list[dict[str, Any]]:
        return self.service.boards.load(str(self.project.resolve())).view(self.clock.now())

    def decisions(self) -> list[dict[str, Any]]:
        return self.service.decisions.read()


def consolidation_api(h: Harness) -> Api:
    """The registry's and the consolidation's routes of ``h``, for a test's own socket server."""
    api = Api(None, lambda: None)  # type: ignore[arg-type]  # these routes never touch the service
    api.add_routes(registry_routes(h.registry))
    api.add_routes(consolidation_routes(h.service))
    return api


# ---- the worker, forked ---------------------------------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., Any])


def real_worker(test: _F) -> _F:
    """Marks a test that is about how the worker is started (a new interpreter, its environment, its
    session, kairosd's restarts and bounds around it): :func:`fork_workers` leaves it the real start."""
    test.real_worker = True  # type: ignore[attr-defined]
    return test


def fork_workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unless the test is :func:`real_worker`: start each consolidation worker as :func:`spawn_forked` does."""
    if not getattr(request.function, "real_worker", False):
        monkeypatch.setattr(spawn, "spawn_detached", spawn_forked)


def spawn_forked(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None, log_path: Path, pid_path: Path
) -> int:
    """:func:`kairosd.consolidation.spawn.spawn_detached`, with the worker forked from this process: what
    a run computes and records comes from the same ``worker.main`` (``--detach``: it forks again and
    leads its own session, as the real one does) with the same environment, folder, stdio and file
    descriptors, only without a new interpreter importing kairosd (~0.29 s of CPU per run)."""
    assert list(argv[1:3]) == ["-m", spawn.WORKER_MODULE], argv  # no systemd-run scope in a test's environment
    log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        pid_path.unlink()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    parent = os.fork()
    if parent == 0:  # the child: what Popen(start_new_session=True, close_fds=True) gives, then the worker
        code = 1
        try:
            gc.freeze()  # this process's objects are never collected here (their files are not the child's)
            with contextlib.suppress(ValueError):
                signal.set_wakeup_fd(-1)  # an event loop's, if any: its descriptor is closed below
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            sys.stdin, sys.stdout, sys.stderr = open(0), open(1, "w"), open(2, "w")  # noqa: SIM115
            if cwd is not None:
                os.chdir(cwd)
            os.environ.clear()
            os.environ.update(env)
            code = worker.main(list(argv[3:]))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)
    os.close(fd)
    _, status = os.waitpid(parent, 0)
    try:
        return int(pid_path.read_text().strip())
    except (OSError, ValueError):
        raise OSError(f"the consolidation worker did not start (status {status}; see {log_path})") from None
