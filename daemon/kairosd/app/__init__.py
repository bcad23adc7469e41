"""kairosd.app."""
