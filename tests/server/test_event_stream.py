"""The SSE response notices a client leaving even where writes to a closed connection
are dropped silently (ASGI 2.4 servers), and closes its body at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from fastapi.responses import StreamingResponse

from openchatml.server.sse import EventStream


def run_until_client_leaves(response_class: type[StreamingResponse]) -> tuple[bool, int]:
    """Whether the body was closed, and how many chunks were written, when the client
    leaves after 50 ms and every write after that vanishes."""

    async def main() -> tuple[bool, int]:
        closed = asyncio.Event()
        written = 0

        async def body() -> AsyncIterator[bytes]:
            try:
                while True:
                    yield b"data: {}\n\n"
                    await asyncio.sleep(0.005)
            finally:
                closed.set()

        async def receive() -> dict[str, Any]:
            await asyncio.sleep(0.05)
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal written
            written += message.get("type") == "http.response.body"

        scope = {"type": "http", "asgi": {"spec_version": "2.4"}}
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(response_class(body())(scope, receive, send), 1.0)
        return closed.is_set(), written

    return asyncio.run(main())


def test_the_body_is_closed_when_the_client_leaves() -> None:
    closed, written = run_until_client_leaves(EventStream)
    assert closed
    assert written < 40  # stopped about when the client left, not at the one-second deadline


def test_a_plain_streaming_response_would_write_on() -> None:
    """What the event stream guards against (so the test above can fail)."""
    _, written = run_until_client_leaves(StreamingResponse)
    assert written > 40
