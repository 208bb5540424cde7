"""The HTTP API end to end: the official openai SDK and raw HTTP against a live server.

The engine plays a script of Harmony messages, so every test knows what the model said;
every JSON body and every streamed event is validated against the Open Responses schema.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import time
from typing import Any

import httpx
import openai
import pytest
from live import ScriptedEngine, completion, scripted_logprob
from openapi import validate, validate_event

from openchatml import Message, load_encoding
from openchatml.server.limits import Limits
from openchatml.server.settings import ServiceSettings

THINK = Message.assistant("The user greets me.", channel="analysis")
ANSWER = Message.assistant("Hello there!", channel="final")
CALL = Message.tool_call("functions.get_weather", '{"city": "Paris"}')
WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def sse_events(text: str) -> list[dict[str, Any]]:
    """Parse an SSE body; checks ``event:`` equals ``type`` and the ``[DONE]`` end."""
    blocks = [b for b in text.split("\n\n") if b]
    assert blocks[-1] == "data: [DONE]"
    events = []
    for block in blocks[:-1]:
        lines = block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: ")
        event = json.loads(lines[1][len("data: ") :])
        assert event["type"] == lines[0][len("event: ") :]
        events.append(event)
    return events


def check_stream(events: list[dict[str, Any]]) -> None:
    """Schema-valid events, numbered from 0, one terminal event at the end."""
    for n, event in enumerate(events):
        validate_event(event)
        assert event["sequence_number"] == n
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] in ("response.completed", "response.incomplete", "response.failed")


def lifecycle(events: list[dict[str, Any]], index: int) -> list[str]:
    """The event types of output item ``index``, runs of deltas shown once."""
    kinds = [e["type"] for e in events if e.get("output_index") == index]
    return [k for n, k in enumerate(kinds) if not (k.endswith(".delta") and n and kinds[n - 1] == k)]


def prompt_text(engine: ScriptedEngine, index: int = -1) -> str:
    return load_encoding().decode(engine.prompts[index])


def test_create_json_and_sdk(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    with server.http() as http:
        body = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi"}).json()
    validate(body, "ResponseResource")
    assert body["status"] == "completed"
    assert [i["type"] for i in body["output"]] == ["reasoning", "message"]
    assert body["output"][0]["content"] == [{"type": "reasoning_text", "text": "The user greets me."}]
    assert body["output"][1]["content"][0]["text"] == "Hello there!"
    assert body["output"][1]["phase"] == "final_answer"
    usage = body["usage"]
    assert usage["input_tokens"] == len(engine.prompts[0])
    assert usage["output_tokens"] == len(completion(THINK, ANSWER))
    assert 0 < usage["output_tokens_details"]["reasoning_tokens"] < usage["output_tokens"]
    assert "<|start|>user<|message|>hi<|end|><|start|>assistant" in prompt_text(engine)

    response = server.client().responses.create(model="scripted-model", input="hi", instructions="Be brief.")
    assert response.output_text == "Hello there!"
    assert response.instructions == "Be brief."
    assert "# Instructions\n\nBe brief." in prompt_text(engine)


def test_stream_sse_lifecycle(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER), chunk=1)
    server = serve(engine)
    with server.http() as http:
        reply = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi", "stream": True})
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = sse_events(reply.text)
    check_stream(events)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert lifecycle(events, 0) == [
        "response.output_item.added",
        "response.content_part.added",
        "response.reasoning.delta",
        "response.reasoning.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert lifecycle(events, 1) == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ]
    assert sum(e["type"] == "response.output_text.delta" for e in events) > 1
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    reasoning = "".join(e["delta"] for e in events if e["type"] == "response.reasoning.delta")
    assert (text, reasoning) == ("Hello there!", "The user greets me.")
    assert events[-1]["response"]["output"][1]["content"][0]["text"] == "Hello there!"

    with server.client().responses.stream(model="scripted-model", input="hi") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "Hello there!" == final.output_text


def test_function_call_round_trip(serve: Any) -> None:
    turns = iter([completion(THINK, CALL), completion(ANSWER), completion(ANSWER)])
    engine = ScriptedEngine(lambda prompt: next(turns))
    server = serve(engine)
    client = server.client()
    first = client.responses.create(model="scripted-model", input="Weather in Paris?", tools=[WEATHER_TOOL])
    call = first.output[-1]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert call.call_id.startswith("call_")
    assert "type get_weather = (_: {\n// ...\ncity: string,\n}) => any;" not in prompt_text(engine)
    assert "type get_weather" in prompt_text(engine)
    second = client.responses.create(
        model="scripted-model",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"temp": 21}'}],
        tools=[WEATHER_TOOL],
    )
    assert second.output_text == "Hello there!"
    assert second.previous_response_id == first.id
    text = prompt_text(engine)
    # the turn is not finished (it ended in a tool call): its analysis is kept
    assert "<|channel|>analysis<|message|>The user greets me.<|end|>" in text
    assert (
        'to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{"city": "Paris"}<|call|>'
        in text
    )
    assert (
        '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"temp": 21}<|end|>'
        in text
    )
    third = client.responses.create(model="scripted-model", previous_response_id=second.id, input="Thanks!")
    assert third.status == "completed"
    # a finished turn's chain of thought is dropped from later prompts
    assert "The user greets me." not in prompt_text(engine)


def test_retrieve_delete_input_items(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    client = server.client()
    items = [{"type": "message", "role": "user", "content": f"message {i}"} for i in range(5)]
    created = client.responses.create(model="scripted-model", input=items)
    got = client.responses.retrieve(created.id)
    assert got.id == created.id and got.output_text == "Hello there!"
    page = client.responses.input_items.list(created.id, limit=2, order="asc")
    assert [i.content[0].text for i in page.data] == ["message 0", "message 1"]
    assert page.has_more
    everything = [i.content[0].text for i in client.responses.input_items.list(created.id, order="asc")]
    assert everything == [f"message {i}" for i in range(5)]
    newest = client.responses.input_items.list(created.id, limit=1)
    assert newest.data[0].content[0].text == "message 4"
    with server.http() as http:
        listing = http.get(
            f"/v1/responses/{created.id}/input_items", params={"after": page.data[-1].id}
        ).json()
    assert listing["object"] == "list" and listing["first_id"] == listing["data"][0]["id"]
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(created.id)


def test_replay_stream_of_stored_response(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(THINK, ANSWER)))
    with server.http() as http:
        created = http.post("/v1/responses", json={"model": "scripted-model", "input": "hi"}).json()
        replay = http.get(f"/v1/responses/{created['id']}", params={"stream": "true"})
        events = sse_events(replay.text)
        check_stream(events)
        assert events[-1]["response"] == created
        later = sse_events(
            http.get(f"/responses/{created['id']}", params={"stream": "true", "starting_after": 3}).text
        )
    assert [e["sequence_number"] for e in later] == list(range(4, len(events)))


LOGPROBS = ["message.output_text.logprobs"]
PREAMBLE = Message.assistant("Let me think… then answer.", channel="commentary")
UNICODE = Message.assistant("Grüße 𝔘𝔫𝔦 🦩 ok", channel="final")


def expected_logprobs(text: str, top: int) -> list[dict[str, Any]]:
    """The ``LogProb`` objects of the tokens of ``text`` as the scripted engine scores them."""
    encoding = load_encoding()

    def entry(token: int, logprob: float) -> dict[str, Any]:
        raw = encoding.token_bytes[token]
        return {"token": raw.decode("utf-8", "replace"), "logprob": logprob, "bytes": list(raw)}

    out = []
    for token in encoding.encode_ordinary(text):
        record = scripted_logprob(token, top)
        out.append({**entry(token, record.logprob), "top_logprobs": [entry(t, lp) for t, lp in record.top]})
    return out


def text_logprobs(events: list[dict[str, Any]], index: int) -> list[list[dict[str, Any]]]:
    """Output item ``index``'s logprobs: per delta, then output_text.done, content_part.done,
    output_item.done, and the final snapshot."""
    mine = [e for e in events if e.get("output_index") == index]
    per_delta = [e["logprobs"] for e in mine if e["type"] == "response.output_text.delta"]
    (done,) = [e["logprobs"] for e in mine if e["type"] == "response.output_text.done"]
    (part,) = [e["part"]["logprobs"] for e in mine if e["type"] == "response.content_part.done"]
    (item,) = [e["item"]["content"][0]["logprobs"] for e in mine if e["type"] == "response.output_item.done"]
    final = events[-1]["response"]["output"][index]["content"][0]["logprobs"]
    return [*per_delta, done, part, item, final]


def test_logprobs_json_and_sdk(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    client = server.client()
    response = client.responses.create(model="scripted-model", input="hi", include=LOGPROBS, top_logprobs=3)
    assert engine.params[-1].logprobs == 3
    part = response.output[1].content[0]
    assert [lp.model_dump() for lp in part.logprobs] == expected_logprobs("Hello there!", 3)
    assert "".join(lp.token for lp in part.logprobs) == part.text == response.output_text
    assert len(part.logprobs) == 3  # Hello, " there", "!"
    assert all(lp.top_logprobs[0].logprob == lp.logprob <= 0 for lp in part.logprobs)

    with server.http() as http:
        body = http.post(
            "/v1/responses", json={"model": "scripted-model", "input": "hi", "include": LOGPROBS}
        )
    validate(body.json(), "ResponseResource")
    assert engine.params[-1].logprobs == 0
    reasoning, message = body.json()["output"]
    assert message["content"][0]["logprobs"] == expected_logprobs("Hello there!", 0)
    assert "logprobs" not in reasoning["content"][0]

    plain = client.responses.create(model="scripted-model", input="hi", top_logprobs=3)
    assert engine.params[-1].logprobs is None  # not included: not asked for
    assert plain.output[1].content[0].logprobs == []
    assert plain.top_logprobs == 3


@pytest.mark.parametrize("chunk", [1, 4])
def test_logprobs_stream_and_replay(serve: Any, chunk: int) -> None:
    engine = ScriptedEngine(completion(THINK, PREAMBLE, UNICODE), chunk=chunk)
    server = serve(engine)
    body = {"model": "scripted-model", "input": "hi", "include": LOGPROBS, "top_logprobs": 2, "stream": True}
    with server.http() as http:
        events = sse_events(http.post("/v1/responses", json=body).text)
        check_stream(events)
        response_id = events[-1]["response"]["id"]
        replayed = sse_events(http.get(f"/v1/responses/{response_id}", params={"stream": "true"}).text)
        check_stream(replayed)
    output = events[-1]["response"]["output"]
    assert [i["type"] for i in output] == ["reasoning", "message", "message"]
    assert not any("logprobs" in e for e in events if e.get("output_index") == 0)
    for index, message in ((1, PREAMBLE), (2, UNICODE)):
        text = output[index]["content"][0]["text"]
        assert text == message.content[0].text
        *deltas, done, part, item, final = text_logprobs(events, index)
        assert [lp for d in deltas for lp in d] == done == part == item == final == expected_logprobs(text, 2)
        assert b"".join(bytes(lp["bytes"]) for lp in done).decode() == text
        assert len(deltas) > 1 and all(deltas)
        # a replay comes from the stored snapshot (one delta) or, while the run is still
        # held, from its event log (the deltas as streamed): the same log probabilities
        *again, again_done, again_part, again_item, again_final = text_logprobs(replayed, index)
        assert (
            [lp for d in again for lp in d] == again_done == again_part == again_item == again_final == done
        )
    for delta in (e for e in events if e["type"] == "response.output_text.delta" and e["output_index"] == 1):
        assert "".join(lp["token"] for lp in delta["logprobs"]) == delta["delta"]  # exactly its tokens

    request = {k: v for k, v in body.items() if k != "stream"}
    with server.client().responses.stream(**request) as stream:
        deltas = [lp for e in stream if e.type == "response.output_text.delta" for lp in e.logprobs]
        final_response = stream.get_final_response()
    kept = [lp for o in final_response.output[1:] for lp in o.content[0].logprobs]
    assert [lp.model_dump() for lp in deltas] == [lp.model_dump() for lp in kept]
    encoding = load_encoding()
    assert len(kept) == sum(len(encoding.encode_ordinary(m.content[0].text)) for m in (PREAMBLE, UNICODE))


def test_no_logprobs_stream_without_include(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER), chunk=1)
    server = serve(engine)
    with server.http() as http:
        reply = http.post(
            "/v1/responses",
            json={"model": "scripted-model", "input": "hi", "stream": True, "top_logprobs": 5},
        )
    events = sse_events(reply.text)
    check_stream(events)
    assert engine.params[-1].logprobs is None
    assert all(logprobs == [] for logprobs in text_logprobs(events, 1))


def test_errors_are_typed(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), limits=Limits(max_body_bytes=4096))
    with server.http() as http:
        cases = [
            (
                http.post(
                    "/v1/responses", content=b"{not json", headers={"content-type": "application/json"}
                ),
                400,
                "invalid_json",
                None,
            ),
            (
                http.post(
                    "/v1/responses",
                    json={"model": "scripted-model", "input": "x", "prompt": {"id": "pmpt_1"}},
                ),
                404,
                "prompt_not_found",
                "prompt.id",
            ),
            (
                http.post("/v1/responses", json={"model": "scripted-model", "input": "x", "moderation": 5}),
                400,
                "invalid_type",
                "moderation",
            ),
            (
                http.post("/v1/responses", json={"model": "scripted-model", "input": [{"type": "message"}]}),
                400,
                "invalid_value",
                "input[0].role",
            ),
            (
                http.post("/v1/responses", json={"model": "scripted-model", "temperature": 9, "input": "x"}),
                400,
                "invalid_value",
                "temperature",
            ),
            (
                http.post("/v1/responses", json={"model": "nope", "input": "x"}),
                404,
                "model_not_found",
                "model",
            ),
            (
                http.post(
                    "/v1/responses", json={"model": "scripted-model", "previous_response_id": "resp_x"}
                ),
                404,
                "previous_response_not_found",
                "previous_response_id",
            ),
            (
                http.post("/v1/responses", json={"model": "scripted-model", "input": "x" * 5000}),
                413,
                "request_too_large",
                None,
            ),
            (
                http.post(
                    "/v1/responses",
                    json={
                        "model": "scripted-model",
                        "input": [
                            {
                                "role": "user",
                                "content": [{"type": "input_image", "image_url": "https://x/y.png"}],
                            }
                        ],
                    },
                ),
                400,
                "unsupported_content",
                "input[0].content[0]",
            ),
            (
                http.post(
                    "/v1/responses",
                    json={
                        "model": "scripted-model",
                        "input": [{"type": "function_call_output", "call_id": "call_1", "output": "x"}],
                    },
                ),
                400,
                "invalid_value",
                "input[0].call_id",
            ),
            (http.get("/v1/responses/resp_missing"), 404, "not_found", "response_id"),
        ]
    for reply, status, code, param in cases:
        assert reply.status_code == status, reply.text
        error = reply.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert (error["code"], error["param"]) == (code, param), error
        assert error["message"]


def test_keys_scope_responses_and_rate_limit(serve: Any) -> None:
    server = serve(
        ScriptedEngine(completion(ANSWER)), keys=["key-a", "key-b"], limits=Limits(requests_per_minute=3)
    )
    with pytest.raises(openai.AuthenticationError):
        server.client(api_key="wrong").responses.create(model="scripted-model", input="hi")
    a, b = server.client(api_key="key-a"), server.client(api_key="key-b")
    created = a.responses.create(model="scripted-model", input="hi")
    assert a.responses.retrieve(created.id).id == created.id
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        b.responses.create(model="scripted-model", input="more", previous_response_id=created.id)
    a.responses.retrieve(created.id)  # key-a's third request this minute: the last one allowed
    with pytest.raises(openai.RateLimitError) as caught:
        a.responses.retrieve(created.id)
    b.models.list()  # another key has its own bucket
    assert caught.value.response.headers["retry-after"].isdigit()


def test_max_output_tokens_gives_incomplete(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(THINK, ANSWER)))
    with server.http() as http:
        body = http.post(
            "/v1/responses",
            json={"model": "scripted-model", "input": "hi", "max_output_tokens": 16, "stream": True},
        ).text
    events = sse_events(body)
    check_stream(events)
    final = events[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    assert final["response"]["output"][-1]["status"] == "incomplete"
    assert final["response"]["usage"]["output_tokens"] == 16


def test_background_poll_and_cancel(serve: Any) -> None:
    slow = completion(THINK, ANSWER) * 1
    engine = ScriptedEngine(slow, chunk=1, delay=0.05)
    server = serve(engine)
    client = server.client()
    queued = client.responses.create(model="scripted-model", input="hi", background=True)
    assert queued.status in ("queued", "in_progress")
    deadline = time.monotonic() + 20
    while client.responses.retrieve(queued.id).status not in ("completed", "failed", "incomplete"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert client.responses.retrieve(queued.id).output_text == "Hello there!"

    engine.delay = 0.5
    running = client.responses.create(model="scripted-model", input="hi", background=True)
    cancelled = client.responses.cancel(running.id)
    assert cancelled.status == "cancelled"
    assert client.responses.retrieve(running.id).status == "cancelled"
    assert engine.cancelled >= 1
    with pytest.raises(openai.ConflictError):
        client.responses.cancel(queued.id)


def test_client_disconnect_stops_generation(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER) * 20, chunk=1, delay=0.02)
    server = serve(engine)
    with (
        httpx.Client(base_url=server.url, timeout=30) as http,
        http.stream(
            "POST", "/v1/responses", json={"model": "scripted-model", "input": "hi", "stream": True}
        ) as reply,
    ):
        for line in reply.iter_lines():
            if "reasoning.delta" in line:
                break
    deadline = time.monotonic() + 10
    while engine.cancelled == 0:
        assert time.monotonic() < deadline, "generation went on after the client left"
        time.sleep(0.02)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: Any, tmp_path: Any) -> Any:
    """Where a store lives: a SQLite file, or a fresh database on a real PostgreSQL server."""
    if request.param == "sqlite":
        return tmp_path / "restart.sqlite3"
    return request.getfixturevalue("postgres_url")


def test_restart_keeps_state_and_fails_unfinished(serve: Any, store_url: Any) -> None:
    first = serve(ScriptedEngine(completion(THINK, ANSWER)), store=store_url)
    client = first.client()
    done = client.responses.create(model="scripted-model", input="hi", tools=[WEATHER_TOOL])
    first.service.engine.delay = 5.0
    first.service.engine.chunk = 1
    running = client.responses.create(model="scripted-model", input="slow", background=True)
    first.service.engine.delay = 0.0
    first.__exit__()  # the server stops with a response still running

    second = serve(ScriptedEngine(completion(ANSWER)), store=store_url)
    again = second.client().responses.retrieve(done.id)
    assert again.output_text == "Hello there!" and again.tools[0].name == "get_weather"
    assert [i.content[0].text for i in second.client().responses.input_items.list(done.id)] == ["hi"]
    with second.http() as http:
        left = http.get(f"/v1/responses/{running.id}").json()
    validate(left, "ResponseResource")
    assert left["status"] in ("failed", "cancelled")
    chained = second.client().responses.create(
        model="scripted-model", input="more", previous_response_id=done.id
    )
    assert chained.previous_response_id == done.id
    assert "<|start|>user<|message|>hi<|end|>" in prompt_text(second.service.engine)


def test_models_health_metrics(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    models = server.client().models.list()
    assert [m.id for m in models.data] == ["scripted-model"]
    with server.http() as http:
        assert http.get("/health").json()["status"] == "ok"
        http.post("/v1/responses", json={"model": "scripted-model", "input": "hi"})
        metrics = http.get("/metrics").text
        count = http.post(
            "/v1/responses/input_tokens", json={"model": "scripted-model", "input": "hi"}
        ).json()
    assert 'openchatml_responses_total{status="completed"} 1.0' in metrics
    assert count["object"] == "response.input_tokens" and count["input_tokens"] > 10


def test_websocket_mode(serve: Any) -> None:
    from websockets.sync.client import connect

    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    with connect(server.url.replace("http", "ws") + "/v1/responses") as ws:

        def turn(message: dict[str, Any]) -> list[dict[str, Any]]:
            ws.send(json.dumps(message))
            events = []
            while not events or events[-1]["type"] not in ("response.completed", "response.failed", "error"):
                events.append(json.loads(ws.recv(timeout=20)))
            return events

        first = turn({"type": "response.create", "model": "scripted-model", "input": "hi", "store": False})
        check_stream(first)
        response_id = first[-1]["response"]["id"]
        second = turn(
            {
                "type": "response.create",
                "model": "scripted-model",
                "input": "again",
                "store": False,
                "previous_response_id": response_id,
            }
        )
        check_stream(second)
        assert "<|start|>user<|message|>hi<|end|>" in prompt_text(engine)
        assert "<|channel|>final<|message|>Hello there!<|end|>" in prompt_text(engine)
        error = turn({"type": "response.create", "model": "scripted-model", "input": "x", "stream": False})
        validate(error[-1], "WebSocketErrorEvent")
        assert error[-1]["status"] == 400 and error[-1]["error"]["param"] == "stream"
    with server.http() as http:  # store: false kept nothing
        assert http.get(f"/v1/responses/{response_id}").status_code == 404


def test_background_stream_from_cursor(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER), chunk=1, delay=0.02)
    server = serve(engine)
    with server.http() as http:
        created = http.post(
            "/v1/responses", json={"model": "scripted-model", "input": "hi", "background": True}
        ).json()
        validate(created, "ResponseResource")
        assert created["status"] == "queued" and created["background"] is True
        live = sse_events(http.get(f"/v1/responses/{created['id']}", params={"stream": "true"}).text)
        tail = sse_events(
            http.get(f"/v1/responses/{created['id']}", params={"stream": "true", "starting_after": 5}).text
        )
    check_stream(live)
    assert [e["type"] for e in live[:3]] == ["response.created", "response.queued", "response.in_progress"]
    assert tail == live[6:]
    assert live[-1]["response"]["output"][-1]["content"][0]["text"] == "Hello there!"


def reveals(blob: str, secret: str) -> bool:
    """Whether `blob` shows `secret` as text or base64 of it at any of the three byte alignments."""
    raw = secret.encode()
    spellings = {secret}
    for shift in range(3):
        encoded = base64.urlsafe_b64encode(b"\0" * shift + raw).decode().rstrip("=")
        spellings.add(encoded[4 * ((shift + 2) // 3) : -4])  # the characters that depend on secret bytes only
        spellings.add(encoded[4 * ((shift + 2) // 3) : -4].replace("-", "+").replace("_", "/"))
    return any(s and s in blob for s in spellings)


def test_compact_then_continue(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    with server.http() as http:
        first = http.post("/v1/responses", json={"model": "scripted-model", "input": "Remember 42."}).json()
        compacted = http.post(
            "/v1/responses/compact", json={"model": "scripted-model", "previous_response_id": first["id"]}
        ).json()
        validate(compacted, "CompactResource")
        item = compacted["output"][-1]
        assert item["type"] == "compaction"
        assert not reveals(item["encrypted_content"], "Remember 42.")
        http.post(
            "/v1/responses",
            json={"model": "scripted-model", "input": [item, {"role": "user", "content": "?"}]},
        )
        tampered = {**item, "encrypted_content": item["encrypted_content"][:-4] + "AAAA"}
        bad = http.post("/v1/responses", json={"model": "scripted-model", "input": [tampered]})
    text = prompt_text(engine)
    assert "<|start|>user<|message|>Remember 42.<|end|>" in text
    assert "<|channel|>final<|message|>Hello there!<|end|>" in text
    assert "The user greets me." not in text  # finished chain of thought is not kept
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_encrypted_content"


def test_upkeep_evicts_expired_responses_while_serving(serve: Any, tmp_path: Any) -> None:
    settings = ServiceSettings(ttl_seconds=1, maintenance_seconds=0.2)
    server = serve(ScriptedEngine(completion(ANSWER)), settings=settings)
    client = server.client()
    created = client.responses.create(model="scripted-model", input="hi")
    assert client.responses.retrieve(created.id).id == created.id
    deadline = time.monotonic() + 10
    while True:
        try:
            client.responses.retrieve(created.id)
        except openai.NotFoundError:
            break
        assert time.monotonic() < deadline, "an expired response was never evicted"
        time.sleep(0.2)
    with sqlite3.connect(tmp_path / "store.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM runners").fetchone() == (1,)


def test_websocket_cache_keeps_the_most_recent_responses(serve: Any) -> None:
    from websockets.sync.client import connect

    from openchatml.server.routes.websocket import WS_CACHED_RESPONSES

    server = serve(ScriptedEngine(completion(ANSWER)))
    with connect(server.url.replace("http", "ws") + "/v1/responses") as ws:

        def create(**fields: Any) -> dict[str, Any]:
            message = {"type": "response.create", "model": "scripted-model", "input": "x", "store": False}
            ws.send(json.dumps({**message, **fields}))
            while True:
                event = json.loads(ws.recv(timeout=20))
                if event["type"] in ("response.completed", "error"):
                    return event

        ids = [create()["response"]["id"] for _ in range(WS_CACHED_RESPONSES + 1)]
        assert create(previous_response_id=ids[1])["type"] == "response.completed"
        gone = create(previous_response_id=ids[0])
        assert gone["type"] == "error" and gone["status"] == 404
        assert gone["error"]["code"] == "previous_response_not_found"


def test_truncation_auto_drops_the_oldest_items(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER), context_length=400)
    server = serve(engine)
    items = [{"type": "message", "role": "user", "content": f"note {i}: " + "word " * 40} for i in range(8)]
    body = {"model": "scripted-model", "input": items, "instructions": "Be brief.", "max_output_tokens": 50}
    with server.http() as http:
        refused = http.post("/v1/responses", json=body)
        kept = http.post("/v1/responses", json={**body, "truncation": "auto"})
        hopeless = http.post(
            "/v1/responses",
            json={**body, "truncation": "auto", "input": "word " * 600, "max_output_tokens": 10},
        )
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "context_length_exceeded"
    assert kept.status_code == 200, kept.text
    validate(kept.json(), "ResponseResource")
    assert kept.json()["truncation"] == "auto"
    prompt = engine.prompts[-1]
    text = prompt_text(engine)
    assert len(prompt) <= 400 - 50
    assert "Be brief." in text and "note 7:" in text and "note 0:" not in text
    dropped = sum(f"note {i}:" not in text for i in range(8))
    assert dropped < 8 and all(f"note {i}:" in text for i in range(dropped, 8))  # the oldest went
    assert kept.json()["usage"]["input_tokens"] == len(prompt)
    # keeping one more message would not have left room for max_output_tokens
    shorter = {**body, "truncation": "disabled", "input": items[dropped - 1 :], "max_output_tokens": 1}
    with server.http() as http:
        counted = http.post("/v1/responses/input_tokens", json=shorter).json()
    assert counted.get("input_tokens", 401) > 400 - 50  # too long for room to answer, or refused
    assert hopeless.status_code == 400 and hopeless.json()["error"]["code"] == "context_length_exceeded"
