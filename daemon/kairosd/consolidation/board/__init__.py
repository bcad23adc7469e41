"""The context board: a project's remembered entries, how they are stored, changed and shown.

    entries    what an entry may be: kinds, one-line text, key, what is never stored (pure; also
               read by the offline extractor and the rem-agent protocol)
    model      the board's types and priorities (pure)
    supersede  when a later entry replaces an earlier one (pure)
    slots      which entry a sentence that says something changed updates (pure)
    store      the board's store: entries, caps, pruning, history, superseded entries, the lock
    edits      edit, pin, restore; the project's last session start
    render     the board as a starting session sees it (pure)
    ops        the board operations behind ``kairos board ...`` and SessionStart's context

Imports: core, system, store (the JSON log) and :mod:`kairosd.consolidation.request` (the typed
change body). Must not import the other consolidation subpackages (transcripts, offline, remagent)
nor the consolidation runs, service, worker, api or wiring: they use the board, not the reverse.
"""
