"""The chat completions endpoint: ``POST /chat/completions`` (JSON, or SSE chunks with
``stream: true``).

Each of the request's ``n`` choices is a response of its own, started by the service as
``POST /responses`` starts one (admission, limits, enforced grammars, budgets), never
stored; its events are read into the choice's pieces (:mod:`...chat.choice`). A stop
sequence found in a choice's answer cancels its response. A client that leaves cancels
every choice still running.

The stream is ``data: {chunk}`` lines (no ``event:`` line), the roles first, then each
piece as it comes, ``data: [DONE]`` last; a choice that fails ends it with
``data: {"error": {...}}`` then ``[DONE]`` (what OpenAI's SDKs raise as an ``APIError``).
Top-level keys the server did not act on are named in the ``OpenChatML-Ignored-Parameters``
header and logged once per process (:func:`~..ignored_parameters.report_ignored`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...chat import (
    ChatRequest,
    ChoiceFailure,
    ChoiceMessage,
    ChoiceReader,
    ChunkWriter,
    Piece,
    completion_id,
    completion_json,
    parse_chat_request,
)
from ...chat.openapi import create_operation
from ...responses.errors import APIError, ModelError, RequestError, ServerError
from ...responses.limits import RequestLimits
from ...responses.resource import Usage
from ...responses.wire.resource import ErrorPayload
from ..dependencies import HTTPLimits, Owner, Service
from ..errors import CLIENT_CLOSED_REQUEST
from ..ignored_parameters import report_ignored
from ..json_response import json_response
from ..metrics import Metrics
from ..request_body import decode_json, off_loop, read_body
from ..runs import Run
from ..service import ResponseService
from ..sse import DONE, HEADERS, EventStream

log = logging.getLogger("openchatml.server")

STREAM_FAILURE: Final = "The server had an error while streaming this chat completion."

router = APIRouter()


def _parse(raw: bytes, limits: RequestLimits) -> ChatRequest:
    return parse_chat_request(decode_json(raw), limits)


@router.post("/chat/completions", openapi_extra=create_operation())
async def create_chat_completion(
    request: Request, service: Service, owner: Owner, limits: HTTPLimits
) -> Response:
    """Create a chat completion: one ``chat.completion`` object, or its chunks (``stream``)."""
    raw = await read_body(request, limits.max_body_bytes)
    chat = await off_loop(len(raw), _parse, raw, service.settings.limits)
    report_ignored(request.scope, chat.ignored)
    model = service.check_model(chat.request.model)
    runs = await _start(service, chat, owner)
    if chat.stream:
        writer = ChunkWriter(model, logprobs=chat.logprobs, include_usage=chat.include_usage)
        body = _chunks(runs, chat, writer, service.metrics)
        return EventStream(body, media_type="text/event-stream", headers=HEADERS)
    try:
        choices = await _gather_unless_client_leaves(request, runs, chat)
    except asyncio.CancelledError:
        _cancel(runs)
        raise
    if choices is None:
        error = RequestError("The client closed the request before its answer.", code="client_closed_request")
        return json_response(error.body(), CLIENT_CLOSED_REQUEST)
    failure = _first_failure(choices)
    if failure is not None:
        raise _failure_error(failure)
    usages = [await _usage(run) for run in runs]
    answer = completion_json(completion_id(), int(time.time()), model, choices, usages, chat.logprobs)
    return json_response(answer)


async def _start(service: ResponseService, chat: ChatRequest, owner: str) -> list[Run]:
    """Start the response of every choice; if one cannot start, the others are cancelled
    and its error raised (in the chat request's terms)."""
    runs: list[Run] = []
    try:
        for index in range(chat.n):
            runs.append(await service.start(chat.choice(index), owner))
    except RequestError as exc:
        _cancel(runs)
        raise chat.error(exc) from None
    except BaseException:
        _cancel(runs)
        raise
    return runs


def _cancel(runs: Sequence[Run]) -> None:
    for run in runs:
        run.cancel()


async def _read(index: int, run: Run, reader: ChoiceReader, take: Callable[[int, Piece], None]) -> None:
    """Read ``run``'s events into choice ``index``'s pieces, each given to ``take``; a stop
    sequence cancels the run."""
    async for event in run.follow():
        for piece in reader.feed(event):
            take(index, piece)
        if reader.finished:
            if reader.stopped:
                run.cancel()
            return


async def _gather_unless_client_leaves(
    request: Request, runs: Sequence[Run], chat: ChatRequest
) -> list[ChoiceMessage] | None:
    """Every choice gathered, or ``None`` when the client left first (the runs are cancelled);
    once a choice fails, the others are cancelled."""
    choices = [ChoiceMessage() for _ in runs]

    def take(index: int, piece: Piece) -> None:
        choices[index].add(piece)
        if isinstance(piece, ChoiceFailure):
            _cancel(runs)

    async def client_left() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    async def read_all() -> None:
        await asyncio.gather(*(_read(i, run, ChoiceReader(chat.stop), take) for i, run in enumerate(runs)))

    reading = asyncio.ensure_future(read_all())
    watching = asyncio.ensure_future(client_left())
    try:
        await asyncio.wait({reading, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        if not reading.done():
            reading.cancel()
            _cancel(runs)
        await asyncio.gather(reading, watching, return_exceptions=True)
    if reading.cancelled():
        return None
    if reading.exception() is not None:
        _cancel(runs)
    reading.result()
    return choices


def _first_failure(choices: Sequence[ChoiceMessage]) -> ChoiceFailure | None:
    """The failure to answer with: one that is not the cancellation it caused in the others."""
    failures = [choice.failure for choice in choices if choice.failure is not None]
    return next((f for f in failures if f.error.code != "cancelled"), failures[0] if failures else None)


async def _usage(run: Run) -> Usage:
    """What ``run``'s response used, once it has ended."""
    usage = (await run.final()).usage
    if usage is None:
        return Usage()
    return Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.output_tokens_details.reasoning_tokens,
        cached_tokens=usage.input_tokens_details.cached_tokens,
    )


def _failure_error(failure: ChoiceFailure) -> APIError:
    """The error answered for a choice that failed."""
    error = failure.error
    kind = ModelError if error.type == "model_error" else ServerError
    return kind(error.message, code=error.code)


def _frame(data: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\n\n"


async def _chunks(
    runs: Sequence[Run], chat: ChatRequest, writer: ChunkWriter, metrics: Metrics
) -> AsyncIterator[bytes]:
    """The SSE body: every choice's role, its pieces as they come, the usage, ``[DONE]``;
    whatever ends it, the choices still running are cancelled."""
    queue: asyncio.Queue[tuple[int, Piece | None]] = asyncio.Queue()

    def take(index: int, piece: Piece) -> None:
        queue.put_nowait((index, piece))

    async def read(index: int, run: Run) -> None:
        try:
            await _read(index, run, ChoiceReader(chat.stop), take)
        except Exception:  # the stream ends as a failed choice's does
            log.exception("chat completion %s: reading choice %d failed", writer.id, index)
            take(index, ChoiceFailure(ErrorPayload(message=STREAM_FAILURE)))
        finally:
            queue.put_nowait((index, None))

    tasks = [asyncio.ensure_future(read(index, run)) for index, run in enumerate(runs)]
    try:
        for index in range(len(runs)):
            yield _frame(writer.role(index))
        running = len(runs)
        while running:
            index, piece = await queue.get()
            if piece is None:
                running -= 1
            elif isinstance(piece, ChoiceFailure):
                yield _frame(_failure_error(piece).body())
                yield DONE
                return
            elif (chunk := writer.piece(index, piece)) is not None:
                yield _frame(chunk)
        if writer.include_usage:
            yield _frame(writer.usage([await _usage(run) for run in runs]))
        yield DONE
    except Exception:  # never a cut body: the stream ends with an error
        log.exception("chat completion stream %s failed", writer.id)
        metrics.stream_failures.inc()
        yield _frame(ServerError(STREAM_FAILURE).body())
        yield DONE
    finally:
        for task in tasks:
            task.cancel()
        _cancel(runs)
