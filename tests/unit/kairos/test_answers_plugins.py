"""kairos.answers reads kairosd's answers without pydantic's plugin scan (skip_plugin_scan, issue 25).

Each case runs in a fresh interpreter: the scan happens once per process, at the first validator pydantic
builds, and this test process has built many already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Reads an answer of the right shape and one of another, then says what pydantic's plugin machinery did.
PROBE = """
import json, sys
from kairos.answers import UnexpectedAnswer, read
from kairosd.core.wire.inbox import AckDoc

ok = read(AckDoc, {"acked": ["a1"]}, "POST /v1/inbox/ack").acked
try:
    read(AckDoc, {"acked": "a1"}, "POST /v1/inbox/ack")
    refused = None
except UnexpectedAnswer as exc:
    refused = exc.message
scanned = "importlib.metadata" in sys.modules
loader = sys.modules["pydantic.plugin._loader"]
group = loader.PYDANTIC_ENTRY_POINT_GROUP  # a name the stand-in lacks: the real loader's
print(json.dumps({"ok": ok, "refused": refused, "scanned": scanned, "group": group}))
"""


def probe(**env: str) -> dict[str, object]:
    environ = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**environ, **env}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_an_answer_is_read_and_refused_as_before_without_the_plugin_scan() -> None:
    seen = probe()
    assert seen["ok"] == ["a1"]
    assert seen["refused"] == (
        "kairosd answered POST /v1/inbox/ack in a shape this kairos does not know (acked: Input should be a valid "
        "list); if kairos was upgraded, restart kairosd (kairos daemon stop, then start)"
    )
    assert seen["scanned"] is False  # pydantic never imported importlib.metadata to look for plugins
    assert seen["group"] == "pydantic"  # and what else pydantic asks of its loader is the real one's


def test_plugins_named_to_leave_out_mean_the_others_are_wanted() -> None:
    """PYDANTIC_DISABLE_PLUGINS=name: whoever set it uses plugins, so pydantic looks for them as usual."""
    seen = probe(PYDANTIC_DISABLE_PLUGINS="some-plugin")
    assert seen["ok"] == ["a1"]
    assert seen["scanned"] is True
