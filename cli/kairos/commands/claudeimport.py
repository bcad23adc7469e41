"""``kairos import``: import Claude Code's ``.claude/scheduled_tasks.json`` as scheduled tasks.

Sends the file in batches (each imported atomically by kairosd) and, at a terminal, shows on
stderr how many of its tasks were sent so far (:mod:`kairos.progress`).

Only argparse and typing are imported at the top (``kairos.app`` imports every
verb module on every call); the client and helpers load inside the handlers.
Must not import asyncio or any kairosd module that does I/O (but it reads its file through
kairosd.system.boundedread, on this verb alone); pydantic only where it reads kairosd's answer as its
model (:mod:`kairos.answers`).
"""

from __future__ import annotations

import argparse
from typing import Any

from kairos.commands.common import add_quiet_flag, make_parser
from kairosd.core.protocol import route_path

CLAUDE_FILE = (".claude", "scheduled_tasks.json")


def register(subparsers: Any) -> None:
    imp = make_parser(
        subparsers,
        "import",
        "import Claude Code's scheduled tasks",
        "Import the tasks of Claude Code's .claude/scheduled_tasks.json (PATH may be the file "
        "or a project folder). Only Claude's fields are read (id, cron, prompt, createdAt, lastFiredAt, "
        "recurring, permanent); any other key is dropped and reported, and every task goes to the inbox. "
        "Crons are read in --tz. Fires due before the import follow the task's catch-up policy, as after "
        "a restart (a past one-shot is surfaced in 'kairos missed', never delivered). Ids already known, "
        "and tasks imported before, are skipped. --dry-run shows all of this, with each prompt, and writes "
        "nothing. A prompt or name holding invisible or control characters (Unicode tags, zero-width, "
        "bidi controls, ...) is shown escaped and flagged HIDDEN; the import is refused unless "
        "--allow-hidden.",
        """
        kairos import --dry-run .
        kairos import .
        kairos import --project . .     # to a live session in this project, not the inbox
        kairos import ~/proj/.claude/scheduled_tasks.json --tz Europe/Berlin --json
        """,
    )
    imp.add_argument("path", metavar="PATH", help="the JSON file, or a folder containing .claude/")
    imp.add_argument("--tz", metavar="ZONE", help="zone the crons were written in (default: your local zone)")
    imp.add_argument("--dry-run", action="store_true", help="show what would be imported; change nothing")
    imp.add_argument(
        "--allow-hidden",
        action="store_true",
        help="import even tasks whose prompt or name holds invisible or control characters",
    )
    imp.add_argument(
        "--project",
        metavar="DIR",
        help="deliver to a live agent session working in DIR (made absolute; the inbox when none is live) "
        "instead of the inbox",
    )
    add_quiet_flag(imp)
    imp.set_defaults(handler=cmd_import)


# A file larger than one request can carry is sent in batches (each imported atomically); this
# bounds what the CLI reads at all. Issue 28: one request (1 MiB) held about 7,000 tasks.
IMPORT_FILE_MAX = 256 << 20


