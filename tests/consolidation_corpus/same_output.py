"""The offline extractor's full output, dumped or compared: proof that a speed-up changed nothing.

Over every typed turn of every corpus split, and the two transcripts ``bench/bench_consolidate.py``
makes, in both readings (broad, and cautious with :func:`kinds.load`):

- :func:`turn` of each typed text, read both after an agent turn and not (its signals and updates);
- :func:`extract` of each corpus session (its turns as human messages, an agent reply between them)
  and of each benchmark transcript as the worker reads it: the full ``to_merge`` list (kind, text,
  action, at), counts of secrets and injections dropped.

Run it at the commit before a change (``dump``), then after (``compare``): any difference is listed.

    PYTHONPATH=tests:bench python tests/consolidation_corpus/same_output.py dump /tmp/before.json
    PYTHONPATH=tests:bench python tests/consolidation_corpus/same_output.py compare /tmp/before.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bench_consolidate import make_events, make_transcript

from consolidation_corpus.corpus import SPLITS, load
from kairosd.consolidation.offline import extract as extraction
from kairosd.consolidation.offline import kinds as kinds_model
from kairosd.consolidation.transcripts.model import Message
from kairosd.consolidation.transcripts.read import ReadStats, read_file

BASE = datetime(2026, 11, 20, 9, tzinfo=UTC)
ZONE = ZoneInfo("Europe/Berlin")


def _signals(found: tuple[Any, ...]) -> list[list[str]]:
    return [[s.kind, s.text, s.action] for s in found]


def _run(messages: list[Message], kinds: kinds_model.Kinds | None) -> dict[str, Any]:
    done = extraction.extract(messages, project="/home/me/src/app", anchor=BASE, zone=ZONE, kinds=kinds)
    return {
        "to_merge": [[c.kind, c.text, c.action, c.at.isoformat() if c.at else None] for c in done.to_merge],
        "candidates": len(done.candidates),
        "dropped": [done.dropped_secrets, done.dropped_injections, done.human_turns],
    }


def _sessions() -> Iterator[tuple[str, list[str]]]:
    for split in SPLITS:
        for writer in load(split):
            for project in writer.projects:
                for s, session in enumerate(project.sessions):
                    yield f"{split}/{writer.writer}/{project.name}/s{s}", [t.text for t in session.turns]


def _messages(texts: list[str]) -> list[Message]:
    out: list[Message] = []
    for t, text in enumerate(texts):
        out.append(Message("user", text, human=True, at=BASE + timedelta(minutes=2 * t)))
        out.append(Message("assistant", "Done.", at=BASE + timedelta(minutes=2 * t + 1)))
    return out


def dump() -> dict[str, Any]:
    readings: dict[str, kinds_model.Kinds | None] = {"broad": None, "cautious": kinds_model.load()}
    out: dict[str, Any] = {}
    for name, model in readings.items():
        turns: dict[str, Any] = {}
        runs: dict[str, Any] = {}
        for where, texts in _sessions():
            for text in texts:
                for after in (False, True):
                    found, updates = extraction.turn(text, after, model)
                    turns[f"{after}:{text}"] = [_signals(found), _signals(updates)]
            runs[where] = _run(_messages(texts), model)
        with tempfile.TemporaryDirectory(prefix="kso") as tmp:
            for shape, make in (("claude", make_transcript), ("copilot", make_events)):
                path = Path(tmp) / f"{shape}.jsonl"
                make(path, 10)
                messages = list(read_file(path, "claude", ReadStats()))
                for message in messages:
                    if message.human:
                        for after in (False, True):
                            found, updates = extraction.turn(message.text, after, model)
                            turns[f"{after}:{message.text}"] = [_signals(found), _signals(updates)]
                runs[f"bench/{shape}"] = _run(messages, model)
        out[name] = {"turns": turns, "runs": runs}
    return out


def compare(before: dict[str, Any], now: dict[str, Any]) -> int:
    differ = 0
    for name in before.keys() | now.keys():
        for part in ("turns", "runs"):
            old, new = before.get(name, {}).get(part, {}), now.get(name, {}).get(part, {})
            for key in sorted(old.keys() | new.keys()):
                if old.get(key) != new.get(key):
                    differ += 1
                    if differ <= 20:
                        print(f"{name} {part} {key[:100]!r}:\n  before {old.get(key)}\n  now    {new.get(key)}")
            entries = sum(len(v[0]) + len(v[1]) for v in old.values()) if part == "turns" else None
            if part == "runs":
                entries = sum(len(v["to_merge"]) for v in old.values())
            print(f"{name}: {len(old)} {part} compared ({entries} signals/candidates)")
    print("same output" if not differ else f"{differ} difference(s)")
    return 1 if differ else 0


def main(argv: list[str]) -> int:
    verb, path = argv
    now = dump()
    if verb == "dump":
        Path(path).write_text(json.dumps(now))
        return 0
    return compare(json.loads(Path(path).read_text()), now)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
