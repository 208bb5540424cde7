"""``/openapi.json`` and ``/docs`` of the app: the document holds the wire's real schemas
(the request body, the response, every streaming event; every reference resolved) and
they describe what the server answers; the Swagger UI page loads nothing from another
host."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient
from live import ScriptedEngine, completion, make_service
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from test_responses_api import CALL, THINK, WEATHER_TOOL, sse_events

from openchatml.server.app import create_app

SCHEMAS = "#/components/schemas/"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    engine = ScriptedEngine(completion(THINK, CALL))
    with TestClient(create_app(make_service(engine, tmp_path / "store.sqlite3"))) as client:
        yield client


@pytest.fixture
def document(client: TestClient) -> dict[str, Any]:
    answer = client.get("/openapi.json")
    assert answer.status_code == 200
    data: dict[str, Any] = answer.json()
    return data


def refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for v in value.values() for r in refs(v)]
    return [r for v in value for r in refs(v)] if isinstance(value, list) else []


def check(document: dict[str, Any], instance: Any, name: str) -> None:
    """Raise unless ``instance`` matches the document's schema ``name``."""
    registry = Registry().with_resource(
        "app", Resource.from_contents(document, default_specification=DRAFT202012)
    )
    validator = jsonschema.Draft202012Validator({"$ref": f"app{SCHEMAS}{name}"}, registry=registry)
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        raise error


def test_the_document_holds_the_request_body_and_the_response(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    create = document["paths"]["/v1/responses"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": SCHEMAS + "CreateResponseBody"
    }
    answers = create["responses"]["200"]["content"]
    assert answers["application/json"]["schema"] == {"$ref": SCHEMAS + "ResponseResource"}
    assert answers["text/event-stream"]["schema"] == {"$ref": SCHEMAS + "ResponseStreamEvent"}
    assert {"model", "input", "tools", "stream", "background"} <= set(
        schemas["CreateResponseBody"]["properties"]
    )
    assert {"id", "status", "output", "usage"} <= set(schemas["ResponseResource"]["properties"])
    assert "response.reasoning.delta" in schemas["ResponseStreamEvent"]["discriminator"]["mapping"]
    for path, method in (
        ("/v1/responses/{response_id}", "get"),
        ("/v1/responses/{response_id}/cancel", "post"),
    ):
        content = document["paths"][path][method]["responses"]["200"]["content"]
        assert content["application/json"]["schema"] == {"$ref": SCHEMAS + "ResponseResource"}
    header = next(p for p in create["parameters"] if p["in"] == "header")
    assert header["name"] == "OpenChatML-Wire"
    for ref in refs(document):
        assert ref.startswith(SCHEMAS) and ref.removeprefix(SCHEMAS) in schemas, ref


def test_the_schemas_describe_what_the_server_answers(client: TestClient, document: dict[str, Any]) -> None:
    body = {"model": "scripted-model", "input": "hi", "tools": [WEATHER_TOOL]}
    check(document, body, "CreateResponseBody")
    created = client.post("/v1/responses", json=body).json()
    check(document, created, "ResponseResource")
    events = sse_events(client.get(f"/v1/responses/{created['id']}", params={"stream": "true"}).text)
    assert {"response.reasoning.delta", "response.function_call_arguments.delta"} <= {
        e["type"] for e in events
    }
    for event in events:
        check(document, event, "ResponseStreamEvent")
    with pytest.raises(jsonschema.ValidationError):
        check(document, {**created, "status": "bogus"}, "ResponseResource")


def test_docs_loads_swagger_ui_from_the_server_itself(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "SwaggerUIBundle" in html and "'/openapi.json'" in html
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html, re.IGNORECASE), "an external host"
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert len(assets) == 3  # script, style sheet, icon
    kinds = {"js": "javascript", "css": "text/css", "png": "image/png"}
    for asset in assets:
        assert asset.startswith("/docs/assets/")
        answer = client.get(asset)
        assert answer.status_code == 200 and len(answer.content) > 1000, asset
        assert kinds[asset.rsplit(".", 1)[1]] in answer.headers["content-type"], asset
    assert client.get("/docs/oauth2-redirect").status_code == 200


def test_a_missing_asset_is_a_404_in_the_error_shape(client: TestClient) -> None:
    for path in ("/docs/assets/nothing.js", "/docs/assets/../../secret.key"):
        answer = client.get(path)
        assert answer.status_code == 404
        assert set(answer.json()["error"]) == {"message", "type", "param", "code"}
