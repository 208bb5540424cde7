"""Admission control: running slots, a FIFO queue, a per-key cap; and a response whose
client leaves is cancelled on every transport.

The unit tests drive :class:`Admission` directly. The live ones serve a :class:`HeldEngine`,
whose generations stop after their first token until the test lets them go, so every
test decides the order things happen in and asserts that order, never a time.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from live import KEY, LiveServer, completion
from openapi import validate

from openchatml import Message, load_encoding
from openchatml.engines.base import Chunk, ModelInfo, SamplingParams
from openchatml.responses.crypto import Sealer
from openchatml.responses.errors import OverloadedError, RateLimitError
from openchatml.server.admission import Admission, TicketState
from openchatml.server.auth import KeyChecker
from openchatml.server.service import ResponseService
from openchatml.server.store.sqlite import SQLiteStore

ANSWER = completion(Message.assistant("Hello there, how are you today?", channel="final"))
FINAL = ("completed", "failed", "incomplete", "cancelled")


# --- Admission itself --------------------------------------------------------------------


def test_slots_are_granted_in_reservation_order() -> None:
    async def main() -> None:
        admission = Admission(max_running=1)
        first, second, third = (admission.reserve() for _ in range(3))
        assert first.state is TicketState.RUNNING
        assert (admission.running, admission.queued) == (1, 2)
        granted: list[str] = []

        async def wait(name: str, ticket: Any) -> None:
            await ticket.acquire()
            granted.append(name)

        # the third asks first: the queue's order is the reservation's, not the asking's
        tasks = [asyncio.create_task(wait("third", third)), asyncio.create_task(wait("second", second))]
        await asyncio.sleep(0)
        assert granted == []
        first.release()
        await asyncio.sleep(0)
        assert granted == ["second"] and third.state is TicketState.QUEUED
        second.release()
        await asyncio.gather(*tasks)
        assert granted == ["second", "third"]
        third.release()
        assert (admission.running, admission.queued) == (0, 0)

    asyncio.run(main())


def test_a_cancelled_waiter_leaves_the_queue() -> None:
    async def main() -> None:
        admission = Admission(max_running=1, max_per_key=5)
        running = admission.reserve("a")
        waiting = admission.reserve("a")
        behind = admission.reserve("b")
        task = asyncio.create_task(waiting.acquire())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert waiting.state is TicketState.RELEASED
        assert (admission.running, admission.queued, admission.held("a")) == (1, 1, 1)
        running.release()
        assert behind.state is TicketState.RUNNING  # the next in line, not the one that left

    asyncio.run(main())


def test_a_slot_granted_to_a_waiter_cancelled_meanwhile_is_given_back() -> None:
    async def main() -> None:
        admission = Admission(max_running=1)
        first, second = admission.reserve(), admission.reserve()
        task = asyncio.create_task(second.acquire())
        await asyncio.sleep(0)
        first.release()  # grants the slot to ``second`` …
        task.cancel()  # … whose waiter is cancelled before it wakes
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (admission.running, admission.queued) == (0, 0)
        assert admission.reserve().state is TicketState.RUNNING

    asyncio.run(main())


def test_per_key_cap_counts_queued_and_running() -> None:
    admission = Admission(max_running=1, max_per_key=2)
    held = [admission.reserve("a"), admission.reserve("a")]
    assert [t.state for t in held] == [TicketState.RUNNING, TicketState.QUEUED]
    with pytest.raises(RateLimitError) as caught:
        admission.reserve("a")
    error = caught.value
    assert (error.status, error.type, error.code) == (
        429,
        "too_many_requests",
        "too_many_concurrent_responses",
    )
    assert error.retry_after is not None and error.retry_after >= 1
    admission.reserve("b")  # another key has its own share
    for _ in range(5):
        admission.reserve(None)  # no key: not capped
    held[1].release()
    admission.reserve("a")


def test_a_full_queue_is_refused_with_503() -> None:
    admission = Admission(max_running=1, max_queued=1)
    admission.reserve()
    queued = admission.reserve()
    with pytest.raises(OverloadedError) as caught:
        admission.reserve()
    error = caught.value
    assert (error.status, error.type, error.code) == (503, "server_error", "server_overloaded")
    assert error.retry_after is not None and error.retry_after >= 1
    queued.release()
    admission.reserve()


def test_zero_or_none_is_no_limit() -> None:
    for admission in (Admission(0, 0, 0), Admission()):
        tickets = [admission.reserve("a") for _ in range(50)]
        assert all(t.state is TicketState.RUNNING for t in tickets)
        assert (admission.running, admission.queued, admission.held("a")) == (50, 0, 50)


def test_release_is_idempotent_and_retry_after_follows_hold_times() -> None:
    now = [0.0]
    admission = Admission(max_running=2, max_queued=1, clock=lambda: now[0])
    assert admission.retry_after() == 1  # nothing measured yet
    ticket = admission.reserve("k")
    now[0] = 20.0
    ticket.release()
    ticket.release()
    assert (admission.running, admission.held("k")) == (0, 0)
    assert admission.retry_after() == 20
    assert admission.retry_after(2) == 10  # a slot of two frees up twice as often
    now[0] = 10_000.0
    slow = admission.reserve()
    now[0] = 20_000.0
    slow.release()
    assert admission.retry_after() == 60  # never more than a minute


# --- the server --------------------------------------------------------------------------


class HeldEngine:
    """Plays ``ids`` one token a chunk; every generation holds after its first token until
    :attr:`go` is set. :attr:`log` records, in order, ``began X``, ``finished X`` and
    ``closed X`` (closed early), ``X`` being the prompt's last user message."""

    def __init__(self, ids: Sequence[int]) -> None:
        self.ids = list(ids)
        self.go = threading.Event()
        self.log: list[str] = []
        self._info = ModelInfo(id="scripted-model", context_length=8192, engine="scripted")

    @property
    def info(self) -> ModelInfo:
        return self._info

    @property
    def tokenizer(self) -> None:
        """None: the model speaks Harmony."""
        return None

    @property
    def enforces_grammar(self) -> bool:
        return False

    async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        said = re.findall(r"<\|start\|>user<\|message\|>(.*?)<\|end\|>", load_encoding().decode(list(prompt)))
        name = said[-1] if said else "?"
        self.log.append(f"began {name}")
        finished = False
        try:
            for n, token in enumerate(self.ids):
                while n and not self.go.is_set():
                    await asyncio.sleep(0.005)
                finished = n == len(self.ids) - 1  # the runner stops reading at the stop token
                yield Chunk((token,))
        finally:
            self.log.append(f"{'finished' if finished else 'closed'} {name}")

    def began(self) -> list[str]:
        """The user messages whose generation began, in order."""
        return [entry[len("began ") :] for entry in self.log if entry.startswith("began ")]

    async def aclose(self) -> None:
        return None


