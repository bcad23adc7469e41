"""Integrations: how kairos is wired into the agent CLIs, and the entry points they call.

An *integration* is the kairos side of an agent CLI: what ``kairos integrate`` writes into its
settings, and the commands that CLI then runs. (How kairosd itself runs an agent CLI headless is an
*adapter*: :mod:`kairosd.agents`.)

    hook       ``kairos hook AGENT EVENT``: the entry point of every agent CLI hook (JSON on stdin)
    mcptools   the tools of ``kairos mcp`` (the stdio MCP server's cron_create, cron_list, ...)
    mcpwire    its stdio wire: the mcp transport, with a call holding a lone surrogate answered too
    settings/  ``kairos integrate AGENT``: merge kairos' hooks and MCP server into an agent's settings

Imports: the CLI's own modules (``kairos.client``, ``kairos.cjson``) and kairosd's shared kernel
(``kairosd.core``, ``kairosd.system``). ``kairos.commands`` imports this package, never the reverse.
"""
