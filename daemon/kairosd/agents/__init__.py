"""Adapters: how kairosd runs an agent CLI headless, turning a prompt into a command line and its
output into a result; and the agent definitions (``catalog``) it runs.

(The other side, what ``kairos integrate`` writes into an agent CLI and the hook and MCP entry
points it calls, is an *integration*: :mod:`kairos.integrations`.)

Imports: :mod:`kairosd.core`, :mod:`kairosd.system` and :mod:`kairosd.config` (the settings it reads).
Must not import the store, the scheduler, the background jobs (``jobs``) or the server.
"""
