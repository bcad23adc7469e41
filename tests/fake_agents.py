"""Fake agent CLIs for tests: ``claude``, ``copilot``, ``codex``, ``gemini`` and ``opencode``.

    paths = write_fake_agents(tmp_path / "bin")    # {"claude": Path, ...}, all executable
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}

Each is a small Python script (``#!<this interpreter>``) that parses the real
CLI's headless flags strictly: an unknown flag or a bad value is a usage error
on stderr with the real CLI's exit code (claude, copilot, opencode: 1; codex: 2;
gemini: 42). It prints the real output shapes: Claude ``stream-json`` (and
``json``/``text``) with ``system/init``, ``assistant`` ``tool_use`` blocks,
``user`` ``tool_result`` blocks and a final ``result``; Copilot's JSONL events
ending in ``result``; Codex ``exec --json`` events (``thread.started``,
``item.*``, ``turn.completed``/``turn.failed``); Gemini ``stream-json``;
opencode ``run --format json`` events. ``--version`` works on all of them.

Real behaviours they copy: ``claude`` needs ``-p`` (and ``--verbose`` for
stream-json) and reads the prompt from stdin when none is given; ``codex``
refuses to run outside a Git repository without ``--skip-git-repo-check`` and
reads the prompt from stdin when it is ``-``; resuming an unknown session fails
(when FAKE_AGENT_STATE is set, so they know which sessions exist).

Environment switches (all optional):

    FAKE_AGENT_MODE     ok (default)  a normal turn: FAKE_AGENT_TOOLS tool calls, then the answer
                        error_json    the CLI's in-band failure (Claude "is_error": true, Copilot
                                      session.error, Codex turn.failed, Gemini result status error,
                                      opencode error event), non-zero exit
                        fail          no JSON at all: an error on stderr, exit 1 (a crash, no login)
                        garbage       exit 0 with output that is not the format asked for
                        empty         the turn completes but there is no final answer
                        hang          print the first event (the session id), then sleep forever
    FAKE_AGENT_IGNORE_TERM=1  ignore SIGTERM (to test the kill grace and SIGKILL)
    FAKE_AGENT_CHILD=1  start a `sleep` grandchild in the same process group first (its pid is
                        logged), to test that cancellation kills the whole group
    FAKE_AGENT_DELAY    seconds to sleep before each event (default 0): slow runs, load tests
    FAKE_AGENT_TOOLS    how many tool calls the turn makes (default 1)
    FAKE_AGENT_TEXT     the final answer (default "<agent> turn <n>: <prompt>")
    FAKE_AGENT_SESSION  the id of a new session (default: a fresh UUID, or ses_... for opencode)
    FAKE_AGENT_STATE    a folder where sessions are remembered: turn <n> counts the turns of the
                        session, and resuming a session that is not there fails like the real CLI
    FAKE_AGENT_LOG      a file that gets one JSON line per run: agent, argv, cwd, stdin, pid,
                        pgid, child_pid, session, turn, and every KAIROS_* variable
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

AGENTS = ("claude", "copilot", "codex", "gemini", "opencode")

_PRELUDE = r'''
import argparse
import json
import os
import signal
import subprocess
import sys
import time
import uuid

AGENT = "@AGENT@"
MODE = os.environ.get("FAKE_AGENT_MODE", "ok")
DELAY = float(os.environ.get("FAKE_AGENT_DELAY", "0") or 0)
TOOLS = int(os.environ.get("FAKE_AGENT_TOOLS", "1") or 0)
STATE = os.environ.get("FAKE_AGENT_STATE")
if os.environ.get("FAKE_AGENT_IGNORE_TERM") == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
CHILD = None
if os.environ.get("FAKE_AGENT_CHILD") == "1":
    CHILD = subprocess.Popen(["sleep", "3600"])


class Parser(argparse.ArgumentParser):
    usage_exit = 1
    style = "error: {message}"

    def error(self, message):
        sys.stderr.write(self.style.format(message=message) + "\n")
        sys.exit(self.usage_exit)


def parser(usage_exit, style="error: {message}"):
    p = Parser(prog=AGENT, allow_abbrev=False, add_help=False)
    p.usage_exit = usage_exit
    p.style = style
    return p


def emit(obj):
    if DELAY:
        time.sleep(DELAY)
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def now_ms():
    return int(time.time() * 1000)


def read_stdin():
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.read()


def hang():
    while True:
        time.sleep(3600)


def die(message, code=1):
    sys.stderr.write(message + "\n")
    sys.exit(code)


def session_file(session):
    return os.path.join(STATE, session.replace("/", "_") + ".turns")


def known(session):
    return STATE is None or os.path.exists(session_file(session))


def start_session(resume, fork=False, fixed=None, prefix=""):
    """(session id, turn number) for this run; remembers the session under FAKE_AGENT_STATE."""
    turns = 0
    if resume:
        if STATE is not None:
            with open(session_file(resume)) as f:
                turns = int(f.read().strip() or 0)
        else:
            turns = 1
        session = (fixed or prefix + str(uuid.uuid4())) if fork else resume
    else:
        session = fixed or os.environ.get("FAKE_AGENT_SESSION") or prefix + str(uuid.uuid4())
    turn = turns + 1
    if STATE is not None:
        os.makedirs(STATE, exist_ok=True)
        with open(session_file(session), "w") as f:
            f.write(str(turn))
    return session, turn


def answer(prompt, turn):
    return os.environ.get("FAKE_AGENT_TEXT") or f"{AGENT} turn {turn}: {prompt.strip()}"


def log_run(argv, stdin, session=None, turn=None):
    path = os.environ.get("FAKE_AGENT_LOG")
    if not path:
        return
    entry = {
        "agent": AGENT,
        "argv": argv,
        "cwd": os.getcwd(),
        "stdin": stdin,
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
        "child_pid": CHILD.pid if CHILD else None,
        "session": session,
        "turn": turn,
        "env": {k: v for k, v in os.environ.items() if k.startswith(("KAIROS_", "OPENCODE_"))},
    }
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")
'''

_CLAUDE = r"""
MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto")
p = parser(1, "error: {message}")
p.add_argument("-p", "--print", action="store_true", dest="print_")
p.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
p.add_argument("--input-format", choices=("text", "stream-json"), default="text")
p.add_argument("--verbose", action="store_true")
p.add_argument("--model")
p.add_argument("-r", "--resume")
p.add_argument("-c", "--continue", action="store_true", dest="continue_")
p.add_argument("--fork-session", action="store_true")
p.add_argument("--session-id")
p.add_argument("--permission-mode", choices=MODES)
p.add_argument("--dangerously-skip-permissions", action="store_true")
p.add_argument("--tools", nargs="*")
p.add_argument("--allowedTools", "--allowed-tools", nargs="+", dest="allowed")
p.add_argument("--disallowedTools", "--disallowed-tools", nargs="+", dest="disallowed")
p.add_argument("--append-system-prompt")
p.add_argument("--system-prompt")
p.add_argument("--max-turns", type=int)
p.add_argument("--add-dir", nargs="+")
p.add_argument("--mcp-config")
p.add_argument("--settings")
p.add_argument("-v", "--version", action="store_true")
p.add_argument("prompt", nargs="?")
args = p.parse_args()
if args.version:
    print("2.1.45 (Claude Code)")
    sys.exit(0)
