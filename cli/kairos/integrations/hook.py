"""``kairos hook AGENT EVENT``: the entry point agent CLIs call from their hooks, JSON on stdin.

AGENT is ``claude``, ``copilot``, ``codex``, ``gemini`` or ``opencode``; EVENT is
the agent's own event name (any case; opencode's plugin, which has no hooks of its
own, uses Claude's names):

=====================  ==============================  =========================================
what                   events                          output when an item is due
=====================  ==============================  =========================================
session start          SessionStart, sessionStart      additional context (pending items and,
                                                       later, the project's context board)
user prompt            UserPromptSubmit,               additional context (Copilot drops this
                       userPromptSubmitted,            hook's output, so there it only marks the
                       BeforeAgent (Gemini)            session active and claims nothing)
turn boundary          Stop, agentStop,                "block" (Gemini: "deny") with the item as
                       AfterAgent (Gemini)             ``reason``: it becomes the next prompt
session end            SessionEnd, sessionEnd          none; deregisters and hands the session
                                                       over for consolidation, in well under 1.5 s
idle wake-up           wait                            the item on stderr and exit 2, for a hook
(Claude, opencode)                                     with ``asyncRewake: true`` (or opencode's
                                                       plugin, which starts a turn with it)
=====================  ==============================  =========================================

opencode's plugin gets ``{"context": board, "text": items}`` at session start (it
puts each in the system prompt itself) and ``{"text": item}`` at a turn boundary;
its UserPromptSubmit output is not read, so that call claims nothing.

At a turn boundary at most one item goes out, none when ``stop_hook_active``
says the turn already continues because of a Stop hook, and the daemon stops a
chain of blocks well under each agent's cap. An item is acknowledged only after
its output was written and flushed; an item whose acknowledgement never arrives
is handed out again once its claim lapses (at least once, not at most once).

An agent that kairos started itself (``KAIROS_SPAWNED=1``: a background job or
a headless fallback) is not a session the user works in: its hooks neither
register it nor hand it prompts; its SessionEnd only tells consolidation.

**A hook must never break the agent**: on any failure (daemon down, bad JSON on
stdin, unknown event, a broken pipe) this exits 0 with no output. The only
non-zero exit is the waiter's deliberate 2.

The hot path: ``kairos.__main__`` dispatches here before argparse or any verb
module is imported. Must import only the standard library's os/sys/time,
:mod:`kairos.cjson` and ``kairos.client`` (with what it brings: kairosd.core.protocol,
errors, paths): not typing or contextlib, nor the json package (docs/performance.md;
``tests/integration/kairos/test_import_budget.py`` checks the hook path's imports).
"""

from __future__ import annotations

import os
import sys
import time

from kairos import cjson
from kairos.client import Client
from kairosd.core.protocol import SESSION_MAX_WAIT_S, route_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

AGENTS = ("claude", "copilot", "codex", "gemini", "opencode")
# The agents' event names, lower case without separators, to the daemon's four (and the waiter).
EVENTS = {
    "sessionstart": "start",
    "userpromptsubmit": "prompt",
    "userpromptsubmitted": "prompt",
    "beforeagent": "prompt",
    "stop": "stop",
    "agentstop": "stop",
    "afteragent": "stop",
    "sessionend": "end",
    "wait": "wait",
}
CALL_TIMEOUT_S = 3.0  # a stuck daemon may delay a turn this long at most, then the hook gives up quietly
END_BUDGET_S = 1.0  # Claude gives SessionEnd hooks 1.5 s in all (Python's start-up comes out of it)
DEFAULT_WAIT_S = 540.0  # the waiter's lifetime: under Claude's default 600 s hook timeout
MAX_STDIN_BYTES = 32 << 20
USAGE = """\
usage: kairos hook AGENT EVENT [--max-wait SECONDS] < hook-input.json

Called by agent CLIs' hooks (see README, "Hooks"). AGENT: claude, copilot, codex, gemini, opencode.
EVENT: the agent's event (SessionStart, UserPromptSubmit, Stop, SessionEnd; Copilot's
sessionStart, userPromptSubmitted, agentStop, sessionEnd; Gemini's BeforeAgent, AfterAgent),
or 'wait' for Claude Code's asyncRewake waiter (--max-wait: its lifetime, default 540 s).
It always exits 0 without output when anything goes wrong, so it never breaks the agent.

examples:
  kairos hook claude Stop < stop-input.json
  kairos hook gemini AfterAgent < after-agent-input.json
  kairos hook claude wait --max-wait 540
  kairos integrate claude          # installs these hooks for you
"""


