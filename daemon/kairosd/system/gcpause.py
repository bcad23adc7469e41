"""The cycle collector held off while a herd's pass runs, and let go once its outcomes are durable.

A pass over 10,000 due tasks makes some 100,000 records that live until its
group commits are done (the runs, the inbox items, the tasks with their new
anchors). Each young collection meanwhile walks the ones made so far, promotes
them, and a later one walks them again with the run history that came before:
work that grows with the history and lands in the herd. Garbage without cycles
is freed at once whatever the collector does, so holding it off for the second
or so of a pass costs a few cycles' worth of memory, and the collections that
follow find the pass's records either gone or done with.

Pauses nest. The collector comes back only when the last pause ends, and only
if it was on when the first began (kairosd keeps it off while it starts).

Imports: nothing from kairosd.
"""

from __future__ import annotations

import gc

_pauses = 0
_resume = False


def pause() -> None:
    """Hold the cycle collector off until the matching :func:`resume`."""
    global _pauses, _resume
    if _pauses == 0:
        _resume = gc.isenabled()
        gc.disable()
    _pauses += 1


def resume() -> None:
    """End one :func:`pause`; the last one turns the collector back on if it was on before."""
    global _pauses
    if _pauses == 0:
        return  # unmatched: nothing of ours to undo
    _pauses -= 1
    if _pauses == 0 and _resume:
        gc.enable()


def paused() -> int:
    """How many pauses are under way."""
    return _pauses
