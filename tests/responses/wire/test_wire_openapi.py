"""``/docs``: a route declaring the wire's models shows real schemas in the app's OpenAPI
document (the request body, the response, every streaming event), every reference
resolved."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.testclient import TestClient

from openchatml.responses.wire.events import EVENT_CLASSES
from openchatml.responses.wire.openapi import add_schemas, create_operation


def app_document() -> dict[str, Any]:
    app = FastAPI(title="t")

    @app.post("/v1/responses", openapi_extra=create_operation())
    async def create() -> None:
        return None

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = add_schemas(get_openapi(title=app.title, version="0", routes=app.routes))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    with TestClient(app) as client:
        answer = client.get("/openapi.json")
    assert answer.status_code == 200
    document: dict[str, Any] = answer.json()
    return document


def refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for v in value.values() for r in refs(v)]
    return [r for v in value for r in refs(v)] if isinstance(value, list) else []


def test_the_create_route_shows_the_wire() -> None:
    document = app_document()
    schemas = document["components"]["schemas"]
    operation = document["paths"]["/v1/responses"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/CreateResponseBody"}
    assert {"model", "input", "tools", "tool_choice", "reasoning", "text"} <= set(
        schemas["CreateResponseBody"]["properties"]
    )
    answers = operation["responses"]["200"]["content"]
    assert answers["application/json"]["schema"] == {"$ref": "#/components/schemas/ResponseResource"}
    events = schemas["ResponseStreamEvent"]
    assert len(events["oneOf"]) == len(EVENT_CLASSES)
    assert set(events["discriminator"]["mapping"]) == {cls.type for cls in EVENT_CLASSES}
    for ref in refs(document):
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
    assert schemas["OutputTextDelta"]["properties"]["type"]["const"] == "response.output_text.delta"
    custom = {"CustomTool", "CustomChoice", "GrammarFormat", "CustomToolCall", "CustomToolCallOutput"}
    assert custom <= set(schemas)
    assert {
        "openai:response.custom_tool_call_input.delta",
        "openai:response.custom_tool_call_input.done",
    } <= set(events["discriminator"]["mapping"])
    tools = schemas["CreateResponseBody"]["properties"]["tools"]
    assert {"#/components/schemas/FunctionTool", "#/components/schemas/CustomTool"} <= set(refs(tools))
