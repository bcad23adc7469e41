"""The background task registry: durable records of agent, shell and fire runs, and the runs themselves.

``model`` (the record), ``persist`` (one file per record), ``slots`` (the
concurrency cap), ``runner`` (one process), ``registry`` (the use-cases),
``api`` (HTTP routes) and ``wiring`` (what the composition root calls).
Importing the package imports none of them.
"""
