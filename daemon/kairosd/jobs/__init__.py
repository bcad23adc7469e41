"""Background jobs: durable records of agent, shell, fire and consolidation runs, and the runs themselves.

A *job* is one run that kairosd supervises (:class:`~kairosd.jobs.model.JobRecord`); a *task* is
a scheduled prompt (:class:`kairosd.core.models.Task`). The CLI verb stays ``kairos task ...``
and the wire keeps its names (``/v1/registry``, ``task_*`` events and MCP tools, ``KAIROS_TASK_ID``)
for the scripts and agents that use them; the state folder is still ``registry/``. The
:class:`~kairosd.jobs.registry.Registry` is the use-case object that keeps the jobs.

``model`` (the record), ``persist`` (one file per record), ``slots`` (the
concurrency cap and slot loans), ``limits`` and ``rules`` (what a start may
ask for), ``requests`` (the typed start and send bodies), ``joblog`` (its output), ``follow``
(live followers), ``registry`` (the use-cases) with ``book`` (the state its
parts share), ``turns`` (running a turn), ``cancel`` (cancelling a tree) and
``detached`` (runs started outside the registry), ``recovery`` (after a
restart), ``delivery`` (the ``agent`` delivery target), ``api`` (HTTP routes)
and ``wiring`` (what the composition root calls). One process is run by
:mod:`kairosd.system.runner`. Importing the package imports none of them.

Imports: core, system, api, store, agents, config and delivery (the target interface).
Must not import the scheduler, sessions, consolidation, export or app.
"""
