"""``kairos integrate``: kairos' hooks and MCP registration in the agent CLIs' user-level settings.

- :mod:`~kairos.integrations.settings.merge`: pure functions that add or remove kairos' entries in a parsed
  settings document (or a TOML text), keeping every other entry; no I/O.
- :mod:`~kairos.integrations.settings.agents`: what each agent CLI gets, in which user-level file, in its
  documented format; no I/O.
- :mod:`~kairos.integrations.settings.files`: reading, diffing, backing up and atomically writing those files.

kairos' entries are recognised by what they run, not by a marker key the CLIs might reject: a hook
whose command is ``[NAME=VALUE ...] .../kairos hook ...``, an MCP server named ``kairos`` that runs
``.../kairos mcp``, and Codex's TOML between ``# >>> kairos >>>`` and ``# <<< kairos <<<``.

Must not import kairosd modules other than ``errors`` and ``atomic``, nor pydantic or asyncio.
"""