def main(argv: list[str]) -> int:
    """Run one hook call; the exit code (0, or 2 when the waiter wakes a session)."""
    try:
        return _run(argv)
    except BaseException:  # whatever happens, the agent must not see a failing hook
        return 0


def _run(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or len(argv) < 2:
        if sys.stdout.isatty() or (argv and argv[0] in ("-h", "--help")):
            sys.stdout.write(USAGE)
        return 0
    agent, native = argv[0].lower(), argv[1]
    event = EVENTS.get("".join(ch for ch in native.lower() if ch.isalnum()))
    if agent not in AGENTS or event is None:
        return 0
    payload = _read_payload()
    if payload is None:
        return 0
    session_id = _field(payload, "session_id", "sessionId")
    if session_id is None:
        return 0
    if os.environ.get("KAIROS_SPAWNED") == "1" and event != "end":
        # An agent kairos itself started (a background job, a headless fallback) runs the user's hooks
        # too; it is not a session the user works in, so it neither registers nor takes prompts.
        return 0
    if event == "wait":
        if os.environ.get("CLAUDE_CODE_SESSION_ATTENDED") == "0":
            # `claude -p` and the SDK (nobody at the terminal) wait for async hooks before they exit: a
            # waiter would hold them for its whole lifetime. Their turn ends reach the Stop hook anyway.
            return 0
        return _wait(agent, session_id, payload, _max_wait(argv[2:]))
    if event == "end":
        return _end(agent, session_id, payload)
    return _deliver(agent, event, native, session_id, payload)


def _read_payload() -> dict[str, Any] | None:
    raw = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        return None
    try:
        payload = cjson.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):  # RecursionError: a payload nested thousands deep
        return None
    return payload if isinstance(payload, dict) else None


def _field(payload: dict[str, Any], *names: str) -> str | None:
    """The first of ``names`` that holds a non-empty string (camelCase or snake_case payloads)."""
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def _session_body(agent: str, payload: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"agent": agent}
    cwd = _field(payload, "cwd")
    transcript = _field(payload, "transcript_path", "transcriptPath")
    if cwd:
        body["cwd"] = cwd
    if transcript:
        body["transcript_path"] = transcript
    return body


def _block_cap(agent: str) -> int | None:
    """Claude Code's cap on consecutive Stop blocks when the user changed it (the default is 8)."""
    raw = os.environ.get("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP", "") if agent == "claude" else ""
    raw = raw.strip()
    return int(raw) if raw.isascii() and raw.isdigit() else None  # isdigit() alone takes "٣"


def _deliver(agent: str, event: str, native: str, session_id: str, payload: dict[str, Any]) -> int:
    body = _session_body(agent, payload)
    body["event"] = event
    # Copilot drops what a userPromptSubmitted command hook prints, and opencode's plugin does not
    # read it: claim nothing that would be lost.
    body["deliver"] = not (agent in ("copilot", "opencode") and event == "prompt")
    if event == "stop":
        body["stop_hook_active"] = payload.get("stop_hook_active", payload.get("stopHookActive")) is True
        cap = _block_cap(agent)
        if cap is not None:
            body["block_cap"] = cap
    source = _field(payload, "source")
    if source:
        body["source"] = source
    client = Client(timeout=CALL_TIMEOUT_S)
    answer = client.call("POST", route_path("session_hook", id=session_id), body)
    if not isinstance(answer, dict):
        return 0
    parts = [answer.get("context"), answer.get("text")] if event == "start" else [answer.get("text")]
    text = "\n\n".join(p for p in parts if isinstance(p, str) and p)
    if not text:
        return 0
    output = _opencode_output(event, answer) if agent == "opencode" else render(agent, event, text)
    if output is None:
        return 0
    sys.stdout.write(cjson.dumps(output))
    sys.stdout.flush()  # the agent has it once this returns; only then is the item acknowledged
    _ack(client, session_id, agent, answer, native)
    return 0


