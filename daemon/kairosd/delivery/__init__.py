"""Delivery targets: where a fired prompt goes (inbox, shell; later agent, hook, webhook, MCP)."""
