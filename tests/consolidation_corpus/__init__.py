"""The consolidation evaluation corpus: sessions written as people type, each human turn labeled
keep (as which kind) or drop, written out in the transcript formats of every CLI kairos reads.

    sessions   the labeled source (one list of sessions)
    formats    one writer per CLI format (Claude Code, Codex 0.169, Copilot, Gemini 0.61)
    score      run the offline consolidator over the written files; precision and recall
    data/train the offline tuner's labeled train split (one JSON file per invented writer voice)
    train_score       the tuner's scorer over data/train (tuned figures, never quality figures)
    train_classifier  leave-one-writer-out and progressive comparison of a naive Bayes classifier
                      with the cues (why the offline extractor ships no model)

Used by tests/test_consolidation_corpus.py (which pins the floors) and bench/bench_board_quality.py.
"""
