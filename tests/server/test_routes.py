"""The routes of the app: every ``/v1`` route answers at its alias without the prefix as
it does under ``/v1``; the aliases are hidden from the OpenAPI document; the metrics
count each route by its full path."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, APIWebSocketRoute
from fastapi.testclient import TestClient
from live import ScriptedEngine, completion, make_service
from test_responses_api import ANSWER, check_stream, sse_events

from openchatml.server.app import create_app

VERSIONED_ONLY = {"/v1/models/{model_id:path}"}
"""The ``/v1`` routes without an alias."""
ROOT_ONLY = {"/health", "/metrics"}
"""The routes at the root only."""
DOCS = {"/openapi.json", "/docs", "/docs/oauth2-redirect"}
PLAYGROUND = {"/", "/playground/{name}"}
"""The playground's page and files (hidden from the document: tests/server/test_playground.py)."""


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    return create_app(make_service(ScriptedEngine(completion(ANSWER)), tmp_path / "store.sqlite3"))


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


def http_routes(app: FastAPI) -> set[tuple[str, str]]:
    """(path, method) of every HTTP route of the API (not the documentation's)."""
    return {
        (route.path, method)
        for route in app.routes
        if isinstance(route, APIRoute)
        for method in route.methods
        if route.path not in DOCS | PLAYGROUND
    }


def test_every_v1_route_has_an_alias_at_the_root_and_nothing_else_is_there(app: FastAPI) -> None:
    routes = http_routes(app)
    versioned = {(path, method) for path, method in routes if path.startswith("/v1/")}
    at_root = {(path, method) for path, method in routes if not path.startswith("/v1/")}
    aliases = {(path.removeprefix("/v1"), method) for path, method in versioned if path not in VERSIONED_ONLY}
    assert at_root == aliases | {(path, "GET") for path in ROOT_ONLY}
    assert len(versioned) == 9 + 1 + 8  # create, get, delete, cancel, input_items, input_tokens, compact,
    # models ×2; chat completions; conversations: create, get, update, delete, items ×4
    sockets = {route.path for route in app.routes if isinstance(route, APIWebSocketRoute)}
    assert sockets == {"/v1/responses", "/responses"}


def test_the_aliases_are_hidden_from_the_openapi_document(client: TestClient, app: FastAPI) -> None:
    documented = client.get("/openapi.json").json()["paths"]
    expected: dict[str, set[str]] = {}
    for path, method in http_routes(app):
        if path.startswith("/v1/") or path in ROOT_ONLY:
            expected.setdefault(path.replace(":path", ""), set()).add(method.lower())
    assert {path: set(operations) for path, operations in documented.items()} == expected


def _without_ids(value: Any) -> Any:
    """``value`` with the ids and times that differ from one response to the next blanked."""
    if isinstance(value, dict):
        return {
            k: "*" if k in ("id", "created_at", "completed_at", "encrypted_content") else _without_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    if isinstance(value, str):
        return re.sub(r"\b(resp|msg|rs|cmp)_[0-9a-f]+", "*", value)
    return value


def _conversation(client: TestClient, prefix: str) -> list[tuple[str, int, Any]]:
    """Every HTTP route of the API asked once under ``prefix``: (route, status, body)."""
    answers: list[tuple[str, int, Any]] = []

    def ask(name: str, method: str, path: str, **options: Any) -> Any:
        answer = client.request(method, prefix + path, **options)
        body = sse_events(answer.text) if "stream" in path else answer.json()
        answers.append((name, answer.status_code, _without_ids(body)))
        return body

    body = {"model": "scripted-model", "input": "hi"}
    created = ask("create", "POST", "/responses", json=body)
    url = f"/responses/{created['id']}"
    ask("retrieve", "GET", url)
    ask("replay", "GET", url + "?stream=true")
    ask("input_items", "GET", url + "/input_items?order=asc")
    ask("cancel", "POST", url + "/cancel")
    ask("input_tokens", "POST", "/responses/input_tokens", json=body)
    ask("compact", "POST", "/responses/compact", json=body)
    ask("models", "GET", "/models")
    ask("bad query", "GET", url + "/input_items?limit=0")
    ask("delete", "DELETE", url)
    ask("deleted", "GET", url)
    return answers


def test_each_alias_answers_as_its_v1_route(client: TestClient) -> None:
    versioned = _conversation(client, "/v1")
    aliased = _conversation(client, "")
    assert aliased == versioned
    statuses = {name: status for name, status, _ in versioned}
    assert statuses == {
        "create": 200,
        "retrieve": 200,
        "replay": 200,
        "input_items": 200,
        "cancel": 409,
        "input_tokens": 200,
        "compact": 200,
        "models": 200,
        "bad query": 400,
        "delete": 200,
        "deleted": 404,
    }


@pytest.mark.parametrize("path", ["/v1/responses", "/responses"])
def test_websocket_mode_answers_at_both_paths(client: TestClient, path: str) -> None:
    with client.websocket_connect(path) as socket:
        socket.send_json({"type": "response.create", "model": "scripted-model", "input": "hi"})
        events = [socket.receive_json()]
        while events[-1]["type"] != "response.completed":
            events.append(socket.receive_json())
    check_stream(events)


def test_metrics_count_each_route_by_its_full_path(client: TestClient) -> None:
    client.get("/v1/responses/resp_missing")
    client.get("/responses/resp_missing")
    client.get("/responses/resp_missing")
    client.get("/nowhere")
    metrics = client.get("/metrics").text
    assert 'openchatml_http_requests_total{route="/v1/responses/{response_id}",status="404"} 1.0' in metrics
    assert 'openchatml_http_requests_total{route="/responses/{response_id}",status="404"} 2.0' in metrics
    assert 'openchatml_http_requests_total{route="unmatched",status="404"} 1.0' in metrics
