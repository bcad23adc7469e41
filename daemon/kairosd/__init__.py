"""kairosd: the per-user scheduler daemon for AI coding agents.

One package per capability, in layers; a package imports only the layers below it
(the ``daemon-layers`` contract in pyproject.toml, checked by lint-imports in the tests):

    app                                     composition root (daemon) and doctor
    consolidation | export | sessions       memory consolidation, export to other engines, live sessions
    scheduling                              the scheduler loop, task API and run ledger
    registry                                background agent and shell runs
    delivery                                the delivery interface and the inbox, shell and webhook targets
    agents                                  agent CLI adapters
    config | store                          the user's config file (one loader); what is kept on disk
    api                                     HTTP over the Unix socket, the route table, request parsing
    system                                  folders, files, processes, systemd
    core                                    models, schedule math, errors, protocol, clock (the kernel)

The CLI (package ``kairos``) may import only the shared kernel: :mod:`kairosd.core` and
:mod:`kairosd.system`, directly or through another module (the ``cli-public-face`` contract).
"""

__version__ = "0.1.0"
