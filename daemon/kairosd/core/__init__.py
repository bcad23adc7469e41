"""kairosd.core."""
