"""Pure schedule math: cron parsing and next-fire times, jitter, intervals.

No I/O and no clock: every function takes the instant it reasons about.
Imports: kairosd.core's bounds and errors only. Must not import the store, the server, the clock
module or anything with I/O.
"""
