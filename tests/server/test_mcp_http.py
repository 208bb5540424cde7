"""Remote MCP servers over HTTP, end to end through the official ``openai`` SDK: a scripted
gpt-oss calls a tool of a real MCP server (the SDK's own, on loopback, started by the tests);
the server lists its tools, runs the call, gives the model the output and samples the
answer in the same response; approvals, the policy, credentials, replay and cancel."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import openai
import pytest
from live import LiveServer, ScriptedEngine, completion
from sdk import validate_openai_event, validate_openai_response

from openchatml import Message
from openchatml.core.encoding import load_encoding
from openchatml.responses.mcp_calls import DENIED
from openchatml.server.settings import McpSettings, ServiceSettings

ENCODING = load_encoding()


def tool(server: Any, **fields: Any) -> dict[str, Any]:
    return {
        "type": "mcp",
        "server_label": "demo",
        "server_url": server.http_url,
        "headers": server.auth,
        "require_approval": "never",
        **fields,
    }


def settings(server: Any) -> ServiceSettings:
    return ServiceSettings(mcp=McpSettings(allow=(f"http://127.0.0.1:{server.http_port}/mcp",)))


def agent(name: str, arguments: dict[str, Any]) -> Callable[[Sequence[int]], list[int]]:
    """A script: call ``demo.NAME`` unless the prompt ends in a tool's reply, then answer
    with what the tool said."""

    def script(prompt: Sequence[int]) -> list[int]:
        text = ENCODING.decode(list(prompt))
        tail = text.rsplit("<|start|>", 2)
        if len(tail) == 3 and tail[1].startswith("demo."):
            said = tail[1].split("<|message|>", 1)[1].removesuffix("<|end|>")
            return completion(Message.assistant(f"tool said: {said.strip()}", channel="final"))
        return completion(Message.tool_call(f"demo.{name}", json.dumps(arguments)))

    return script


def items(response: Any) -> list[str]:
    return [item.type for item in response.output]


def test_list_call_answer(serve: Callable[..., LiveServer], mcp_server: Any) -> None:
    engine = ScriptedEngine(agent("add", {"a": 2, "b": 3}))
    client = serve(engine, settings=settings(mcp_server)).client()
    response = client.responses.create(model="scripted-model", input="2+3?", tools=[tool(mcp_server)])
    validate_openai_response(response.model_dump(mode="json"))
    assert items(response) == ["mcp_list_tools", "mcp_call", "message"]
    listing, call, answer = response.output
    assert {t.name for t in listing.tools} == {"add", "slow", "fail"}
    assert call.server_label == "demo" and call.name == "add" and call.output == "5"
    assert call.status == "completed" and json.loads(call.arguments) == {"a": 2, "b": 3}
    assert "tool said: 5" in answer.content[0].text
    prompt = ENCODING.decode(engine.prompts[0])
    assert "namespace demo {" in prompt and "type add = " in prompt
    second = client.responses.create(
        model="scripted-model", input="again", tools=[tool(mcp_server)], previous_response_id=response.id
    )
    assert items(second) == ["mcp_call", "message"]  # the listing of the chain is kept
    assert "namespace demo {" in ENCODING.decode(engine.prompts[-1])


def test_allowed_tools_filter(serve: Callable[..., LiveServer], mcp_server: Any) -> None:
    engine = ScriptedEngine(agent("add", {"a": 1, "b": 1}))
    client = serve(engine, settings=settings(mcp_server)).client()
    response = client.responses.create(
        model="scripted-model", input="1+1", tools=[tool(mcp_server, allowed_tools=["add"])]
    )
    assert response.output[1].output == "2"
    prompt = ENCODING.decode(engine.prompts[0])
    assert "type add = " in prompt and "type slow" not in prompt and "type fail" not in prompt


def test_approval_then_call(serve: Callable[..., LiveServer], mcp_server: Any) -> None:
    engine = ScriptedEngine(agent("add", {"a": 20, "b": 22}))
    client = serve(engine, settings=settings(mcp_server)).client()
    tools = [tool(mcp_server, require_approval="always")]
    asked = client.responses.create(model="scripted-model", input="20+22", tools=tools)
    validate_openai_response(asked.model_dump(mode="json"))
    assert asked.status == "completed" and items(asked) == ["mcp_list_tools", "mcp_approval_request"]
    request = asked.output[1]
    assert request.name == "add" and json.loads(request.arguments) == {"a": 20, "b": 22}
    started = mcp_server.stats()["authorized"]
    answer = {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}
    done = client.responses.create(
        model="scripted-model", input=[answer], tools=tools, previous_response_id=asked.id
    )
    validate_openai_response(done.model_dump(mode="json"))
    assert items(done) == ["mcp_call", "message"]
    call = done.output[0]
    assert call.approval_request_id == request.id and call.output == "42"
    assert "tool said: 42" in done.output[1].content[0].text
    assert mcp_server.stats()["authorized"] > started


def test_denied_call(serve: Callable[..., LiveServer], mcp_server: Any) -> None:
    def script(prompt: Sequence[int]) -> list[int]:
        text = ENCODING.decode(list(prompt))
        if DENIED in text:
            return completion(Message.assistant("not allowed, sorry", channel="final"))
        return agent("add", {"a": 1, "b": 2})(prompt)

    engine = ScriptedEngine(script)
    client = serve(engine, settings=settings(mcp_server)).client()
    tools = [tool(mcp_server, require_approval="always")]
    asked = client.responses.create(model="scripted-model", input="1+2", tools=tools)
    request = asked.output[-1]
    answer = {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": False}
    denied = client.responses.create(
        model="scripted-model", input=[answer], tools=tools, previous_response_id=asked.id
    )
    assert items(denied) == ["message"] and "not allowed" in denied.output[0].content[0].text


def test_a_url_not_allowed_is_refused(serve: Callable[..., LiveServer], mcp_server: Any) -> None:
    client = serve(ScriptedEngine([]), settings=settings(mcp_server)).client()
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(
            model="scripted-model",
            input="hi",
            tools=[tool(mcp_server, server_url=mcp_server.sse_url)],
        )
    body: Any = raised.value.body
    assert body["param"] == "tools[0].server_url" and "--mcp-allow" in body["message"]
    off = serve(ScriptedEngine([])).client()
    with pytest.raises(openai.BadRequestError) as refused:
        off.responses.create(model="scripted-model", input="hi", tools=[tool(mcp_server)])
    assert refused.value.body["param"] == "tools[0].type"  # type: ignore[index]


def test_headers_are_never_echoed_stored_or_logged(
    serve: Callable[..., LiveServer], mcp_server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = serve(ScriptedEngine(agent("add", {"a": 1, "b": 1})), settings=settings(mcp_server)).client()
    response = client.responses.create(model="scripted-model", input="1+1", tools=[tool(mcp_server)])
    assert response.output[1].output == "2"  # the token reached the server
    retrieved = client.responses.retrieve(response.id)
    for shown in (response.model_dump_json(), retrieved.model_dump_json()):
        assert mcp_server.token not in shown and '"headers"' not in shown.replace('"headers":null', "")
    for path in tmp_path.glob("store.sqlite3*"):
        assert mcp_server.token.encode() not in path.read_bytes()
    assert mcp_server.token not in caplog.text


def test_stream_events_and_replay(serve: Callable[..., LiveServer], mcp_server: Any) -> None:
    client = serve(ScriptedEngine(agent("add", {"a": 2, "b": 2})), settings=settings(mcp_server)).client()
    events = list(
        client.responses.create(model="scripted-model", input="2+2", tools=[tool(mcp_server)], stream=True)
    )
    for event in events:
        validate_openai_event(event.model_dump(mode="json"))
    kinds = [event.type for event in events]
    for kind in (
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
    ):
        assert kind in kinds
    final = events[-1].response
    assert final.status == "completed"
    replayed = list(client.responses.retrieve(final.id, stream=True))
    for event in replayed:
        validate_openai_event(event.model_dump(mode="json"))

    def collapsed(kinds: list[str]) -> list[str]:
        return [k for n, k in enumerate(kinds) if not (k.endswith(".delta") and n and kinds[n - 1] == k)]

    assert collapsed([e.type for e in replayed]) == collapsed(kinds)


def test_a_tool_error_is_an_item_and_the_loop_goes_on(
    serve: Callable[..., LiveServer], mcp_server: Any
) -> None:
    client = serve(
        ScriptedEngine(agent("fail", {"message": "no way"})), settings=settings(mcp_server)
    ).client()
    response = client.responses.create(model="scripted-model", input="fail", tools=[tool(mcp_server)])
    validate_openai_response(response.model_dump(mode="json"))
    assert items(response) == ["mcp_list_tools", "mcp_call", "message"]
    call = response.output[1]
    assert call.status == "failed" and call.output is None and call.error is not None
    assert "no way" in json.dumps(call.error.model_dump())
    assert "no way" in response.output[2].content[0].text


def test_cancel_during_a_slow_tool(serve: Callable[..., LiveServer], mcp_server: Any) -> None:
    server = serve(ScriptedEngine(agent("slow", {"seconds": 60})), settings=settings(mcp_server))
    client = server.client()
    before = mcp_server.stats()["slow_started"]
    created = client.responses.create(
        model="scripted-model", input="sleep", tools=[tool(mcp_server)], background=True
    )
    started = time.monotonic()
    while mcp_server.stats()["slow_started"] == before and time.monotonic() - started < 30:
        time.sleep(0.1)
    assert mcp_server.stats()["slow_started"] > before
    cancelled = client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    assert time.monotonic() - started < 40  # well before the tool's 60 s


def test_tool_choice_forces_the_server_on_the_first_step(
    serve: Callable[..., LiveServer], mcp_server: Any
) -> None:
    engine = ScriptedEngine(agent("add", {"a": 3, "b": 4}))
    client = serve(engine, settings=settings(mcp_server)).client()
    response = client.responses.create(
        model="scripted-model",
        input="3+4",
        tools=[tool(mcp_server)],
        tool_choice={"type": "mcp", "server_label": "demo", "name": "add"},
    )
    assert response.output[1].output == "7"
    first, later = engine.params[0].grammar, engine.params[1].grammar
    assert first is not None and "demo.add" in first.lark
    assert later != first
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(
            model="scripted-model",
            input="x",
            tools=[tool(mcp_server)],
            tool_choice={"type": "mcp", "server_label": "other"},
        )
    assert raised.value.body["param"] == "tool_choice.server_label"  # type: ignore[index]
