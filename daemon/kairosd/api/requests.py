"""The one way a typed request body is parsed, and the base that every request model shares.

Each body is a pydantic model (:class:`Body`) with unknown fields forbidden and no
coercion of numbers and flags (``"5"`` is not a number, ``1`` is not ``true``), so a
request either parses into a typed object or gets one 400 line naming the field and
the limit (:func:`parse_body`, :func:`validation_message`). The models themselves
live with their capability (:mod:`kairosd.scheduling.requests`,
:mod:`kairosd.jobs.requests`, ...) and produce the API reference
(``GET /v1/openapi.json``) through :func:`kairosd.api.router.typed`.

What a field means once parsed (a zone that exists, a cron expression that fires)
is the capability's to check: these models bound sizes and shapes, not meanings.

Must not import any capability, the store or the server.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StringConstraints,
    ValidationError,
)

from kairosd.core import bounds
from kairosd.core.errors import UsageError

_M = TypeVar("_M", bound=BaseModel)

Short = Annotated[str, StringConstraints(max_length=bounds.MAX_SHORT_CHARS)]
Name = Annotated[str, StringConstraints(max_length=bounds.MAX_NAME_CHARS)]


def blank_is_none(value: Any) -> Any:
    """For a ``BeforeValidator``: "" as None, so an empty optional text counts as absent."""
    return None if value == "" else value


def process_text(value: str) -> str:
    """For an ``AfterValidator``: text that may reach a process is valid Unicode without NUL."""
    problem = bounds.text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _absolute(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"must be an absolute path, not {value[:100]!r}")
    return process_text(value)


# Text that may reach a process (argv, environment, a file name): valid Unicode, no NUL.
ProcessShort = Annotated[
    str, StringConstraints(min_length=1, max_length=bounds.MAX_SHORT_CHARS), AfterValidator(process_text)
]
ProcessName = Annotated[
    str, StringConstraints(min_length=1, max_length=bounds.MAX_NAME_CHARS), AfterValidator(process_text)
]
# Optional text where "" counts as absent: hooks pass on what an agent's payload held, empty or not.
MaybeShort = Annotated[ProcessShort | None, BeforeValidator(blank_is_none)]
AbsolutePath = Annotated[str, StringConstraints(max_length=bounds.MAX_PATH_CHARS), AfterValidator(_absolute)]
MaybeAbsolutePath = Annotated[AbsolutePath | None, BeforeValidator(blank_is_none)]


class Body(BaseModel):
    # defer_build: the schemas are built at the first request, not while kairosd starts.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


def parse_body(model: type[_M], body: Any) -> _M:
    """``body`` (parsed JSON, or None for an empty one) as ``model``; one UsageError line otherwise."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise UsageError("the request body must be a JSON object")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise UsageError(validation_message(exc)) from None


def validation_message(exc: ValidationError) -> str:
    """The first problem of a ValidationError as one line: ``field: what is wrong``."""
    first = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    message = str(first.get("msg", "invalid")).replace("Value error, ", "")
    if first.get("type") == "extra_forbidden":
        message = "unknown field"
    return f"{where}: {message}"


def query_number(raw: str | None, what: str, *, quoted: int | None = None) -> float | None:
    """A query parameter as a number; None when it is absent or empty.

    Not a finite number in ASCII: one UsageError line, ``what`` and then the text sent
    (its first ``quoted`` characters).
    """
    if raw is None or raw == "":
        return None
    try:
        # float() alone also reads "inf", "nan", "1e999" and Arabic-Indic or fullwidth digits.
        value = float(raw) if raw.isascii() else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UsageError(f"{what}, not {raw[:quoted]!r}")
    return value
