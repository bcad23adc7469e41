"""The typed wire: every response kairosd answers, and every document ``kairos VERB --json`` prints, as a model.

The other half of :mod:`kairosd.core.protocol` (which holds the routes, the error codes and the
request-side constants). Requests are parsed by each capability's own models
(``kairosd.scheduling.requests``, ...); responses are described here, once, for both sides:

    base      Document (a top-level answer: strict, no unnamed keys) and Record (an object inside one)
    tasks     task views (list, show, add, edit, pause, resume), removals
    listing   the listing's summary view and ``list --problems``
    imports   ``kairos import``
    runs      runs and missed fires (``run``, ``history``, ``missed``)
    inbox     the inbox and its acknowledgements
    status    GET /v1/status
    sections  what one feature says of itself inside another's answer (the registry's slots, consolidation's
              state, the set-aside tasks: sections of GET /v1/status too)
    records   records of two families' answers (an id a many-ids verb could not act on, a board entry)
    sessions  live agent sessions, a hook's answer
    doctor    the doctor's report
    timeline  the timeline's chart
    export    export
    daemon    reload and shutdown
    registry  background jobs (``kairos task ...``)
    board     the context board
    consolidation  consolidation's decision and runs
    local     what the CLI prints without kairosd (``--version``, ``cron``, ``systemd``, ``integrate``)
    routes    RESPONSES: each (route, method) to the model of its answer; ``openapi.json`` shows them
    verbs     DOCUMENTS: each ``kairos VERB`` to the model of its ``--json`` output, and :func:`check`

The models are strict (no coercion: ``0`` is not ``false``) and a document forbids keys it does not
name, so a new key is added here first. Both sides use them: each of kairosd's handlers builds its
answer as its model (but those ``routes.PLAIN`` names, for size or speed), and every verb that reads an
answer reads it as its model (``kairos.answers``; with ``--json`` it prints the answer as it came, so
keys a newer kairosd adds pass through), as do the tools of ``kairos mcp`` and the views of ``kairos ui``
(``kairos.ui.views.answer_models``) but two, named below. Tests hold the daemon to
them (every route's answer for a representative request, ``tests/unit/kairos/test_wire_responses.py``)
and the CLI (every verb's ``--json``, ``tests/unit/kairos/test_json_documents*.py``).

Pydantic is imported by every module here, so nothing on the CLI's hot paths (``kairos list``, ``kairos
hook``) imports this package; they print or parse the bytes as they come (docs/performance.md,
tests/integration/kairos/test_import_budget.py). Every other verb imports the module of its own answer, and a
module imports no other family's but what its models embed (:mod:`.base`, :mod:`.sections`, :mod:`.records`; a
consolidation run is a background job): after pydantic itself, each model class built is what a verb pays
(~0.5 ms, against ~0.02 ms to validate an answer), so ``kairos status`` builds the 11 models of its answer,
not the 64 it did (issue 25). kairosd's handlers import each answer from its own module too.

Free-form on purpose (``dict[str, Any]`` or ``Any``), and only here:
    TaskView.meta                        a task's meta belongs to whoever added the task
    RunView.target                       the target as the run's ledger line recorded it at fire time, by
                                         this kairosd or an older one (a task's own target is typed)
    SetAside.record                      a stored record the store could not read, as it was
    DoctorDoc.settings, DoctorDoc.limits the whole config in effect, and its [limits] section: their shape is
                                         kairosd.config's models (outside kairosd.core), shown as they dump
A record (not a document) may also carry keys it does not name: a later kairosd adds them, and the
consolidation worker's result adds what its mode did (its agent's chunks, a fallback's reason).

Outside this package, ``dict[str, Any]`` stays where the data is not an answer, or not read as one:
    request bodies the CLI builds        kairosd parses them with its request models (kairosd.*.requests),
                                         which the CLI may not import (the cli-public-face contract)
    ``--json`` output                    printed as kairosd sent it (validated first, by the verb)
    ``kairos list``, ``kairos hook``     their answers as parsed JSON: pydantic costs more than their budget
    what the services return             dicts, which each route builds into its model once (one place
                                         per answer; a service's callers and tests read them as they are)
    the answers of routes.PLAIN          the services' dicts, sent as they are (the listing pre-encoded)
    streamed lines (routes.STREAMS)      sent as they come; the verb that shows one reads it as its model
    the timeline's chart answer          ``kairos timeline`` and ``kairos ui``'s Timeline tab lay it out as
                                         parsed (``kairos.timeline.document``): validating a week of 1,000
                                         tasks' answer first was about half of ``kairos timeline --days 7``
                                         (604 ms against 312, mostly importing pydantic and building TimelineDoc);
                                         TimelineDoc names the key of an answer the layout cannot read, then only
    ``kairos ui``'s Tasks view           ``kairos list``'s answer, read as that verb reads it: validating it made
                                         the ui's first draw of 1,000 tasks ~1,020 ms instead of 710-770 (its
                                         goal is 1 s; bench/bench_ui.py)
        (both: a key the reader cannot read is named by the model, validated then only; kairos.shape)
    the events stream (``watch``, ui)    events of many kinds, one JSON line each (routes.UNTYPED)
    local documents (systemd, integrate) built by the CLI itself, described by :mod:`.local`

Imports: the standard library, pydantic and :mod:`kairosd.core` only; nothing else of kairosd
(the CLI imports these models, see the ``cli-public-face`` contract in pyproject.toml).
"""
