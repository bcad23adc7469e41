"""pydantic without its plugin scan: :func:`skip_plugin_scan`, called by kairosd's start and by the CLI's
readers of answers (:mod:`kairos.answers`) and ``kairos mcp``.

When it builds its first validator, pydantic loads its plugins: importing importlib.metadata and reading the
entry points of every installed package cost ~30 ms of a CLI verb's ~200 (issue 25), and ~15 ms of each
kairosd start. kairos has no pydantic plugin, and a plugin installed beside it (a tracer) has no business in
its processes.

Imports nothing of kairos.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

# pydantic's plugin loader: it imports importlib.metadata and reads every installed package's entry points.
_LOADER = "pydantic.plugin._loader"


def skip_plugin_scan() -> None:
    """Let pydantic find no plugins in this process without looking for them, as with
    ``PYDANTIC_DISABLE_PLUGINS=__all__``.

    The loader is replaced by one that finds none; any other name asked of it is the real loader's (imported
    then), so a pydantic that reads more of it still works. Nothing is done if the loader is imported
    already, or if ``PYDANTIC_DISABLE_PLUGINS`` names plugins to leave out (the others are then wanted)."""
    if _LOADER in sys.modules or os.environ.get("PYDANTIC_DISABLE_PLUGINS", "__all__") not in ("__all__", "1", "true"):
        return
    loader = ModuleType(_LOADER, "pydantic's plugin loader, finding no plugins (kairosd.system.pydanticplugins)")
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