if not args.print_:
    die("fake claude only runs headless (-p)")
if args.output_format == "stream-json" and not args.verbose:
    die("Error: When using --print, --output-format=stream-json requires --verbose")
if args.fork_session and not args.resume:
    die("Error: --fork-session requires --resume or --continue")
if args.session_id:
    try:
        uuid.UUID(args.session_id)
    except ValueError:
        die("Error: Invalid session ID. Must be a valid UUID.")
stdin = read_stdin()
prompt = args.prompt if args.prompt is not None else stdin
if not prompt.strip():
    die("Error: Input must be provided either through stdin or as a prompt argument when using --print")
if args.resume and not known(args.resume):
    log_run(sys.argv[1:], stdin)
    die(f"No conversation found with session ID: {args.resume}")
session, turn = start_session(args.resume, args.fork_session, args.session_id)
log_run(sys.argv[1:], stdin, session, turn)
model = args.model or "claude-sonnet-4-5"
mode = args.permission_mode or "default"
stream = args.output_format == "stream-json"

if MODE == "fail":
    die("Error: failed to start: connect ECONNREFUSED 127.0.0.1:443")
if MODE == "garbage":
    print("Welcome to Claude Code!  (this is not JSON)")
    sys.exit(0)


def out(obj):
    if stream:
        emit(obj)


