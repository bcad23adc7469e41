"""The background task registry: durable records of agent, shell and fire runs, and the runs themselves.

``model`` (the record), ``persist`` (one file per record), ``slots`` (the
concurrency cap and slot loans), ``limits`` and ``rules`` (what a start may
ask for), ``runner`` (one process), ``tasklog`` (its output), ``follow``
(live followers), ``registry`` (the use-cases) with ``book`` (the state its
parts share), ``turns`` (running a turn), ``cancel`` (cancelling a tree) and
``detached`` (runs started outside the registry), ``recovery`` (after a
restart), ``api`` (HTTP routes) and ``wiring`` (what the composition root
calls). Importing the package imports none of them.
"""
