"""The stdio wire of ``kairos mcp``: the mcp transport, with every call answered.

The mcp package parses each line with pydantic, and a line that fails is
dropped unanswered: the client then waits forever. That happened to a JSON
string holding a lone UTF-16 surrogate (``"\\ud800"``, valid JSON but not
Unicode text), and to any malformed request. So lines are checked here first,
and one the transport would drop is answered here: a ``tools/call`` holding a
lone surrogate with a tool error naming the argument, any other request with
one with a JSON-RPC "invalid params" error, another malformed request with
"invalid request", and a line that is not a JSON object with "parse error" or
"invalid request" (id null).
A notification or a reply is not answered (nobody waits for it). Every other
line goes to the transport untouched.

fd 0 is handled as the transport handles it for itself: read through a private
duplicate, with /dev/null in its place, so nothing a tool starts can read the
wire.

Imports ``mcp`` (with :mod:`kairos.integrations.mcptools`, the only modules that do);
must not import kairosd's daemon.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO, cast

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

_WHERE_SHOWN = 3  # places named in the answer; more are counted


def serve(server: MCPServer) -> None:
    """Serve ``server`` on stdin/stdout until the client closes the connection."""
    anyio.run(_serve, server)


async def _serve(server: MCPServer) -> None:
    lines = _CheckedLines(_claim_stdin())
    async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
        # Set before the reader's first line: its task starts at this block's first await.
        lines.answers = write_stream
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with our stdin
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def _claim_stdin() -> BinaryIO:
    """A private duplicate of fd 0 to read the wire from; fd 0 itself then reads /dev/null."""
    try:
        import fcntl

        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:  # no fd 0: read what sys.stdin reads
        return cast(BinaryIO, sys.stdin.buffer)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    # closefd=False: a reader thread may still block on it after the transport exits (as in mcp's own).
    return os.fdopen(private, "rb", closefd=False)


class _CheckedLines:
    """The wire's lines, as the transport iterates them, less those it would drop (answered here instead)."""

    def __init__(self, buffer: BinaryIO) -> None:
        self.source = anyio.wrap_file(io.TextIOWrapper(buffer, encoding="utf-8", errors="replace"))
        self.answers: Any = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self.source:
            answer = refusal(line)
            if answer is None:
                yield line
            elif self.answers is not None:
                await self.answers.send(SessionMessage(answer))


def refusal(line: str) -> types.JSONRPCMessage | None:
    """The answer to a line the transport would drop unanswered; None for a line it handles (or a blank one)."""
    if not line.strip():
        return None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None  # the transport's, as it is
    except ValueError as exc:  # pydantic's ValidationError
        problem = exc
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, "Parse error: the line is not JSON")
    if not isinstance(message, dict):
        return _error(None, types.INVALID_REQUEST, "Invalid request: a message is a JSON object")
    if "method" not in message or not _answerable(message.get("id")):
        # A notification (nobody to answer), a reply, or an id that could not be sent back.
        return None
    try:
        places = [_named(place) for place in _lone_surrogates(message, "")]
    except RecursionError:  # nested deeper than the walk can go: malformed whatever it holds
        places = []
    if not places:
        return _error(message["id"], types.INVALID_REQUEST, f"Invalid request: {_first_error(problem)}")
    more = len(places) - _WHERE_SHOWN
    shown = ", ".join(places[:_WHERE_SHOWN]) + (f" and {more} more" if more > 0 else "")
    reason = (
        f"{shown} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape not in a pair), which is not text; "
        "send the value as valid Unicode"
    )
    params = message.get("params")
    if message.get("method") == "tools/call" and isinstance(params, dict):
        name = _printable(params.get("name"))
        result = types.CallToolResult(
            content=[types.TextContent(type="text", text=f"Error executing tool {name}: {reason}")], is_error=True
        )
        return types.JSONRPCResponse(
            jsonrpc="2.0", id=message["id"], result=result.model_dump(by_alias=True, exclude_unset=True)
        )
    return _error(message["id"], types.INVALID_PARAMS, f"Invalid params: {reason}")


def _error(request_id: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def _first_error(problem: ValueError) -> str:
    """What is wrong with a request, as pydantic saw it against the request shape."""
    errors = getattr(problem, "errors", None)
    for error in errors() if callable(errors) else []:
        loc = [str(part) for part in error.get("loc", ())]
        if loc[:1] == ["JSONRPCRequest"]:
            return f"{'.'.join(loc[1:]) or 'the request'}: {error.get('msg')}"
    return "not a JSON-RPC 2.0 request"


def _named(place: str) -> str:
    """A path in the message as the caller knows it: ``argument prompt`` for a tool's argument."""
    place = place.lstrip(".")
    return "argument " + place.removeprefix("params.arguments.") if place.startswith("params.arguments.") else place


def _answerable(request_id: Any) -> bool:
    if isinstance(request_id, bool):
        return False
    if isinstance(request_id, int):
        return True
    return isinstance(request_id, str) and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in request_id)


def _lone_surrogates(value: Any, where: str) -> Iterator[str]:
    """Where in ``value`` (a parsed JSON document) a string or a key holds a surrogate, as ``a.b[2]`` paths."""
    if isinstance(value, str):
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            yield where
    elif isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{_printable(key)}"
            if any(0xD800 <= ord(ch) <= 0xDFFF for ch in key):
                yield path
            yield from _lone_surrogates(item, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _lone_surrogates(item, f"{where}[{index}]")


def _printable(text: Any) -> str:
    """``text`` with any surrogate as its escape: the answer itself must be valid UTF-8."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")