def eventually(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    """Wait until ``check()`` holds (a generous deadline guards against a hang only)."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


@pytest.fixture
def admitted(tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """``admitted(engine, admission, keys=…)``: a live server whose service admits
    responses through ``admission`` (a SQLite store)."""
    servers: list[LiveServer] = []

    def start(engine: HeldEngine, admission: Admission, *, keys: Sequence[str] = ()) -> LiveServer:
        store = SQLiteStore(tmp_path / f"store{len(servers)}.sqlite3")
        service = ResponseService(engine, store, sealer=Sealer(KEY), admission=admission)
        server = LiveServer(service, keys=KeyChecker(keys))
        servers.append(server.__enter__())
        return server

    yield start
    for server in servers:
        if isinstance(server.service.engine, HeldEngine):
            server.service.engine.go.set()
        server.__exit__()


def create(http: Any, text: str, **extra: Any) -> Any:
    return http.post("/v1/responses", json={"model": "scripted-model", "input": text, **extra})


def status_of(http: Any, response_id: str) -> str:
    return str(http.get(f"/v1/responses/{response_id}").json()["status"])


def test_queued_responses_run_in_arrival_order(admitted: Any) -> None:
    engine = HeldEngine(ANSWER)
    server = admitted(engine, Admission(max_running=1, max_queued=8))
    with server.http() as http:
        ids = [create(http, name, background=True).json()["id"] for name in "ABCD"]
        eventually(lambda: engine.began() == ["A"], "A generating")
        assert http.get("/health").json() | {"model": None} == {
            "status": "ok",
            "model": None,
            "engine": "scripted",
            "running": 1,
            "queued": 3,
        }
        assert [status_of(http, i) for i in ids] == ["in_progress", "queued", "queued", "queued"]
        engine.go.set()
        eventually(lambda: all(status_of(http, i) == "completed" for i in ids), "all completed")
        assert http.get("/health").json()["running"] == 0
    assert engine.began() == ["A", "B", "C", "D"]
    assert engine.log == [f"{what} {name}" for name in "ABCD" for what in ("began", "finished")]


def test_full_queue_503_and_a_queued_response_cancelled(admitted: Any) -> None:
    engine = HeldEngine(ANSWER)
    server = admitted(engine, Admission(max_running=1, max_queued=1))
    with server.http() as http:
        first = create(http, "A", background=True).json()["id"]
        queued = create(http, "B", background=True).json()
        assert queued["status"] == "queued"
        full = create(http, "C", background=True)
        assert full.status_code == 503
        assert full.headers["retry-after"].isdigit() and int(full.headers["retry-after"]) >= 1
        error = full.json()["error"]
        assert (error["type"], error["code"]) == ("server_error", "server_overloaded")
        streamed = create(http, "C", stream=True)  # a stream is refused before it starts, too
        assert streamed.status_code == 503 and streamed.json()["error"]["code"] == "server_overloaded"

        cancelled = http.post(f"/v1/responses/{queued['id']}/cancel").json()
        validate(cancelled, "ResponseResource")
        assert cancelled["status"] == "cancelled" and cancelled["output"] == []
        assert http.get("/health").json()["queued"] == 0
        replay = http.get(f"/v1/responses/{queued['id']}", params={"stream": "true"}).text
        kinds = [json.loads(line[6:])["type"] for line in replay.splitlines() if line.startswith("data: {")]
        assert kinds[0] == "response.created" and kinds[-1] == "response.incomplete"

        third = create(http, "C", background=True).json()["id"]  # the queue has room again
        engine.go.set()
        eventually(lambda: status_of(http, third) == "completed", "C completed")
        assert status_of(http, first) == "completed"
        assert status_of(http, queued["id"]) == "cancelled"
    assert engine.began() == ["A", "C"]  # B never reached the engine


def test_per_key_cap_429(admitted: Any) -> None:
    engine = HeldEngine(ANSWER)
    server = admitted(engine, Admission(max_running=4, max_queued=8, max_per_key=2), keys=["key-a", "key-b"])
    a = server.http(headers={"Authorization": "Bearer key-a"})
    b = server.http(headers={"Authorization": "Bearer key-b"})
    with a, b:
        mine = [create(a, name, background=True).json()["id"] for name in ("A1", "A2")]
        over = create(a, "A3", background=True)
        assert over.status_code == 429
        assert over.headers["retry-after"].isdigit()
        error = over.json()["error"]
        assert (error["type"], error["code"]) == ("too_many_requests", "too_many_concurrent_responses")
        assert create(b, "B1", background=True).status_code == 200  # another key's share
        engine.go.set()
        eventually(lambda: all(status_of(a, i) == "completed" for i in mine), "key-a's responses done")
        assert create(a, "A3").json()["status"] == "completed"  # room again once they ended
    assert "A3" in engine.began()


def test_a_json_client_that_leaves_cancels_its_response(admitted: Any) -> None:
    engine = HeldEngine(ANSWER)
    server = admitted(engine, Admission(max_running=1, max_queued=4))
    body = json.dumps({"model": "scripted-model", "input": "A", "store": False}).encode()
    with socket.create_connection(("127.0.0.1", server.port)) as raw:
        raw.sendall(
            b"POST /v1/responses HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        eventually(lambda: engine.began() == ["A"], "A generating")
    # the client is gone: its generation is closed and its slot given back
    eventually(lambda: "closed A" in engine.log, "A's generation closed")
    with server.http() as http:
        eventually(lambda: http.get("/health").json()["running"] == 0, "the slot given back")
        engine.go.set()
        second = create(http, "B").json()
    assert second["status"] == "completed"
    assert engine.log == ["began A", "closed A", "began B", "finished B"]


def test_a_json_client_that_leaves_while_queued_leaves_the_queue(admitted: Any) -> None:
    engine = HeldEngine(ANSWER)
    server = admitted(engine, Admission(max_running=1, max_queued=4))
    with server.http() as http:
        first = create(http, "A", background=True).json()["id"]
        eventually(lambda: engine.began() == ["A"], "A generating")
        body = json.dumps({"model": "scripted-model", "input": "B"}).encode()
        with socket.create_connection(("127.0.0.1", server.port)) as raw:
            raw.sendall(
                b"POST /v1/responses HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            eventually(lambda: http.get("/health").json()["queued"] == 1, "B queued")
        eventually(lambda: http.get("/health").json()["queued"] == 0, "B gone from the queue")
        engine.go.set()
        eventually(lambda: status_of(http, first) == "completed", "A completed")
    assert engine.began() == ["A"]


def test_closing_a_websocket_cancels_its_response_in_flight(admitted: Any) -> None:
    from websockets.sync.client import connect

    engine = HeldEngine(ANSWER)
    server = admitted(engine, Admission(max_running=1))
    with connect(server.url.replace("http", "ws") + "/v1/responses") as ws:
        ws.send(json.dumps({"type": "response.create", "model": "scripted-model", "input": "A"}))
        while json.loads(ws.recv(timeout=20))["type"] != "response.in_progress":
            pass
        eventually(lambda: engine.began() == ["A"], "A generating")
    eventually(lambda: "closed A" in engine.log, "A's generation closed")
    with server.http() as http:
        eventually(lambda: http.get("/health").json()["running"] == 0, "the slot given back")
    assert engine.log == ["began A", "closed A"]


def test_a_stream_whose_client_leaves_while_queued_leaves_the_queue(admitted: Any) -> None:
    engine = HeldEngine(ANSWER)
    server = admitted(engine, Admission(max_running=1, max_queued=4))
    with server.http() as http:
        first = create(http, "A", background=True).json()["id"]
        eventually(lambda: engine.began() == ["A"], "A generating")
        body = {"model": "scripted-model", "input": "B", "stream": True}
        with server.http() as other, other.stream("POST", "/v1/responses", json=body) as reply:
            assert reply.status_code == 200
            eventually(lambda: http.get("/health").json()["queued"] == 1, "B queued")
        eventually(lambda: http.get("/health").json()["queued"] == 0, "B gone from the queue")
        engine.go.set()
        eventually(lambda: status_of(http, first) == "completed", "A completed")
    assert engine.began() == ["A"]
