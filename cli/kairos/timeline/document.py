"""The ``GET /v1/timeline`` answer as ``kairos timeline`` and ``kairos ui`` both take it: asked for with the
chart's bins, cleaned, and laid out, with one clear error for an answer of another shape.

The chart writes colour codes of its own, so nothing a task wrote (a name) may reach the terminal raw:
:func:`cleaned` passes every such text through :func:`kairos.output.clean`, as ``kairos list`` does.

The answer stays the parsed JSON (``dict[str, Any]``), not its model (``kairosd.core.wire.timeline.TimelineDoc``):
validating a week of 1,000 tasks' chart answer first made ``kairos timeline --days 7`` take a median 604 ms
instead of 312 ms (21 whole processes each, in turn, on the same store): importing pydantic and the models and
building TimelineDoc are most of it, validating the 22,500 bins 9-35 ms (docs/performance.md). The
model is still what names the key of an answer the layout cannot read: :func:`cleaned` and :func:`chart`
validate against it only then (:func:`unexpected`), so a bad answer is one line naming the key, at no cost
to a good one.

May import :mod:`kairos.output`, :mod:`kairos.shape` and :mod:`.layout`, and the wire's models lazily (on a
bad answer only); no client, no argparse.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from kairos import shape
from kairos.output import clean
from kairos.shape import SHAPE_ERRORS
from kairos.timeline.layout import Chart, columns_for, layout

if TYPE_CHECKING:
    from kairos.answers import UnexpectedAnswer
    from kairosd.core.wire.timeline import TimelineDoc

WHAT = "GET /v1/timeline"


def chart_query(width: int, query: dict[str, str] | None = None) -> dict[str, str]:
    """``query`` asking the daemon to count the planned fires in the cells of a chart ``width`` wide: the
    chart needs only how many fires each cell holds (a week of 1,000 tasks is 50,000 instants, not sent,
    printed and parsed). Give :func:`kairos.timeline.layout.layout` the same ``width``."""
    return {**(query or {}), "bins": str(columns_for(width))}


def cleaned(doc: Any) -> dict[str, Any]:
    """``doc`` with every text a task or the daemon wrote made safe to print (see :func:`kairos.output.clean`).

    :class:`kairos.answers.UnexpectedAnswer` if ``doc`` is not a timeline answer this kairos can read."""
    try:
        for task in doc["tasks"]:
            task["id"] = clean(task["id"])
            if task.get("name") is not None:
                task["name"] = " ".join(clean(task["name"]).split())
        if doc.get("downtime_source"):
            doc["downtime_source"] = clean(doc["downtime_source"])
    except SHAPE_ERRORS as exc:
        raise unexpected(doc, exc) from None
    return doc  # type: ignore[no-any-return]


def chart(doc: dict[str, Any], width: int, zone: str = "UTC", now: datetime | None = None) -> Chart:
    """:func:`~kairos.timeline.layout.layout` of ``doc``, with the now mark at ``now`` (``kairos ui``'s clock)
    when that is inside the window and later than the answer's own ``now``.

    :class:`kairos.answers.UnexpectedAnswer` if ``doc`` is not a timeline answer this kairos can read."""
    try:
        if now is not None:
            start, end = datetime.fromisoformat(doc["from"]), datetime.fromisoformat(doc["to"])
            if start <= now <= end and now > datetime.fromisoformat(doc["now"]):
                doc = {**doc, "now": now.isoformat()}
        return layout(doc, width, zone)
    except SHAPE_ERRORS as exc:
        raise unexpected(doc, exc) from None


def _model() -> type[TimelineDoc]:
    from kairosd.core.wire.timeline import TimelineDoc

    return TimelineDoc


def unexpected(doc: Any, exc: Exception) -> UnexpectedAnswer:
    """The error for a chart answer the layout could not read (see :func:`kairos.shape.unexpected`)."""
    return shape.unexpected(_model, doc, WHAT, exc)
