"""Memory consolidation: when an agent session ends, distil what should be remembered into the
project's context board (see :mod:`kairosd.consolidation.wiring` for how kairosd uses it).

    board         the context board: its entries, store, edits, rendering and operations
    transcripts   agent CLI transcripts read into one stream of messages (Claude Code, Copilot CLI,
                  Codex, Gemini, OpenCode, generic)
    offline       the offline consolidator: durable signals out of a transcript, no model (pure)
    remagent      agent mode: the rem-agent run through an agent CLI, and which mode a run takes
    gates         why a request is not run (pure)
    request       the request bodies' fields (pure)
    service       the daemon side: gates, one run per project, follow-ups, status
    runs          a worker run's life: launch, watch, settle, re-adopt after a restart
    spawn         start the worker detached; notice when it ends
    worker        the detached process: ``python -m kairosd.consolidation.worker REQUEST``
    api, wiring   the HTTP routes and what the composition root calls

The four subpackages sit below the top-level modules: none of them imports service, runs, spawn,
worker, api or wiring (pyproject's ``consolidation-*`` contracts). The daemon loads only the board
and the transcripts' turn counter; offline and remagent run in the worker.

Imports: core, system, api, store, agents, config and jobs (a worker run is a
background job of kind ``consolidation``). Must not import scheduling, sessions, export or app.
"""