def render(agent: str, event: str, text: str) -> dict[str, Any] | None:
    """The hook output that hands ``text`` to ``agent`` at ``event`` (start, prompt or stop)."""
    if event == "stop":
        # The "block" decision with a reason: the agent takes the reason as its next prompt. Gemini's
        # AfterAgent calls the same thing "deny" (reject the answer, retry with the reason).
        return {"decision": "deny" if agent == "gemini" else "block", "reason": text}
    if agent == "copilot":
        return {"additionalContext": text} if event == "start" else None
    hook_event = {"start": "SessionStart", "prompt": "BeforeAgent" if agent == "gemini" else "UserPromptSubmit"}[event]
    return {"hookSpecificOutput": {"hookEventName": hook_event, "additionalContext": text}}


def _opencode_output(event: str, answer: dict[str, Any]) -> dict[str, Any]:
    """opencode's plugin places the board and the items itself: the board in every request's system
    prompt, the items at start in the first turn's only, a turn boundary's into the running turn."""
    output = {key: answer.get(key) for key in ("context", "text") if isinstance(answer.get(key), str)}
    if event != "start":
        output.pop("context", None)
    return output


def _ack(client: Client, session_id: str, agent: str, answer: dict[str, Any], via: str) -> None:
    items = answer.get("items")
    claim = answer.get("claim")
    if not claim or not isinstance(items, list) or not items:
        return
    run_ids = [item["run_id"] for item in items if isinstance(item, dict) and isinstance(item.get("run_id"), str)]
    body = {"agent": agent, "claim": claim, "run_ids": run_ids, "via": f"{via} hook"}
    client.call("POST", route_path("session_ack", id=session_id), body)


def _end(agent: str, session_id: str, payload: dict[str, Any]) -> int:
    """Deregister and hand over for consolidation, both bounded by END_BUDGET_S in all."""
    deadline = time.monotonic() + END_BUDGET_S
    body = _session_body(agent, payload)
    reason = _field(payload, "reason")
    if reason:
        body["reason"] = reason
    spawned = os.environ.get("KAIROS_SPAWNED") == "1"
    known: Any = None
    try:
        if not spawned:  # a session kairos started never registered
            known = Client(timeout=END_BUDGET_S / 2).call("POST", route_path("session_end", id=session_id), body)
    except Exception:  # noqa: S110 - the consolidation hand-over below is still worth a try
        pass
    if not isinstance(known, dict):
        known = {}
    remaining = deadline - time.monotonic()
    if remaining > 0.05:
        handover: dict[str, Any] = {
            "agent": agent,
            "session_id": session_id,
            # The payload's, else what the session's earlier hooks said (Copilot's sessionEnd has no transcript).
            "transcript_path": body.get("transcript_path") or known.get("transcript_path"),
            "cwd": body.get("cwd") or known.get("cwd"),
            "reason": reason,
        }
        if spawned:
            handover["spawned"] = True  # consolidation's gates skip a session kairos started itself
        if os.environ.get("KAIROS_CONSOLIDATE"):
            handover["consolidate"] = os.environ["KAIROS_CONSOLIDATE"]
        Client(timeout=remaining).call("POST", route_path("consolidate"), handover)
    return 0


def _max_wait(options: list[str]) -> float:
    if len(options) >= 2 and options[0] == "--max-wait":
        try:
            value = float(options[1])
        except ValueError:
            return DEFAULT_WAIT_S
        if value == value and value >= 0:  # not NaN
            return value
    return DEFAULT_WAIT_S


def _wait(agent: str, session_id: str, payload: dict[str, Any], lifetime: float) -> int:
    """Claude Code's asyncRewake waiter: block until an item is due for this session, then put it on
    stderr and exit 2, which wakes the session. Exit 0 quietly on timeout, supersession or any error."""
    import gc

    gc.enable()  # kairos.__main__ turned it off for the short hook calls; this one may live for minutes
    deadline = time.monotonic() + lifetime
    next_item = route_path("session_next", id=session_id)
    query = {"agent": agent, **{k: v for k, v in _session_body(agent, payload).items() if k != "agent"}}
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return 0
        poll = min(remaining, SESSION_MAX_WAIT_S)
        client = Client(timeout=poll + CALL_TIMEOUT_S)
        answer = client.call("GET", next_item, query={**query, "timeout": f"{poll:.3f}"})
        if not isinstance(answer, dict):
            return 0
        text = answer.get("text")
        if isinstance(text, str) and text and answer.get("item"):
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
            items = {"items": [answer["item"]], "claim": answer.get("claim")}
            _ack(client, session_id, agent, items, "asyncRewake waiter")
            return 2
        if answer.get("why") != "timeout":
            return 0  # superseded by a newer waiter, the session ended, or kairosd is stopping
