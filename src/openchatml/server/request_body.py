"""Request bodies: read within a size bound, decoded from JSON and checked as a
create-response request, off the event loop when large."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from itertools import islice
from typing import Any, Final, TypeVar

import orjson
from starlette.requests import Request

from ..responses.errors import PayloadTooLargeError, RequestError
from ..responses.limits import RequestLimits
from ..responses.request import ResponseRequest, parse_request
from ..responses.wire.base import MAX_NAME
from ..responses.wire.request import MAX_REPORTED
from .ignored_parameters import report_ignored

T = TypeVar("T")

INLINE_BYTES: Final = 64 * 1024
"""Bodies up to this size are decoded and checked on the event loop (a thread hop costs
more than the work); larger ones in a worker thread."""


async def off_loop(size: int, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)``: on the event loop for inputs of ``size`` up to
    :data:`INLINE_BYTES`, in a worker thread for larger ones."""
    if size <= INLINE_BYTES:
        return work(*args)
    return await asyncio.to_thread(work, *args)


def decode_json(raw: bytes | str) -> Any:
    """JSON text → data; :class:`RequestError` (``invalid_json``) for anything else
    (including nesting past the decoder's own limit)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RequestError(
            f"We could not parse the JSON body of your request ({exc}).", code="invalid_json"
        ) from None


def request_of(
    raw: bytes, limits: RequestLimits, drop: tuple[str, ...] = (), only: frozenset[str] | None = None
) -> ResponseRequest:
    """A create-response body's bytes → the checked request (``drop``: keys set aside
    unsaid; ``only``: the keys used, any other set aside and named in the request's
    ``ignored``). Raises :class:`RequestError` (``invalid_json``, or any of
    :func:`parse_request`'s)."""
    body = decode_json(raw)
    unused: tuple[str, ...] = ()
    if isinstance(body, dict):
        if drop:
            body = {k: v for k, v in body.items() if k not in drop}
        if only is not None:
            limits.check_depth(body)  # what is set aside is held to the same bounds
            unused = tuple(islice((k[:MAX_NAME] for k in body if k not in only), MAX_REPORTED))
            body = {k: v for k, v in body.items() if k in only}
    parsed = parse_request(body, limits)
    return replace(parsed, ignored=(*unused, *parsed.ignored)[:MAX_REPORTED]) if unused else parsed


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The body, refused (413) past ``max_bytes`` before it is all read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLargeError(f"The request body is larger than {max_bytes} bytes.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise PayloadTooLargeError(f"The request body is larger than {max_bytes} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_request(
    request: Request,
    max_bytes: int,
    limits: RequestLimits,
    *,
    drop: tuple[str, ...] = (),
    only: frozenset[str] | None = None,
) -> ResponseRequest:
    """The checked create-response body (at most ``max_bytes``; decoded and checked off
    the event loop when large); ``drop``: keys set aside unsaid, ``only``: the keys used.
    The parameters it ignored are named on the answer (:func:`.ignored_parameters.report_ignored`)."""
    raw = await read_body(request, max_bytes)
    parsed = await off_loop(len(raw), request_of, raw, limits, drop, only)
    report_ignored(request.scope, parsed.ignored)
    return parsed
