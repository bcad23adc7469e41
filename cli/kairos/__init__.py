"""kairos: the command-line client of kairosd, and the hook and MCP entry points.

Imports only the pure core of kairosd (errors, models, schedule, protocol) and
the clock; never the store, the scheduler or the delivery adapters.
"""

from kairosd import __version__

__all__ = ["__version__"]
