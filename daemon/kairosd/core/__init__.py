"""The kernel: what a task is and how its times are computed, shared by the daemon and the CLI.

    models      the task, its schedule, target and policies (pydantic, no I/O)
    records     runs, missed fires and inbox items (pydantic, no I/O)
    plan        the next fires of a task (pure)
    schedule/   cron, intervals, jitter, exact times, wording (pure)
    bounds      every range kairos accepts, one table (pure)
    lifecheck   whether a stored task can live its whole life in range (pure)
    errors      the one error base class with stable codes and exit codes
    ids         git-style id prefixes, the one rule every verb resolves ids by (pure)
    protocol    the wire protocol's constants (API version, paths' prefix, error statuses)
    wire/       every response and ``--json`` document as a model (pydantic; off the CLI's hot paths)
    defaults    the one set of default limits (concurrency, depth, grace, timeouts)
    events      the in-process event bus (asyncio queues, no I/O)
    reminder    the words a live session sees for a scheduled prompt (pure)
    agentspec   agent permissions and command templates, shared by the config and the adapters (pure)
    agentversions  the oldest supported version of each agent CLI, and what an older one lacks (pure)
    redact      secrets out of URLs before they are logged (pure)
    readonly    the read-only dict a frozen task's meta is (pure)
    invisible   the characters a person cannot see, escaped in every human view (pure)
    clock       the Clock interface and the only module that reads the real time
    lazyre      regular expressions compiled at their first use (pure)

Imports: the standard library, pydantic, tzdata/zoneinfo and cronsim only; nothing else of
kairosd. The CLI may import this package (see the ``cli-public-face`` contract in pyproject.toml).
"""
