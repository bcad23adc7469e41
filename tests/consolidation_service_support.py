"""The consolidation service as kairosd wires it, for the daemon-side tests: a :class:`Harness` (a
registry and the service on one root, on a fake clock), :func:`clean_environ`, and
:func:`consolidation_api` (their routes, as kairosd's socket server serves them).

Used by tests/unit/kairosd/consolidation/test_consolidation_service.py and the tests of the
consolidation API, the agent's answers, OpenCode, bounded reads and the wire's documents.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from consolidation_support import WAIT_S, write_transcript
from registry_support import FakeAdapter, make_registry

from kairosd.config import Config, ConsolidationConfig, with_environment
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
