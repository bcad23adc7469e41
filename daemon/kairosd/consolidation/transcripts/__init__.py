"""Agent CLI transcripts: one normalised stream of messages out of each CLI's session file.

    read      tell the format and read a file: Claude Code, Copilot CLI, Codex, Gemini, OpenCode,
              generic (the entry point: :func:`.read.read_file`, :func:`.read.count_human_turns`)
    model     the types every reader shares (:class:`.model.Message`, :class:`.model.ReadStats`),
              bounded line reading, field parsers (pure)
    formats   one reader per JSONL format (:data:`.formats.READERS`)
    opencode  OpenCode's SQLite session store
    tools     tool calls, whatever CLI made them, classified (pure)

Imports: core and system (bounded reads) only. Must not import the board, the offline extractor,
the rem-agent, or the consolidation runs, service, worker, api or wiring.
"""
