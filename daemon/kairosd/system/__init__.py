"""kairosd.system."""
