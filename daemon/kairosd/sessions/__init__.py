"""Live agent sessions: which sessions are open, and prompts delivered into them through hooks.

A *session* here is an agent CLI's live interactive session (Claude Code, Copilot, ...) that
registered itself through a hook; it is not a background job's session (see :mod:`kairosd.jobs`).

    store      live sessions and the items waiting for them, durable in one JSON file
    core       what the hub's parts share: the store's writes, the change broadcast, background work
    rules      the pure rules: the Stop-chain guard, hook-body fields, the words runs carry
    routing    where a fire for a session goes: its pending items, another session, or the inbox
    waiters    the Claude ``asyncRewake`` long poll that hands out a session's next item between turns
    hub        the use-cases that the API, the ``session`` target and the tests call
    delivery   the ``session`` delivery target
    api        the session and hook routes
    wiring     what the composition root calls

Imports: core, system, api, store, delivery and scheduling (the run ledger).
Must not import consolidation, export or app.
"""
