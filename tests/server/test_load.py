"""Load on loopback: while clients send the largest bodies and the most expensive requests
the server accepts, the light requests of others are answered before those finish, and
the streams already running complete with every event.

Bounded in count (a handful of clients, one round each) and in time (every client has a
timeout); the order of events is asserted, never a speed, beside a generous bound on how
long a light request may wait.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
from live import ScriptedEngine, completion
from test_hardening import _nested
from test_responses_api import WEATHER_TOOL, check_stream, sse_events

from openchatml import Message
from openchatml.responses.limits import DEFAULT_LIMITS, MAX_JSON_DEPTH

LONG_ANSWER = Message.assistant("word " * 400, channel="final")
LIGHT_BOUND_SECONDS = 10.0
"""How long a light request may take under the load (generous: the order is the check)."""


def _largest_bodies(max_body: int) -> dict[str, bytes]:
    """The most expensive bodies within the limits: every input item filled up to the body
    size, the most tools with their schemas at the deepest nesting accepted."""
    items = DEFAULT_LIMITS.max_input_items
    text = "lorem ipsum dolor sit amet, " * (max_body // items // 29 - 4)
    many = {"model": "scripted-model", "input": [{"role": "user", "content": text}] * items}
    tool = {**WEATHER_TOOL, "parameters": _nested((MAX_JSON_DEPTH - 4) // 2)}
    tools = {
        "model": "scripted-model",
        "input": "hi",
        "store": False,
        "tools": [{**tool, "name": f"tool_{i}"} for i in range(DEFAULT_LIMITS.max_tools)],
    }
    bodies = {
        "input_tokens": json.dumps(many).encode(),
        "responses": json.dumps({**many, "max_output_tokens": 16}).encode(),
        "tools": json.dumps(tools).encode(),
    }
    assert all(len(b) <= max_body for b in bodies.values())
    return bodies


def test_light_requests_pass_heavy_ones_and_running_streams_complete(serve: Any) -> None:
    engine = ScriptedEngine(completion(LONG_ANSWER), chunk=4, delay=0.005, context_length=10_000_000)
    server = serve(engine)
    max_body = server.app.state.limits.max_body_bytes
    bodies = _largest_bodies(max_body)
    with server.http() as http:
        stored = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi"}).json()

    streams: list[list[dict[str, Any]]] = []
    heavy_done: dict[str, float] = {}
    heavy_status: dict[str, int] = {}

    def stream() -> None:
        with server.http() as http:
            body = {"model": "scripted-model", "input": "tell me", "stream": True}
            streams.append(sse_events(http.post("/v1/responses", json=body).text))

    def heavy(name: str, path: str, body: bytes) -> None:
        with httpx.Client(base_url=server.url, timeout=300) as http:
            answer = http.post(path, content=body, headers={"content-type": "application/json"})
        heavy_status[name] = answer.status_code
        heavy_done[name] = time.monotonic()

    running = [threading.Thread(target=stream) for _ in range(4)]
    for thread in running:
        thread.start()
    time.sleep(0.2)  # the streams are under way
    loads = [
        threading.Thread(target=heavy, args=(f"{name}-{i}", path, bodies[name]))
        for i in range(2)
        for name, path in (
            ("input_tokens", "/v1/responses/input_tokens"),
            ("responses", "/v1/responses"),
            ("tools", "/v1/responses"),
        )
    ]
    for thread in loads:
        thread.start()
    time.sleep(0.3)  # the bodies are on their way in

    light: dict[str, float] = {}
    with server.http() as http:
        for name, call in (
            ("health", lambda: http.get("/health")),
            ("retrieve", lambda: http.get(f"/v1/responses/{stored['id']}")),
            (
                "input_tokens",
                lambda: http.post(
                    "/v1/responses/input_tokens", json={"model": "scripted-model", "input": "hi"}
                ),
            ),
        ):
            asked = time.monotonic()
            answer = call()
            light[name] = time.monotonic()
            assert answer.status_code == 200, answer.text
            assert light[name] - asked < LIGHT_BOUND_SECONDS

    for thread in loads + running:
        thread.join(timeout=300)
    assert heavy_status == dict.fromkeys(heavy_status, 200) and len(heavy_status) == len(loads)
    slowest_light = max(light.values())
    assert slowest_light < max(heavy_done.values()), (light, heavy_done)
    assert sum(1 for done in heavy_done.values() if done > slowest_light) >= len(loads) // 2

    assert len(streams) == len(running)
    for events in streams:
        check_stream(events)
        assert events[-1]["type"] == "response.completed"
        assert events[-1]["response"]["output"][0]["content"][0]["text"] == LONG_ANSWER.content[0].text  # type: ignore[attr-defined]
