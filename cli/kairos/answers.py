"""kairosd's answers read as their models (:mod:`kairosd.core.wire`), for the verbs off the hot paths.

A verb that shows an answer (a table, a status) reads it through :func:`read` and uses the typed
fields; with ``--json`` it still prints the answer as it came, so keys a newer kairosd adds pass
through. An answer of another shape (a kairosd of another version, or a bug) is one clear error,
not a table of "?". ``kairos list`` and ``kairos hook`` do not come here: pydantic is more than their
whole budget (docs/performance.md).

Reading an answer does not look for pydantic plugins (:func:`kairosd.system.pydanticplugins.skip_plugin_scan`).

Must not be imported at module level by anything on the hot paths (tests/integration/kairos/test_import_budget.py).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from kairosd.core.errors import KairosError
from kairosd.system.pydanticplugins import skip_plugin_scan

_M = TypeVar("_M", bound=BaseModel)

skip_plugin_scan()


class UnexpectedAnswer(KairosError):
    """kairosd answered in a shape this kairos does not know."""

    code = "internal"


def read(model: type[_M], doc: Any, what: str) -> _M:
    """``doc``, kairosd's answer to ``what`` (such as ``GET /v1/runs``), as ``model``."""
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the answer"
        raise UnexpectedAnswer(
            f"kairosd answered {what} in a shape this kairos does not know ({where}: {first.get('msg')}); "
            "if kairos was upgraded, restart kairosd (kairos daemon stop, then start)"
        ) from None