def cmd_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kairos.commands.common import client, local_zone
    from kairos.output import print_json
    from kairosd.core.errors import KairosError

    path = Path(args.path).expanduser()
    if path.is_dir():
        # Accept the project folder or its .claude folder as well as the file.
        nested = path.joinpath(*CLAUDE_FILE)
        path = nested if nested.exists() else path / CLAUDE_FILE[-1]
    from kairos.progress import Silent, on_stderr
    from kairosd.system.boundedread import read_capped

    with on_stderr(args.quiet) as progress:
        # A file of 100,000 tasks takes seconds to read and split, before the first request.
        progress.update(f"reading {path}")
        try:
            # Bounded: a link to /dev/zero or a FIFO is refused at once, and a file larger than the CLI
            # splits is refused before it is read whole.
            data = read_capped(path, IMPORT_FILE_MAX).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise KairosError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
        body: dict[str, Any] = {"tz": args.tz or local_zone()}
        if args.project:
            body["project"] = str(Path(args.project).expanduser().absolute())
        batches = import_batches(data)
        api = client()
        counted = _BatchCounts(batches, data, counting=not isinstance(progress, Silent))
        if not args.dry_run and not args.allow_hidden:
            # What a person cannot read is not imported unasked: the same requests as a dry run first.
            hidden: list[tuple[str, str]] = []
            for number, (_, text) in enumerate(batches, start=1):
                progress.update(*counted.line("checking for hidden characters:", number))
                answer = api.call("POST", route_path("import"), {"data": text, **body, "dry_run": True})
                hidden += _hidden_tasks(answer)
            if hidden:
                ids = ", ".join(f"{task_id} ({what})" for task_id, what in hidden)
                raise KairosError(
                    f"not imported: {len(hidden)} task(s) in {path} hold characters a person cannot see but the "
                    f"agent would receive: {ids}. See them escaped with: kairos import --dry-run {path}; "
                    "import them anyway with --allow-hidden"
                )
        if args.dry_run:
            body["dry_run"] = True
        doc: dict[str, Any] = {}
        for number, (offset, text) in enumerate(batches, start=1):
            progress.update(*counted.line("dry run:" if args.dry_run else "importing", number))
            try:
                answer = api.call("POST", route_path("import"), {"data": text, **body})
            except KairosError as exc:
                if number == 1:
                    raise
                with progress.above():
                    _print_import(doc, path, batches=number - 1)
                exc.message = (
                    f"batch {number} of {len(batches)} failed: {exc.message} (batches 1-{number - 1} were "
                    "imported; run the same import again to import the rest: what is imported is skipped)"
                )
                raise
            _merge_import(doc, answer, offset)
            if len(batches) > 1 and not args.json:
                imported, skipped, rejected = (len(answer.get(k) or []) for k in ("imported", "skipped", "rejected"))
                with progress.above():
                    print(f"batch {number}/{len(batches)}: {imported} imported, {skipped} skipped, {rejected} rejected")
    if args.json:
        print_json(doc)
    else:
        _print_import(doc, path)
    hidden_now = _hidden_tasks(doc)
    if hidden_now:
        from kairos.output import error

        verb = "would hold" if doc.get("dry_run") else "hold"
        error(
            f"warning: {len(hidden_now)} imported task(s) {verb} invisible or control characters that the agent "
            f"receives as they are: {', '.join(task_id for task_id, _ in hidden_now)}"
        )
    return 0


class _BatchCounts:
    """How many tasks the batches of an import hold, for its progress line (only counted when one is shown:
    the file's last batch is parsed once more; the others' counts come from the offsets)."""

    def __init__(self, batches: list[tuple[int, str]], data: str, counting: bool) -> None:
        self.batches = batches
        self.total: int | None = None
        if counting:
            from kairos import cjson

            try:
                last = cjson.loads(batches[-1][1] if len(batches) > 1 else data)
                tasks = last.get("tasks") if isinstance(last, dict) else None
                self.total = batches[-1][0] + len(tasks) if isinstance(tasks, list) else None
            except (ValueError, RecursionError):
                pass  # the daemon says what is wrong with the file; the line says only what it waits for

    def line(self, doing: str, number: int) -> tuple[str, ...]:
        """The progress line's text while batch ``number`` (1-based) is sent: what, and the batch."""
        if self.total is None:
            return (f"{doing} tasks",)
        if len(self.batches) == 1:
            return (f"{doing} {self.total:,} task{'' if self.total == 1 else 's'}",)
        done = self.batches[number - 1][0]
        return (f"{doing} {done:,}/{self.total:,} tasks", f"batch {number}/{len(self.batches)}")


