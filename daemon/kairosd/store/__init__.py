"""What kairosd keeps on disk: the task store, its lock, json logs and the inbox files.

    store          ``scheduled_tasks.json``: load, migrate, save atomically
    journal        changes appended beside the store between two full writes of it
    locking        the store's lock file (one daemon per store, Claude Code's lock shape)
    migrations     older store versions to the current one
    claude_compat  Claude Code's task records to kairos tasks and back
    quarantine     records the store could not use, kept aside with the reason
    jsonlog        append-only, fsynced JSON lines files with compaction
    inbox          per-session inbox files (a json log each)

Imports: :mod:`kairosd.core` and :mod:`kairosd.system` only. Serves no route (the quarantine's is
in :mod:`kairosd.scheduling.api`). Must not import scheduling, sessions, jobs or agents.
"""
