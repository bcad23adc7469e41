"""The composition root and the whole-system check: the only package that sees every other one.

    wiring   build_app: makes every part and wires them (no I/O); tests build the same app with fakes
    daemon   the process: takes the store lock, runs the app on its socket, signals, systemd, shutdown
    doctor   the checks behind ``kairos doctor`` (the CLI runs ``python -m kairosd.app.doctor`` without a daemon)
    api      the route the composition root serves itself (``GET /v1/doctor``)

Imports: anything in kairosd. Nothing in kairosd imports this package except ``__main__``.
"""
