"""Reading, diffing, backing up and writing the settings files ``kairos integrate`` changes.

Every file is planned before any is written: one that cannot be read or parsed stops the whole run
with nothing changed. A file about to change is first copied to ``<file>.kairos-backup-<UTC time>``,
then replaced atomically (a crash leaves the old file or the new one). A symlinked settings file
(dotfiles) is written through the link, so the link stays; the backup sits next to the link.

Must not import kairosd modules other than ``errors``, ``atomic`` and ``clock``.
"""

from __future__ import annotations

import difflib
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kairos.integrations.settings.agents import FilePlan
from kairos.integrations.settings.merge import Refused

NEW_FILE_MODE = 0o600  # settings files can hold tokens (MCP server env, OAuth state)


@dataclass
class Change:
    """One planned file change; ``after`` None means the file is (or stays) absent."""

    path: Path
    what: str
    before: str | None
    after: str | None
    notes: list[str] = field(default_factory=list)
    backup: Path | None = None

    @property
    def action(self) -> str:
        if self.before == self.after:
            return "unchanged"
        if self.before is None:
            return "create"
        return "delete" if self.after is None else "update"

    def diff(self) -> str:
        if self.before == self.after:
            return ""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def read_text(path: Path) -> str | None:
    """The file's text, None if it does not exist; Refused if it cannot be read as UTF-8 text."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise Refused(f"{path} is a folder, not a settings file; kairos leaves it alone") from None
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); kairos leaves it alone") from None


def plan_changes(plans: list[FilePlan]) -> list[Change]:
    """Read every file and compute its new text; Refused (nothing changed) if any cannot be used."""
    changes = []
    for item in plans:
        before = read_text(item.path)
        after, notes = item.transform(before)
        changes.append(Change(item.path, item.what, before, after, notes))
    return changes


def backup_name(path: Path, now: datetime) -> Path:
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.kairos-backup-{stamp}")
    n = 1
    while candidate.exists():  # two runs within one second
        candidate = path.with_name(f"{path.name}.kairos-backup-{stamp}-{n}")
        n += 1
    return candidate


def apply(changes: list[Change], now: datetime) -> None:
    """Back up and write every change (``now`` names the backups)."""
    from kairosd.system.atomic import write_atomic

    for change in changes:
        if change.action == "unchanged":
            continue
        target = Path(os.path.realpath(change.path))  # through a symlink, so the link survives
        mode = NEW_FILE_MODE
        if change.before is not None:
            mode = stat.S_IMODE(target.stat().st_mode)
            change.backup = backup_name(change.path, now)
            write_atomic(change.backup, change.before.encode("utf-8"), mode)
        if change.after is None:
            target.unlink()
            continue
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(target, change.after.encode("utf-8"), mode)
