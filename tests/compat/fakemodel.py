"""A scriptable fake model endpoint for real agent CLIs: one server, four wire formats, 127.0.0.1 only.

The CLIs under test believe they talk to their vendor's API:

- ``POST /v1/messages`` (Claude Code): Anthropic Messages, SSE or one JSON body; ``count_tokens`` too.
- ``POST /v1/responses`` (Codex): OpenAI Responses as SSE.
- ``POST /v1/chat/completions`` (Copilot BYOK, opencode): OpenAI Chat Completions, SSE or JSON.
- ``POST /v1beta/models/M:streamGenerateContent|generateContent|countTokens`` (Gemini CLI).

What the model answers is decided from the request's newest user text, so side requests (titles,
routing, summaries) cannot eat a scripted reply meant for the conversation:

- ``SAY:word`` anywhere in it: the reply is ``word`` (the first such directive);
- ``CALL:tool {json}``: a call of the first offered tool whose name ends with ``tool``, with those
  arguments (a plain reply when no such tool is offered). After the tool result comes back the reply
  is ``called tool``;
- otherwise ``fake reply``.

``HOLD`` in a conversation request's newest user text makes the server wait for
:meth:`FakeModel.release` before it answers (after :meth:`FakeModel.hold`): the turn is in
flight while a test schedules a prompt due at its end.

Every request is recorded (:attr:`FakeModel.requests`) with its path and parsed body, and
:meth:`FakeModel.texts` flattens each into the text the model was shown, for assertions such as
"the board is in the first request".

Must not import kairos or kairosd: it stands for the vendors' servers.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_SAY = re.compile(r"SAY:(\w+)")
_CALL = re.compile(r"CALL:(\w+)\s+(\{.*?\})(?:\s|$)", re.S)


@dataclass
class Recorded:
    path: str
    body: Any
    wire: str  # anthropic, responses, chat, gemini


@dataclass
class Reply:
    text: str | None = None
    tool: str | None = None  # the full name of the offered tool to call
    arguments: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None  # Codex: MCP tools come as one namespace tool holding functions


class FakeModel:
    """Start with :meth:`start` (or as a context manager); ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.held = threading.Event()  # set when a HOLD request arrived
        self._gate = threading.Event()
        self._gate.set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def hold(self) -> None:
        self.held.clear()
        self._gate.clear()

    def release(self) -> None:
        self._gate.set()

    def record(self, entry: Recorded) -> None:
        with self._lock:
            self.requests.append(entry)

    def conversation(self) -> list[Recorded]:
        """The requests that carry tools: the agent's own turns, not titles or routing."""
        with self._lock:
            return [r for r in self.requests if tool_names(r)]

    def texts(self, *, conversation_only: bool = True) -> list[str]:
        with self._lock:
            reqs = list(self.requests)
        if conversation_only:
            reqs = [r for r in reqs if tool_names(r)]
        return [json.dumps(r.body, ensure_ascii=False) for r in reqs]

    def decide(self, rec: Recorded) -> Reply:
        user = last_user_text(rec)
        if "HOLD" in (user or "") and tool_names(rec) and not has_tool_result(rec) and not self._gate.is_set():
            self.held.set()
            self._gate.wait(300)
        if rec.wire == "gemini" and _wants_json(rec.body):
            return Reply(
                text=json.dumps(
                    {
                        "reasoning": "fake",
                        "next_speaker": "user",
                        "model_choice": "flash",
                        "complexity_reasoning": "fake",
                        "complexity_score": 1,
                    }
                )
            )
        if has_tool_result(rec):
            tool = _CALL.search(user or "")
            return Reply(text=f"called {tool.group(1) if tool else 'tool'}")
        call = _CALL.search(user or "")
        if call:
            wanted, args = call.group(1), json.loads(call.group(2))
            for name, namespace in tool_names(rec):
                if name == wanted or any(name.endswith(sep + wanted) for sep in ("_", "-", ".")):
                    return Reply(tool=name, arguments=args, namespace=namespace)
        say = _SAY.search(user or "")
        return Reply(text=say.group(1) if say else "fake reply")


