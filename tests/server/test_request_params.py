"""The parameters of ``POST /v1/responses`` as real clients send them: every parameter of
the official SDK's ``responses.create`` is accepted (honoured, echoed, or ignored and
named), a known parameter of the wrong type is a 400 naming it, and a parameter no one
here knows (Codex's ``client_metadata``) is ignored: named in the answer's
``OpenChatML-Ignored-Parameters`` header (a WebSocket: an event), logged once, the
answer otherwise what it would have been."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import httpx
import openai
import pytest
from live import ScriptedEngine, completion
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from openapi import validate
from test_responses_api import ANSWER, THINK, WEATHER_TOOL, check_stream, sse_events

from openchatml.responses.errors import RequestError
from openchatml.responses.request import parse_request
from openchatml.responses.wire.request import IGNORED_FIELDS, MAX_REPORTED

SDK_FIELDS = ResponseCreateParamsStreaming.__required_keys__ | ResponseCreateParamsStreaming.__optional_keys__
"""Every parameter of the SDK's ``responses.create``."""
HEADER = "openchatml-ignored-parameters"
MODEL = "scripted-model"


def ignored_header(reply: Any) -> list[str]:
    value = reply.headers.get(HEADER)
    return [] if value is None else value.split(", ")


def every_parameter(previous_id: str) -> dict[str, Any]:
    """A value for every parameter of ``responses.create`` but ``stream``."""
    return {
        "model": MODEL,
        "input": [{"role": "user", "content": "What is the weather?"}],
        "instructions": "Be brief.",
        "previous_response_id": previous_id,
        "conversation": None,  # a conversation is exclusive of previous_response_id
        "prompt": None,  # no stored prompts here: any id is a 404 (see below)
        "tools": [WEATHER_TOOL],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "text": {"format": {"type": "text"}, "verbosity": "low"},
        "reasoning": {"effort": "max", "context": "all_turns", "mode": "pro"},
        "include": [
            "reasoning.encrypted_content",
            "message.output_text.logprobs",
            "file_search_call.results",
            "web_search_call.results",
            "web_search_call.action.sources",
            "message.input_image.image_url",
            "computer_call_output.output.image_url",
            "code_interpreter_call.outputs",
        ],
        "temperature": 0.5,
        "top_p": 0.9,
        "top_logprobs": 2,
        "max_output_tokens": 200,
        "max_tool_calls": 3,
        "truncation": "auto",
        "metadata": {"k": "v"},
        "store": True,
        "background": False,
        "service_tier": "flex",
        "user": "user-1",
        "safety_identifier": "safety-1",
        "prompt_cache_key": "cache-1",
        "prompt_cache_retention": "24h",
        "prompt_cache_options": {"mode": "explicit", "ttl": "12h", "prewarm": False},
        "context_management": [{"type": "compaction", "compact_threshold": 1000}],
        "moderation": {"model": "omni-moderation-latest", "policy": {"input": {"mode": "block"}}},
        "background_options": {"completion_window": "soonest", "continuation_id": "c-1"},
        "image": {"context_compression": "auto"},
        "access_programs": {"cyber": "standard"},
        "stream_options": {"include_obfuscation": False},
    }


EXPECTED_IGNORED = {
    "prompt_cache_retention",
    "prompt_cache_options",
    "context_management",
    "moderation",
    "background_options",
    "image",
    "access_programs",
    "reasoning.context",
    "reasoning.mode",
}


def test_the_test_gives_every_sdk_parameter() -> None:
    assert set(every_parameter("resp_1")) | {"stream"} == SDK_FIELDS
    assert set(IGNORED_FIELDS) == EXPECTED_IGNORED


