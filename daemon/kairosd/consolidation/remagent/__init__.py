"""Agent mode: the ``rem-agent`` consolidates a session through an agent CLI.

    modes     auto, agent or offline; whether ``kairos integrate`` set a CLI up; the cheap model
              per CLI; the daily cap on agent runs
    protocol  what the rem-agent is asked (turns in chunks, the board) and how its answer
              (ADD, REPLACE, CLOSE, NONE lines) is read (pure)
    run       the bounded, read-only run through an agent CLI's adapter, with offline mode as its
              fallback

It runs in the detached worker. Imports: core, system, config, agents (the adapters) and the
board's pure parts (:mod:`~kairosd.consolidation.board.entries`, :mod:`~kairosd.consolidation.board.model`).
Must not import the offline extractor, the transcripts readers, or the consolidation runs,
service, worker, api or wiring.
"""
