"""Bad and oversized input at the HTTP API: every refusal is a typed error in the API's
shape, never a 500 or a cut stream, and the bounds on a request's work hold on every path.

Each test names the way in: names matched against the whole string, the bounds on
items, tools, references, history, nesting and input tokens, query parameters checked
for range, unknown routes and methods, URLs and headers past their limits, a stream that
fails while it is written, and the 500s that ``/metrics`` counts.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from live import ScriptedEngine, completion
from openapi import validate, validate_event
from test_responses_api import ANSWER, WEATHER_TOOL, sse_events

from openchatml.responses.limits import MAX_JSON_DEPTH, RequestLimits
from openchatml.server.limits import Limits
from openchatml.server.settings import ServiceSettings
from openchatml.server.wire import StoredEvent


def _error(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """The error body of ``response``, checked to be the API's error shape."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    if code is not None:
        assert body["error"]["code"] == code, body
    return dict(body["error"])


def _nested(depth: int) -> dict[str, Any]:
    """A JSON schema of objects nested ``depth`` levels of ``properties`` deep."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


# --- names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"tools": [{**WEATHER_TOOL, "name": "get_weather\n"}]},
        {"tools": [WEATHER_TOOL, {**WEATHER_TOOL, "name": "get_weather\n"}]},
        {"text": {"format": {"type": "json_schema", "name": "answer\n", "schema": {"type": "object"}}}},
        {
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "get_weather\n", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ]
        },
    ],
    ids=["tool", "duplicate-tool", "format", "call"],
)
def test_names_must_match_as_a_whole(serve: Any, body: dict[str, Any]) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with server.http() as http:
        response = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi", **body})
    error = _error(response, 400, "invalid_value")
    assert error["param"].endswith("name")


# --- bounds on the work of a request ----------------------------------------------------------


SMALL = RequestLimits(
    max_input_items=8, max_content_parts=4, max_tools=3, max_item_references=2, max_conversation_items=12
)


@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"input": [{"role": "user", "content": "x"}] * 9}, "too_many_input_items", "input"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_text", "text": "x"}] * 5}]},
            "too_many_content_parts",
            "input[0].content",
        ),
        (
            {"tools": [{**WEATHER_TOOL, "name": f"t{i}"} for i in range(4)]},
            "too_many_tools",
            "tools",
        ),
        (
            {"input": [{"type": "item_reference", "id": f"msg_{i}"} for i in range(3)]},
            "too_many_item_references",
            "input",
        ),
        ({"include": ["reasoning.encrypted_content"] * 33}, "too_many_includes", "include"),
    ],
    ids=["items", "parts", "tools", "references", "includes"],
)
def test_counts_beyond_the_limits_are_refused_by_name(
    serve: Any, body: dict[str, Any], code: str, param: str
) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), settings=ServiceSettings(limits=SMALL))
    with server.http() as http:
        for path in ("/v1/responses", "/v1/responses/input_tokens"):
            response = http.post(path, json={"model": "scripted-model", "input": "hi", **body})
            error = _error(response, 400, code)
            assert error["param"] == param
            assert "at most" in error["message"]
    assert server.service.engine.prompts == []


def test_history_beyond_the_conversation_limit_is_refused_before_it_is_loaded(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine, settings=ServiceSettings(limits=SMALL))
    with server.http() as http:
        previous = None
        for _ in range(2):  # 2 x (4 inputs + 1 output) = 10 items stored
            body = {"model": "scripted-model", "input": [{"role": "user", "content": "x"}] * 4}
            if previous:
                body["previous_response_id"] = previous
            response = http.post("/v1/responses", json=body)
            assert response.status_code == 200, response.text
            previous = response.json()["id"]
        for path in ("/v1/responses", "/v1/responses/input_tokens"):
            ok = http.post(
                path, json={"model": "scripted-model", "input": "x", "previous_response_id": previous}
            )
            assert ok.status_code == 200, ok.text
            over = http.post(
                path,
                json={
                    "model": "scripted-model",
                    "input": ["x"] * 0 + [{"role": "user", "content": "x"}] * 3,
                    "previous_response_id": previous,
                },
            )
            error = _error(over, 400, "conversation_too_long")
            assert error["param"] == "previous_response_id"
            assert "at most 12" in error["message"]


def test_websocket_history_is_bounded_too(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), settings=ServiceSettings(limits=SMALL))
    from websockets.sync.client import connect

    with connect(server.url.replace("http", "ws") + "/v1/responses") as socket_:
        import json

        socket_.send(
            json.dumps(
                {
                    "type": "response.create",
                    "model": "scripted-model",
                    "store": False,
                    "input": [{"role": "user", "content": "x"}] * 8,
                }
            )
        )
        events = []
        while not events or events[-1]["type"] not in ("response.completed", "response.failed", "error"):
            events.append(json.loads(socket_.recv(timeout=20)))
        assert events[-1]["type"] == "response.completed", events[-1]
        first = events[-1]["response"]["id"]
        socket_.send(
            json.dumps(
                {
                    "type": "response.create",
                    "model": "scripted-model",
                    "store": False,
                    "previous_response_id": first,
                    "input": [{"role": "user", "content": "x"}] * 4,
                }
            )
        )
        event = json.loads(socket_.recv(timeout=20))
        assert event["type"] == "error", event
        assert event["error"]["code"] == "conversation_too_long"


def test_max_input_tokens_holds_whatever_the_context_window(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER), context_length=100_000)
    limits = RequestLimits(max_input_tokens=120)
    server = serve(engine, settings=ServiceSettings(limits=limits))
    long_text = "word " * 200
    with server.http() as http:
        short = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi"})
        assert short.status_code == 200
        error = _error(
            http.post("/v1/responses", json={"model": "scripted-model", "input": long_text}),
            400,
            "input_tokens_exceeded",
        )
        assert "at most 120 input tokens" in error["message"]
        # truncation "auto" drops old messages until the prompt is within the limit
        items = [{"role": "user", "content": long_text}, {"role": "user", "content": "and now?"}]
        cut = http.post(
            "/v1/responses", json={"model": "scripted-model", "input": items, "truncation": "auto"}
        )
        assert cut.status_code == 200, cut.text
        assert cut.json()["usage"]["input_tokens"] <= 120
    assert len(engine.prompts) == 2 and all(len(p) <= 120 for p in engine.prompts)


# --- nesting ------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["tool", "format", "input"])
@pytest.mark.parametrize("mode", ["json", "stored", "stream"])
def test_too_deep_json_is_refused_at_the_door(serve: Any, where: str, mode: str) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine)
    deep = _nested(126)
    body: dict[str, Any] = {"model": "scripted-model", "input": "hi", "store": mode == "stored"}
    if mode == "stream":
        body["stream"] = True
    if where == "tool":
        body["tools"] = [{**WEATHER_TOOL, "parameters": deep}]
    elif where == "format":
        body["text"] = {"format": {"type": "json_schema", "name": "f", "schema": _nested(200)}}
    else:
        body["input"] = [
            {"role": "assistant", "content": [{"type": "output_text", "text": "x", "annotations": [deep]}]}
        ]
    with server.http() as http:
        error = _error(http.post("/v1/responses", json=body), 400, "json_too_deep")
    assert str(MAX_JSON_DEPTH) in error["message"]
    assert engine.prompts == []


@pytest.mark.parametrize("mode", ["json", "stored", "stream", "background"])
def test_the_deepest_accepted_request_is_served_stored_and_replayed(serve: Any, mode: str) -> None:
    """A body at the nesting limit is echoed, stored, streamed and replayed whole: every
    layer below the door holds the depth the door lets in."""
    server = serve(ScriptedEngine(completion(ANSWER)))
    tools_at = 4  # body → tools → [0] → parameters
    parameters = _nested((MAX_JSON_DEPTH - tools_at) // 2)
    parameters["properties"]["y"] = {"type": "string", "enum": ["a"], "default": "a"}
    body: dict[str, Any] = {
        "model": "scripted-model",
        "input": "hi",
        "tools": [{**WEATHER_TOOL, "parameters": parameters}],
        "store": mode != "json",
        "stream": mode in ("stream", "background"),
        "background": mode == "background",
    }
    assert MAX_JSON_DEPTH - 2 <= _depth(body) <= MAX_JSON_DEPTH
    with server.http() as http:
        response = http.post("/v1/responses", json=body)
        assert response.status_code == 200, response.text
        if body["stream"]:
            events = sse_events(response.text)
            for event in events:
                validate_event(event)
            final = events[-1]["response"]
        else:
            final = response.json()
            validate(final, "ResponseResource")
        assert final["status"] == "completed"
        assert final["tools"][0]["parameters"] == parameters
        if mode != "json":
            stored = http.get(f"/v1/responses/{final['id']}")
            assert stored.status_code == 200 and stored.json()["tools"][0]["parameters"] == parameters
            replay = http.get(f"/v1/responses/{final['id']}", params={"stream": "true"})
            assert sse_events(replay.text)[-1]["type"] == "response.completed"


# --- query and path parameters -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"stream": "true", "starting_after": "9223372036854775808"}, "starting_after"),
        ({"stream": "true", "starting_after": "1e23"}, "starting_after"),
        ({"stream": "true", "starting_after": "-1e23"}, "starting_after"),
        ({"stream": "true", "starting_after": "-2"}, "starting_after"),
        ({"stream": "true", "starting_after": "9" * 5000}, "starting_after"),
        ({"stream": "yes"}, "stream"),
    ],
)
def test_query_parameters_out_of_range_are_refused(serve: Any, query: dict[str, str], param: str) -> None:
    server = serve(ScriptedEngine(completion(ANSWER), delay=0.01))
    with server.http() as http:
        created = http.post(
            "/v1/responses", json={"model": "scripted-model", "input": "hi", "background": True}
        ).json()
        error = _error(http.get(f"/v1/responses/{created['id']}", params=query), 400)
        assert error["param"] == param


@pytest.mark.parametrize(
    "query",
    [
        {"limit": "0"},
        {"limit": "101"},
        {"limit": "1e23"},
        {"limit": "x"},
        {"order": "up"},
        {"after": "a" * 300},
    ],
)
def test_input_items_parameters_are_checked(serve: Any, query: dict[str, str]) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with server.http() as http:
        created = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi"}).json()
        error = _error(http.get(f"/v1/responses/{created['id']}/input_items", params=query), 400)
        assert error["param"] == next(iter(query))


# --- routes, methods, URLs and headers -----------------------------------------------------------


def test_unknown_routes_and_wrong_methods_answer_in_the_error_shape(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with server.http() as http:
        error = _error(http.get("/v1/nothing-here"), 404, "unknown_url")
        assert "GET /v1/nothing-here" in error["message"]
        wrong = http.put("/v1/responses")
        _error(wrong, 405, "method_not_allowed")
        assert "POST" in wrong.headers["allow"]
        _error(http.delete("/health"), 405, "method_not_allowed")


def test_long_urls_and_large_headers_are_refused_before_any_route(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    limits = Limits()
    with server.http() as http:
        _error(http.get("/v1/responses/resp_" + "a" * limits.max_url_bytes), 414, "url_too_long")
        headers = {f"x-filler-{i}": "v" * 1000 for i in range(limits.max_header_bytes // 1000 + 1)}
        _error(http.get("/health", headers=headers), 431, "headers_too_large")
        assert http.get("/health").status_code == 200


def test_headers_past_the_http_layer_bound_never_reach_the_app(serve: Any) -> None:
    """Megabytes of header lines: the HTTP parser refuses them while they arrive (the app
    never buffers them), and the server goes on answering."""
    server = serve(ScriptedEngine(completion(ANSWER)))
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        refused = False
        try:
            for i in range(400):  # 100 MB, unless refused first
                conn.sendall(b"x-a%d: %s\r\n" % (i, b"a" * 250_000))
        except OSError:
            refused = True
        if not refused:
            answer = conn.recv(200)
            refused = answer.startswith(b"HTTP/1.1 400") or answer == b""
    assert refused
    with server.http() as http:
        assert http.get("/health").status_code == 200


# --- streams that fail while written, and the 500s /metrics counts ----------------------------------


def test_a_stream_failing_while_written_ends_with_error_then_failed(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    service = server.service
    with server.http() as http:
        created = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi"}).json()

        async def broken(response_id: str, owner: str, after: int | None) -> AsyncIterator[StoredEvent]:
            async def events() -> AsyncIterator[StoredEvent]:
                yield StoredEvent({"type": "response.created", "sequence_number": 0, "response": created})
                yield StoredEvent(
                    {"type": "response.in_progress", "sequence_number": 1, "response": {1j: "x"}}
                )

            return events()

        service.replay = broken
        response = http.get(f"/v1/responses/{created['id']}", params={"stream": "true"})
        assert response.status_code == 200
        events = sse_events(response.text)
        assert [e["type"] for e in events] == ["response.created", "error", "response.failed"]
        assert [e["sequence_number"] for e in events] == [0, 1, 2]
        validate_event(events[1])
        assert events[2]["response"]["status"] == "failed"
        metrics = http.get("/metrics").text
        assert "openchatml_stream_failures_total 1.0" in metrics


def test_unexpected_errors_answer_500_in_the_error_shape_and_are_counted(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))

    async def broken(response_id: str, owner: str) -> dict[str, Any]:
        raise RuntimeError("boom")

    server.service.retrieve = broken
    with server.http() as http:
        for _ in range(3):
            error = _error(http.get("/v1/responses/resp_x"), 500, "server_error")
            assert "boom" not in error["message"]
        metrics = http.get("/metrics").text
    line = next(
        line
        for line in metrics.splitlines()
        if line.startswith("openchatml_http_requests_total") and 'status="500"' in line
    )
    assert 'route="/v1/responses/{response_id}"' in line and line.endswith(" 3.0")
