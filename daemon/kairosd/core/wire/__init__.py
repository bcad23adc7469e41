"""The typed wire: every response kairosd answers, and every document ``kairos VERB --json`` prints, as a model.

The other half of :mod:`kairosd.core.protocol` (which holds the routes, the error codes and the
request-side constants). Requests are parsed by each capability's own models
(``kairosd.scheduling.requests``, ...); responses are described here, once, for both sides:

    base      Document (a top-level answer: strict, no unnamed keys) and Record (an object inside one)
    tasks     task views (list, show, add, edit, pause, resume), runs, missed fires, the inbox, import
    daemon    status, live sessions, the doctor, the timeline, export, reload
    registry  background jobs (``kairos task ...``)
    board     the context board and consolidation
    local     what the CLI prints without kairosd (``--version``, ``cron``, ``systemd``, ``integrate``)
    routes    RESPONSES: each (route, method) to the model of its answer; ``openapi.json`` shows them
    verbs     DOCUMENTS: each ``kairos VERB`` to the model of its ``--json`` output, and :func:`check`

The models are strict (no coercion: ``0`` is not ``false``) and a document forbids keys it does not
name, so a new key is added here first. Tests hold the daemon to them (every route's answer for a
representative request, ``tests/unit/kairos/test_wire_responses.py``) and the CLI (every verb's ``--json``,
``tests/unit/kairos/test_json_documents*.py``). The daemon does not validate per request: ``GET /v1/tasks``
streams pre-encoded JSON for speed (docs/performance.md), and a check per answer would cost what
the encoding saved.

Pydantic is imported by every module here, so nothing on the CLI's hot paths (``kairos list``,
``kairos hook``) imports this package; they print or parse the bytes as they come
(docs/performance.md, tests/integration/kairos/test_import_budget.py).

Free-form on purpose (``dict[str, Any]`` or ``Any``), and only here:
    TaskView.meta                        a task's meta belongs to whoever added the task
    TaskView.target, RunView.target,     a target's fields depend on its kind (inbox, session, shell,
    TaskSummary.target                   agent, webhook: kairosd.core.models), and a summary keeps one
    SetAside.record                      a stored record the store could not read, as it was
    DoctorDoc.settings, DoctorDoc.limits the whole config in effect, and its [limits] section: their shape is
                                         kairosd.config's models (outside kairosd.core), shown as they dump

Imports: the standard library, pydantic and :mod:`kairosd.core` only; nothing else of kairosd
(the CLI imports these models, see the ``cli-public-face`` contract in pyproject.toml).
"""
