"""One status line on a terminal while a verb waits: what it waits for, and for how long.

``kairos task wait``, ``consolidate --wait``, ``import`` and ``export`` may block for
seconds or minutes with nothing on the screen. On a terminal they show one line on
stderr, redrawn in place (``\\r``) and erased when the wait ends::

    waiting for task t0a1b2c3d4e (running, 2 tool calls, 12 s)

The line is for a person only. It is drawn when stderr is a terminal, and never when
stderr is a pipe or a file, when ``TERM=dumb`` (a terminal that may not honour ``\\r``),
or when the verb was given ``--quiet``; stdout, and with it ``--json``, is never touched.
It holds no escape sequence: a shorter line is padded with spaces over the longer one,
and the erase writes spaces, so it cannot garble a terminal that ignores ANSI codes.
What it shows from the daemon or a file (ids, project paths) goes through
:func:`kairos.output.clean`.

Redraws are throttled (:data:`MIN_REDRAW_S`) so that a fast loop (a batch a
millisecond) costs nothing measurable. While the verb blocks in one long call, a
ticker thread redraws the elapsed time. The clock is injected, so tests drive the
line with a fake clock and a fake terminal and call :meth:`Progress.refresh` themselves.

Imported only by the verbs that wait, inside their handlers: never by ``kairos list``
or a hook (tests/integration/kairos/test_import_budget.py). Imports the standard library and
:mod:`kairos.output` only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TextIO

from kairos.output import clean

MIN_REDRAW_S = 0.1  # at most 10 redraws a second
TICK_S = 0.25  # how often the ticker looks whether the elapsed time shown has changed
DEFAULT_COLUMNS = 80
# The clock of a line made without one (the verbs' lines); tests of the verbs freeze it.
CLOCK: Callable[[], float] = time.monotonic


def wanted(stream: Any, quiet: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a progress line goes to ``stream``: a terminal, no ``--quiet``, and not ``TERM=dumb``."""
    env = os.environ if environ is None else environ
    if quiet or env.get("TERM", "") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def elapsed(seconds: float) -> str:
    """``8 s``, ``2 min 05 s``, ``1 h 02 min``: whole units, as a person counts a wait."""
    whole = max(int(seconds), 0)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


class Progress:
    """The status line on ``stream`` (a terminal). ``update`` says what is waited for; ``close`` erases it.

    ``what`` and ``details`` are shown as ``WHAT (DETAIL, DETAIL, ELAPSED)``. Use it as a context
    manager to have the ticker redraw the elapsed time while the caller blocks.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        clock: Callable[[], float] | None = None,
        columns: Callable[[], int] | None = None,
        min_interval: float | None = None,
    ) -> None:
        self._stream = stream
        self._clock = clock or CLOCK
        self._columns = columns or (lambda: _columns(stream))
        self._min_interval = MIN_REDRAW_S if min_interval is None else min_interval
        self._started = self._clock()
        self._what = ""
        self._details: tuple[str, ...] = ()
        self._shown = ""  # the line on the screen now ("" when none is)
        self._drawn_at: float | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def update(self, what: str, *details: str) -> None:
        """Say what is waited for now; drawn at once unless the last draw was under ``min_interval`` ago."""
        with self._lock:
            self._what, self._details = what, details
            self._draw()

    def refresh(self) -> None:
        """Redraw if the line changed (the elapsed time ticks) and the throttle allows."""
        with self._lock:
            self._draw()

    def line(self) -> str:
        """The line as it would be drawn now, before it is cut to the terminal's width."""
        shown = ", ".join([*self._details, elapsed(self._clock() - self._started)])
        return f"{_flat(self._what)} ({_flat(shown)})"

    def clear(self) -> None:
        """Erase the line; the next update or tick draws it again."""
        with self._lock:
            self._erase()

    @contextlib.contextmanager
    def above(self) -> Iterator[None]:
        """Erase the line for the output printed in the ``with`` block (stdout may be the same terminal);
        the ticker waits until it is printed, then the next update or tick draws the line below it."""
        with self._lock:
            self._erase()
            yield
            sys.stdout.flush()

    def close(self) -> None:
        """Stop the ticker and erase the line."""
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join()
        with self._lock:
            self._erase()

    def __enter__(self) -> Progress:
        self._ticker = threading.Thread(target=self._tick, name="kairos-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- drawing (under the lock) --------------------------------------------------------------

    def _draw(self) -> None:
        if not self._what or self._stop.is_set():
            return
        now = self._clock()
        if self._drawn_at is not None and now - self._drawn_at < self._min_interval:
            return
        # One column short of the width: a line that fills the last column wraps on some terminals,
        # and a wrapped line cannot be redrawn with \r.
        text = _cut(self.line(), max(self._columns() - 1, 10))
        if text == self._shown:
            return
        # Spaces over what is left of a longer line: no escape sequence needed to erase it.
        self._write("\r" + text + " " * max(len(self._shown) - len(text), 0))
        self._shown, self._drawn_at = text, now

    def _erase(self) -> None:
        if self._shown:
            self._write("\r" + " " * len(self._shown) + "\r")
            self._shown = ""
            self._drawn_at = None

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):
            # The terminal went away (a closed ssh session): the verb's own work goes on without the line.
            self._stop.set()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            self.refresh()


class Silent:
    """What a verb gets instead of :class:`Progress` when no line is wanted: every call does nothing."""

    def update(self, what: str, *details: str) -> None:
        pass

    def refresh(self) -> None:
        pass

    def clear(self) -> None:
        pass

    @contextlib.contextmanager
    def above(self) -> Iterator[None]:
        yield

    def close(self) -> None:
        pass

    def __enter__(self) -> Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def on_stderr(quiet: bool = False) -> Progress | Silent:
    """The progress line for the current verb: on stderr if :func:`wanted`, else :class:`Silent`.

    Written to the stream under kairos.output's guard (which would show ``\\r`` as an escape):
    the line's own text is cleaned here instead.
    """
    stream = sys.stderr
    raw = getattr(stream, "unguarded", stream)
    return Progress(raw) if wanted(raw, quiet) else Silent()


def _flat(text: str) -> str:
    """``text`` on one line (a newline would break the redraw), unsafe characters shown escaped."""
    return clean(" ".join(text.split()))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _columns(stream: Any) -> int:
    """``COLUMNS`` (as for every table of kairos), else the width of the terminal ``stream`` is, else 80."""
    raw = os.environ.get("COLUMNS", "").strip()
    if raw.isascii() and raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return os.get_terminal_size(stream.fileno()).columns or DEFAULT_COLUMNS
    except (AttributeError, ValueError, OSError):
        return DEFAULT_COLUMNS