def test_every_sdk_parameter_is_accepted_honoured_or_echoed(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    client = server.client()
    first = client.responses.create(model=MODEL, input="hi")
    raw = client.responses.with_raw_response.create(**every_parameter(first.id))
    assert set(ignored_header(raw)) == EXPECTED_IGNORED
    response = raw.parse()
    validate(raw.http_response.json(), "ResponseResource")
    assert response.status == "completed" and response.output_text == "Hello there!"
    # honoured
    params = engine.params[-1]
    assert (params.temperature, params.top_p, params.logprobs) == (0.5, 0.9, 2)
    assert params.max_tokens is not None and params.max_tokens <= 200
    assert response.output[-1].content[0].logprobs  # include: message.output_text.logprobs
    assert response.output[0].encrypted_content  # include: reasoning.encrypted_content
    assert response.previous_response_id == first.id and response.instructions == "Be brief."
    assert response.reasoning is not None and response.reasoning.effort == "xhigh"  # max: the highest
    assert (response.truncation, response.parallel_tool_calls) == ("auto", False)
    # echoed
    assert response.metadata == {"k": "v"} and response.user == "user-1"
    assert (response.safety_identifier, response.prompt_cache_key) == ("safety-1", "cache-1")
    assert response.service_tier == "default"  # the one tier that serves it
    assert response.text is not None and response.text.verbosity == "low"
    assert (response.max_tool_calls, response.top_logprobs) == (3, 2)
    # ignored: not echoed as if they had applied
    data = raw.http_response.json()
    assert not {"moderation", "prompt_cache_retention", "context_management", "image"} & set(data)


def test_a_stream_takes_every_parameter_too(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(THINK, ANSWER)))
    client = server.client()
    first = client.responses.create(model=MODEL, input="hi")
    body = {**every_parameter(first.id), "stream": True, "stream_options": {"include_obfuscation": True}}
    with server.http() as http:
        reply = http.post("/v1/responses", json=body)
    assert reply.status_code == 200, reply.text
    assert set(ignored_header(reply)) == EXPECTED_IGNORED
    events = sse_events(reply.text)
    check_stream(events)
    assert events[-1]["response"]["service_tier"] == "default"
    assert all("obfuscation" not in event for event in events)


def test_a_stored_prompt_is_refused_naming_prompt_id(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    client = serve(engine).client()
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model=MODEL, prompt={"id": "pmpt_123", "variables": {"city": "Paris"}})
    error = caught.value.body
    assert isinstance(error, dict)
    assert (error["param"], error["code"], error["type"]) == ("prompt.id", "prompt_not_found", "not_found")
    assert "pmpt_123" in error["message"] and "instructions" in error["message"]
    assert engine.prompts == []


WRONG = [
    ({"access_programs": {"cyber": "red"}}, "access_programs.cyber", "invalid_value"),
    ({"access_programs": "standard"}, "access_programs", "invalid_type"),
    (
        {"background_options": {"completion_window": "1h"}},
        "background_options.completion_window",
        "invalid_value",
    ),
    ({"background_options": {"continuation_id": 7}}, "background_options.continuation_id", "invalid_type"),
    ({"context_management": {"type": "compaction"}}, "context_management", "invalid_type"),
    ({"context_management": [{"type": "summary"}]}, "context_management[0].type", "invalid_value"),
    (
        {"context_management": [{"type": "compaction", "compact_threshold": 0}]},
        "context_management[0].compact_threshold",
        "invalid_value",
    ),
    ({"context_management": [{"type": "compaction"}] * 17}, "context_management", "invalid_value"),
    ({"image": {"context_compression": "always"}}, "image.context_compression", "invalid_value"),
    ({"moderation": {"policy": None}}, "moderation.model", "invalid_type"),
    (
        {"moderation": {"model": "m", "policy": {"input": {"mode": "drop"}}}},
        "moderation.policy.input.mode",
        "invalid_value",
    ),
    ({"prompt": {"id": 5}}, "prompt.id", "invalid_type"),
    ({"prompt": {"id": "pmpt_1", "variables": ["x"]}}, "prompt.variables", "invalid_type"),
    ({"prompt_cache_options": {"prewarm": "yes"}}, "prompt_cache_options.prewarm", "invalid_type"),
    ({"prompt_cache_options": {"ttl": "1d"}}, "prompt_cache_options.ttl", "invalid_value"),
    ({"prompt_cache_retention": "1h"}, "prompt_cache_retention", "invalid_value"),
    ({"service_tier": "turbo"}, "service_tier", "invalid_value"),
    ({"reasoning": {"context": "everything"}}, "reasoning.context", "invalid_value"),
    ({"reasoning": {"generate_summary": "long"}}, "reasoning.generate_summary", "invalid_value"),
    ({"include": ["web_search_call.everything"]}, "include[0]", "invalid_value"),
    ({"stream_options": {"include_obfuscation": 1}}, "stream_options.include_obfuscation", "invalid_type"),
    ({"safety_identifier": "s" * 129}, "safety_identifier", "string_above_max_length"),
    ({"user": 5}, "user", "invalid_type"),
    ({"client_metadata": {"a": 1}, "temperature": "hot"}, "temperature", "invalid_type"),
]


