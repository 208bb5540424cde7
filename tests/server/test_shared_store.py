"""Two servers on one store: each streams, cancels and deletes what the other runs.

A background response runs on server A; server B, sharing A's store (one SQLite file, or
one real PostgreSQL database), streams it live from any cursor with the same events and
sequence numbers A has, cancels it, or deletes it (which stops it on A). On PostgreSQL
the servers hear of each other by notices, so the tests there poll only once a minute:
a lost notice shows as a timeout. Where the server running a response died, a follower
ends with the response's stored final state.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from live import ScriptedEngine, completion
from test_responses_api import ANSWER, THINK, check_stream, sse_events

from openchatml import Message
from openchatml.server.service import ResponseService
from openchatml.server.settings import ServiceSettings
from openchatml.server.store.base import StoredResponse
from openchatml.server.store.sqlite import SQLiteStore

LONG = Message.assistant("word " * 200, channel="final")


@pytest.fixture(params=["sqlite", "postgresql"])
def shared(request: Any, tmp_path: Path) -> tuple[Any, ServiceSettings]:
    """Where both servers keep their state, and their settings (with notices, PostgreSQL
    polls so rarely that only a notice can wake a waiter in time)."""
    if request.param == "sqlite":
        return tmp_path / "shared.sqlite3", ServiceSettings(poll_seconds=0.05)
    return request.getfixturevalue("postgres_url"), ServiceSettings(poll_seconds=60.0)


def wait_for(check: Any, seconds: float = 20.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_other_server_streams_a_background_response_live(serve: Any, shared: Any) -> None:
    store, settings = shared
    a = serve(ScriptedEngine(completion(THINK, ANSWER), chunk=1, delay=0.02), store=store, settings=settings)
    b = serve(ScriptedEngine(completion(ANSWER)), store=store, settings=settings)
    with a.http() as http_a, b.http() as http_b:
        created = http_a.post(
            "/v1/responses", json={"model": "scripted-model", "input": "hi", "background": True}
        ).json()
        url = f"/v1/responses/{created['id']}"
        from_b = sse_events(http_b.get(url, params={"stream": "true"}, timeout=30).text)
        tail_b = sse_events(http_b.get(url, params={"stream": "true", "starting_after": 5}, timeout=30).text)
        past = http_b.get(url, params={"stream": "true", "starting_after": 10_000}, timeout=30).text
        from_a = sse_events(http_a.get(url, params={"stream": "true"}, timeout=30).text)
    check_stream(from_b)
    assert from_b == from_a  # the same events, numbered alike, whichever server streams
    assert tail_b == from_b[6:]
    assert sse_events(past) == []  # a cursor past the end: nothing more, not a made-up end
    assert from_b[-1]["type"] == "response.completed"
    assert from_b[-1]["response"]["output"][-1]["content"][0]["text"] == "Hello there!"
    # it streamed while it ran: B was not waiting for a finished snapshot
    assert any(e["type"] == "response.output_text.delta" for e in from_b)
    assert len(b.service.engine.prompts) == 0


def test_other_server_follows_while_running(serve: Any, shared: Any) -> None:
    store, settings = shared
    a = serve(ScriptedEngine(completion(LONG), chunk=1, delay=0.01), store=store, settings=settings)
    b = serve(ScriptedEngine(completion(ANSWER)), store=store, settings=settings)
    with a.http() as http_a, b.http() as http_b:
        created = http_a.post(
            "/v1/responses", json={"model": "scripted-model", "input": "hi", "background": True}
        ).json()
        url = f"/v1/responses/{created['id']}"
        seen: list[dict[str, Any]] = []
        with http_b.stream("GET", url, params={"stream": "true"}, timeout=30) as body:
            for line in body.iter_lines():
                if line.startswith("data: {"):
                    seen.append(json.loads(line[6:]))
                    if seen[-1]["type"] == "response.output_text.delta" and len(seen) == 10:
                        # the response is still running on A while B already streams it
                        assert http_a.get(url).json()["status"] == "in_progress"
        assert seen[-1]["type"] == "response.completed"
    check_stream(seen)


def two_servers_one_running(serve: Any, shared: Any) -> tuple[Any, Any, ScriptedEngine, str]:
    """Servers A and B on the shared store, a long background response running on A:
    A, B, A's engine and the response's path."""
    store, settings = shared
    engine = ScriptedEngine(completion(LONG), chunk=1, delay=0.05)
    a = serve(engine, store=store, settings=settings)
    b = serve(ScriptedEngine(completion(ANSWER)), store=store, settings=settings)
    with a.http() as http_a:
        created = http_a.post(
            "/v1/responses", json={"model": "scripted-model", "input": "hi", "background": True}
        ).json()
        url = f"/v1/responses/{created['id']}"
        wait_for(lambda: http_a.get(url).json()["status"] == "in_progress")
    return a, b, engine, url


def test_cancel_on_another_server_stops_the_run(serve: Any, shared: Any) -> None:
    a, b, engine, url = two_servers_one_running(serve, shared)
    with a.http() as http_a, b.http() as http_b:
        cancelled = http_b.post(f"{url}/cancel", timeout=30)
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json()["status"] == "cancelled"
        assert http_a.get(url).json()["status"] == "cancelled"
        assert wait_for(lambda: engine.cancelled == 1)
        # B streams it to its end, a cancelled response ending in response.incomplete
        events = sse_events(http_b.get(url, params={"stream": "true"}, timeout=30).text)
        again = http_b.post(f"{url}/cancel", timeout=30)
    check_stream(events)
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["status"] == "cancelled"
    assert again.status_code == 409 and again.json()["error"]["code"] == "response_not_cancellable"


def test_delete_on_another_server_stops_the_run(serve: Any, shared: Any) -> None:
    a, b, engine, url = two_servers_one_running(serve, shared)
    with a.http() as http_a, b.http() as http_b:
        assert http_b.delete(url).json()["deleted"] is True
        assert wait_for(lambda: engine.cancelled == 1)
        assert http_a.get(url).status_code == 404
        assert http_b.get(url).status_code == 404


def test_cancel_of_another_keys_response_is_not_found(serve: Any, tmp_path: Path) -> None:
    store = tmp_path / "keys.sqlite3"
    settings = ServiceSettings(poll_seconds=0.05)
    engine = ScriptedEngine(completion(LONG), chunk=1, delay=0.05)
    a = serve(engine, store=store, settings=settings, keys=["k1", "k2"])
    b = serve(ScriptedEngine(completion(ANSWER)), store=store, settings=settings, keys=["k1", "k2"])
    k1, k2 = {"Authorization": "Bearer k1"}, {"Authorization": "Bearer k2"}
    with httpx.Client(base_url=a.url) as http_a, httpx.Client(base_url=b.url) as http_b:
        created = http_a.post(
            "/v1/responses",
            json={"model": "scripted-model", "input": "hi", "background": True},
            headers=k1,
        ).json()
        url = f"/v1/responses/{created['id']}"
        assert http_b.post(f"{url}/cancel", headers=k2).status_code == 404
        assert http_b.get(url, params={"stream": "true"}, headers=k2).status_code == 404
        assert http_b.post(f"{url}/cancel", headers=k1).json()["status"] == "cancelled"


def test_follower_ends_with_the_stored_state_when_the_runner_died(tmp_path: Path) -> None:
    """Events stop mid-response (the server running it died); the sweep marks it failed;
    a follower elsewhere gets the stored events, then ``response.failed`` with that state."""

    async def main() -> list[dict[str, Any]]:
        store = SQLiteStore(tmp_path / "dead.sqlite3")
        body = {"id": "resp_dead", "status": "in_progress", "background": True, "created_at": 1, "output": []}
        await store.create(StoredResponse("resp_dead", "", body, []))
        first = [
            {"type": "response.created", "sequence_number": 0, "response": body},
            {"type": "response.in_progress", "sequence_number": 1, "response": body},
        ]
        await store.append_events("resp_dead", first)
        service = ResponseService(
            ScriptedEngine(completion(ANSWER)), store, settings=ServiceSettings(poll_seconds=0.02)
        )
        follower = await service.replay("resp_dead", "", None)
        seen = [(await anext(follower)).to_json(), (await anext(follower)).to_json()]
        error = {"code": "server_restarted", "message": "The server stopped."}
        await store.update({**body, "status": "failed", "error": error})
        seen += [event.to_json() async for event in follower]
        return seen

    seen = asyncio.run(main())
    assert [e["sequence_number"] for e in seen] == [0, 1, 2]
    assert seen[-1]["type"] == "response.failed" and seen[-1]["response"]["status"] == "failed"
