"""Namespace tools over HTTP, end to end, through the official ``openai`` SDK: gpt-oss (a
scripted engine) and a chat-template model (a real Qwen3 tokenizer and template) call a
function of a namespace, the SDK reads it as a ``function_call`` with its ``namespace``,
and the call given back reaches the model addressed to that namespace; every body and
event holds to the SDK's types and the Open Responses schema. A random-weight model under
``tool_choice`` naming a namespaced function calls it, with valid arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from live import ScriptedEngine, completion
from openai.types.responses import NamespaceTool, ResponseFunctionToolCall, ToolChoiceFunction
from openapi import known, validate
from sdk import validate_openai_event, validate_openai_response
from test_responses_api import check_stream, prompt_text, sse_events
from test_template_model import ScriptedTemplateEngine, qwen_engine  # noqa: F401 (a fixture)
from test_template_model import serve as serve_template

from openchatml import Message

SPAWN = {
    "type": "function",
    "name": "spawn",
    "description": "Start an agent on a task.",
    "parameters": {
        "type": "object",
        "properties": {"task": {"type": "string", "maxLength": 12}},
        "required": ["task"],
        "additionalProperties": False,
    },
    "strict": True,
}
AGENTS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Agents that work beside you.",
    "tools": [SPAWN, {"type": "custom", "name": "note", "description": "Write a note."}],
}
CHOICE = {"type": "function", "name": "spawn", "namespace": "multi_agent_v1"}
THINK = Message.assistant("Spawn a linter.", channel="analysis")
CALL = Message.tool_call("multi_agent_v1.spawn", '{"task":"lint"}')


def test_the_sdk_reads_a_namespaced_call_and_gives_it_back(serve: Any) -> None:
    engine = ScriptedEngine(completion(THINK, CALL), chunk=2)
    client = serve(engine).client()
    response = client.responses.create(model="scripted-model", input="Lint the repo.", tools=[AGENTS])
    call = response.output[1]
    assert type(call) is ResponseFunctionToolCall
    assert (call.name, call.namespace, call.arguments) == ("spawn", "multi_agent_v1", '{"task":"lint"}')
    assert type(response.tools[0]) is NamespaceTool and response.tools[0].name == "multi_agent_v1"
    assert "## multi_agent_v1\n\n// Agents that work beside you.\nnamespace multi_agent_v1 {" in prompt_text(
        engine
    )

    follow = client.responses.create(
        model="scripted-model",
        previous_response_id=response.id,
        tools=[AGENTS],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "spawned"}],
    )
    assert follow.status == "completed"
    text = prompt_text(engine)
    assert (
        '<|start|>assistant to=multi_agent_v1.spawn<|channel|>commentary <|constrain|>json<|message|>{"task"'
        in text
    )
    assert "<|start|>multi_agent_v1.spawn to=assistant<|channel|>commentary<|message|>spawned<|end|>" in text


def test_a_stateless_follow_up_replays_the_namespaced_call(serve: Any) -> None:
    engine = ScriptedEngine(completion(Message.assistant("Done.", channel="final")))
    client = serve(engine).client()
    client.responses.create(
        model="scripted-model",
        store=False,
        tools=[AGENTS],
        input=[
            {"role": "user", "content": "Lint."},
            {"type": "function_call", "call_id": "c1", "name": "spawn", "namespace": "multi_agent_v1",
             "arguments": '{"task":"lint"}', "status": "completed", "id": "fc_1"},
            {"type": "function_call_output", "call_id": "c1", "output": "spawned",
             "namespace": "multi_agent_v1"},
        ],
    )  # fmt: skip
    assert (
        "<|start|>assistant to=multi_agent_v1.spawn<|channel|>commentary <|constrain|>json<|message|>"
        '{"task":"lint"}<|call|><|start|>multi_agent_v1.spawn to=assistant'
    ) in prompt_text(engine)


def test_streams_and_bodies_hold_to_both_schemas(serve: Any) -> None:
    server = serve(ScriptedEngine(completion(THINK, CALL), chunk=1, enforces_grammar=True))
    client = server.client()
    events = list(
        client.responses.create(
            model="scripted-model", input="Lint.", tools=[AGENTS], tool_choice=CHOICE, stream=True
        )
    )
    added = [e for e in events if e.type == "response.output_item.added"]
    assert type(added[1].item) is ResponseFunctionToolCall and added[1].item.namespace == "multi_agent_v1"
    final = events[-1].response
    assert type(final.tool_choice) is ToolChoiceFunction
    replayed = list(client.responses.retrieve(final.id, stream=True))
    assert replayed[-1].response.output == final.output

    def items(stream: list[Any]) -> list[Any]:
        return [(e.type, e.item) for e in stream if e.type.startswith("response.output_item")]

    assert items(replayed) == items(events)
    body = {"model": "scripted-model", "input": "Lint.", "tools": [AGENTS], "tool_choice": CHOICE}
    with server.http() as http:
        plain = http.post("/v1/responses", json=body).json()
        streamed = sse_events(http.post("/v1/responses", json={**body, "stream": True}).text)
        as_openai = http.post("/v1/responses", json=body, headers={"OpenChatML-Wire": "openai"}).json()
        openai_events = sse_events(
            http.post(
                "/v1/responses", json={**body, "stream": True}, headers={"OpenChatML-Wire": "openai"}
            ).text
        )
    check_stream(streamed)
    assert (
        plain["tools"][0]["type"] == "openai:namespace"
        and plain["output"][1]["namespace"] == "multi_agent_v1"
    )
    validate(known(plain), "ResponseResource")
    validate_openai_response(as_openai)
    for event in openai_events:
        validate_openai_event(event)
    assert as_openai["tools"][0]["type"] == "namespace" and as_openai["tool_choice"] == CHOICE


def test_a_template_model_calls_a_namespaced_function(qwen_engine: Any, tmp_path: Path) -> None:  # noqa: F811
    said = (
        '<think>\nSpawn.\n</think>\n\n<tool_call>\n{"name": "multi_agent_v1.spawn", '
        '"arguments": {"task": "lint"}}\n</tool_call><|im_end|>'
    )
    engine = ScriptedTemplateEngine(qwen_engine.tokenizer, said, chunk=2)
    server = serve_template(engine, tmp_path)
    try:
        client = server.client()
        response = client.responses.create(model="scripted-qwen3", input="Lint.", tools=[AGENTS])
        call = response.output[-1]
        assert type(call) is ResponseFunctionToolCall
        assert (call.name, call.namespace, json.loads(call.arguments)) == (
            "spawn",
            "multi_agent_v1",
            {"task": "lint"},
        )
        prompt = qwen_engine.tokenizer.hf_tokenizer.decode(engine.prompts[-1])
        assert '"name": "multi_agent_v1.spawn"' in prompt
        client.responses.create(
            model="scripted-qwen3",
            previous_response_id=response.id,
            tools=[AGENTS],
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "spawned"}],
        )
        prompt = qwen_engine.tokenizer.hf_tokenizer.decode(engine.prompts[-1])
        assert (
            '<tool_call>\n{"name": "multi_agent_v1.spawn", "arguments": {"task": "lint"}}\n</tool_call>'
            in prompt
        )
        assert "<tool_response>\nspawned\n</tool_response>" in prompt
    finally:
        server.__exit__()


def _forced_calls(client: Any, model: str, seeds: range) -> list[Any]:
    calls = []
    for seed in seeds:
        response = client.responses.create(
            model=model,
            input="Lint.",
            tools=[AGENTS],
            tool_choice=CHOICE,
            max_output_tokens=320,
            extra_body={"seed": seed},
        )
        if response.status == "completed":
            calls.append(response.output[-1])
    return calls


def _hold_to_the_choice(calls: list[Any]) -> None:
    assert len(calls) >= 2, calls
    for call in calls:
        assert type(call) is ResponseFunctionToolCall
        assert (call.name, call.namespace) == ("spawn", "multi_agent_v1")
        jsonschema.validate(json.loads(call.arguments), SPAWN["parameters"])


def test_a_random_gpt_oss_calls_the_namespaced_function_it_must(serve: Any, tiny_engine: Any) -> None:
    pytest.importorskip("torch")
    _hold_to_the_choice(_forced_calls(serve(tiny_engine).client(), "tiny", range(3)))


def test_a_random_template_model_calls_the_namespaced_function_it_must(
    qwen_engine: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    server = serve_template(qwen_engine, tmp_path)
    try:
        _hold_to_the_choice(_forced_calls(server.client(), "tiny-qwen3", range(3)))
    finally:
        server.__exit__()
