"""``kairos systemd status|uninstall --json`` against :mod:`kairosd.core.wire.verbs` (issue 15, item 2).

Real ``kairos`` processes in the systemd tests' sandbox (tests/systemd_support.py): fake ``systemctl``
and ``journalctl`` first on PATH (they record their argv and print what the test sets), so no user
manager is needed.
"""

from __future__ import annotations

import json

import pytest
from systemd_support import SHOW_RUNNING, box

from kairos.commands import systemd as sd
from kairosd.core.wire import verbs as documents

__all__ = ["box"]  # the fixture, used below


def test_systemd_status_and_uninstall_print_their_documents(box):
    box.env["FAKE_SYSTEMCTL_SHOW"] = SHOW_RUNNING
    status = box.json("systemd", "status", "-n", "2")
    documents.check("systemd status", status)
    assert (status["running"], status["properties"][sd.SERVICE]["MainPID"]) == (True, "4242")
    assert len(status["journal"]) == 2
    box.env["FAKE_SYSTEMCTL_SHOW"] = SHOW_RUNNING.replace("ActiveState=active", "ActiveState=failed")
    proc = box.kairos("systemd", "status", "--json", check=False)
    assert proc.returncode == 3
    assert documents.check("systemd status", json.loads(proc.stdout)).model_dump()["running"] is False

    box.kairos("systemd", "install")
    dry = box.json("systemd", "uninstall", "--dry-run")
    documents.check("systemd uninstall", dry)
    assert (dry["dry_run"], "warnings" in dry) == (True, False)
    box.env["FAKE_SYSTEMCTL_FAIL"] = "stop"
    done = box.json("systemd", "uninstall")
    documents.check("systemd uninstall", done)
    assert done["removed"] == [str(box.unit_dir / sd.SERVICE)]
    assert "stop kairosd.service: Failed to connect" in done["warnings"][0]
    nothing = box.json("systemd", "uninstall")
    documents.check("systemd uninstall", nothing)
    assert (nothing["removed"], nothing["commands"], nothing["warnings"]) == ([], [], [])


def test_a_systemd_document_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match="MainPID"):
        documents.check("systemd status", {"running": True, "properties": {"u": {"MainPID": 4242}}, "journal": []})
    with pytest.raises(ValueError, match="units"):  # the old key
        documents.check("systemd status", {"running": True, "units": {}, "journal": []})
    with pytest.raises(ValueError, match="removed"):
        documents.check("systemd uninstall", {"dry_run": False, "unit_dir": "/u", "removed": "/u/a", "commands": []})