def import_batches(data: str) -> list[tuple[int, str]]:
    """``data`` as the texts of the requests that carry it: (index of the batch's first task, its text).

    A file that fits one request goes as it is. A larger one must be Claude's shape (an object with a
    ``tasks`` list); its tasks are sent in batches, each a ``{"tasks": [...]}`` that fits one request
    (each is imported atomically, and a task imported by an earlier batch is skipped if sent again).
    """
    from kairos import cjson
    from kairosd.core.errors import UsageError
    from kairosd.core.protocol import MAX_BODY_BYTES

    room = MAX_BODY_BYTES - (16 << 10)  # the request's other fields (zone, project)
    if len(cjson.dumps(data, compact=True)) <= room:
        return [(0, data)]
    try:
        doc = cjson.loads(data)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"not a Claude scheduled_tasks.json: invalid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("tasks"), list):
        raise UsageError("not a Claude scheduled_tasks.json: expected an object with a 'tasks' list")
    batches: list[tuple[int, str]] = []
    items: list[str] = []
    size = first = 0
    for index, item in enumerate(doc["tasks"]):
        text = cjson.dumps(item, compact=True)
        cost = len(cjson.dumps(text, compact=True))  # as the request's JSON carries it (quotes escaped)
        if items and size + cost + 32 > room:
            batches.append((first, '{"tasks":[' + ",".join(items) + "]}"))
            items, size, first = [], 0, index
        items.append(text)
        size += cost + 1
    batches.append((first, '{"tasks":[' + ",".join(items) + "]}"))
    return batches


def _merge_import(doc: dict[str, Any], answer: dict[str, Any], offset: int) -> None:
    """Add one batch's answer to ``doc``; a rejected item's index becomes its index in the whole file."""
    doc["dry_run"] = answer.get("dry_run", False)
    for key in ("imported", "skipped", "dropped"):
        doc.setdefault(key, []).extend(answer.get(key) or [])
    doc.setdefault("rejected", [])  # every key of an import answer, even with nothing rejected (ImportDoc)
    for item in answer.get("rejected") or []:
        if isinstance(item.get("index"), int):
            item = {**item, "index": item["index"] + offset}
        doc.setdefault("rejected", []).append(item)


def _print_import(answer: dict[str, Any], path: Any, batches: int | None = None) -> None:
    import textwrap

    from kairos.answers import read
    from kairos.commands.tasks import describe
    from kairosd.core.invisible import describe_hidden
    from kairosd.core.wire.imports import ImportDoc

    doc = read(ImportDoc, answer, "POST /v1/import")
    imported, skipped, rejected = doc.imported, doc.skipped, doc.rejected
    verb = "would import" if doc.dry_run else "imported"
    where = f" (the first {batches} batch(es))" if batches is not None else ""
    print(f"{verb} {len(imported)}, skipped {len(skipped)}, rejected {len(rejected)} from {path}{where}")
    for task in imported:
        name = f" ({task.name})" if task.name else ""
        print(f"  + {task.id}{name}: {describe(task)}")
        if task.on_import:
            print(f"      at import: {_safe(task.on_import)}")
        if doc.dry_run:
            # The whole prompt, as a block: what the agent will be asked is what the person reviews.
            print(textwrap.indent(task.prompt, "      | "))
        for field, text in (("prompt", task.prompt), ("name", task.name or "")):
            problem = describe_hidden(text)
            if problem:
                print(f"      HIDDEN: the {field} holds {problem}: kairos shows them escaped, the agent gets them")
    for skip in skipped:
        print(f"  = {skip.id}: {_safe(skip.reason)}")
    for reject in rejected:
        who = reject.id if reject.id is not None else f"#{reject.index}"
        print(f"  ! {_safe(who)}: {_safe(reject.reason)}")
    for dropped in doc.dropped:
        keys = ", ".join(_safe(k) for k in dropped.keys)
        print(f"  - {dropped.id}: dropped keys kairos does not import: {keys}")
    if doc.dry_run:
        print("nothing was changed (--dry-run)")


def _hidden_tasks(answer: Any) -> list[tuple[str, str]]:
    """(id, what is hidden where) of each task in an import answer whose prompt or name holds unsafe characters."""
    from kairos.answers import read
    from kairosd.core.invisible import describe_hidden
    from kairosd.core.wire.imports import ImportDoc

    found = []
    for task in read(ImportDoc, answer, "POST /v1/import").imported:
        problems = [
            f"the {field} holds {problem}"
            for field, text in (("prompt", task.prompt), ("name", task.name or ""))
            if (problem := describe_hidden(text))
        ]
        if problems:
            found.append((task.id, "; ".join(problems)))
    return found


def _safe(text: Any) -> str:
    """Text from the imported file, on one line, control characters escaped."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))
