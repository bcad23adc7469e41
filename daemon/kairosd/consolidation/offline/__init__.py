"""Offline consolidation: durable signals out of a transcript, with no model (pure).

    extract  the offline consolidator: messages in, board candidates out
    clauses  typed vs pasted text, sentences
    cues     a sentence's kind (rule, preference, correction, decision, to-do, fact)
    noise    cue words that are no instruction: hypotheticals, others' words, one-offs
    substance what an entry must carry to stand alone: no fragment of an order, no to-do that names nothing
    at_hand  what the whole turn asks: a fact beside a request for work now is that work's context
    joined   one instruction said over several sentences of a line is one entry
    changes  a sentence that says something changed: an update the board keeps only if it updates an entry
    kinds    the cautious reading's second opinion: a naive Bayes model of a sentence's kind, shipped as data
    dates    relative dates to absolute ones
    letters  a sentence's words as runs of letters, for the patterns' exact prefilters

It runs in the detached worker (and is the rem-agent's fallback); the daemon never loads it.
Imports: core, :mod:`kairosd.consolidation.board.entries` (what an entry may be) and
:mod:`kairosd.consolidation.transcripts.model` (the message type). Must do no I/O, and must not
import the board's store, the rem-agent, or the consolidation runs, service, worker, api or wiring. The one
read is :func:`.kinds.load`'s, of the package's own model (``data/kinds.json.gz``, via importlib.resources),
and only when the caller asks for the cautious reading.
"""
