"""UpstreamEngine's connections to the stub of ``upstream_stub``: one per request (reuse
stalled streams behind vLLM's server), a stream closed early dropped, a slow accept
waited for, a dead upstream a clear error within the connect deadline."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from typing import cast

import httpx
import pytest
from upstream_stub import RETURN, Running, Stub, completions, lists_of, serving, stub_params, with_engine

from openchatml.engines.base import Chunk, ModelInfo
from openchatml.engines.upstream import UpstreamEngine
from openchatml.engines.upstream_events import UpstreamError

SHORT = stub_params(script=[[1], [RETURN]])
"""A generation of two ids, read to its end."""


def _ports(stub: Stub) -> list[int]:
    """The client port of each completion request: one per connection it came on."""
    return [seen.client_port for seen in completions(stub)]


@contextlib.contextmanager
def _unaccepting() -> Iterator[socket.socket]:
    """A loopback listener whose accept queue is full (one connection never accepted, no
    room for more): a connect to it times out until something accepts."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    blocker = socket.create_connection(listener.getsockname())
    try:
        yield listener
    finally:
        blocker.close()
        listener.close()


def _engine(url: str, *, connect_timeout: float, deadline: float) -> UpstreamEngine:
    """An engine on ``url`` that tries each connect for ``connect_timeout`` seconds, and
    keeps trying for ``deadline``."""
    client = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(None, connect=connect_timeout))
    return UpstreamEngine(client, ModelInfo(id="stub-model"), connect_deadline=deadline)


# --- a connection per request ------------------------------------------------------------


def test_each_stream_has_a_connection_of_its_own(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        for _ in range(4):
            assert await lists_of(engine, SHORT) == [[1], [RETURN]]

    with_engine(upstream.url, body)
    ports = _ports(stub)
    assert len(ports) == 4
    assert len(set(ports)) == 4


def test_concurrent_streams_each_have_a_connection(upstream: Running, stub: Stub) -> None:
    async def body(engine: UpstreamEngine) -> None:
        for _ in range(3):
            params = stub_params(script=[[1], [2], [RETURN]], delay=0.02)
            burst = await asyncio.gather(*(lists_of(engine, params) for _ in range(4)))
            assert burst == [[[1], [2], [RETURN]]] * 4

    with_engine(upstream.url, body)
    ports = _ports(stub)
    assert len(ports) == 12
    assert len(set(ports)) == 12


async def _leave_early(engine: UpstreamEngine) -> list[list[int]]:
    """Three chunks of a stream that goes on forever, then the consumer leaves."""
    got: list[list[int]] = []
    stream = cast(AsyncGenerator[Chunk], engine.generate([1, 2], stub_params(forever=True, delay=0.01)))
    async for chunk in stream:
        got.append(list(chunk))
        if len(got) == 3:
            break
    await stream.aclose()
    return got


async def _past_the_stop(engine: UpstreamEngine) -> list[list[int]]:
    """A stream that goes on past the stop id: the engine closes it there."""
    params = stub_params(script=[[1, RETURN]], honour_stops=False, forever=True, delay=0.01)
    return await lists_of(engine, params)


@pytest.mark.parametrize("closed", [_leave_early, _past_the_stop], ids=["consumer-leaves", "past-the-stop"])
def test_a_stream_closed_early_leaves_the_pool_clean(
    upstream: Running, stub: Stub, closed: Callable[[UpstreamEngine], Awaitable[list[list[int]]]]
) -> None:
    """A stream closed before its end drops its connection (the server aborts the
    request); the next requests run at once, each on a new connection."""

    async def body(engine: UpstreamEngine) -> list[list[list[int]]]:
        answers = [await closed(engine)]
        for _ in range(3):
            answers.append(await asyncio.wait_for(lists_of(engine, SHORT), 5.0))
        return answers

    first, *after = with_engine(upstream.url, body)
    assert first in ([[11, 12], [13], [14, 15, 16]], [[1, RETURN]])
    assert stub.disconnected.wait(5.0)  # the upstream saw the request dropped
    assert after == [[[1], [RETURN]]] * 3
    ports = _ports(stub)
    assert len(set(ports)) == 4


def test_a_connection_the_server_closed_is_replaced(stub: Stub) -> None:
    """An upstream that closes idle connections sooner than the pool lets them go: the
    next request opens a new one, and succeeds."""
    with serving(keep_alive=0.1) as running:

        async def body(engine: UpstreamEngine) -> None:
            for _ in range(3):
                assert await lists_of(engine, SHORT) == [[1], [RETURN]]
                await asyncio.sleep(0.4)

        with_engine(running.url, body)
        ports = _ports(running.stub)
    assert len(ports) == 3 and len(set(ports)) == 3


# --- connecting ------------------------------------------------------------------------


def test_a_slow_accept_is_waited_for() -> None:
    """The upstream accepts no connection for its first second (its accept queue is full:
    each connect times out); the request tries again until it does, and succeeds."""
    with _unaccepting() as listener, serving(listener, start_after=1.0) as running:
        engine = _engine(running.url, connect_timeout=0.2, deadline=20.0)

        async def main() -> list[list[int]]:
            async with engine:
                return await lists_of(engine, SHORT)

        began = time.monotonic()
        assert asyncio.run(main()) == [[1], [RETURN]]
        assert time.monotonic() - began >= 0.9  # it did wait for the accept
        assert len(_ports(running.stub)) == 1


@pytest.mark.parametrize("dead", ["refused", "never-accepts"])
def test_a_dead_upstream_fails_clearly_within_the_deadline(dead: str) -> None:
    with contextlib.ExitStack() as stack:
        if dead == "refused":
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
        else:
            port = stack.enter_context(_unaccepting()).getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        engine = _engine(url, connect_timeout=0.2, deadline=1.0)

        async def main() -> None:
            async with engine:
                await lists_of(engine, SHORT)

        began = time.monotonic()
        with pytest.raises(UpstreamError) as info:
            asyncio.run(main())
        spent = time.monotonic() - began
    failure = "ConnectError" if dead == "refused" else "ConnectTimeout"
    message = str(info.value)
    assert message.startswith(f"cannot reach upstream {url}/v1/completions: {failure}")
    assert "tries in" in message
    assert info.value.url == f"{url}/v1/completions"
    assert 1.0 <= spent < 5.0
