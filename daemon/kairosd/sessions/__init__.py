"""kairosd.sessions.store."""