out({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": session, "tools": ["Bash", "Read", "Edit"],
     "mcp_servers": [], "model": model, "permissionMode": mode, "apiKeySource": "none", "output_style": "default"})
if MODE == "hang":
    hang()
usage = {"input_tokens": 12, "output_tokens": 34, "cache_read_input_tokens": 0}
for i in range(TOOLS):
    tid = f"toolu_{i:02d}"
    out({"type": "assistant", "message": {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": model,
         "content": [{"type": "text", "text": f"Step {i + 1}: listing files."},
                     {"type": "tool_use", "id": tid, "name": "Bash",
                      "input": {"command": "ls", "description": f"List files ({i + 1})"}}],
         "stop_reason": "tool_use", "usage": usage}, "parent_tool_use_id": None, "session_id": session})
    out({"type": "user", "message": {"role": "user", "content": [
        {"tool_use_id": tid, "type": "tool_result", "content": "README.md", "is_error": False}]},
         "parent_tool_use_id": None, "session_id": session})
text = "" if MODE == "empty" else answer(prompt, turn)
if MODE != "error_json":
    out({"type": "assistant", "message": {"id": "msg_final", "type": "message", "role": "assistant", "model": model,
         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": usage},
         "parent_tool_use_id": None, "session_id": session})
result = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234, "duration_api_ms": 1000,
          "num_turns": TOOLS + 1, "result": text, "session_id": session, "total_cost_usd": 0.0123, "usage": usage,
          "permission_denials": []}
code = 0
if MODE == "error_json":
    result.update(is_error=True, result="Invalid API key · Please run /login")
    code = 1
if args.output_format == "text":
    print(result["result"])
elif stream:
    emit(result)
else:
    emit(result)
sys.exit(code)
"""

_COPILOT = r"""
p = parser(1, "error: {message}")
p.add_argument("-p", "--prompt")
p.add_argument("-s", "--silent", action="store_true")
p.add_argument("--output-format", choices=("text", "json"), default="text")
p.add_argument("--stream", choices=("on", "off"))
p.add_argument("--model")
p.add_argument("--agent")
p.add_argument("--resume", nargs="?", const="")
p.add_argument("--continue", action="store_true", dest="continue_")
p.add_argument("--session-id")
p.add_argument("-n", "--name")
p.add_argument("--allow-all", "--yolo", action="store_true")
p.add_argument("--allow-all-tools", action="store_true")
p.add_argument("--allow-all-paths", action="store_true")
p.add_argument("--allow-all-urls", action="store_true")
p.add_argument("--allow-tool", action="append", default=[])
p.add_argument("--deny-tool", action="append", default=[])
p.add_argument("--allow-url", action="append", default=[])
p.add_argument("--deny-url", action="append", default=[])
p.add_argument("--available-tools", action="append", default=[])
p.add_argument("--excluded-tools", action="append", default=[])
p.add_argument("--no-ask-user", action="store_true")
p.add_argument("--no-auto-update", action="store_true")
p.add_argument("--no-color", action="store_true")
p.add_argument("--add-dir", action="append", default=[])
p.add_argument("--share", nargs="?", const="")
p.add_argument("--enable-memory", action="store_true")
p.add_argument("-v", "--version", action="store_true")
args = p.parse_args()
if args.version:
    print("GitHub Copilot CLI 1.0.61.")
    sys.exit(0)
if args.prompt is None:
    die("fake copilot only runs headless (-p)")
if args.resume == "":
    die("Error: --resume without a session id cannot pick a session in prompt mode")
stdin = read_stdin()
if args.resume and not known(args.resume):
    log_run(sys.argv[1:], stdin)
    die(f"Error: no session matches '{args.resume}'")
session, turn = start_session(args.resume, fixed=args.session_id)
log_run(sys.argv[1:], stdin, session, turn)
model = args.model or "claude-sonnet-4.5"
json_out = args.output_format == "json"

if MODE == "fail":
    die("Error: No authentication information found. Run 'copilot login' or set COPILOT_GITHUB_TOKEN.")
if MODE == "garbage":
    print("Thinking... (not JSON)")
    sys.exit(0)


def ev(kind, data=None, **extra):
    if json_out:
        emit({"type": kind, "data": data or {}, "id": str(uuid.uuid4()), "timestamp": "2026-11-21T10:00:00.000Z",
              "parentId": None, **extra})


