"""The wire dialect of every answer, end to end.

* ``openresponses`` (the ``OpenChatML-Wire: openresponses`` header, or the default
  ``auto`` for a client that is no OpenAI SDK): every JSON body and every SSE event
  validates against the Open Responses OpenAPI document; reasoning streams as
  ``response.reasoning.delta``.
* ``openai`` (the official SDK, whose ``x-stainless-*`` headers make ``auto`` pick it):
  the SDK builds its own typed events (``ResponseReasoningTextDeltaEvent``), and
  ``retrieve`` and replays (live, rebuilt from a snapshot, or stored as they streamed)
  come back in the same dialect.
* ``--wire openresponses`` holds even for the SDK; the header beats the server's
  setting; a header naming no dialect is a 400 naming it; WebSocket mode takes the
  dialect from its handshake.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from live import LiveServer, ScriptedEngine, completion, make_service
from openai.types.responses import ResponseReasoningTextDeltaEvent
from openapi import validate, validate_event
from sdk import validate_openai_event, validate_openai_response
from starlette.testclient import WebSocketDenialResponse
from test_responses_api import ANSWER, CALL, THINK, WEATHER_TOOL, check_stream, sse_events

from openchatml.cli import main
from openchatml.server.app import create_app
from openchatml.server.settings import ServiceSettings

OURS = "response.reasoning.delta"
OPENAI = "response.reasoning_text.delta"
SDK_HEADERS = {"x-stainless-lang": "python", "x-stainless-package-version": "1.0.0"}
BODY = {"model": "scripted-model", "input": "hi"}


def reasoning_names(events: list[dict[str, Any]]) -> set[str]:
    """The reasoning delta names a stream uses."""
    return {e["type"] for e in events} & {OURS, OPENAI}


def check_openai_stream(events: list[dict[str, Any]]) -> None:
    """Events the SDK's types accept, numbered on from the first, reasoning in OpenAI's name."""
    first = events[0]["sequence_number"]
    for n, event in enumerate(events):
        validate_openai_event(event)
        assert event["sequence_number"] == first + n
    assert reasoning_names(events) == {OPENAI}


def runs_of(events: list[dict[str, Any]]) -> list[str]:
    """The event types of a stream, each run of one type shown once."""
    kinds = [e["type"] for e in events]
    return [k for n, k in enumerate(kinds) if not n or kinds[n - 1] != k]


def wait_until_stored(server: LiveServer, response_id: str) -> None:
    """Until the run of ``response_id`` has ended and saved (the store answers for it then)."""
    deadline = time.monotonic() + 20
    while (run := server.service.runs.get(response_id)) is not None and not (run.task and run.task.done()):
        assert time.monotonic() < deadline, "the response did not end"
        time.sleep(0.02)


# --- openresponses: the Open Responses schema's names ----------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{"OpenChatML-Wire": "openresponses"}, {}, {"OpenChatML-Wire": "openresponses", **SDK_HEADERS}],
    ids=["header", "auto without an SDK", "header over an SDK"],
)
def test_every_answer_validates_against_the_open_responses_document(
    serve: Any, headers: dict[str, str]
) -> None:
    engine = ScriptedEngine(completion(THINK, CALL), chunk=1)
    server = serve(engine)
    body = {**BODY, "tools": [WEATHER_TOOL]}
    with server.http(headers=headers) as http:
        created = http.post("/v1/responses", json=body).json()
        validate(created, "ResponseResource")
        assert created["usage"]["input_tokens_details"] == {"cached_tokens": 0}  # no OpenAI extra

        events = sse_events(http.post("/v1/responses", json={**body, "stream": True}).text)
        check_stream(events)  # every event against the document
        assert reasoning_names(events) == {OURS}

        validate(http.get(f"/v1/responses/{created['id']}").json(), "ResponseResource")
        replayed = sse_events(
            http.get(f"/v1/responses/{created['id']}", params={"stream": "true", "starting_after": 2}).text
        )
        assert replayed[0]["sequence_number"] == 3
        for event in replayed:
            validate_event(event)
        assert reasoning_names(replayed) == {OURS}

        items = http.get(f"/v1/responses/{created['id']}/input_items").json()
        assert items["object"] == "list" and items["data"]
        for item in items["data"]:
            validate(item, "ItemField")

        compacted = http.post("/v1/responses/compact", json=BODY).json()
        validate(compacted, "CompactResource")

        engine.delay = 0.05
        queued = http.post("/v1/responses", json={**body, "background": True}).json()
        validate(queued, "ResponseResource")
        cancelled = http.post(f"/v1/responses/{queued['id']}/cancel").json()
        validate(cancelled, "ResponseResource")
        assert cancelled["status"] == "cancelled"


def test_stored_events_of_a_background_response_are_served_as_stored(serve: Any, tmp_path: Path) -> None:
    server = serve(ScriptedEngine(completion(THINK, ANSWER), chunk=1))
    with server.http() as http:
        created = http.post("/v1/responses", json={**BODY, "background": True}).json()
        wait_until_stored(server, created["id"])
        events = sse_events(http.get(f"/v1/responses/{created['id']}", params={"stream": "true"}).text)
    check_stream(events)
    assert reasoning_names(events) == {OURS}
    with sqlite3.connect(tmp_path / "store.sqlite3") as conn:
        stored = [json.loads(row[0]) for row in conn.execute("SELECT body FROM events ORDER BY sequence")]
    assert stored == events  # the store keeps the Open Responses spelling


# --- openai: the official SDK ------------------------------------------------------------------


def test_the_sdk_gets_openai_names_from_streams_retrieve_and_replays(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(THINK, ANSWER), chunk=1))
    client = server.client()
    streamed = list(client.responses.create(**BODY, stream=True))
    kinds = [event.type for event in streamed]
    assert OPENAI in kinds and OURS not in kinds
    deltas = [event for event in streamed if event.type == OPENAI]
    assert all(type(event) is ResponseReasoningTextDeltaEvent for event in deltas)
    assert "".join(event.delta for event in deltas) == "The user greets me."
    response_id = streamed[-1].response.id

    raw = client.responses.with_raw_response.retrieve(response_id).http_response.json()
    validate_openai_response(raw)
    assert raw["usage"]["input_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}
    assert client.responses.retrieve(response_id).output_text == "Hello there!"

    wait_until_stored(server, response_id)  # a live run's replay keeps each delta; the store's merges them
    replayed = list(client.responses.retrieve(response_id, stream=True, starting_after=2))
    assert [event.sequence_number for event in replayed] == list(range(3, 3 + len(replayed)))
    assert [type(event) for event in replayed if event.type == OPENAI] == [ResponseReasoningTextDeltaEvent]
    assert OURS not in {event.type for event in replayed}

    background = client.responses.create(**BODY, background=True)
    wait_until_stored(server, background.id)  # its events now come from the store
    stored = list(client.responses.retrieve(background.id, stream=True, starting_after=1))
    assert stored[0].sequence_number == 2 and stored[-1].type == "response.completed"
    assert [type(event) for event in stored if event.type == OPENAI]
    assert all(type(event) is ResponseReasoningTextDeltaEvent for event in stored if event.type == OPENAI)
    assert OURS not in {event.type for event in stored}


def test_the_sdk_headers_pick_openai_for_raw_http_too(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(THINK, ANSWER), chunk=1))
    with server.http(headers=SDK_HEADERS) as http:
        events = sse_events(http.post("/v1/responses", json={**BODY, "stream": True}).text)
        check_openai_stream(events)
        response_id = events[-1]["response"]["id"]
        replayed = sse_events(http.get(f"/v1/responses/{response_id}", params={"stream": "true"}).text)
    check_openai_stream(replayed)
    assert runs_of(replayed) == runs_of(events)  # a replay gives each text in one delta


# --- the server's setting, the header, and a bad header --------------------------------------


def test_the_server_setting_openresponses_holds_even_for_the_sdk(serve: Any) -> None:
    server = serve(
        ScriptedEngine(completion(THINK, ANSWER), chunk=1), settings=ServiceSettings(wire="openresponses")
    )
    kinds = {event.type for event in server.client().responses.create(**BODY, stream=True)}
    assert OURS in kinds and OPENAI not in kinds
    with server.http(headers=SDK_HEADERS) as http:
        events = sse_events(http.post("/v1/responses", json={**BODY, "stream": True}).text)
    check_stream(events)


def test_the_header_beats_the_server_setting(serve: Any) -> None:
    forced = serve(
        ScriptedEngine(completion(THINK, ANSWER), chunk=1), settings=ServiceSettings(wire="openai")
    )
    with forced.http() as http:
        events = sse_events(http.post("/v1/responses", json={**BODY, "stream": True}).text)
        check_openai_stream(events)  # the setting, for a client that is no SDK
        asked = {"OpenChatML-Wire": "OpenResponses"}  # any case
        events = sse_events(http.post("/v1/responses", json={**BODY, "stream": True}, headers=asked).text)
    check_stream(events)
    assert reasoning_names(events) == {OURS}
    sdk = forced.client(default_headers={"OpenChatML-Wire": "openresponses"})
    kinds = {event.type for event in sdk.responses.create(**BODY, stream=True)}
    assert OURS in kinds and OPENAI not in kinds


@pytest.mark.parametrize("value", ["klingon", "", "openai, openresponses"])
def test_a_header_naming_no_dialect_is_a_400_naming_the_header(serve: Any, value: str) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    with server.http() as http:
        created = http.post("/v1/responses", json=BODY).json()
        headers = {"OpenChatML-Wire": value}
        for answer in (
            http.post("/v1/responses", json=BODY, headers=headers),
            http.get(f"/v1/responses/{created['id']}", headers=headers),
            http.get(f"/v1/responses/{created['id']}/input_items", headers=headers),
        ):
            assert answer.status_code == 400
            error = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert (error["type"], error["param"], error["code"]) == (
                "invalid_request_error",
                "OpenChatML-Wire",
                "invalid_header",
            )
            assert "OpenChatML-Wire" in error["message"]
    assert len(server.service.engine.prompts) == 1  # a refused request reaches no engine


def test_a_bad_server_setting_is_refused() -> None:
    with pytest.raises(ValueError, match="klingon"):
        ServiceSettings(wire="klingon")


def test_serve_passes_its_wire_option_to_the_server(monkeypatch: Any, tmp_path: Path) -> None:
    configs: list[Any] = []
    monkeypatch.setattr("openchatml.server.serve", lambda config: configs.append(config) or 0)
    runner = CliRunner()
    base = ["serve", "--model", "tiny", "--store", "none", "--data-dir", str(tmp_path)]
    assert runner.invoke(main, base).exit_code == 0
    assert runner.invoke(main, [*base, "--wire", "openresponses"]).exit_code == 0
    assert [config.wire for config in configs] == ["auto", "openresponses"]
    assert runner.invoke(main, [*base, "--wire", "klingon"]).exit_code == 2


# --- WebSocket mode: the handshake's headers ----------------------------------------------------


@pytest.fixture
def socket_client(tmp_path: Path) -> Any:
    service = make_service(ScriptedEngine(completion(THINK, ANSWER), chunk=1), tmp_path / "ws.sqlite3")
    with TestClient(create_app(service)) as client:
        yield client


def socket_events(client: TestClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    with client.websocket_connect("/v1/responses", headers=headers) as socket:
        socket.send_json({"type": "response.create", **BODY})
        events = [socket.receive_json()]
        while events[-1]["type"] != "response.completed":
            events.append(socket.receive_json())
    return events


@pytest.mark.parametrize(
    ("headers", "dialect"),
    [
        ({}, "openresponses"),
        (SDK_HEADERS, "openai"),
        ({"originator": "codex_cli_rs"}, "openai"),
        ({"OpenChatML-Wire": "openai"}, "openai"),
        ({"OpenChatML-Wire": "openresponses", **SDK_HEADERS}, "openresponses"),
    ],
)
def test_websocket_mode_takes_the_dialect_from_its_handshake(
    socket_client: TestClient, headers: dict[str, str], dialect: str
) -> None:
    events = socket_events(socket_client, headers)
    if dialect == "openai":
        check_openai_stream(events)
    else:
        check_stream(events)
        assert reasoning_names(events) == {OURS}


def test_a_websocket_handshake_naming_no_dialect_is_refused(socket_client: TestClient) -> None:
    with pytest.raises(WebSocketDenialResponse) as caught:
        socket_events(socket_client, {"OpenChatML-Wire": "klingon"})
    assert caught.value.status_code == 400
    assert caught.value.json()["error"]["param"] == "OpenChatML-Wire"


def test_a_cli_server_with_wire_openresponses_answers_the_sdk_in_the_schemas_names(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the demo model needs torch")
    from cli_server import CliServer

    server = CliServer(["--model", "tiny-random", "--device", "cpu", "--wire", "openresponses"], tmp_path)
    try:
        client = server.client()
        raw = client.responses.with_raw_response.create(
            model="tiny-random", input="hi", max_output_tokens=4
        ).http_response.json()
        validate(raw, "ResponseResource")
        assert raw["usage"]["input_tokens_details"] == {"cached_tokens": 0}
        with httpx.Client(base_url=server.url, headers=SDK_HEADERS, timeout=60) as http:
            again = http.get(f"/v1/responses/{raw['id']}").json()
        assert again["usage"]["input_tokens_details"] == {"cached_tokens": 0}
    finally:
        server.stop()
    assert server.process.returncode == 0, server.log()
