"""WebSocket mode's own fields and frames: a warm-up (``generate: false``) completes with
no output and is chained to; ``stream: true`` and ``background: false`` are taken (Codex
sends ``stream: true``), their other values refused; every frame the server sends, errors
included, is a text frame of JSON; a binary frame from the client is answered with an
error and the connection stays open."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from live import LiveServer, ScriptedEngine, completion
from openapi import validate
from test_admission import ANSWER as HELD_ANSWER
from test_admission import HeldEngine, admitted, create, eventually, status_of
from test_responses_api import ANSWER, WEATHER_TOOL, check_stream, prompt_text

from openchatml.server.admission import Admission
from openchatml.server.limits import Limits

__all__ = ["admitted"]  # the fixture, for pytest to find here

TERMINAL = ("response.completed", "response.incomplete", "response.failed", "error")
WARM_UP_EVENTS = ["response.created", "response.in_progress", "response.completed"]


class Socket:
    """A WebSocket-mode connection: each frame it is sent must be a text frame of JSON."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def frame(self) -> dict[str, Any]:
        """The next frame the server sent (a text frame, parsed)."""
        raw = self.connection.recv(timeout=20)
        assert isinstance(raw, str), f"a binary frame: {raw!r}"
        event: dict[str, Any] = json.loads(raw)
        return event

    def turn(self, **body: Any) -> list[dict[str, Any]]:
        """Send a ``response.create`` with ``body`` (the served model's unless it names
        one); the frames up to its last event or an ``error``."""
        self.connection.send(json.dumps({"type": "response.create", "model": "scripted-model", **body}))
        return self.frames()

    def frames(self) -> list[dict[str, Any]]:
        """The frames up to the end of a turn or an ``error``."""
        events = [self.frame()]
        while events[-1]["type"] not in TERMINAL:
            events.append(self.frame())
        return events


@contextmanager
def socket(server: LiveServer) -> Iterator[Socket]:
    from websockets.sync.client import connect

    with connect(server.url.replace("http", "ws") + "/v1/responses") as connection:
        yield Socket(connection)


def refused(events: list[dict[str, Any]], status: int, param: str | None, code: str) -> None:
    """The turn was one ``error`` event of the schema, with ``status``, ``param`` and ``code``."""
    [error] = events
    validate(error, "WebSocketErrorEvent")
    assert error["status"] == status
    assert (error["error"]["param"], error["error"]["code"]) == (param, code)


# --- generate: false ----------------------------------------------------------------------


def test_a_warm_up_completes_without_sampling_and_is_chained_to(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine)
    body = {"input": "hi", "instructions": "Be brief.", "tools": [WEATHER_TOOL], "store": False}
    with socket(server) as ws:
        warm = ws.turn(**body, generate=False)
        check_stream(warm)
        assert [e["type"] for e in warm] == WARM_UP_EVENTS
        response = warm[-1]["response"]
        assert response["status"] == "completed" and response["output"] == []
        assert response["usage"]["output_tokens"] == 0
        assert engine.prompts == []  # the engine never sampled
        turn = ws.turn(input="again", store=False, previous_response_id=response["id"])
    check_stream(turn)
    assert turn[-1]["response"]["output"][-1]["content"][0]["text"] == "Hello there!"
    [prompt] = engine.prompts
    assert "<|start|>user<|message|>hi<|end|>" in prompt_text(engine)
    assert prompt_text(engine).endswith("<|start|>user<|message|>again<|end|><|start|>assistant")
    with server.http() as http:  # the warm-up counted the prompt it built
        counted = http.post("/v1/responses/input_tokens", json={"model": "scripted-model", **body}).json()
    assert response["usage"]["input_tokens"] == counted["input_tokens"] > 0
    assert turn[-1]["response"]["usage"]["input_tokens"] == len(prompt)


def test_a_warm_up_may_hold_instructions_alone(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine)
    rules = [{"type": "message", "role": "developer", "content": "Answer in French."}]
    with socket(server) as ws:
        warm = ws.turn(input=rules, store=False, generate=False)
        assert [e["type"] for e in warm] == WARM_UP_EVENTS
        turn = ws.turn(input="hi", store=False, previous_response_id=warm[-1]["response"]["id"])
    check_stream(turn)
    text = prompt_text(engine)
    assert text.index("Answer in French.") < text.index("<|start|>user<|message|>hi<|end|>")
    with server.http() as http:  # a request that samples still needs input
        alone = http.post("/v1/responses", json={"model": "scripted-model", "input": rules})
    assert alone.status_code == 400 and alone.json()["error"]["code"] == "missing_required_parameter"


