"""The scheduler: when each task fires, what happens when it does, and the task API.

    scheduler      the loop: sleep until the next fire, fire, catch up, expire
    anchors        where a task's next fire is counted from, across restarts and sleeps
    taskbook       the in-memory tasks over the store, saved on every change
    firing         what one due slot does (fire, skip, miss), with its bounds (pure)
    dispatch       hand a fire to its delivery target and record the run
    ledger         runs.jsonl and missed.jsonl: the durable run history
    settle         at start, inbox runs a crash cut off after their item was written are delivered
    broken         one task that cannot be planned is paused with the reason; the rest go on
    claude_import  Claude Code's scheduled_tasks.json into kairos tasks, idempotently
    service        the use-cases behind the task routes (add, list, pause, run now, ...)
    summaries      a listed task's summary (kairos list), as a document and as JSON text
    kept           the last listing of each kind, sent again while nothing it shows changed
    requests       typed request bodies of the task routes
    api            the task routes, plus status and shutdown, on the router

Imports: core, system, api, store, config, delivery (the target interface) and jobs (background jobs).
Must not import sessions, consolidation, export or app: they are above it.
"""
