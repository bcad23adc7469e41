"""Delivery targets: where a fired prompt goes. The interface and the targets that need no capability.

    base      the Delivery interface, the Handoff it gets (one fire of one task) and the Result it returns
    inbox     the built-in default: the prompt lands in a session's inbox file
    shell     a command, run with the prompt on stdin
    webhook   an HTTP POST (httpx, imported only when a webhook fires)

The ``agent`` target lives with the background jobs (:mod:`kairosd.jobs.delivery`) and the
``session`` target with live sessions (:mod:`kairosd.sessions.delivery`): each one delivers
into its own capability, which the composition root passes in.

Imports: core, system, store and config. Must not import the scheduler, jobs or sessions.
"""
