"""``kairos export``: tasks as systemd timers, Kubernetes CronJobs or GitHub Actions workflows.

kairosd renders the files (``POST /v1/export``: it holds the tasks and the agent
config that builds each headless command line); this verb prints them or
writes them into ``--out DIR``, and prints every warning (what the exported
job does differently) and every refusal (what cannot be expressed) on stderr.
Exit 1 when any task was refused. At a terminal, stderr shows how long the
export has waited, then the files written (:mod:`kairos.progress`).

Only argparse and typing are imported at the top; the client loads in the handler, which reads
kairosd's answer as its model (:mod:`kairos.answers`). Must not import asyncio or any kairosd module
that does I/O.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from kairos.commands.common import add_quiet_flag, make_parser
from kairosd.core.protocol import route_path

if TYPE_CHECKING:
    from kairos.progress import Progress, Silent
    from kairosd.core.wire.export import ExportedTask

ENGINES = ("systemd", "kubernetes", "github-actions")
EXPORT_MODE = 0o644


def register(subparsers: Any) -> None:
    parser = make_parser(
        subparsers,
        "export",
        "render tasks for systemd, Kubernetes or GitHub Actions",
        "Render each task as the engine's own job, running the task's agent headlessly there with "
        "the agent adapter's own command line (prompt, model, working directory, timeout): a systemd "
        "user .timer and .service, a Kubernetes batch/v1 CronJob, or a GitHub Actions workflow. "
        "What the engine does differently is printed as a warning; what it cannot express "
        "(inbox, live-session and webhook targets, jitter it lacks, one-shots on Kubernetes and "
        "GitHub, intervals under 5 minutes on GitHub, ...) is refused with the reason, and the "
        "exit code is 1. See README, 'Outgrowing one machine'.",
        """
        kairos export 3f2a9c1d --to systemd --out ~/.config/systemd/user
        systemctl --user daemon-reload && systemctl --user enable --now kairos-3f2a9c1d.timer
        kairos export 3f2a9c1d --to kubernetes --image node:22 | kubectl apply -f -
        kairos export --all --to github-actions --out .github/workflows
        kairos export 3f2a9c1d --to systemd --json
        """,
    )
    parser.add_argument("ids", nargs="*", metavar="TASK_ID", help="the tasks to export")
    parser.add_argument("--all", action="store_true", help="every task (refused ones are listed)")
    parser.add_argument("--to", required=True, choices=ENGINES, help="the engine")
    parser.add_argument("--out", metavar="DIR", help="write the files into DIR (default: print them)")
    parser.add_argument("--image", metavar="IMAGE", help="kubernetes: the container image with the agent CLI")
    parser.add_argument(
        "--secret-name", metavar="NAME", default="kairos-agent", help="kubernetes: the Secret with the API keys"
    )
    parser.add_argument(
        "--secret-env",
        metavar="VAR",
        action="append",
        default=[],
        help="another variable to take from the engine's secrets (repeatable)",
    )
    add_quiet_flag(parser)
    parser.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from kairos.answers import read
    from kairos.commands.common import client
    from kairos.output import error, print_json
    from kairosd.core.errors import EXIT_FAILURE, UsageError
    from kairosd.core.wire.export import ExportDoc

    if args.ids and args.all:
        raise UsageError("give task ids or --all, not both")
    if not args.ids and not args.all:
        raise UsageError("say which tasks to export: give their ids, or --all")
    if args.to == "kubernetes" and not args.image:
        raise UsageError("--to kubernetes needs --image (the container image that holds the agent CLI)")
    body: dict[str, Any] = {"to": args.to, "secret_name": args.secret_name, "secret_env": args.secret_env}
    body.update({"all": True} if args.all else {"ids": args.ids})
    if args.image:
        body["image"] = args.image
    from kairos.progress import on_stderr

    with on_stderr(args.quiet) as progress:
        # One request renders every task (kairosd.export.api): the line can say only how long it has taken.
        which = "every task" if args.all else f"{len(args.ids)} task{'' if len(args.ids) == 1 else 's'}"
        progress.update(f"exporting {which} to {args.to}", "waiting for kairosd")
        answer = client().call("POST", route_path("export"), body)
        doc = read(ExportDoc, answer, "POST /v1/export")
        exports, refused = doc.exports, doc.refused
        written = _write(args.out, exports, progress) if args.out else []
    if args.json:
        print_json({**answer, "written": written} if args.out else answer)
    elif not args.out:
        _print(exports, "---" if args.to == "kubernetes" else "")
    for path in written if not args.json else []:
        print(f"wrote {path}")
    for item in exports:
        for warning in item.warnings:
            error(f"warning: task {item.task_id}: {warning}")
    for refusal in refused:
        error(f"refused: {refusal.reason}")
    if not exports and not refused:
        error("no tasks to export")
    return EXIT_FAILURE if refused else 0


def _print(exports: list[ExportedTask], separator: str) -> None:
    from kairos.output import write_lines

    lines: list[str] = []
    for item in exports:
        for file in item.files:
            if lines:
                lines.append(separator)  # kubernetes: "---" between documents, for kubectl apply -f -
            # A comment in all three formats (unit files and YAML), so the output can be piped on as it is.
            lines.append(f"# ==> {file.name} <==")
            lines.extend(file.text.rstrip("\n").split("\n"))
    write_lines(lines)


def _write(out: str, exports: list[ExportedTask], progress: Progress | Silent | None = None) -> list[str]:
    """Write each file into ``out`` (created if needed) by an atomic replace.

    ``out`` may be a folder others can write to (a shared repository checkout), so the temp file
    gets a random name and is created exclusively without following a link (write_atomic), and the
    rename replaces a link planted at the target itself rather than writing through it.
    """
    import os
    from pathlib import Path

    from kairosd.core.errors import KairosError
    from kairosd.system.atomic import write_atomic

    os.makedirs(out, exist_ok=True)
    written: list[str] = []
    total = sum(len(item.files) for item in exports)
    for item in exports:
        for file in item.files:
            if progress is not None:
                progress.update(f"writing {len(written):,}/{total:,} files to {out}")
            name = file.name
            if os.sep in name or name.startswith("."):
                raise KairosError(f"kairosd sent a bad file name {name!r}")
            path = os.path.join(out, name)
            try:
                # Unit files and workflows are read by other programs (systemd, git), not secrets.
                write_atomic(Path(path), file.text.encode("utf-8"), mode=EXPORT_MODE)
            except OSError as exc:
                raise KairosError(f"cannot write {path}: {exc.strerror or exc}") from exc
            written.append(path)
    return written