ev("session.start", {"sessionId": session, "selectedModel": model, "producer": "copilot-agent",
                     "copilotVersion": "1.0.61", "context": {"cwd": os.getcwd()}})
if MODE == "hang":
    hang()
ev("user.message", {"content": args.prompt})
if MODE == "error_json":
    ev("session.error", {"errorType": "authentication", "message": "Authentication failed: token expired"})
    if json_out:
        emit({"type": "result", "timestamp": "2026-11-21T10:00:01.000Z", "sessionId": session, "exitCode": 1,
              "usage": {"premiumRequests": 0, "totalApiDurationMs": 0, "sessionDurationMs": 50}})
    sys.exit(1)
for i in range(TOOLS):
    ev("assistant.turn_start", {"turnId": str(i)})
    ev("assistant.intent", {"intent": f"Listing files ({i + 1})"})
    call = {"toolCallId": f"call_{i}", "name": "bash", "arguments": {"command": "ls"}, "type": "function"}
    ev("assistant.message", {"messageId": f"m{i}", "content": "", "toolRequests": [call]})
    ev("tool.execution_start", {"toolCallId": f"call_{i}", "toolName": "bash", "arguments": {"command": "ls"}})
    ev("tool.execution_complete", {"toolCallId": f"call_{i}", "success": True, "result": {"content": "README.md"}})
    ev("assistant.turn_end", {"turnId": str(i)})
text = "" if MODE == "empty" else answer(args.prompt, turn)
ev("assistant.message", {"messageId": "m_final", "content": text, "toolRequests": []})
if json_out:
    emit({"type": "result", "timestamp": "2026-11-21T10:00:01.000Z", "sessionId": session, "exitCode": 0,
          "usage": {"premiumRequests": 1, "totalApiDurationMs": 900, "sessionDurationMs": 1200}})
else:
    print(text)
sys.exit(0)
"""

_CODEX = r"""
if len(sys.argv) > 1 and sys.argv[1] in ("--version", "-V"):
    print("codex-cli 0.160.0")
    sys.exit(0)
if len(sys.argv) < 2 or sys.argv[1] != "exec":
    die("fake codex only runs `codex exec`", 2)
p = parser(2, "error: {message}\n\nUsage: codex exec [OPTIONS] [PROMPT]")
p.add_argument("--json", "--experimental-json", action="store_true")
p.add_argument("--skip-git-repo-check", action="store_true")
p.add_argument("--ephemeral", action="store_true")
p.add_argument("-s", "--sandbox", choices=("read-only", "workspace-write", "danger-full-access"))
p.add_argument("-m", "--model")
p.add_argument("-C", "--cd")
p.add_argument("-c", "--config", action="append", default=[])
p.add_argument("-p", "--profile")
p.add_argument("--dangerously-bypass-approvals-and-sandbox", action="store_true")
p.add_argument("-o", "--output-last-message")
p.add_argument("--color", choices=("always", "never", "auto"))
p.add_argument("--last", action="store_true")
p.add_argument("--all", action="store_true")
p.add_argument("words", nargs="*")
args = p.parse_args(sys.argv[2:])
words = list(args.words)
resume = None
if words and words[0] == "resume":
    words.pop(0)
    if not words and not args.last:
        die("error: resume needs a SESSION_ID or --last", 2)
    resume = words.pop(0) if words else None
if len(words) > 1:
    die(f"error: unexpected argument '{words[1]}' found", 2)
prompt = words[0] if words else "-"
stdin = read_stdin()
if prompt == "-":
    prompt = stdin
if not prompt.strip():
    die("No prompt provided. Either specify one as an argument or pipe the prompt into stdin.")
if args.cd:
    os.chdir(args.cd)
if not args.skip_git_repo_check:
    here = os.getcwd()
    while not os.path.exists(os.path.join(here, ".git")):
        if os.path.dirname(here) == here:
            die("Not inside a trusted directory and --skip-git-repo-check was not specified.")
        here = os.path.dirname(here)
if resume and not known(resume):
    log_run(sys.argv[1:], stdin)
    die(f"Error: thread/session not found: {resume}")
session, turn = start_session(resume)
log_run(sys.argv[1:], stdin, session, turn)

if MODE == "fail":
    die("Error: stream disconnected before completion: error sending request for url (https://api.openai.com)")
if MODE == "garbage":
    print("[2026-11-21T10:00:00] OpenAI Codex v0.160.0 (research preview, not JSON)")
    sys.exit(0)


