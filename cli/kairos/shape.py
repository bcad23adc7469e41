"""The error for an answer read as parsed JSON, for speed, that turns out to be of another shape.

Two answers are read without their model (:mod:`kairosd.core.wire`): the timeline's chart
(:mod:`kairos.timeline.document`) and ``kairos ui``'s tasks view (:mod:`kairos.ui.views`), where importing
pydantic and building the model cost more than the reading (docs/performance.md). Their readers take the keys
the model requires as required; when reading fails, :func:`unexpected` validates the answer against its model,
then only, so that the error names the key as :func:`kairos.answers.read` does for the typed answers.

No pydantic at import (the model and :mod:`kairos.answers` are imported by :func:`unexpected`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from kairos.answers import UnexpectedAnswer

# What reading a key of an answer of another shape raises (a missing key, a list for a dict, a bad time).
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def unexpected(model: Callable[[], type[BaseModel]], doc: Any, what: str, exc: Exception) -> UnexpectedAnswer:
    """The error for ``doc``, kairosd's answer to ``what``, which its reader could not read (``exc``): what its
    model (``model()``) says of it, the key and why, or, if the model takes it, what the reader met (a time that
    is not ISO 8601, say)."""
    from kairos.answers import UnexpectedAnswer, read

    try:
        read(model(), doc, what)
    except UnexpectedAnswer as error:
        return error
    said = f"no key {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else str(exc)
    return UnexpectedAnswer(
        f"kairosd answered {what} in a shape this kairos does not know ({said[:200]}); "
        "if kairos was upgraded, restart kairosd (kairos daemon stop, then start)"
    )
