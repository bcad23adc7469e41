"""kairosd.core.lazyre: patterns compiled at their first use, as the offline consolidation defines them."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from kairosd.core import lazyre


def test_a_lazy_pattern_is_compiled_at_its_first_use_and_answers_as_the_compiled_one() -> None:
    pattern = lazyre.compile(r"\b(?P<word>ab+)\b", re.IGNORECASE)
    compiled = re.compile(r"\b(?P<word>ab+)\b", re.IGNORECASE)
    assert "search" not in vars(pattern)  # nothing compiled yet
    text = "x ABB y ab z abc"
    assert pattern.search(text)[0] == compiled.search(text)[0] == "ABB"  # type: ignore[index]
    assert "search" in vars(pattern)  # its methods are its own attributes now: no lookup through __getattr__
    assert [m.span() for m in pattern.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert pattern.sub("<\\g<word>>", text) == compiled.sub("<\\g<word>>", text)
    assert pattern.split(text) == compiled.split(text)
    assert (pattern.flags, pattern.groups, pattern.groupindex) == (compiled.flags, compiled.groups, compiled.groupindex)
    assert pattern.pattern == compiled.pattern


def test_an_error_in_a_pattern_shows_at_its_first_use() -> None:
    broken = lazyre.LazyPattern(r"(unclosed", 0)  # not lazyre.compile: that one is not kairosd's
    with pytest.raises(re.error):
        broken.search("x")
    with pytest.raises(AttributeError):
        broken.no_such_attribute  # type: ignore[attr-defined]  # noqa: B018


def test_every_pattern_of_the_offline_consolidation_compiles() -> None:
    """An error in one of them would otherwise show only in the run that first uses it."""
    import kairosd.consolidation.worker  # noqa: F401  # the modules a worker imports define them

    patterns = [p for p in lazyre.made if isinstance(p, lazyre.LazyPattern)]
    assert len(patterns) > 150
    for lazy in patterns:
        assert lazy.compiled().pattern == lazy.pattern


# A worker's imports, then which of the lazy patterns they made are compiled.
PROBE = """
import json
from kairosd.core import lazyre
import kairosd.consolidation.worker

print(json.dumps([len(lazyre.made), sorted(p.pattern for p in lazyre.made if "search" in vars(p))]))
"""


# Compiled while the modules are imported: the supersede rules' word patterns, which build its tables of
# done words and roots at import.
AT_IMPORT = sorted([r"_*[a-z0-9][a-z0-9._/:@*+-]*[a-z0-9*]_*|[a-z0-9]", r"(?:ing|ed|es|e|s)$", r"[-/_.]"])


def test_a_consolidation_workers_imports_compile_only_what_its_tables_need() -> None:
    """Compiling them all was ~150 ms of a worker's ~225 ms of imports; a run compiles those it uses."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    made, compiled = json.loads(done.stdout)
    assert made > 150
    assert compiled == AT_IMPORT
