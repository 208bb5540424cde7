"""Custom tools from request to prompt, calls out and calls in: the request's checks, the
tool as gpt-oss and a chat template read it, the call items a client sends back, and the
event stream of a call the model writes, whatever the split of its ids."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openapi import validate
from sdk import validate_openai_event
from test_dialect import GPT_OSS, QWEN3, qwen3_dialect, request_of
from test_stream import check, run, typed_run

from openchatml import Message, Renderer, load_encoding
from openchatml.core.messages import Conversation
from openchatml.responses.custom_tools import (
    InputArgument,
    input_of,
    is_custom_call,
    template_tool,
    with_input_arguments,
)
from openchatml.responses.errors import RequestError
from openchatml.responses.input import PromptSettings, build_conversation, item_messages, message_items
from openchatml.responses.replay import replay_events
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder
from openchatml.responses.wire.content import InputText
from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.items import (
    CustomToolCall,
    CustomToolCallOutput,
    FunctionCall,
    FunctionCallOutput,
    load_item,
)
from openchatml.responses.wire.tools import CustomChoice, CustomTool

PATCH = '*** Begin Patch\n*** Add File: a.txt\n+"hi" \\ é\n*** End Patch'
LARK = 'start: "*** Begin Patch\\n" body "*** End Patch"\nbody: /(.|\\n)*/\n'
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Edit files.",
    "format": {"type": "grammar", "syntax": "lark", "definition": LARK},
}
SHELL = {"type": "custom", "name": "shell", "description": "Run a command."}
WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
SETTINGS = PromptSettings(current_date="2026-01-02")
templates = pytest.mark.skipif(not (QWEN3.is_file() and GPT_OSS.is_file()), reason="no chat templates")


# --- the request ---------------------------------------------------------------------------


def test_function_and_custom_tools_are_kept_apart() -> None:
    request = parse_request(
        {"model": "m", "input": "x", "tools": [APPLY_PATCH, WEATHER, SHELL], "tool_choice": "required"}
    )
    assert [t.name for t in request.tools] == ["get_weather"]
    assert [t.name for t in request.custom_tools] == ["apply_patch", "shell"]
    assert all(isinstance(t, CustomTool) for t in request.custom_tools)
    assert request.custom_names == {"apply_patch", "shell"}
    only_custom = parse_request({"model": "m", "input": "x", "tools": [SHELL], "tool_choice": "required"})
    assert only_custom.tool_choice == "required" and not only_custom.tools
    named = parse_request(
        {"model": "m", "input": "x", "tools": [SHELL], "tool_choice": {"type": "custom", "name": "shell"}}
    )
    assert named.tool_choice == CustomChoice(name="shell")


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"tools": [WEATHER, {**SHELL, "name": "get_weather"}]}, "tools[1].name", "invalid_value"),
        ({"tools": [SHELL, {**WEATHER, "name": "shell"}]}, "tools[1].name", "invalid_value"),
        ({"tools": [SHELL, SHELL]}, "tools[1].name", "invalid_value"),
        (
            {
                "tools": [
                    WEATHER,
                    {**SHELL, "format": {"type": "grammar", "syntax": "regex", "definition": "(a"}},
                ]
            },
            "tools[1].format.definition",
            "invalid_grammar",
        ),
        (
            {"tools": [{**SHELL, "format": {"type": "grammar", "syntax": "lark", "definition": " \n"}}]},
            "tools[0].format.definition",
            "invalid_value",
        ),
        (
            {"tools": [{**SHELL, "format": {"type": "grammar", "syntax": "regex", "definition": ""}}]},
            "tools[0].format.definition",
            "invalid_value",
        ),
        (
            {"tools": [{**SHELL, "format": {"type": "grammar", "syntax": "ebnf", "definition": "x"}}]},
            "tools[0].format.syntax",
            "invalid_value",
        ),
        ({"tools": [{**SHELL, "format": {"type": "json"}}]}, "tools[0].format.type", "invalid_value"),
        (
            {"tools": [{**SHELL, "format": {"type": "grammar", "syntax": "lark"}}]},
            "tools[0].format.definition",
            "invalid_type",
        ),
        ({"tools": [{**SHELL, "name": "a.b"}]}, "tools[0].name", "invalid_value"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "custom", "name": "get_weather"}},
            "tool_choice.name",
            "invalid_value",
        ),
        (
            {"tools": [SHELL], "tool_choice": {"type": "function", "name": "shell"}},
            "tool_choice.name",
            "invalid_value",
        ),
        (
            {"tools": [SHELL], "tool_choice": {"type": "custom", "name": "bash"}},
            "tool_choice.name",
            "invalid_value",
        ),
        (
            {
                "tools": [WEATHER, SHELL],
                "tool_choice": {
                    "type": "allowed_tools",
                    "tools": [{"type": "custom", "name": "get_weather"}],
                },
            },
            "tool_choice.tools[0]",
            "invalid_value",
        ),
        (
            {
                "tools": [WEATHER, SHELL],
                "tool_choice": {"type": "allowed_tools", "tools": [{"type": "function", "name": "shell"}]},
            },
            "tool_choice.tools[0]",
            "invalid_value",
        ),
    ],
)
def test_bad_custom_tools_are_refused_naming_the_param(body: dict[str, Any], param: str, code: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request({"model": "m", "input": "x", **body})
    assert (caught.value.param, caught.value.code) == (param, code), caught.value.message
    assert caught.value.status == 400
    validate(caught.value.payload(), "ErrorPayload")


def test_a_regex_that_does_not_compile_says_why() -> None:
    bad = {**SHELL, "format": {"type": "grammar", "syntax": "regex", "definition": "[a-"}}
    with pytest.raises(RequestError, match=r"Invalid regular expression at 'tools\[0\].format.definition'"):
        parse_request({"model": "m", "input": "x", "tools": [bad]})
    good = {**SHELL, "format": {"type": "grammar", "syntax": "regex", "definition": r"ls( -la)?"}}
    assert parse_request({"model": "m", "input": "x", "tools": [good]}).custom_tools[0].grammar is not None


def test_allowed_tools_name_custom_tools_by_type() -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "custom", "name": "shell"}, {"type": "function", "name": "get_weather"}],
    }
    request = parse_request({"model": "m", "input": "x", "tools": [WEATHER, SHELL], "tool_choice": choice})
    echoed = ResponseState("resp_1", request, "m").to_json(WireDialect.OPENAI)["tool_choice"]
    assert echoed["tools"] == [
        {"type": "custom", "name": "shell"},
        {"type": "function", "name": "get_weather"},
    ]


# --- the prompt: gpt-oss -------------------------------------------------------------------


def developer_text(**body: Any) -> str:
    request = parse_request({"model": "m", "input": "hi", **body})
    conversation = build_conversation(request, request.items, settings=SETTINGS)
    developer = [m for m in conversation if m.role.value == "developer"]
    return Renderer().message_text(developer[0]) if developer else ""


def test_gpt_oss_reads_a_custom_tool_as_a_function_of_one_string() -> None:
    text = developer_text(tools=[WEATHER, APPLY_PATCH, SHELL])
    assert text == (
        "<|start|>developer<|message|># Tools\n\n## functions\n\nnamespace functions {\n\n"
        "type get_weather = (_: {\n}) => any;\n\n"
        "// Edit files.\n// \n"
        "// The input is text in the language of this Lark grammar, written as it is (not JSON):\n"
        '// start: "*** Begin Patch\\n" body "*** End Patch"\n'
        "// body: /(.|\\n)*/\n"
        "type apply_patch = (_: string) => any;\n\n"
        "// Run a command.\n// \n"
        "// The input is free text, written as it is (not JSON).\n"
        "type shell = (_: string) => any;\n\n"
        "} // namespace functions<|end|>"
    )


def test_a_regex_tool_is_described_by_its_expression_and_none_hides_every_tool() -> None:
    regex = {
        "type": "custom",
        "name": "count",
        "format": {"type": "grammar", "syntax": "regex", "definition": r"\d+"},
    }
    text = developer_text(tools=[regex])
    assert (
        "// The input is text in the language of this regular expression, written as it is (not JSON):\n"
        "// \\d+\n" in text
    )
    assert "type count = (_: string) => any;" in text
    assert developer_text(tools=[regex, SHELL], tool_choice="none") == ""


def test_function_tools_render_as_before_beside_custom_ones() -> None:
    alone = developer_text(tools=[WEATHER])
    beside = developer_text(tools=[WEATHER, SHELL])
    weather = "type get_weather = (_: {\n}) => any;\n"
    assert weather in alone and weather in beside
    assert (
        beside.replace(beside[beside.index("// Run a command.") : beside.index("} // namespace")], "")
        == alone
    )


# --- calls in: the items a client sends back -----------------------------------------------

CALL = CustomToolCall(call_id="call_1", name="apply_patch", input=PATCH)
OUTPUT = CustomToolCallOutput(call_id="call_1", output="Done.")


def test_a_custom_call_and_its_output_become_harmony_messages() -> None:
    messages = item_messages([CALL, OUTPUT])
    call, result = messages
    assert (call.recipient, call.channel, call.content_type, call.constrained, call.text) == (
        "functions.apply_patch",
        "commentary",
        None,
        False,
        PATCH,
    )
    assert is_custom_call(call) and not is_custom_call(Message.tool_call("functions.f", "{}"))
    assert Renderer().message_text(call) == (
        f"<|start|>assistant to=functions.apply_patch<|channel|>commentary<|message|>{PATCH}<|call|>"
    )
    assert result == Message.tool_result("functions.apply_patch", "Done.", call_id="call_1")
    parts = CustomToolCallOutput(call_id="call_1", output=(InputText(text="Do"), InputText(text="ne.")))
    assert item_messages([CALL, parts])[1].text == "Done."
    stored = [load_item(i.to_json()) for i in (CALL, OUTPUT)]
    assert item_messages(stored) == messages
    assert item_messages([load_item(i.to_json(WireDialect.OPENAI)) for i in (CALL, OUTPUT)]) == messages


def test_an_output_without_its_call_is_refused() -> None:
    with pytest.raises(RequestError) as caught:
        item_messages([FunctionCall(call_id="call_2", name="f", arguments="{}"), OUTPUT])
    assert caught.value.param == "input[1].call_id"
    assert "custom tool call output" in caught.value.message


def test_messages_come_back_as_the_same_items() -> None:
    function = FunctionCall(call_id="call_2", name="get_weather", arguments="{}")
    items = [CALL, OUTPUT, function, FunctionCallOutput(call_id="call_2", output="sunny")]
    back = message_items(item_messages(items))
    strip = [{k: v for k, v in i.to_json().items() if k != "id"} for i in back]
    assert strip == [{k: v for k, v in i.to_json().items() if k != "id"} for i in items]


def test_a_follow_up_request_renders_the_call_and_its_output() -> None:
    request = parse_request(
        {
            "model": "m",
            "tools": [APPLY_PATCH],
            "input": [
                {"role": "user", "content": "Add a.txt."},
                {"type": "custom_tool_call", "call_id": "call_1", "name": "apply_patch", "input": PATCH},
                {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Done."},
            ],
        }
    )
    text = Renderer().completion_text(build_conversation(request, request.items, settings=SETTINGS))
    assert text.endswith(
        "<|start|>user<|message|>Add a.txt.<|end|>"
        f"<|start|>assistant to=functions.apply_patch<|channel|>commentary<|message|>{PATCH}<|call|>"
        "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>Done.<|end|>"
        "<|start|>assistant"
    )


# --- calls out: the event stream of gpt-oss's call -----------------------------------------

ENCODING = load_encoding()
ANALYSIS = "<|channel|>analysis<|message|>Add the file.<|end|><|start|>assistant"
CUSTOM_CALL = f"<|channel|>commentary to=functions.apply_patch<|message|>{PATCH}<|call|>"


def harmony(text: str) -> list[int]:
    return ENCODING.encode(text, allowed_special="all")


def custom_events(events: list[dict[str, Any]]) -> tuple[list[str], str]:
    deltas = [e["delta"] for e in events if e["type"] == "openai:response.custom_tool_call_input.delta"]
    (done,) = [e["input"] for e in events if e["type"] == "openai:response.custom_tool_call_input.done"]
    return deltas, done


def test_gpt_oss_calls_a_custom_tool_at_every_split_point() -> None:
    ids = harmony(ANALYSIS + CUSTOM_CALL)
    for cut in range(len(ids) + 1):
        events = run(ids, [cut], tools=[APPLY_PATCH, WEATHER])
        final = check(events)
        deltas, done = custom_events(events)
        assert "".join(deltas) == done == PATCH
        call = final["output"][1]
        assert (call["type"], call["name"], call["input"], call["status"]) == (
            "openai:custom_tool_call",
            "apply_patch",
            PATCH,
            "completed",
        )
        assert call["call_id"].startswith("call_") and call["id"].startswith("ctc_")
        kinds = [e["type"] for e in events if e.get("output_index") == 1]
        assert kinds[0] == "response.output_item.added" and kinds[-1] == "response.output_item.done"
        assert "response.function_call_arguments.delta" not in kinds
        added = next(
            e for e in events if e["type"] == "response.output_item.added" and e["output_index"] == 1
        )
        assert (added["item"]["input"], added["item"]["status"]) == ("", "in_progress")


def test_the_input_streams_as_it_arrives() -> None:
    ids = harmony(CUSTOM_CALL)
    events = run(ids, list(range(1, len(ids))), tools=[APPLY_PATCH])
    deltas, done = custom_events(events)
    assert len(deltas) > 5 and "".join(deltas) == done == PATCH


def test_a_function_of_the_same_request_is_still_a_function_call() -> None:
    call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>"
    final = check(run(harmony(call), tools=[APPLY_PATCH, WEATHER]))
    assert [i["type"] for i in final["output"]] == ["function_call"]
    without = check(run(harmony(CUSTOM_CALL), tools=[WEATHER]))  # not a custom tool of this request
    assert [(i["type"], i["arguments"]) for i in without["output"]] == [("function_call", PATCH)]


def test_a_call_cut_short_is_incomplete_with_the_input_so_far() -> None:
    ids = harmony(CUSTOM_CALL)[:-6]
    final = check(run(ids, [len(ids) // 2], reason="length", tools=[APPLY_PATCH]))
    call = final["output"][0]
    assert call["status"] == "incomplete" and PATCH.startswith(call["input"]) and call["input"]


def test_the_openai_dialect_speaks_the_sdks_names() -> None:
    typed = typed_run(harmony(ANALYSIS + CUSTOM_CALL), [9], tools=[APPLY_PATCH])
    names = [e.to_json(WireDialect.OPENAI)["type"] for e in typed]
    assert (
        "response.custom_tool_call_input.delta" in names and "response.custom_tool_call_input.done" in names
    )
    for event in typed:
        validate_openai_event(event.to_json(WireDialect.OPENAI))
    final = typed[-1].to_json(WireDialect.OPENAI)["response"]
    assert final["output"][1]["type"] == "custom_tool_call"
    assert [t["type"] for t in final["tools"]] == ["custom"]


def test_a_stored_custom_call_replays_to_its_events() -> None:
    typed = typed_run(harmony(ANALYSIS + CUSTOM_CALL), [5, 17, 30], tools=[APPLY_PATCH])
    snapshot = typed[-1].to_json()["response"]
    replayed = replay_events(snapshot)
    check(replayed)
    deltas, done = custom_events(replayed)
    assert deltas == [PATCH] and done == PATCH
    assert replayed[-1]["response"]["output"] == snapshot["output"]
    for event in replay_events(snapshot, dialect=WireDialect.OPENAI):
        validate_openai_event(event)


# --- a chat-template model: one string argument ``input`` ----------------------------------


def test_a_template_model_reads_a_custom_tool_as_a_function_of_input() -> None:
    regex = {
        "type": "custom",
        "name": "count",
        "format": {"type": "grammar", "syntax": "regex", "definition": r"\d+"},
    }
    tool = template_tool(parse_request({"model": "m", "input": "x", "tools": [regex]}).custom_tools[0])
    assert tool == {
        "type": "function",
        "function": {
            "name": "count",
            "description": "",
            "parameters": {
                "type": "object",
                "properties": {
                    "input": {
                        "type": "string",
                        "description": "Text in the language of this regular expression:\n\\d+",
                    }
                },
                "required": ["input"],
                "additionalProperties": False,
            },
        },
    }
    free = template_tool(parse_request({"model": "m", "input": "x", "tools": [SHELL]}).custom_tools[0])
    assert free["function"]["parameters"]["properties"] == {"input": {"type": "string"}}
    assert free["function"]["description"] == "Run a command."


def test_custom_calls_carry_their_input_as_json_arguments_for_a_template() -> None:
    function = Message.tool_call("functions.get_weather", "{}", call_id="call_2")
    conversation = Conversation.from_messages([Message.user("hi"), *item_messages([CALL, OUTPUT]), function])
    rewritten = list(with_input_arguments(conversation))
    call = rewritten[1]
    assert (call.recipient, call.content_type, call.call_id) == ("functions.apply_patch", "json", "call_1")
    assert json.loads(call.text) == {"input": PATCH}
    assert rewritten[0] == conversation[0] and rewritten[2:] == list(conversation)[2:]


@templates
def test_a_template_prompt_offers_the_tool_and_writes_past_calls_with_input() -> None:
    dialect = qwen3_dialect()
    request, conversation = request_of(
        input=[
            {"role": "user", "content": "Add a.txt."},
            {"type": "custom_tool_call", "call_id": "call_1", "name": "shell", "input": "echo hi > a.txt"},
            {"type": "custom_tool_call_output", "call_id": "call_1", "output": "Done."},
        ],
        tools=[SHELL, WEATHER],
    )
    text = dialect.prepare(request, conversation, context_length=None).text or ""
    assert json.dumps(template_tool(request.custom_tools[0])) in text
    assert '"name": "get_weather"' in text
    assert '<tool_call>\n{"name": "shell", "arguments": {"input": "echo hi > a.txt"}}\n</tool_call>' in text
    assert "<tool_response>\nDone.\n</tool_response>" in text


@templates
def test_a_template_model_calls_a_custom_tool_at_every_split_point() -> None:
    dialect = qwen3_dialect()
    request, conversation = request_of(input="Add a.txt.", tools=[SHELL])
    prepared = dialect.prepare(request, conversation, context_length=None)
    tokenizer = dialect.tokenizer
    said = (
        '<think>\nHm.\n</think>\n\n<tool_call>\n{"name": "shell", "arguments": {"input": '
        + json.dumps(PATCH)
        + "}}\n</tool_call>"
    )
    ids = [*tokenizer.encode(said), tokenizer.markers["<|im_end|>"]]
    for cut in [*range(0, len(ids) + 1, 7), len(ids) - 1]:
        builder = EventBuilder(
            ResponseState("resp_1", request, "m"),
            parser=dialect.parser(request, prepared),
            vocabulary=tokenizer,
        )
        typed = builder.begin() + builder.feed(ids[:cut]) + builder.feed(ids[cut:]) + builder.finish("stop")
        events = [e.to_json() for e in typed]
        final = check(events)
        deltas, done = custom_events(events)
        assert "".join(deltas) == done == PATCH
        assert [(i["type"], i.get("name"), i.get("input")) for i in final["output"][1:]] == [
            ("openai:custom_tool_call", "shell", PATCH)
        ]
        for event in typed:
            validate_openai_event(event.to_json(WireDialect.OPENAI))
    one_by_one = EventBuilder(
        ResponseState("resp_1", request, "m"), parser=dialect.parser(request, prepared), vocabulary=tokenizer
    )
    events = [
        e.to_json()
        for e in one_by_one.begin()
        + [e for t in ids for e in one_by_one.feed([t])]
        + one_by_one.finish("stop")
    ]
    deltas, done = custom_events(events)
    assert len(deltas) > 10 and "".join(deltas) == PATCH  # the decoded string, as it arrives


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (json.dumps({"input": PATCH}), PATCH),
        ('{"input": ""}', ""),
        ('{"other": 1, "input": "a\\u00e9\\ud83d\\ude00b"}', "aé😀b"),
        ('{"patch": "only one"}', "only one"),
        ('"a JSON string"', "a JSON string"),
        ('{"input": 5}', '{"input": 5}'),
        ("not json at all", "not json at all"),
        ('{"input": "cut sho', "cut sho"),
    ],
)
def test_the_input_argument_at_every_split(arguments: str, expected: str) -> None:
    for cut in range(len(arguments) + 1):
        reader = InputArgument()
        streamed = reader.feed(arguments[:cut]) + reader.feed(arguments[cut:])
        whole = reader.close()
        assert whole == expected
        assert expected.startswith(streamed)
    assert input_of(json.dumps({"input": PATCH, "x": 1})) == PATCH
