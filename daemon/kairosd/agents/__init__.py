"""Headless agent CLIs: adapters that turn a prompt into a command line and its output into a result.

Imports: :mod:`kairosd.core` and :mod:`kairosd.system` only (``config`` in type annotations).
Must not import the store, the scheduler, the registry or the server.
"""
