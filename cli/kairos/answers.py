"""kairosd's answers read as their models (:mod:`kairosd.core.wire`), for the verbs off the hot paths.

A verb that shows an answer (a table, a status) reads it through :func:`read` and uses the typed
fields; with ``--json`` it still prints the answer as it came, so keys a newer kairosd adds pass
through. An answer of another shape (a kairosd of another version, or a bug) is one clear error,
not a table of "?". ``kairos list`` and ``kairos hook`` do not come here: pydantic is more than their
whole budget (docs/performance.md).

Reading an answer does not look for pydantic plugins (:func:`skip_plugin_scan`).

Must not be imported at module level by anything on the hot paths (tests/integration/kairos/test_import_budget.py).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from kairosd.core.errors import KairosError

_M = TypeVar("_M", bound=BaseModel)

# pydantic's plugin loader: it imports importlib.metadata and reads every installed package's entry points.
_LOADER = "pydantic.plugin._loader"


def skip_plugin_scan() -> None:
    """Let pydantic find no plugins in this process without looking for them, as with
    ``PYDANTIC_DISABLE_PLUGINS=__all__``.

    When it builds its first validator, pydantic loads its plugins: importing importlib.metadata and reading
    the entry points of every installed package cost ~30 ms of a verb's ~200 (issue 25), and of ``kairos
    mcp``'s start. kairos has no pydantic plugin, and a plugin installed beside it (a tracer) has no business
    in its CLI. So the loader is replaced by one that finds none; any other name asked of it is the real
    loader's (imported then), so a pydantic that reads more of it still works. Nothing is done if the loader
    is imported already, or if ``PYDANTIC_DISABLE_PLUGINS`` names plugins to leave out (the others are then
    wanted)."""
    if _LOADER in sys.modules or os.environ.get("PYDANTIC_DISABLE_PLUGINS", "__all__") not in ("__all__", "1", "true"):
        return
    loader = ModuleType(_LOADER, "pydantic's plugin loader, finding no plugins (kairos.answers.skip_plugin_scan)")
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    loader.__getattr__ = _real_loader  # type: ignore[method-assign]  # PEP 562: what the stand-in lacks
    sys.modules[_LOADER] = loader


def _no_plugins(*_args: Any, **_kwargs: Any) -> tuple[()]:
    return ()


def _real_loader(name: str) -> Any:
    """``name`` of pydantic's own plugin loader, which then takes the stand-in's place."""
    import importlib

    if name.startswith("__"):  # asked by the import system or a debugger: not a reason to load it
        raise AttributeError(name)
    sys.modules.pop(_LOADER, None)
    return getattr(importlib.import_module(_LOADER), name)


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