@pytest.mark.parametrize(("extra", "param", "code"), WRONG, ids=[w[1] for w in WRONG])
def test_a_known_parameter_of_the_wrong_type_is_refused_naming_it(
    extra: dict[str, Any], param: str, code: str
) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request({"model": MODEL, "input": "x", **extra})
    assert (caught.value.param, caught.value.code, caught.value.status) == (param, code, 400)


def test_wrong_types_are_refused_over_http(serve: Any) -> None:
    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine)
    with server.http() as http:
        for extra, param, code in WRONG:
            reply = http.post("/v1/responses", json={"model": MODEL, "input": "x", **extra})
            assert reply.status_code == 400, (param, reply.text)
            assert (reply.json()["error"]["param"], reply.json()["error"]["code"]) == (param, code)
    assert engine.prompts == []


def test_effort_max_and_the_deprecated_generate_summary_are_read() -> None:
    request = parse_request({"input": "x", "reasoning": {"effort": "max", "generate_summary": "concise"}})
    assert (request.reasoning_effort, request.reasoning_summary) == ("xhigh", "concise")
    both = parse_request({"input": "x", "reasoning": {"summary": "detailed", "generate_summary": "concise"}})
    assert both.reasoning_summary == "detailed"
    assert parse_request({"input": "x", "reasoning": {"effort": "minimal"}}).reasoning_effort == "low"


def test_ignored_parameters_are_named_in_the_request() -> None:
    request = parse_request(
        {
            "input": "x",
            "client_metadata": {"x-codex-turn-metadata": "{}"},
            "moderation": None,  # null: nothing asked, nothing ignored
            "image": {"context_compression": "auto"},
            "reasoning": {"effort": "low", "context": None, "mode": "pro"},
            "text": {"verbosity": "low", "nested_unknown": 1},  # unknown fields inside are not named
        }
    )
    assert request.ignored == ("client_metadata", "image", "reasoning.mode")
    many = parse_request({"input": "x", **{f"extra_{n}": n for n in range(40)}, "y" * 500: 1})
    assert many.ignored == tuple(f"extra_{n}" for n in range(MAX_REPORTED))
    assert parse_request({"input": "x", "y" * 500: 1}).ignored == ("y" * 64,)


def test_ignored_values_keep_the_nesting_bound() -> None:
    deep: Any = "x"
    for _ in range(80):
        deep = [deep]
    with pytest.raises(RequestError) as caught:
        parse_request({"input": "x", "client_metadata": deep})
    assert caught.value.code == "json_too_deep"


def test_unknown_parameters_are_ignored_named_and_logged_once(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine)
    odd = f"x_{uuid.uuid4().hex[:8]}"
    extra = {"client_metadata": {"x-codex-installation-id": "abc"}, odd: [1, {"a": None}]}
    caplog.set_level(logging.INFO, logger="openchatml.server")
    with server.http() as http:
        plain = http.post("/v1/responses", json={"model": MODEL, "input": "hi"})
        given = http.post("/v1/responses", json={"model": MODEL, "input": "hi", **extra})
        again = http.post("/v1/responses", json={"model": MODEL, "input": "hi", **extra})
        streamed = http.post("/v1/responses", json={"model": MODEL, "input": "hi", "stream": True, **extra})
    assert HEADER not in plain.headers
    for reply in (given, again, streamed):
        assert reply.status_code == 200, reply.text
        assert ignored_header(reply) == ["client_metadata", odd]
    for key in ("status", "usage", "metadata", "instructions", "reasoning", "text"):
        assert given.json()[key] == plain.json()[key], key
    assert [i["content"] for i in given.json()["output"]] == [i["content"] for i in plain.json()["output"]]
    check_stream(sse_events(streamed.text))
    assert engine.prompts[0] == engine.prompts[1]  # the ignored parameters reach no prompt
    logged = [r.getMessage() for r in caplog.records if odd in r.getMessage()]
    assert len(logged) == 1 and "not a parameter this server knows" in logged[0], logged


