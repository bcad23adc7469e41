"""kairosd.scheduling."""
