"""kairosd.store.store."""
