"""kairosd.scheduling.api."""
