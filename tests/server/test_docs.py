"""``/openapi.json`` and ``/docs`` of the app: the document holds the wire's real schemas
(the request bodies and answers of ``/v1/responses``, ``/v1/chat/completions`` and
``/v1/conversations``, every streaming event and chunk; every reference resolved) and
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
from test_chat_completions import HI, MODEL, WEATHER, sse_chunks
from test_responses_api import ANSWER, CALL, THINK, WEATHER_TOOL, sse_events

from openchatml.chat.objects import ChatCompletion, ChatCompletionChunk
from openchatml.chat.openapi import add_chat_schemas
from openchatml.core.messages import Message
from openchatml.server.app import create_app

SCHEMAS = "#/components/schemas/"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    engine = ScriptedEngine(completion(THINK, CALL))
    with TestClient(create_app(make_service(engine, tmp_path / "store.sqlite3"))) as client:
        yield client


@pytest.fixture(params=[(THINK, CALL), (THINK, ANSWER)], ids=["call", "answer"])
def chat_client(request: Any, tmp_path: Path) -> Iterator[TestClient]:
    """A client of a server whose model reasons then calls a tool, or answers."""
    messages: tuple[Message, ...] = request.param
    engine = ScriptedEngine(completion(*messages), chunk=2)
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


def answer_schema(operation: dict[str, Any], kind: str = "application/json") -> str:
    """The name of the schema an operation's 200 answer refers to."""
    ref: str = operation["responses"]["200"]["content"][kind]["schema"]["$ref"]
    assert ref.startswith(SCHEMAS)
    return ref.removeprefix(SCHEMAS)


def body_schema(operation: dict[str, Any]) -> str:
    """The name of the schema of an operation's (required) JSON request body."""
    assert operation["requestBody"]["required"] is True
    ref: str = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.startswith(SCHEMAS)
    return ref.removeprefix(SCHEMAS)


CONVERSATION = "/v1/conversations/{conversation_id}"
CONVERSATION_OPERATIONS = {
    ("/v1/conversations", "post"): ("CreateConversationBody", "ConversationResource"),
    (CONVERSATION, "get"): (None, "ConversationResource"),
    (CONVERSATION, "post"): ("UpdateConversationBody", "ConversationResource"),
    (CONVERSATION, "delete"): (None, "ConversationDeleted"),
    (CONVERSATION + "/items", "post"): ("AddItemsBody", "ConversationItemList"),
    (CONVERSATION + "/items", "get"): (None, "ConversationItemList"),
    (CONVERSATION + "/items/{item_id}", "get"): (None, "ConversationItem"),
    (CONVERSATION + "/items/{item_id}", "delete"): (None, "ConversationResource"),
}


def test_the_document_holds_the_chat_and_conversation_operations(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    chat = document["paths"]["/v1/chat/completions"]["post"]
    assert body_schema(chat) == "ChatCompletionBody"
    assert answer_schema(chat) == "ChatCompletion"
    assert answer_schema(chat, "text/event-stream") == "ChatCompletionChunk"
    assert {"model", "messages", "tools", "stream", "n", "stop"} <= set(
        schemas["ChatCompletionBody"]["properties"]
    )
    assert {"id", "object", "choices", "usage"} <= set(schemas["ChatCompletion"]["properties"])
    assert {"id", "object", "choices", "usage"} <= set(schemas["ChatCompletionChunk"]["properties"])
    for (path, method), (body, answer) in CONVERSATION_OPERATIONS.items():
        operation = document["paths"][path][method]
        assert answer_schema(operation) == answer, (path, method)
        if body is None:
            assert "requestBody" not in operation, (path, method)
        else:
            assert body_schema(operation) == body, (path, method)
    listing = document["paths"][CONVERSATION + "/items"]["get"]["parameters"]
    assert {"limit", "order", "after", "include"} <= {p["name"] for p in listing if p["in"] == "query"}
    assert "items" in schemas["CreateConversationBody"]["properties"]
    assert len(schemas["ConversationItem"]["oneOf"]) > 5
    for ref in refs(document):
        assert ref.startswith(SCHEMAS) and ref.removeprefix(SCHEMAS) in schemas, ref


def test_the_chat_schemas_describe_what_the_server_answers(
    chat_client: TestClient, document: dict[str, Any]
) -> None:
    body = {"model": MODEL, "messages": HI, "tools": [WEATHER], "logprobs": True, "top_logprobs": 2}
    check(document, body, "ChatCompletionBody")
    answer = chat_client.post("/v1/chat/completions", json=body)
    assert answer.status_code == 200, answer.text
    created = answer.json()
    check(document, created, "ChatCompletion")
    assert ChatCompletion.model_validate(created).model_dump(mode="json", exclude_unset=True) == created
    streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
    check(document, streamed, "ChatCompletionBody")
    chunks = sse_chunks(chat_client.post("/v1/chat/completions", json=streamed).text)
    assert len(chunks) > 3 and chunks[-1]["usage"] is not None
    for chunk in chunks:
        check(document, chunk, "ChatCompletionChunk")
        assert ChatCompletionChunk.model_validate(chunk).model_dump(mode="json", exclude_unset=True) == chunk
    with pytest.raises(jsonschema.ValidationError):
        check(document, {**created, "object": "chat.completion.chunk"}, "ChatCompletion")
    with pytest.raises(jsonschema.ValidationError):
        check(document, {**chunks[0], "extra": 1}, "ChatCompletionChunk")
    with pytest.raises(jsonschema.ValidationError):
        check(document, {**body, "messages": [{"role": "robot", "content": "hi"}]}, "ChatCompletionBody")


def test_the_conversation_schemas_describe_what_the_server_answers(
    client: TestClient, document: dict[str, Any]
) -> None:
    first = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello!"}]}
    body = {"items": [first], "metadata": {"topic": "greetings"}}
    check(document, body, "CreateConversationBody")
    created = client.post("/v1/conversations", json=body).json()
    check(document, created, "ConversationResource")
    path = f"/v1/conversations/{created['id']}"
    check(document, client.get(path).json(), "ConversationResource")
    update = {"metadata": {"topic": "weather"}}
    check(document, update, "UpdateConversationBody")
    check(document, client.post(path, json=update).json(), "ConversationResource")
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi!"}]}
    more = {"items": [answer]}
    check(document, more, "AddItemsBody")
    added = client.post(f"{path}/items", json=more).json()
    check(document, added, "ConversationItemList")
    page = client.get(f"{path}/items", params={"order": "asc"}).json()
    assert len(page["data"]) == 2
    check(document, page, "ConversationItemList")
    item = client.get(f"{path}/items/{page['data'][0]['id']}").json()
    check(document, item, "ConversationItem")
    check(document, client.delete(f"{path}/items/{item['id']}").json(), "ConversationResource")
    deleted = client.delete(path).json()
    assert deleted["deleted"] is True
    check(document, deleted, "ConversationDeleted")
    with pytest.raises(jsonschema.ValidationError):
        check(document, {**deleted, "object": "conversation"}, "ConversationDeleted")
    with pytest.raises(jsonschema.ValidationError):
        check(document, {**item, "type": "bogus"}, "ConversationItem")


def test_a_chat_schema_named_as_another_is_refused() -> None:
    taken = {"components": {"schemas": {"ChatCompletion": {"type": "string"}}}}
    with pytest.raises(ValueError, match="ChatCompletion"):
        add_chat_schemas(taken)
    document = add_chat_schemas({})
    assert add_chat_schemas(document) == document


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
