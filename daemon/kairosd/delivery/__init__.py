"""Delivery targets: where a fired prompt goes (inbox, shell, agent, session, webhook)."""
