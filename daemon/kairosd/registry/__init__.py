"""The background task registry: durable records of agent, shell and fire runs, and the runs themselves.

``model`` (the record), ``persist`` (one file per record), ``slots`` (the
concurrency cap and slot loans), ``limits`` and ``rules`` (what a start may
ask for), ``requests`` (the typed start and send bodies), ``tasklog`` (its output), ``follow``
(live followers), ``registry`` (the use-cases) with ``book`` (the state its
parts share), ``turns`` (running a turn), ``cancel`` (cancelling a tree) and
``detached`` (runs started outside the registry), ``recovery`` (after a
restart), ``delivery`` (the ``agent`` delivery target), ``api`` (HTTP routes)
and ``wiring`` (what the composition root calls). One process is run by
:mod:`kairosd.system.runner`. Importing the package imports none of them.

Imports: core, system, api, store, agents, config and delivery (the target interface).
Must not import the scheduler, sessions, consolidation, export or app.
"""
