"""Headless agent CLIs: adapters that turn a prompt into a command line and its output into a result."""
