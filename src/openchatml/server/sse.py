"""Server-sent events: every event a client is sent over SSE is written here.

Each event is one chunk: ``event: TYPE``, one ``data:`` line of JSON, a blank line, in
the wire dialect of the request (``TYPE`` is the event's ``type`` so spelled); the
stream ends with ``data: [DONE]``. A stream that fails while written ends as a failed
response does (an ``error`` event, then ``response.failed``), never cut short. The
stream races the client leaving (:class:`EventStream`), and a client that leaves a
foreground response early cancels it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, Final

import orjson
from fastapi.responses import StreamingResponse

from ..responses.wire import ResponseResource, WireDialect
from ..responses.wire.events import ErrorEvent, ResponseFailed
from ..responses.wire.resource import ErrorPayload, ResponseError
from .metrics import Metrics
from .runs import Run
from .wire import ServedEvent

log = logging.getLogger("openchatml.server")

DONE: Final = b"data: [DONE]\n\n"
HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""The headers of every event stream: no cache, no proxy buffering."""


def sse_chunk(event: ServedEvent, dialect: WireDialect) -> bytes:
    """One SSE event in ``dialect``: ``event: TYPE``, ``data: JSON``, blank line."""
    return _frame(event.to_json(dialect))


def _frame(data: dict[str, Any]) -> bytes:
    kind: str = data["type"]
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def stream_failure(last: int, snapshot: ResponseResource | None, dialect: WireDialect) -> bytes:
    """The end of a stream that failed after event ``last``: an ``error`` event, then
    ``response.failed`` with the response as it stood (``snapshot``) or its bare bones."""
    message = "The server had an error while streaming this response."
    ending = sse_chunk(ErrorEvent(last + 1, ErrorPayload(message=message)), dialect)
    error = ResponseError(code="server_error", message=message)
    if snapshot is not None:
        failed = snapshot.model_copy(update={"status": "failed", "error": error})
        try:
            return ending + sse_chunk(ResponseFailed(last + 2, failed), dialect)
        except (TypeError, ValueError):  # the snapshot itself cannot be written
            pass
    bare: dict[str, Any] = {"object": "response", "status": "failed", "error": error.to_json(dialect)}
    if snapshot is not None:
        bare.update(id=snapshot.id, created_at=snapshot.created_at, model=snapshot.model)
    return ending + _frame({"type": "response.failed", "sequence_number": last + 2, "response": bare})


class EventStream(StreamingResponse):
    """A streamed body that notices a client leaving at once, whatever the ASGI version:
    it listens for ``http.disconnect`` while it writes (servers on ASGI 2.4 may drop
    writes to a closed connection silently), then closes its body iterator, whose cleanup
    cancels what the stream follows."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def client_left() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        writing = asyncio.ensure_future(self.stream_response(send))
        watching = asyncio.ensure_future(client_left())
        try:
            await asyncio.wait({writing, watching}, return_when=asyncio.FIRST_COMPLETED)
            if writing.done() and not writing.cancelled() and not isinstance(writing.exception(), OSError):
                writing.result()  # a failure while writing (other than the client gone) is raised
        finally:
            for task in (writing, watching):
                task.cancel()
            await asyncio.gather(writing, watching, return_exceptions=True)
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()


def event_stream(
    events: AsyncIterator[ServedEvent], metrics: Metrics, dialect: WireDialect, cancel: Run | None = None
) -> EventStream:
    """The SSE answer streaming ``events`` in ``dialect``; a client that leaves early
    cancels ``cancel`` (if given); a failure while streaming is counted in ``metrics``."""
    body = _chunks(events, metrics, dialect, cancel)
    return EventStream(body, media_type="text/event-stream", headers=HEADERS)


async def _chunks(
    events: AsyncIterator[ServedEvent], metrics: Metrics, dialect: WireDialect, cancel: Run | None
) -> AsyncIterator[bytes]:
    """The chunks of :func:`event_stream`'s body."""
    finished = False
    last = -1
    try:
        async for event in events:
            chunk = sse_chunk(event, dialect)
            last = event.sequence_number
            yield chunk
        finished = True
        yield DONE
    except Exception:  # never a cut body: the stream ends as a failed response does
        log.exception("stream failed after event %d", last)
        metrics.stream_failures.inc()
        yield stream_failure(last, cancel.snapshot if cancel is not None else None, dialect)
        yield DONE
    finally:
        if not finished and cancel is not None and cancel.task is not None and not cancel.done:
            cancel.task.cancel()
