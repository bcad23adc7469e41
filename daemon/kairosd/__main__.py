"""Entry point of the ``kairosd`` console script: run the daemon in the foreground."""

from __future__ import annotations

import gc
import logging
import sys

from kairosd import __version__


def _verbose(argv: list[str]) -> bool:
    """Whether to log at debug level; ``--help``, ``--version`` and errors exit here, as argparse does them."""
    if argv in ([], ["-v"], ["--verbose"]):
        # How systemd and ``kairos daemon start`` run it: no parser is needed for these (docs/performance.md).
        return bool(argv)
    import argparse

    parser = argparse.ArgumentParser(
        prog="kairosd",
        description="The kairos scheduler daemon. Runs in the foreground until SIGTERM or SIGINT; "
        "logs go to stderr. Usually started by 'kairos daemon start' or systemd.",
        epilog="environment: KAIROS_HOME (all paths in one folder), KAIROS_DISABLE_CRON=1 "
        "(fire nothing), KAIROS_MAX_CONCURRENT (deliveries at once, default 4), "
        "KAIROS_RUNS_PER_TASK (run history kept per task, default 50), TZ (default zone)",
    )
    parser.add_argument("--version", action="version", version=f"kairosd {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return bool(parser.parse_args(argv).verbose)


def main(argv: list[str] | None = None) -> None:
    verbose = _verbose(sys.argv[1:] if argv is None else argv)

    # No cycle collections while starting: imports and loading a big store make
    # many objects and few cycles, and each collection walks them all (about a
    # tenth of the start-up with 10,000 tasks). serve_forever turns it back on
    # once the socket answers (or when the start fails).
    gc.disable()
    from kairosd.system.pydanticplugins import skip_plugin_scan

    skip_plugin_scan()  # before the first validator is built (the store's, at its import)
    from kairosd.app.daemon import configure_logging, serve_forever
    from kairosd.core.errors import KairosError

    configure_logging(verbose)
    try:
        code = serve_forever()
    except KairosError as exc:
        sys.stderr.write(f"kairosd: {exc.message}\n")
        code = exc.exit_code
    except Exception as exc:
        # Whatever else fails (an OverflowError from a value, a bug): one line and exit 1, never a
        # traceback on the user's terminal or in a crash loop's journal; -v logs the traceback too.
        logging.getLogger("kairosd").debug("kairosd failed", exc_info=exc)
        hint = "" if verbose else " (run 'kairosd -v' for the traceback)"
        sys.stderr.write(f"kairosd: {one_line(exc)}{hint}\n")
        code = 1
    sys.exit(code)


def one_line(exc: BaseException) -> str:
    """``exc`` as one line: its type and message, newlines and control characters escaped."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)[:500]


if __name__ == "__main__":
    main()
