"""The consolidation evaluation corpus: what people typed, labeled with the board entries it should
produce, written out in the transcript shapes of every CLI kairos reads, and scored.

v2 (the labeled data in ``data/<split>/<writer>.json``; ``heldout`` is the quality measure):

    corpus     the loader: reads a split and refuses a label file with a typo
    shapes     one renderer per transcript shape (six), with the noise the readers must drop
    score      consolidate each project's sessions in order onto one board (offline, or agent mode
               with a scripted model) and score the board against the labels
    report     print the figures: python -m tests.consolidation_corpus.report --split --mode
    data/train the offline tuner's split (one file per invented writer; tuned on, never a quality figure)
    train_classifier  leave-one-split-out comparison of a naive Bayes classifier with the cues,
                      through the scorer (why the broad offline reading ships no model)
    train_kinds       writes the cautious offline reading's model (offline/data/kinds.json.gz): that naive
                      Bayes, trained on the tuned splits; a unit test checks the shipped file is current
    train_embed       the same with a packaged sentence-embedding model (all-MiniLM-L6-v2 run in numpy) and
                      a logistic regression; needs packages CI never installs, so nothing imports it

v1 (the corpus the offline extractor was tuned on; kept working, not a quality figure):

    sessions   the labeled source (one list of sessions, one label per turn)
    formats    one writer per v1 format (Claude Code, Codex 0.169, Copilot, Gemini 0.61)
    legacy     run the offline consolidator over it; precision and recall of kept turns

Used by tests/unit/kairosd/consolidation/test_consolidation_corpus.py (v2),
tests/unit/kairosd/consolidation/test_consolidation_corpus_legacy.py (v1) and bench/bench_board_quality.py.
"""
