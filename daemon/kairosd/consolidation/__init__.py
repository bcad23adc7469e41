"""Memory consolidation: when an agent session ends, distil what should be remembered into the
project's context board (see :mod:`kairosd.consolidation.wiring` for how kairosd uses it).

    transcripts   read Claude Code, Copilot CLI, Codex, Gemini and generic transcripts (pure), with
                  transcript_model (shared types), transcript_tools and transcript_readers
    dates         relative dates to absolute ones (pure)
    extract       the offline consolidator: durable signals out of a transcript (pure)
                  with clauses (typed vs pasted, sentences), cues (a sentence's kind) and noise
                  (cue words that are no instruction: hypotheticals, others' words, one-offs)
    entries       what a board entry may be: kinds, one-line text, key, what is never stored (pure)
    board         the context board's store: entries, caps, pruning, history, superseded entries,
                  with board_model (its types and priorities, pure), board_render (the board as a
                  starting session sees it, pure) and board_edits (edit, pin, restore; last session)
    supersede     when a later entry replaces an earlier one (pure)
    gates         why a request is not run (pure)
    agent_mode    the rem-agent run through an agent CLI, with offline mode as its fallback
    rem_protocol  what the rem-agent is asked (turns in chunks, the board) and how its answer
                  (ADD, REPLACE, CLOSE, NONE lines) is read (pure)
    modes         auto, agent or offline; whether `kairos integrate` set a CLI up; the cheap model
                  per CLI; the daily cap on agent runs
    worker        the detached process: ``python -m kairosd.consolidation.worker REQUEST``
    spawn         start that process detached; notice when it ends
    service       the daemon side: gates, one run per project, follow-ups, status
    request       the request body's fields (pure); board_ops  board operations for the API
    runs          a worker run's life: launch, watch, settle, re-adopt after a restart
    api, wiring   the HTTP routes and what the composition root calls

Imports: core, system, api, store, agents, config and the registry (a worker run is a
registry record). Must not import scheduling, sessions, export or app.
"""