# ---- reading requests ---------------------------------------------------------------------------


def _wire(path: str) -> str:
    if "/messages" in path:
        return "anthropic"
    if path.rstrip("/").endswith("/responses"):
        return "responses"
    if "chat/completions" in path:
        return "chat"
    if ":" in path.rsplit("/", 1)[-1]:
        return "gemini"
    return "other"


def tool_names(rec: Recorded) -> list[tuple[str, str | None]]:
    """(name, namespace) of every tool the request offers."""
    body = rec.body if isinstance(rec.body, dict) else {}
    out: list[tuple[str, str | None]] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if rec.wire == "gemini":
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                out.append((decl.get("name", ""), None))
        elif tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, dict) and inner.get("name"):
                    out.append((inner["name"], tool.get("name")))
        elif isinstance(tool.get("function"), dict):
            out.append((tool["function"].get("name", ""), None))
        elif tool.get("name"):
            out.append((tool["name"], None))
    return out


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(c) for c in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if key in content:
                return _flatten(content[key])
    return ""


def _messages(rec: Recorded) -> list[tuple[str, Any]]:
    """(role, content) of every message/item, oldest first."""
    body = rec.body if isinstance(rec.body, dict) else {}
    if rec.wire == "gemini":
        return [(c.get("role", "user"), c.get("parts")) for c in body.get("contents") or [] if isinstance(c, dict)]
    if rec.wire == "responses":
        items = body.get("input")
        if isinstance(items, str):
            return [("user", items)]
        return [(i.get("role") or i.get("type", ""), i) for i in items or [] if isinstance(i, dict)]
    return [(m.get("role", ""), m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict)]


def last_user_text(rec: Recorded) -> str | None:
    for role, content in reversed(_messages(rec)):
        if role == "user":
            text = _flatten(content)
            if rec.wire == "anthropic" and isinstance(content, list):
                text = "\n".join(_flatten(b) for b in content if isinstance(b, dict) and b.get("type") == "text")
            if text.strip():
                return text
    return None


def has_tool_result(rec: Recorded) -> bool:
    """True when the newest message answers a tool call (the model should now say it is done)."""
    msgs = _messages(rec)
    if not msgs:
        return False
    role, content = msgs[-1]
    if rec.wire == "anthropic":
        blocks = content if isinstance(content, list) else []
        return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
    if rec.wire == "responses":
        return isinstance(content, dict) and str(content.get("type", "")).endswith("_call_output")
    if rec.wire == "chat":
        return role == "tool"
    if rec.wire == "gemini":
        return isinstance(content, list) and any(isinstance(p, dict) and "functionResponse" in p for p in content)
    return False


def _wants_json(body: Any) -> bool:
    config = body.get("generationConfig") if isinstance(body, dict) else None
    return isinstance(config, dict) and (
        config.get("responseMimeType") == "application/json" or "responseJsonSchema" in config
    )


# ---- writing replies ----------------------------------------------------------------------------


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(out).encode()


