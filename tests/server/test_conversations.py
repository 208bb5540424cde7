"""Conversations end to end: ``/v1/conversations`` through the official SDK, and responses
that continue a conversation, on SQLite and on a real PostgreSQL.

Every body is validated against the SDK's own types (``Conversation``,
``ConversationItemList``, ``ConversationItem``, ``ConversationDeletedResource``,
``Response``) and, where the Open Responses schema has it, against the schema
(``ResponseResource``, ``ItemField``). The engine plays a script and records each prompt,
so a test sees what a second turn was given.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from live import ScriptedEngine, completion
from openai.types.conversations import (
    Conversation,
    ConversationDeletedResource,
    ConversationItem,
    ConversationItemList,
)
from openai.types.responses import Response
from openapi import validate
from pydantic import TypeAdapter
from test_responses_api import ANSWER, THINK, check_stream, prompt_text, sse_events

from openchatml.responses.limits import RequestLimits
from openchatml.server.settings import ServiceSettings

MODEL = "scripted-model"
ITEM: TypeAdapter[Any] = TypeAdapter(ConversationItem)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: Any, tmp_path: Path) -> Path | str:
    """The store: a SQLite file, or a fresh database on a real PostgreSQL."""
    if request.param == "sqlite":
        return tmp_path / "store.sqlite3"
    url: str = request.getfixturevalue("postgres_url")
    return url


def raw(answer: Any) -> Any:
    """The JSON body of an SDK ``with_raw_response`` answer."""
    return json.loads(answer.http_response.text)


def texts(items: list[Any]) -> list[str]:
    """The text of each message item (typed by the SDK), reasoning left out."""
    return [part.text for item in items if item.type == "message" for part in item.content]


def wait_for(check: Any, seconds: float = 20.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_conversation_through_the_sdk(serve: Any, backend: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), store=backend)
    client = server.client()
    first = [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
    ]
    created = client.conversations.with_raw_response.create(items=first, metadata={"topic": "demo"})
    body = raw(created)
    conversation = Conversation.model_validate(body)
    assert conversation.id.startswith("conv_") and len(conversation.id) == 53
    assert body == {
        "id": conversation.id,
        "object": "conversation",
        "created_at": body["created_at"],
        "metadata": {"topic": "demo"},
    }
    assert abs(body["created_at"] - time.time()) < 60
    assert client.conversations.retrieve(conversation.id).model_dump() == conversation.model_dump()

    updated = raw(client.conversations.with_raw_response.update(conversation.id, metadata={"topic": "x"}))
    assert Conversation.model_validate(updated).metadata == {"topic": "x"}
    assert client.conversations.retrieve(conversation.id).metadata == {"topic": "x"}

    listed = raw(client.conversations.items.with_raw_response.list(conversation.id, order="asc"))
    page = ConversationItemList.model_validate(listed)
    assert [i.type for i in page.data] == ["message", "message"]
    assert [i.role for i in page.data] == ["developer", "user"]  # type: ignore[union-attr]
    assert texts(page.data) == ["Be brief.", "hello"]
    assert all(i.status == "completed" and i.id.startswith("msg_") for i in page.data)  # type: ignore[union-attr]
    assert (page.first_id, page.last_id, page.has_more) == (page.data[0].id, page.data[1].id, False)

    added = raw(
        client.conversations.items.with_raw_response.create(
            conversation.id,
            items=[{"type": "message", "role": "user", "content": f"n{i}"} for i in range(20)],
        )
    )
    added_list = ConversationItemList.model_validate(added)
    assert texts(added_list.data) == [f"n{i}" for i in range(20)] and added_list.has_more is False
    more = client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "last"}])
    everything = ["Be brief.", "hello", *(f"n{i}" for i in range(20)), "last"]

    # auto-pagination: pages of 5, in both orders
    assert texts(list(client.conversations.items.list(conversation.id, limit=5, order="asc"))) == everything
    assert texts(list(client.conversations.items.list(conversation.id, limit=5))) == everything[::-1]
    second_page = client.conversations.items.list(
        conversation.id, limit=5, order="asc", after=page.data[1].id
    )
    assert texts(second_page.data) == ["n0", "n1", "n2", "n3", "n4"] and second_page.has_more is True

    one = raw(
        client.conversations.items.with_raw_response.retrieve(
            more.data[0].id, conversation_id=conversation.id
        )
    )
    assert ITEM.validate_python(one).content[0].text == "last"
    gone = raw(
        client.conversations.items.with_raw_response.delete(page.data[1].id, conversation_id=conversation.id)
    )
    assert Conversation.model_validate(gone).id == conversation.id
    assert texts(list(client.conversations.items.list(conversation.id, order="asc", limit=100)))[:2] == [
        "Be brief.",
        "n0",
    ]
    with pytest.raises(openai.NotFoundError) as missing:
        client.conversations.items.retrieve(page.data[1].id, conversation_id=conversation.id)
    assert missing.value.body["code"] == "item_not_found"  # type: ignore[index]

    deleted = raw(client.conversations.with_raw_response.delete(conversation.id))
    assert ConversationDeletedResource.model_validate(deleted).model_dump() == {
        "id": conversation.id,
        "deleted": True,
        "object": "conversation.deleted",
    }
    with pytest.raises(openai.NotFoundError) as missing:
        client.conversations.retrieve(conversation.id)
    assert missing.value.body["code"] == "conversation_not_found"  # type: ignore[index]


def test_two_turns_of_a_conversation_build_each_prompt_from_the_ones_before(serve: Any, backend: Any) -> None:
    engine = ScriptedEngine(completion(THINK, ANSWER))
    server = serve(engine, store=backend)
    client = server.client()
    conversation = client.conversations.create(items=[{"role": "developer", "content": "Speak French."}])
    first = raw(
        client.responses.with_raw_response.create(model=MODEL, input="hi", conversation=conversation.id)
    )
    assert Response.model_validate(first).conversation.id == conversation.id  # type: ignore[union-attr]
    validate(first, "ResponseResource")
    assert first["conversation"] == {"id": conversation.id} and first["previous_response_id"] is None
    assert "Speak French." in prompt_text(engine) and "<|start|>user<|message|>hi<|end|>" in prompt_text(
        engine
    )

    second = client.responses.create(model=MODEL, input="again", conversation={"id": conversation.id})
    assert second.conversation is not None and second.conversation.id == conversation.id
    prompt = prompt_text(engine)
    assert prompt.index("Speak French.") < prompt.index("user<|message|>hi") < prompt.index("Hello there!")
    assert prompt.index("Hello there!") < prompt.index("user<|message|>again")

    items = list(client.conversations.items.list(conversation.id, order="asc"))
    assert [(i.type, getattr(i, "role", None)) for i in items] == [
        ("message", "developer"),
        ("message", "user"),
        ("reasoning", None),
        ("message", "assistant"),
        ("message", "user"),
        ("reasoning", None),
        ("message", "assistant"),
    ]
    # the response's own items, with their ids, in order: input then output
    assert [i.id for i in items[1:4]] == [
        client.responses.input_items.list(first["id"]).data[0].id,
        *(o["id"] for o in first["output"]),
    ]
    with server.http() as http:  # the Open Responses spelling holds to the schema too
        listed = http.get(f"/v1/conversations/{conversation.id}/items", params={"order": "asc"}).json()
        count = {"model": MODEL, "input": "third"}
        alone = http.post("/v1/responses/input_tokens", json=count).json()["input_tokens"]
        counted = http.post("/v1/responses/input_tokens", json={**count, "conversation": conversation.id})
    for item in listed["data"]:
        validate(item, "ItemField")
    assert counted.json()["input_tokens"] > alone + 20  # the conversation is in the prompt counted


def test_streaming_background_and_unstored_responses_add_to_the_conversation(
    serve: Any, backend: Any
) -> None:
    engine = ScriptedEngine(completion(ANSWER), chunk=1, delay=0.005)
    server = serve(engine, store=backend)
    client = server.client()
    conversation = client.conversations.create()
    with client.responses.create(
        model=MODEL, input="one", conversation=conversation.id, stream=True
    ) as stream:
        events = [event.type for event in stream]
    assert events[-1] == "response.completed"
    # what a client that saw the end reads at once
    assert texts(list(client.conversations.items.list(conversation.id, order="asc"))) == [
        "one",
        "Hello there!",
    ]

    queued = client.responses.create(model=MODEL, input="two", conversation=conversation.id, background=True)
    assert queued.status == "queued" and queued.conversation is not None
    wait_for(lambda: client.responses.retrieve(queued.id).status == "completed")
    unstored = client.responses.create(model=MODEL, input="three", conversation=conversation.id, store=False)
    assert unstored.status == "completed" and unstored.store is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)  # the response is not kept; the conversation is
    with server.http() as http:
        body = {"model": MODEL, "input": "four", "conversation": conversation.id, "stream": True}
        streamed = sse_events(http.post("/v1/responses", json=body).text)
    check_stream(streamed)
    assert streamed[0]["response"]["conversation"] == {"id": conversation.id}
    said = texts(list(client.conversations.items.list(conversation.id, order="asc")))
    assert said == [
        "one",
        "Hello there!",
        "two",
        "Hello there!",
        "three",
        "Hello there!",
        "four",
        "Hello there!",
    ]
    assert "user<|message|>three" in prompt_text(engine)


def test_websocket_turns_continue_a_conversation(serve: Any) -> None:
    from websockets.sync.client import connect

    engine = ScriptedEngine(completion(ANSWER))
    server = serve(engine)
    client = server.client()
    conversation = client.conversations.create()
    with connect(server.url.replace("http", "ws") + "/v1/responses") as ws:

        def turn(text: str) -> list[dict[str, Any]]:
            message = {"type": "response.create", "model": MODEL, "input": text, "store": False}
            ws.send(json.dumps({**message, "conversation": conversation.id}))
            events: list[dict[str, Any]] = []
            while not events or events[-1]["type"] not in ("response.completed", "response.failed", "error"):
                events.append(json.loads(ws.recv(timeout=20)))
            return events

        check_stream(turn("first"))
        second = turn("second")  # sent as soon as the first ended: the conversation is ready
        check_stream(second)
    assert second[-1]["response"]["conversation"] == {"id": conversation.id}
    assert "user<|message|>first" in prompt_text(engine) and "Hello there!" in prompt_text(engine)
    assert texts(list(client.conversations.items.list(conversation.id, order="asc"))) == [
        "first",
        "Hello there!",
        "second",
        "Hello there!",
    ]


def test_failed_and_cancelled_responses_add_nothing_and_let_go(serve: Any, backend: Any) -> None:
    def broken(prompt: Any) -> list[int]:
        raise RuntimeError("the engine broke")

    server = serve(ScriptedEngine(broken), store=backend)
    client = server.client()
    conversation = client.conversations.create(items=[{"role": "user", "content": "start"}])
    failed = client.responses.create(model=MODEL, input="boom", conversation=conversation.id)
    assert failed.status == "failed"
    assert texts(list(client.conversations.items.list(conversation.id))) == ["start"]

    slow = serve(ScriptedEngine(completion(ANSWER), chunk=1, delay=0.2), store=backend)
    client = slow.client()
    running = client.responses.create(
        model=MODEL, input="wait", conversation=conversation.id, background=True
    )
    # one response at a time holds a conversation, as OpenAI's API answers
    with pytest.raises(openai.BadRequestError) as locked:
        client.responses.create(model=MODEL, input="meanwhile", conversation=conversation.id)
    assert locked.value.body["code"] == "conversation_locked"  # type: ignore[index]
    assert locked.value.body["param"] == "conversation"  # type: ignore[index]
    wait_for(lambda: client.responses.retrieve(running.id).status == "in_progress")
    assert client.responses.cancel(running.id).status == "cancelled"
    assert texts(list(client.conversations.items.list(conversation.id))) == ["start"]
    with slow.http() as http:  # let go: the next response may run
        body = {"model": MODEL, "input": "now", "conversation": conversation.id, "max_output_tokens": 1}
        cut = http.post("/v1/responses", json=body).json()
    assert cut["status"] == "incomplete"  # an incomplete response is added, as it stands
    assert texts(list(client.conversations.items.list(conversation.id, order="asc")))[:2] == ["start", "now"]


def test_refusals_have_the_api_error_shape(serve: Any, backend: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), store=backend)
    conversation = server.client().conversations.create()
    url = f"/v1/conversations/{conversation.id}"
    with server.http() as http:

        def refused(method: str, path: str, status: int, **options: Any) -> dict[str, Any]:
            answer = http.request(method, path, **options)
            assert answer.status_code == status, answer.text
            error: dict[str, Any] = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}
            return error

        many = [{"role": "user", "content": "x"}] * 21
        assert (
            refused("POST", "/v1/conversations", 400, json={"items": many})["code"]
            == "array_above_max_length"
        )
        assert refused("POST", f"{url}/items", 400, json={"items": many})["param"] == "items"
        assert refused("POST", f"{url}/items", 400, json={"items": []})["param"] == "items"
        assert refused("POST", f"{url}/items", 400, json={})["code"] == "missing_required_parameter"
        bad_item = refused("POST", f"{url}/items", 400, json={"items": [{"type": "nope"}]})
        assert bad_item["param"] == "items[0].type"
        assert (
            refused("POST", "/v1/conversations", 400, json={"metadata": {str(i): "v" for i in range(17)}})[
                "param"
            ]
            == "metadata"
        )
        assert refused("POST", "/v1/conversations", 400, json={"item": []})["code"] == "unknown_parameter"
        assert refused("POST", "/v1/conversations", 400, content=b"{")["code"] == "invalid_json"
        assert refused("POST", url, 400, json={})["param"] == "metadata"
        assert refused("GET", f"{url}/items", 400, params={"limit": 0})["param"] == "limit"
        assert refused("GET", f"{url}/items", 400, params={"order": "sideways"})["param"] == "order"
        assert refused("GET", f"{url}/items", 400, params={"include": "everything"})["param"] == "include"
        assert refused("GET", f"{url}/items", 400, params={"after": "x" * 300})["param"] == "after"
        for method, path in (
            ("GET", "/v1/conversations/conv_nope"),
            ("POST", "/v1/conversations/conv_nope"),
            ("DELETE", "/v1/conversations/conv_nope"),
            ("GET", "/v1/conversations/conv_nope/items"),
            ("GET", "/v1/conversations/conv_nope/items/msg_1"),
            ("DELETE", "/v1/conversations/conv_nope/items/msg_1"),
        ):
            error = refused(method, path, 404, json={"metadata": {}})
            assert error["code"] == "conversation_not_found" and "conv_nope" in error["message"]
        assert refused("GET", f"{url}/items/msg_nope", 404)["code"] == "item_not_found"
        assert refused("DELETE", f"{url}/items/msg_nope", 404)["param"] == "item_id"
        reference = {"items": [{"type": "item_reference", "id": "msg_nope"}]}
        assert refused("POST", f"{url}/items", 404, json=reference)["param"] == "items[0].id"

        create = {"model": MODEL, "input": "hi", "conversation": "conv_nope"}
        unknown = refused("POST", "/v1/responses", 404, json=create)
        assert (unknown["param"], unknown["code"]) == ("conversation", "conversation_not_found")
        both = refused("POST", "/v1/responses", 400, json={**create, "previous_response_id": "resp_1"})
        assert both["code"] == "mutually_exclusive_parameters" and "'conversation'" in both["message"]
        assert (
            refused("POST", "/v1/responses", 400, json={**create, "conversation": 3})["param"]
            == "conversation"
        )
        assert (
            refused("POST", "/v1/responses", 400, json={**create, "conversation": {}})["param"]
            == "conversation.id"
        )
        # nothing was added by any refusal
        assert http.get(f"{url}/items").json()["data"] == []


def test_a_key_sees_only_its_own_conversations(serve: Any, backend: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), keys=["key-a", "key-b"], store=backend)
    alice, bob = server.client(api_key="key-a"), server.client(api_key="key-b")
    mine = alice.conversations.create(items=[{"role": "user", "content": "secret"}], metadata={"k": "v"})
    item_id = alice.conversations.items.list(mine.id).data[0].id
    attempts: list[Callable[[], Any]] = [
        lambda: bob.conversations.retrieve(mine.id),
        lambda: bob.conversations.update(mine.id, metadata={"k": "stolen"}),
        lambda: bob.conversations.delete(mine.id),
        lambda: bob.conversations.items.list(mine.id),
        lambda: bob.conversations.items.create(mine.id, items=[{"role": "user", "content": "x"}]),
        lambda: bob.conversations.items.retrieve(item_id, conversation_id=mine.id),
        lambda: bob.conversations.items.delete(item_id, conversation_id=mine.id),
        lambda: bob.responses.create(model=MODEL, input="hi", conversation=mine.id),
        lambda: bob.responses.create(model=MODEL, input=[{"type": "item_reference", "id": item_id}]),
    ]
    for attempt in attempts:
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert alice.conversations.retrieve(mine.id).metadata == {"k": "v"}
    assert texts(list(alice.conversations.items.list(mine.id))) == ["secret"]
    # its owner may name a conversation's item as input, as it may a stored response's
    answer = alice.responses.create(
        model=MODEL, input=[{"type": "item_reference", "id": item_id}], store=False
    )
    assert answer.status == "completed"


def test_the_conversation_bound_is_counted_before_items_are_loaded(serve: Any, backend: Any) -> None:
    settings = ServiceSettings(limits=RequestLimits(max_conversation_items=4))
    server = serve(ScriptedEngine(completion(ANSWER)), store=backend, settings=settings)
    client = server.client()
    conversation = client.conversations.create(items=[{"role": "user", "content": str(i)} for i in range(3)])
    with pytest.raises(openai.BadRequestError) as full:
        client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "x"}] * 2)
    assert full.value.body["code"] == "conversation_too_long"  # type: ignore[index]
    assert full.value.body["param"] == "items"  # type: ignore[index]
    client.conversations.items.create(conversation.id, items=[{"role": "user", "content": "3"}])
    with pytest.raises(openai.BadRequestError) as long:
        client.responses.create(model=MODEL, input="one more", conversation=conversation.id)
    assert long.value.body["code"] == "conversation_too_long"  # type: ignore[index]
    assert long.value.body["param"] == "conversation"  # type: ignore[index]
    assert "5 items (4 from 'conversation')" in long.value.body["message"]  # type: ignore[index]
    # refused before it ran: the conversation is not held
    client.conversations.items.delete(
        client.conversations.items.list(conversation.id).data[0].id, conversation_id=conversation.id
    )
    assert (
        client.responses.create(model=MODEL, input="fits", conversation=conversation.id).status == "completed"
    )


def test_without_a_store_there_are_no_conversations(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)), store=None)
    client = server.client()
    with pytest.raises(openai.BadRequestError) as refused:
        client.conversations.create()
    assert refused.value.body["code"] == "store_disabled"  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve("conv_1")
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model=MODEL, input="hi", conversation="conv_1", store=False)


def test_a_response_whose_items_cannot_be_added_fails(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = serve(ScriptedEngine(completion(ANSWER)))
    client = server.client()
    conversation = client.conversations.create()
    conversations = server.service.store.conversations
    end_turn = conversations.end_turn

    async def broken(*args: Any) -> bool:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(conversations, "end_turn", broken)
    with server.http() as http:
        body = {"model": MODEL, "input": "lost", "conversation": conversation.id, "stream": True}
        events = sse_events(http.post("/v1/responses", json=body).text)
    check_stream(events)
    assert [e["type"] for e in events[-2:]] == ["error", "response.failed"]
    failed = events[-1]["response"]
    assert failed["error"]["code"] == "server_error" and "the disk is full" in failed["error"]["message"]
    assert client.responses.retrieve(failed["id"]).status == "failed"  # as stored
    assert client.conversations.items.list(conversation.id).data == []
    monkeypatch.setattr(conversations, "end_turn", end_turn)
    # its hold lapsed with the response (this server runs it no more): the next one runs
    kept = client.responses.create(model=MODEL, input="kept", conversation=conversation.id)
    assert kept.status == "completed"
    added = client.conversations.items.list(conversation.id, order="asc")
    assert texts(added.data) == ["kept", "Hello there!"]
