"""The composition root and the whole-system check: the only package that sees every other one.

    daemon   builds the real adapters, wires them together and runs the daemon
    doctor   the checks behind ``kairos doctor`` (the CLI may import :func:`doctor.local_report`)

Imports: anything in kairosd. Nothing in kairosd imports this package except ``__main__``.
"""