def ev(obj):
    if args.json:
        emit(obj)


ev({"type": "thread.started", "thread_id": session})
if MODE == "hang":
    hang()
ev({"type": "turn.started"})
if MODE == "error_json":
    WHY = "unexpected status 401 Unauthorized: Missing bearer authentication"
    ev({"type": "error", "message": WHY})
    ev({"type": "turn.failed", "error": {"message": WHY}})
    sys.exit(1)
for i in range(TOOLS):
    thought = {"id": f"item_{3 * i}", "type": "reasoning", "text": f"**Listing files ({i + 1})**"}
    ev({"type": "item.completed", "item": thought})
    item = {"id": f"item_{3 * i + 1}", "type": "command_execution", "command": "bash -lc ls", "aggregated_output": "",
            "exit_code": None, "status": "in_progress"}
    ev({"type": "item.started", "item": item})
    done = {**item, "aggregated_output": "README.md\n", "exit_code": 0, "status": "completed"}
    ev({"type": "item.completed", "item": done})
if MODE != "empty":
    ev({"type": "item.completed", "item": {"id": "item_final", "type": "agent_message", "text": answer(prompt, turn)}})
ev({"type": "turn.completed", "usage": {"input_tokens": 1200, "cached_input_tokens": 0, "output_tokens": 80}})
if not args.json and MODE != "empty":
    print(answer(prompt, turn))
sys.exit(0)
"""

_GEMINI = r"""
p = parser(42, "Unknown arguments: {message}")
p.add_argument("-p", "--prompt")
p.add_argument("-m", "--model")
p.add_argument("-o", "--output-format", choices=("text", "json", "stream-json"), default="text")
p.add_argument("--approval-mode", choices=("default", "auto_edit", "yolo", "plan"))
p.add_argument("-y", "--yolo", action="store_true")
p.add_argument("-r", "--resume")
p.add_argument("--allowed-tools", action="append", default=[])
p.add_argument("--include-directories", action="append", default=[])
p.add_argument("-s", "--sandbox", action="store_true")
p.add_argument("-d", "--debug", action="store_true")
p.add_argument("-v", "--version", action="store_true")
args = p.parse_args()
if args.version:
    print("0.25.0")
    sys.exit(0)
if args.prompt is None:
    die("fake gemini only runs headless (-p)", 42)
stdin = read_stdin()
if args.resume and not known(args.resume):
    log_run(sys.argv[1:], stdin)
    die(f"Error resuming session: Invalid session identifier \"{args.resume}\".", 42)
session, turn = start_session(args.resume)
log_run(sys.argv[1:], stdin, session, turn)
model = args.model or "gemini-2.5-pro"
stream = args.output_format == "stream-json"

if MODE == "fail":
    die("Error when talking to Gemini API: request to https://generativelanguage.googleapis.com failed")
if MODE == "garbage":
    print("Loaded cached credentials. (not JSON)")
    sys.exit(0)


def ev(kind, **fields):
    if stream:
        emit({"type": kind, "timestamp": "2026-11-21T10:00:00.000Z", **fields})


ev("init", session_id=session, model=model)
if MODE == "hang":
    hang()
ev("message", role="user", content=args.prompt)
if MODE == "error_json":
    error = {"type": "TerminalQuotaError", "message": "You have exhausted your daily quota on this model."}
    if stream:
        ev("result", status="error", error=error, stats={"total_tokens": 0})
    elif args.output_format == "json":
        emit({"response": None, "stats": {}, "error": error})
    sys.exit(1)
for i in range(TOOLS):
    ev("message", role="assistant", content=f"Listing files ({i + 1}).", delta=True)
    ev("tool_use", tool_name="run_shell_command", tool_id=f"call_{i}",
       parameters={"command": "ls", "description": f"List files ({i + 1})"})
    ev("tool_result", tool_id=f"call_{i}", status="success", output="README.md\n")
text = "" if MODE == "empty" else answer(args.prompt, turn)
half = len(text) // 2
if text:
    ev("message", role="assistant", content=text[:half], delta=True)
    ev("message", role="assistant", content=text[half:], delta=True)
if stream:
    ev("result", status="success", stats={"total_tokens": 100, "input_tokens": 80, "output_tokens": 20,
                                          "duration_ms": 900, "tool_calls": TOOLS})