def anthropic_reply(reply: Reply, body: dict[str, Any]) -> tuple[str, bytes]:
    model = body.get("model", "claude-fake")
    usage = {"input_tokens": 10, "output_tokens": 5}
    if reply.tool:
        block: dict[str, Any] = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": reply.tool}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": reply.text or ""}
        stop = "end_turn"
    message = {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant", "model": model}
    if not body.get("stream"):
        full = {**message, "content": [{**block, "input": reply.arguments} if reply.tool else block]}
        return "application/json", json.dumps({**full, "stop_reason": stop, "usage": usage}).encode()
    start = {**block, "input": {}} if reply.tool else {"type": "text", "text": ""}
    delta = (
        {"type": "input_json_delta", "partial_json": json.dumps(reply.arguments)}
        if reply.tool
        else {"type": "text_delta", "text": reply.text or ""}
    )
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "text/event-stream", _sse(events)


def responses_reply(reply: Reply, body: dict[str, Any]) -> tuple[str, bytes]:
    rid = "resp_" + uuid.uuid4().hex[:20]
    if reply.tool:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": "fc_" + uuid.uuid4().hex[:12],
            "call_id": "call_" + uuid.uuid4().hex[:12],
            "name": reply.tool,
            "arguments": json.dumps(reply.arguments),
        }
        if reply.namespace:
            item["namespace"] = reply.namespace
    else:
        item = {
            "type": "message",
            "id": "msg_" + uuid.uuid4().hex[:12],
            "role": "assistant",
            "content": [{"type": "output_text", "text": reply.text or "", "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": {"id": rid}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
    ]
    if not reply.tool:
        events.append(
            (
                "response.output_text.delta",
                {"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "delta": reply.text},
            )
        )
    events += [
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": {"id": rid, "usage": usage}}),
    ]
    return "text/event-stream", _sse(events)


def chat_reply(reply: Reply, body: dict[str, Any]) -> tuple[str, bytes]:
    cid, model = "chatcmpl-" + uuid.uuid4().hex[:20], body.get("model", "fake")
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if reply.tool:
        call = {
            "id": "call_" + uuid.uuid4().hex[:12],
            "type": "function",
            "function": {"name": reply.tool, "arguments": json.dumps(reply.arguments)},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": reply.text or ""}
        finish = "stop"
    base = {"id": cid, "object": "chat.completion.chunk", "created": 1, "model": model}
    if not body.get("stream"):
        full = {**base, "object": "chat.completion", "usage": usage}
        full["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
        return "application/json", json.dumps(full).encode()
    if reply.tool:
        delta: dict[str, Any] = {"role": "assistant", "tool_calls": [{"index": 0, **call}]}
    else:
        delta = {"role": "assistant", "content": reply.text or ""}
    events: list[tuple[str | None, Any]] = [
        (None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage}),
        (None, "[DONE]"),
    ]
    return "text/event-stream", _sse(events)


def gemini_reply(reply: Reply, body: dict[str, Any], stream: bool) -> tuple[str, bytes]:
    part: dict[str, Any] = (
        {"functionCall": {"name": reply.tool, "args": reply.arguments}} if reply.tool else {"text": reply.text or ""}
    )
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-fake",
    }
    if stream:
        return "text/event-stream", _sse([(None, chunk)])
    return "application/json", json.dumps(chunk).encode()


def _handler(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, ctype: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path.rstrip("/").endswith("/models"):
                models = [{"id": "fake-model", "object": "model", "owned_by": "fake", "created": 1}]
                self._send(200, "application/json", json.dumps({"object": "list", "data": models}).encode())
                return
            self._send(404, "application/json", b'{"error": {"message": "not found"}}')

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = raw.decode(errors="replace")
            path = self.path.split("?", 1)[0]
            rec = Recorded(path=self.path, body=body, wire=_wire(path))
            model.record(rec)
            body_d = body if isinstance(body, dict) else {}
            if path.endswith("count_tokens"):
                self._send(200, "application/json", b'{"input_tokens": 10}')
                return
            if path.endswith(":countTokens"):
                self._send(200, "application/json", b'{"totalTokens": 10}')
                return
            reply = model.decide(rec)
            if rec.wire == "anthropic":
                ctype, data = anthropic_reply(reply, body_d)
            elif rec.wire == "responses":
                ctype, data = responses_reply(reply, body_d)
            elif rec.wire == "chat":
                ctype, data = chat_reply(reply, body_d)
            elif rec.wire == "gemini":
                ctype, data = gemini_reply(reply, body_d, stream="streamGenerateContent" in path)
            else:
                self._send(404, "application/json", b'{"error": {"message": "not found"}}')
                return
            self._send(200, ctype, data)

    return Handler