def test_the_sdk_sends_unknown_parameters_through_extra_body(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    raw = server.client().responses.with_raw_response.create(
        model=MODEL, input="hi", extra_body={"client_metadata": {"originator": "codex_cli_rs"}}
    )
    assert ignored_header(raw) == ["client_metadata"]
    assert raw.parse().output_text == "Hello there!"


def test_the_header_escapes_odd_names_and_names_at_most_sixteen(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    odd = "a b,é<|start|>\n"
    body = {"model": MODEL, "input": "hi", odd: 1, **{f"k{n}": n for n in range(30)}}
    with server.http() as http:
        reply = http.post("/v1/responses", json=body)
    assert reply.status_code == 200, reply.text
    names = ignored_header(reply)
    assert names[0] == "a%20b%2C%C3%A9%3C%7Cstart%7C%3E%0A"
    assert names[1:] == [f"k{n}" for n in range(MAX_REPORTED - 1)]


def test_compaction_ignores_what_it_does_not_use_and_says_so(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    body = {
        "model": MODEL,
        "input": [{"role": "user", "content": "hi"}],
        "instructions": "Summarise.",
        "tools": [WEATHER_TOOL],  # what Codex sends along
        "parallel_tool_calls": True,
        "reasoning": {"effort": "high"},
        "client_metadata": {"a": "b"},
    }
    with server.http() as http:
        reply = http.post("/v1/responses/compact", json=body)
    assert reply.status_code == 200, reply.text
    assert reply.json()["output"][0]["type"] == "compaction"
    assert ignored_header(reply) == ["tools", "parallel_tool_calls", "reasoning", "client_metadata"]


def test_websocket_mode_names_ignored_parameters_in_an_event(serve: Any) -> None:
    from websockets.sync.client import connect

    server = serve(ScriptedEngine(completion(THINK, ANSWER)))
    with connect(server.url.replace("http", "ws") + "/v1/responses") as ws:
        message = {"type": "response.create", "model": MODEL, "input": "hi", "client_metadata": {"a": 1}}
        ws.send(json.dumps(message))
        first = json.loads(ws.recv(timeout=20))
        assert first == {"type": "openchatml:ignored_parameters", "parameters": ["client_metadata"]}
        events = [json.loads(ws.recv(timeout=20))]
        while events[-1]["type"] not in ("response.completed", "response.failed", "error"):
            events.append(json.loads(ws.recv(timeout=20)))
        check_stream(events)
        ws.send(json.dumps({"type": "response.create", "model": MODEL, "input": "again", "store": False}))
        assert json.loads(ws.recv(timeout=20))["type"] == "response.created"  # nothing ignored: no event


CLIENT_HEADERS = {
    "OpenAI-Beta": "responses=experimental",
    "originator": "codex_cli_rs",
    "session_id": str(uuid.uuid4()),
    "version": "0.99.0",
    "x-stainless-lang": "python",
    "x-stainless-package-version": "3.54.0",
    "x-stainless-retry-count": "0",
    "x-stainless-raw-response": "true",
    "OpenAI-Organization": "org-123",
    "OpenAI-Project": "proj_123",
    "Idempotency-Key": "stainless-python-retry-123",
    "chatgpt-account-id": "acct-1",
    "x-request-id": "not a sane id",
}


def test_the_headers_clients_send_never_cause_an_error(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with httpx.Client(base_url=server.url, headers=CLIENT_HEADERS, timeout=60) as http:
        created = http.post("/v1/responses", json={"model": MODEL, "input": "hi"})
        streamed = http.post("/v1/responses", json={"model": MODEL, "input": "hi", "stream": True})
        fetched = http.get(f"/v1/responses/{created.json()['id']}")
        models = http.get("/v1/models")
    for reply in (created, streamed, fetched, models):
        assert reply.status_code == 200, reply.text
        assert reply.headers["x-request-id"].startswith("req_")  # the client's was not sane
    given = {k: v for k, v in CLIENT_HEADERS.items() if k not in ("x-request-id", "x-stainless-raw-response")}
    client = server.client(default_headers=given)
    assert client.responses.create(model=MODEL, input="hi").output_text == "Hello there!"
