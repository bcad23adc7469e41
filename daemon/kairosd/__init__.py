"""kairosd: the per-user scheduler daemon for AI coding agents, and its pure core.

The CLI (package ``kairos``) may import only the pure modules from here
(``errors``, ``models``, ``schedule``, ``protocol``), never the I/O adapters.
"""

__version__ = "0.1.0"
