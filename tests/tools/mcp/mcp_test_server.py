"""A real MCP server for the tests: the SDK's MCPServer (FastMCP in mcp 1.x) on loopback.

Run as ``python mcp_test_server.py HTTP_PORT SSE_PORT TOKEN``: streamable HTTP at
``http://127.0.0.1:HTTP_PORT/mcp``, SSE at ``http://127.0.0.1:SSE_PORT/events``. Every
MCP request must carry ``Authorization: Bearer TOKEN`` (else 401). ``GET /stats`` on
either port (no token needed) answers how many requests were refused and how many
``slow`` calls were cancelled.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

STATS: dict[str, int] = {"unauthorized": 0, "authorized": 0, "slow_cancelled": 0, "slow_started": 0}

server = MCPServer("openchatml-test", instructions="Numbers and delays.")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    STATS["slow_started"] += 1
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        STATS["slow_cancelled"] += 1
        raise
    return f"slept {seconds}"


@server.tool()
def fail(message: str) -> str:
    """Always fail, with ``message`` for the client."""
    raise ToolError(message)


def guarded(app: Any, token: str) -> Any:
    """``app`` behind a bearer token check, with ``/stats`` open."""

    async def guard(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == "/stats":
            await _answer(send, 200, json.dumps(STATS).encode())
            return
        headers = dict(scope["headers"])
        if headers.get(b"authorization") != f"Bearer {token}".encode():
            STATS["unauthorized"] += 1
            await _answer(send, 401, b'{"error": "unauthorized"}')
            return
        STATS["authorized"] += 1
        await app(scope, receive, send)

    return guard


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": body})


async def main(http_port: int, sse_port: int, token: str) -> None:
    apps = [
        (server.streamable_http_app(), http_port),
        (server.sse_app(sse_path="/events"), sse_port),
    ]
    servers = [
        uvicorn.Server(uvicorn.Config(guarded(app, token), host="127.0.0.1", port=port, log_level="warning"))
        for app, port in apps
    ]
    await asyncio.gather(*(each.serve() for each in servers))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
