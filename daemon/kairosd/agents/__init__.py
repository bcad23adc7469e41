"""Headless agent CLIs: adapters that turn a prompt into a command line and its output into a result.

Imports: :mod:`kairosd.core`, :mod:`kairosd.system` and :mod:`kairosd.config` (the settings it reads).
Must not import the store, the scheduler, the registry or the server.
"""