def test_a_warm_up_is_refused_as_a_response_would_be(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER), context_length=300)
    server = serve(engine)
    with socket(server) as ws:
        refused(ws.turn(model="nope", input="hi", generate=False), 404, "model", "model_not_found")
        long = ws.turn(input="word " * 400, generate=False)
        refused(long, 400, "input", "context_length_exceeded")
        refused(ws.turn(input="hi", generate="no"), 400, "generate", "invalid_type")
        choice = {"type": "function", "name": "get_weather"}
        refused(
            ws.turn(input="hi", tool_choice=choice, generate=False), 400, "tool_choice.name", "invalid_value"
        )
    assert engine.prompts == []


def test_a_stored_warm_up_is_kept_and_chained_to_over_http(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine)
    with socket(server) as ws:
        warm = ws.turn(input="hi", generate=False)
    response_id = warm[-1]["response"]["id"]
    with server.http() as http:
        kept = http.get(f"/v1/responses/{response_id}").json()
        validate(kept, "ResponseResource")
        assert kept["status"] == "completed" and kept["output"] == []
        chained = http.post(
            "/v1/responses",
            json={"model": "scripted-model", "input": "again", "previous_response_id": response_id},
        )
    assert chained.status_code == 200, chained.text
    assert "<|start|>user<|message|>hi<|end|><|start|>user<|message|>again<|end|>" in prompt_text(engine)


def test_a_warm_up_does_not_wait_for_the_engine(admitted: Any) -> None:
    engine = HeldEngine(HELD_ANSWER)
    server = admitted(engine, Admission(max_running=1, max_queued=4))
    with server.http() as http:
        first = create(http, "A", background=True).json()["id"]
        eventually(lambda: engine.began() == ["A"], "A generating")
        with socket(server) as ws:
            warm = ws.turn(input="B", generate=False)
        assert [e["type"] for e in warm] == WARM_UP_EVENTS
        assert status_of(http, first) == "in_progress"  # A still holds the one slot
        engine.go.set()
        eventually(lambda: status_of(http, first) == "completed", "A completed")
    assert engine.began() == ["A"]


# --- the transport fields of HTTP --------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"stream": True},
        {"background": False},
        {"stream": None},
        {"stream_options": {"include_obfuscation": False}},
    ],
)
def test_transport_fields_asking_for_what_the_mode_does_are_taken(serve: Any, fields: dict[str, Any]) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with socket(server) as ws:
        events = ws.turn(input="hi", **fields)
    check_stream(events)
    assert events[-1]["type"] == "response.completed"


@pytest.mark.parametrize(
    ("fields", "param"),
    [({"stream": False}, "stream"), ({"stream": "yes"}, "stream"), ({"background": True}, "background")],
)
def test_transport_fields_asking_for_more_are_refused(serve: Any, fields: dict[str, Any], param: str) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with socket(server) as ws:
        refused(ws.turn(input="hi", **fields), 400, param, "invalid_value")
        check_stream(ws.turn(input="hi"))  # the connection stays open


# --- frames -------------------------------------------------------------------------------


def test_every_frame_sent_is_text_errors_included(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), limits=Limits(requests_per_minute=3))
    with socket(server) as ws:  # the handshake counts one request
        ws.connection.send("not json")
        refused(ws.frames(), 400, None, "invalid_json")
        ws.connection.send(json.dumps({"type": "response.cancel"}))
        refused(ws.frames(), 400, "type", "invalid_value")
        ws.connection.send(json.dumps({"type": "response.create", "input": "hi"}).encode())
        refused(ws.frames(), 400, None, "invalid_frame")
        check_stream(ws.turn(input="hi"))  # two
        check_stream(ws.turn(input="hi"))  # three
        limited = ws.turn(input="hi")
    refused(limited, 429, None, "rate_limit_exceeded")
    [error] = limited
    assert error["headers"]["retry-after"].isdigit()
    assert error["error"]["headers"] == error["headers"]
