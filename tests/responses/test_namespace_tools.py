"""Namespace tools from request to prompt, calls out and calls in: the request's checks, the
namespace as gpt-oss reads it (a Harmony namespace of its own) and as a chat template reads
it (qualified names), the calls the model writes (``function_call`` items with a
``namespace``), the call items a client sends back, the tool choice and the call rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openapi import known, validate
from sdk import validate_openai_event
from test_dialect import GPT_OSS, QWEN3, qwen3_dialect, request_of
from test_stream import check

from openchatml import Message, Renderer
from openchatml.core.messages import Conversation
from openchatml.responses.call_rules import CallRules
from openchatml.responses.dialect import HarmonyDialect
from openchatml.responses.errors import RequestError
from openchatml.responses.input import PromptSettings, build_conversation, item_messages, message_items
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder
from openchatml.responses.tool_index import ToolIndex
from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.items import CustomToolCall, FunctionCall, FunctionCallOutput, load_item
from openchatml.responses.wire.tools import FunctionChoice, NamespaceTool

SPAWN = {
    "type": "function",
    "name": "spawn",
    "description": "Start an agent on a task.",
    "parameters": {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]},
    "strict": True,
}
NOTE = {"type": "custom", "name": "note", "description": "Write a note."}
AGENTS = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Agents that work beside you.",
    "tools": [SPAWN, NOTE],
}
SPAWN_TOO = {"type": "function", "name": "spawn", "parameters": {"type": "object", "properties": {}}}
SETTINGS = PromptSettings(current_date="2026-01-02")
templates = pytest.mark.skipif(not (QWEN3.is_file() and GPT_OSS.is_file()), reason="no chat templates")


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "input": "Lint the repo.", "tools": [AGENTS], **fields}


def prompt(**fields: Any) -> str:
    request = parse_request(body(**fields))
    conversation = build_conversation(request, request.items, settings=SETTINGS)
    return Renderer().completion_text(conversation)


def said(*messages: Message) -> list[int]:
    renderer = Renderer()
    ids = [t for m in messages for t in renderer.message_tokens(m)]
    return ids[2:]


def events_of(ids: list[int], cut: int = 0, **fields: Any) -> list[dict[str, Any]]:
    """The events of ``ids`` fed in two pieces cut at ``cut``, under the request's rules;
    those of a response that did not fail also checked against the SDK's types (whose error
    codes do not hold ``invalid_tool_call``)."""
    request = parse_request(body(**fields))
    builder = EventBuilder(
        ResponseState("resp_1", request, "m"), rules=CallRules.of(request), hold_calls=False
    )
    typed = builder.begin() + builder.feed(ids[:cut]) + builder.feed(ids[cut:]) + builder.finish("stop")
    if typed[-1].type != "response.failed":
        for event in typed:
            validate_openai_event(event.to_json(WireDialect.OPENAI))
    return [event.to_json() for event in typed]


# --- the request ---------------------------------------------------------------------------


def test_a_namespace_is_kept_with_its_tools_and_echoed() -> None:
    request = parse_request(body())
    (space,) = request.namespaces
    assert isinstance(space, NamespaceTool) and space.name == "multi_agent_v1"
    assert [t.name for t in space.tools] == ["spawn", "note"]
    assert not request.tools and not request.custom_tools
    state = ResponseState("resp_1", request, "m")
    assert state.to_json()["tools"][0]["type"] == "openai:namespace"
    echoed = state.to_json(WireDialect.OPENAI)["tools"][0]
    assert echoed["type"] == "namespace" and echoed["tools"][1]["type"] == "custom"
    validate(known(state.to_json()), "ResponseResource")
    index = ToolIndex.of(request)
    assert [(t.call_name, t.kind, t.namespace) for t in index.tools] == [
        ("multi_agent_v1.spawn", "function_call", "multi_agent_v1"),
        ("multi_agent_v1.note", "custom_tool_call", "multi_agent_v1"),
    ]


def test_a_top_level_tool_may_share_a_name_with_a_namespaced_one() -> None:
    request = parse_request(body(tools=[SPAWN_TOO, AGENTS]))
    names = [t.call_name for t in ToolIndex.of(request).tools]
    assert names == ["spawn", "multi_agent_v1.spawn", "multi_agent_v1.note"]
    other = {**AGENTS, "name": "other_agents"}
    assert len(ToolIndex.of(parse_request(body(tools=[AGENTS, other]))).tools) == 4


@pytest.mark.parametrize(
    ("tools", "param", "words"),
    [
        ([{**AGENTS, "name": "functions"}], "tools[0].name", "reserved"),
        ([AGENTS, AGENTS], "tools[1].name", "Duplicate namespace"),
        ([{**AGENTS, "tools": [SPAWN, SPAWN]}], "tools[0].tools[1].name", "Duplicate tool name"),
        ([{**AGENTS, "tools": [SPAWN, {**NOTE, "name": "spawn"}]}], "tools[0].tools[1].name", "Duplicate"),
        ([{**AGENTS, "tools": [{"type": "web_search"}]}], "tools[0].tools[0].type", "Unsupported tool type"),
        ([{**AGENTS, "name": "a.b"}], "tools[0].name", "must match"),
        ([{**AGENTS, "tools": [{**SPAWN, "name": "x y"}]}], "tools[0].tools[0].name", "must match"),
        (
            [
                {
                    **AGENTS,
                    "tools": [{**NOTE, "format": {"type": "grammar", "syntax": "regex", "definition": "("}}],
                }
            ],
            "tools[0].tools[0].format.definition",
            "regular expression",
        ),
    ],
)
def test_bad_namespaces_are_a_400_naming_the_param(tools: list[Any], param: str, words: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(body(tools=tools))
    assert caught.value.param == param and words in caught.value.message


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "function", "name": "spawn", "namespace": "multi_agent_v1"},
        {"type": "function", "name": "multi_agent_v1.spawn"},
    ],
)
def test_a_tool_choice_names_a_namespaced_function(choice: dict[str, Any]) -> None:
    request = parse_request(body(tool_choice=choice))
    assert isinstance(request.tool_choice, FunctionChoice)
    assert ToolIndex.of(request).selection(request.tool_choice) == ("required", ("multi_agent_v1.spawn",))
    assert ResponseState("resp_1", request, "m").to_json()["tool_choice"] == choice


@pytest.mark.parametrize(
    ("choice", "param"),
    [
        ({"type": "function", "name": "spawn"}, "tool_choice.name"),
        ({"type": "function", "name": "note", "namespace": "multi_agent_v1"}, "tool_choice.name"),
        ({"type": "custom", "name": "spawn", "namespace": "multi_agent_v1"}, "tool_choice.name"),
        ({"type": "function", "name": "spawn", "namespace": "other"}, "tool_choice.name"),
        (
            {"type": "allowed_tools", "tools": [{"type": "namespace", "name": "other"}]},
            "tool_choice.tools[0]",
        ),
        ({"type": "allowed_tools", "tools": [{"type": "function", "name": "spawn"}]}, "tool_choice.tools[0]"),
    ],
)
def test_a_choice_outside_the_namespace_is_a_400(choice: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(body(tool_choice=choice))
    assert caught.value.param == param


def test_allowed_tools_name_namespaced_tools_or_a_whole_namespace() -> None:
    def allowed(*entries: dict[str, Any], mode: str = "required") -> Any:
        choice = {"type": "allowed_tools", "mode": mode, "tools": list(entries)}
        request = parse_request(body(tools=[SPAWN_TOO, AGENTS], tool_choice=choice))
        return ToolIndex.of(request).selection(request.tool_choice)

    assert allowed({"type": "namespace", "name": "multi_agent_v1"}) == (
        "required",
        ("multi_agent_v1.spawn", "multi_agent_v1.note"),
    )
    assert allowed(
        {"type": "custom", "name": "note", "namespace": "multi_agent_v1"},
        {"type": "function", "name": "spawn"},
    ) == ("required", ("multi_agent_v1.note", "spawn"))
    assert allowed({"type": "function", "name": "multi_agent_v1.spawn"}, mode="auto") == (
        "auto",
        ("multi_agent_v1.spawn",),
    )


# --- the prompt ----------------------------------------------------------------------------


def test_gpt_oss_reads_a_namespace_of_its_own() -> None:
    text = prompt(tools=[SPAWN_TOO, AGENTS])
    assert "## functions\n\nnamespace functions {\n\n" in text
    assert (
        "## multi_agent_v1\n\n// Agents that work beside you.\nnamespace multi_agent_v1 {\n\n"
        "// Start an agent on a task.\ntype spawn = (_: {\ntask: string,\n}) => any;\n\n"
        "// Write a note.\n// \n// The input is free text, written as it is (not JSON).\n"
        "type note = (_: string) => any;\n\n} // namespace multi_agent_v1"
    ) in text
    assert "multi_agent_v1" not in prompt(tool_choice="none")


def test_calls_given_back_go_to_the_namespace() -> None:
    items = [
        {"role": "user", "content": "Lint."},
        {"type": "function_call", "call_id": "c1", "name": "spawn", "namespace": "multi_agent_v1",
         "arguments": '{"task":"lint"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "spawned"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "note", "namespace": "multi_agent_v1",
         "input": "remember"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "noted"},
    ]  # fmt: skip
    text = prompt(input=items)
    assert (
        "<|start|>assistant to=multi_agent_v1.spawn<|channel|>commentary <|constrain|>json<|message|>"
        '{"task":"lint"}<|call|><|start|>multi_agent_v1.spawn to=assistant<|channel|>commentary'
        "<|message|>spawned<|end|>"
    ) in text
    assert (
        "<|start|>assistant to=multi_agent_v1.note<|channel|>commentary<|message|>remember<|call|>"
        "<|start|>multi_agent_v1.note to=assistant<|channel|>commentary<|message|>noted<|end|>"
    ) in text
    request = parse_request(body(input=items))
    messages = item_messages(request.items)
    back = message_items(messages)
    assert [(type(i).__name__, getattr(i, "namespace", None)) for i in back[1:]] == [
        ("FunctionCall", "multi_agent_v1"),
        ("FunctionCallOutput", None),
        ("CustomToolCall", "multi_agent_v1"),
        ("CustomToolCallOutput", None),
    ]
    assert item_messages(back) == messages


def test_the_namespace_field_round_trips_through_json() -> None:
    call = FunctionCall(call_id="c", name="spawn", arguments="{}", namespace="multi_agent_v1")
    for dialect in WireDialect:
        assert load_item(call.to_json(dialect)) == call
    assert "namespace" not in FunctionCall(call_id="c", name="f", arguments="{}").to_json()
    custom = CustomToolCall(call_id="c", name="note", input="x", namespace="multi_agent_v1")
    assert load_item(custom.to_json(WireDialect.OPENAI)) == custom


@templates
def test_a_template_model_reads_qualified_names() -> None:
    dialect = qwen3_dialect()
    request, conversation = request_of(input="Lint.", tools=[SPAWN_TOO, AGENTS])
    text = dialect.prepare(request, conversation, context_length=None).text or ""
    tools = [json.loads(line) for line in text.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()]
    assert [t["function"]["name"] for t in tools] == ["spawn", "multi_agent_v1.spawn", "multi_agent_v1.note"]
    assert tools[1]["function"]["description"] == "Agents that work beside you.\n\nStart an agent on a task."
    assert tools[2]["function"]["parameters"]["properties"] == {"input": {"type": "string"}}
    items = [
        {"role": "user", "content": "Lint."},
        {"type": "function_call", "call_id": "c1", "name": "spawn", "namespace": "multi_agent_v1",
         "arguments": '{"task": "lint"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "spawned"},
    ]  # fmt: skip
    request, conversation = request_of(input=items, tools=[AGENTS])
    text = dialect.prepare(request, conversation, context_length=None).text or ""
    assert (
        '<tool_call>\n{"name": "multi_agent_v1.spawn", "arguments": {"task": "lint"}}\n</tool_call>' in text
    )


# --- calls out -----------------------------------------------------------------------------


def test_gpt_oss_calls_a_namespaced_function_and_custom_tool() -> None:
    think = Message.assistant("Spawn one.", channel="analysis")
    call = Message.tool_call("multi_agent_v1.spawn", '{"task":"lint"}')
    ids = said(think, call)
    for cut in range(0, len(ids) + 1, 5):
        final = check(events_of(ids, cut))
        assert final["status"] == "completed"
        assert [(i["type"], i.get("name"), i.get("namespace")) for i in final["output"]] == [
            ("reasoning", None, None),
            ("function_call", "spawn", "multi_agent_v1"),
        ]
        assert final["output"][1]["arguments"] == '{"task":"lint"}'
    note = Message.tool_call("multi_agent_v1.note", "remember the lint", content_type=None)
    final = check(events_of(said(note)))
    (item,) = final["output"]
    assert (item["type"], item["name"], item["namespace"], item["input"]) == (
        "openai:custom_tool_call",
        "note",
        "multi_agent_v1",
        "remember the lint",
    )


@templates
def test_a_template_model_calls_a_namespaced_function() -> None:
    dialect = qwen3_dialect()
    request, conversation = request_of(input="Lint.", tools=[SPAWN_TOO, AGENTS])
    prepared = dialect.prepare(request, conversation, context_length=None)
    tokenizer = dialect.tokenizer
    text = (
        '<think>\nSpawn.\n</think>\n\n<tool_call>\n{"name": "multi_agent_v1.spawn", "arguments": {"task": '
        '"lint"}}\n</tool_call>\n<tool_call>\n{"name": "spawn", "arguments": {}}\n</tool_call>'
    )
    ids = [*tokenizer.encode(text), tokenizer.markers["<|im_end|>"]]
    builder = EventBuilder(
        ResponseState("resp_1", request, "m"),
        parser=dialect.parser(request, prepared),
        vocabulary=tokenizer,
        rules=CallRules.of(request),
    )
    events = [e.to_json() for e in builder.begin() + builder.feed(ids) + builder.finish("stop")]
    final = check(events)
    calls = [(i["name"], i.get("namespace"), json.loads(i["arguments"])) for i in final["output"][1:]]
    assert calls == [("spawn", "multi_agent_v1", {"task": "lint"}), ("spawn", None, {})]


# --- the rules -----------------------------------------------------------------------------


def test_the_rules_know_namespaced_names() -> None:
    request = parse_request(body(tools=[SPAWN_TOO, AGENTS], tool_choice="required"))
    rules = CallRules.of(request)
    assert rules is not None
    assert rules.allowed == {"spawn", "multi_agent_v1.spawn", "multi_agent_v1.note"}
    assert rules.custom == {"multi_agent_v1.note"}
    assert rules.refusal("multi_agent_v1.spawn", '{"task":"lint"}') == ""
    assert "do not match its schema" in rules.refusal("multi_agent_v1.spawn", '{"task":3}')
    assert rules.refusal("multi_agent_v1.note", "free text") == ""
    named = CallRules.of(
        parse_request(body(tools=[SPAWN_TOO, AGENTS], tool_choice={"type": "function", "name": "spawn"}))
    )
    assert named is not None and "does not allow" in named.name_refusal("multi_agent_v1.spawn")


def test_a_call_the_choice_forbids_fails_the_response() -> None:
    ids = said(Message.tool_call("multi_agent_v1.spawn", '{"task":"lint"}'))
    events = events_of(ids, tools=[SPAWN_TOO, AGENTS], tool_choice={"type": "function", "name": "spawn"})
    final = check(events)
    assert final["status"] == "failed" and final["error"]["code"] == "invalid_tool_call"
    assert "multi_agent_v1.spawn" in final["error"]["message"]
    assert not [e for e in events if e["type"] == "response.output_item.added"]


def test_a_conversation_without_namespaces_is_unchanged() -> None:
    conversation = Conversation.from_messages([Message.tool_call("functions.get_weather", "{}", call_id="c")])
    (item,) = message_items(conversation)
    assert isinstance(item, FunctionCall) and (item.name, item.namespace) == ("get_weather", None)
    (output,) = message_items([Message.tool_result("functions.get_weather", "sunny", call_id="c")])
    assert isinstance(output, FunctionCallOutput)


# --- the grammar ---------------------------------------------------------------------------


@templates
@pytest.mark.parametrize("dialect", [HarmonyDialect(), "template"], ids=["harmony", "template"])
def test_the_grammar_holds_the_model_to_namespaced_names(dialect: Any) -> None:
    dialect = qwen3_dialect() if dialect == "template" else dialect

    def grammar(**fields: Any) -> Any:
        request, conversation = request_of(**body(tools=[SPAWN_TOO, AGENTS], **fields))
        return dialect.prepare(request, conversation, context_length=4096).params.grammar

    auto = grammar()
    assert auto.lazy and auto.tools == ("spawn", "multi_agent_v1.spawn", "multi_agent_v1.note")
    named = grammar(tool_choice={"type": "function", "name": "spawn", "namespace": "multi_agent_v1"})
    assert not named.lazy and named.tools == ("multi_agent_v1.spawn",)
    whole = grammar(
        tool_choice={"type": "allowed_tools", "tools": [{"type": "namespace", "name": "multi_agent_v1"}]}
    )
    assert whole.tools == ("multi_agent_v1.spawn", "multi_agent_v1.note")
    custom = grammar(tool_choice={"type": "custom", "name": "note", "namespace": "multi_agent_v1"})
    assert custom.tools == ("multi_agent_v1.note",)
    if isinstance(dialect, HarmonyDialect):
        assert "to=multi_agent_v1.spawn" in named.lark and "to=functions.multi_agent_v1" not in named.lark
    else:
        assert '"\\"multi_agent_v1.spawn\\""' in named.lark