elif args.output_format == "json":
    emit({"response": text, "stats": {"models": {}}})
else:
    print(text)
sys.exit(0)
"""

_OPENCODE = r"""
if len(sys.argv) > 1 and sys.argv[1] in ("--version", "-v"):
    print("1.0.150")
    sys.exit(0)
if len(sys.argv) < 2 or sys.argv[1] != "run":
    die("fake opencode only runs `opencode run`")
p = parser(1, "Error: {message}")
p.add_argument("--format", choices=("default", "json"), default="default")
p.add_argument("-m", "--model")
p.add_argument("-s", "--session")
p.add_argument("-c", "--continue", action="store_true", dest="continue_")
p.add_argument("--agent")
p.add_argument("--title")
p.add_argument("--share", action="store_true")
p.add_argument("--attach")
p.add_argument("message", nargs="*")
args = p.parse_args(sys.argv[2:])
permission = os.environ.get("OPENCODE_PERMISSION")
if permission is not None:
    try:
        rules = json.loads(permission)
        assert isinstance(rules, dict)
        assert all(v in ("allow", "ask", "deny") or isinstance(v, dict) for v in rules.values())
    except (ValueError, AssertionError):
        die("Error: Configuration is invalid: OPENCODE_PERMISSION")
# As opencode 1.18 does: a message argument holding a space is wrapped in quotes; stdin (not a TTY) is appended.
prompt = " ".join(f'"{m}"' if " " in m else m for m in args.message)
stdin = read_stdin()
if stdin.strip():
    prompt = f"{prompt}\n{stdin}" if prompt.strip() else stdin
if not prompt.strip():
    die("Error: You must provide a message or a command")
if args.session and not known(args.session):
    log_run(sys.argv[1:], stdin)
    die(f"Error: Session not found: {args.session}")
session, turn = start_session(args.session, prefix="ses_")
log_run(sys.argv[1:], stdin, session, turn)

if MODE == "fail":
    die("Error: Provider not found: no API key configured")
if MODE == "garbage":
    print("opencode: working... (not JSON)")
    sys.exit(0)


def ev(kind, part=None, **fields):
    if args.format == "json":
        emit({"type": kind, "timestamp": now_ms(), "sessionID": session, **({"part": part} if part else {}), **fields})


def step(msg, kind, reason=None):
    part = {"id": f"prt_{kind}_{msg}", "sessionID": session, "messageID": msg, "type": kind.replace("_", "-")}
    if reason:
        part["reason"] = reason
    ev(kind, part)


step("msg_0", "step_start")
if MODE == "hang":
    hang()
if MODE == "error_json":
    ev("error", error={"name": "ProviderAuthError", "data": {"message": "Invalid API key"}})
    sys.exit(1)
for i in range(TOOLS):
    ev("tool_use", {"id": f"prt_tool_{i}", "sessionID": session, "messageID": "msg_0", "type": "tool",
                    "callID": f"call_{i}", "tool": "bash",
                    "state": {"status": "completed", "input": {"command": "ls", "description": f"List files ({i + 1})"},
                              "output": "README.md\n", "title": f"List files ({i + 1})"}})
step("msg_0", "step_finish", "tool-calls")
step("msg_1", "step_start")
if MODE != "empty":
    ev("text", {"id": "prt_text", "sessionID": session, "messageID": "msg_1", "type": "text",
                "text": answer(prompt, turn), "time": {"start": now_ms(), "end": now_ms()}})
step("msg_1", "step_finish", "stop")
if args.format != "json" and MODE != "empty":
    print(answer(prompt, turn))
sys.exit(0)
"""

_BODIES = {"claude": _CLAUDE, "copilot": _COPILOT, "codex": _CODEX, "gemini": _GEMINI, "opencode": _OPENCODE}


def fake_agent_source(agent: str) -> str:
    """The script text of one fake (for tests that want to tweak it)."""
    return f"#!{sys.executable}\n" + _PRELUDE.replace("@AGENT@", agent) + _BODIES[agent]


def write_fake_agents(folder: str | os.PathLike[str], agents: tuple[str, ...] = AGENTS) -> dict[str, Path]:
    """Write the fake CLIs into ``folder`` (created if needed); {name: executable path}."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    paths = {}
    for agent in agents:
        path = target / agent
        path.write_text(fake_agent_source(agent), encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        paths[agent] = path
    return paths
