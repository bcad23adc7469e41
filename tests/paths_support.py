"""Where the repository and the tests folder are, for tests that read files of the project.

Test files live at different depths (tests/<tier>/<package>/..., see scripts/tiers.py), so a test
names a project file from these, never from its own ``__file__``.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
