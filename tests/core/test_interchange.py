"""The JSON interchange of OCM §10: lossless both ways, §10's own example, typed errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml import (
    Author,
    ChannelConfig,
    Content,
    Conversation,
    CoTPolicy,
    DeveloperContent,
    Message,
    OCMError,
    Profile,
    ReasoningEffort,
    RenderConfig,
    Renderer,
    ResponseFormat,
    Role,
    StreamParser,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
    TranscriptHeader,
    parse_text,
    parse_transcript,
)
from openchatml.core.interchange import (
    InterchangeError,
    conversation_from_json,
    conversation_from_json_text,
    conversation_to_json,
    event_to_json,
    header_from_json,
    header_to_json,
    message_from_json,
    message_to_json,
    messages_from_json,
)

# --- strategies -------------------------------------------------------------------------

texts = st.text(max_size=20)
opt_texts = st.none() | texts
json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(texts, json_values, max_size=4)

tools = st.builds(ToolDescription, name=texts, description=texts, parameters=st.none() | json_objects)
namespaces = st.builds(
    ToolNamespaceConfig,
    name=texts,
    description=opt_texts,
    tools=st.lists(tools, max_size=3).map(tuple),
)
namespace_maps = st.none() | st.dictionaries(texts, namespaces, max_size=3)
channel_configs = st.none() | st.builds(
    ChannelConfig, valid_channels=st.lists(texts, max_size=3).map(tuple), channel_required=st.booleans()
)
system_contents = st.just(SystemContent()) | st.builds(
    SystemContent,
    model_identity=opt_texts,
    reasoning_effort=st.none() | st.sampled_from(ReasoningEffort),
    conversation_start_date=opt_texts,
    knowledge_cutoff=opt_texts,
    channel_config=channel_configs,
    tools=namespace_maps,
)
response_formats = st.builds(ResponseFormat, name=texts, schema=json_objects, description=opt_texts)
developer_contents = st.builds(
    DeveloperContent,
    instructions=opt_texts,
    tools=namespace_maps,
    response_formats=st.lists(response_formats, max_size=2).map(tuple),
)
text_parts = st.builds(TextContent, texts)


@st.composite
def messages(draw: st.DrawFn, words: st.SearchStrategy[str] = texts, structured: bool = True) -> Message:
    """Messages of every role, channel and attribute; ``words`` draws the header values,
    ``structured`` allows system and developer contents."""
    role = draw(st.sampled_from(Role))
    part: st.SearchStrategy[Content] = text_parts
    if structured and role is Role.SYSTEM:
        part = text_parts | system_contents
    elif structured and role is Role.DEVELOPER:
        part = text_parts | developer_contents
    content = draw(st.lists(part, max_size=3).map(tuple) | text_parts.map(lambda p: (p,)))
    if not structured:
        content = (TextContent("".join(p.text for p in content if isinstance(p, TextContent))),)
    maybe = st.none() | words
    content_type = draw(maybe)
    return Message(
        Author(role, draw(words if role is Role.TOOL else maybe)),
        content,
        channel=draw(st.none() | st.sampled_from(["analysis", "commentary", "final"]) | words),
        recipient=draw(maybe),
        content_type=content_type,
        constrained=draw(st.booleans()) and (structured or content_type is not None),
        call_id=draw(maybe),
        intent=draw(st.none() | st.sampled_from(["preamble", "status", "debug"]) | words),
    )


header_words = st.text("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789._-", min_size=1, max_size=10).filter(
    lambda w: w != "all"
)


_KNOWN_HEADER_KEYS = {"version", "model", "generation_settings", "capabilities", "profiles"}
headers = st.builds(
    TranscriptHeader,
    version=texts,
    model=opt_texts,
    generation_settings=json_objects,
    capabilities=json_objects,
    profiles=json_objects,
    extra=st.dictionaries(texts.filter(lambda k: k not in _KNOWN_HEADER_KEYS), json_values, max_size=3),
)


# --- round trips ------------------------------------------------------------------------


@given(messages())
def test_message_round_trip(message: Message) -> None:
    data = message_to_json(message)
    assert message_from_json(data) == message
    assert message_from_json(json.loads(json.dumps(data))) == message


@given(st.lists(messages(), max_size=5), st.none() | headers)
def test_conversation_round_trip(items: list[Message], header: TranscriptHeader | None) -> None:
    conversation = Conversation(tuple(items), header)
    data = conversation_to_json(conversation)
    assert ("header" in data) == (header is not None)
    assert conversation_from_json(data) == conversation
    assert conversation_from_json_text(json.dumps(data)) == conversation
    assert conversation_from_json(data["messages"]) == Conversation(tuple(items))


@given(st.lists(messages(), max_size=4))
def test_json_is_canonical(items: list[Message]) -> None:
    data = conversation_to_json(Conversation(tuple(items)))
    assert conversation_to_json(conversation_from_json(json.loads(json.dumps(data)))) == data


@given(st.lists(messages(header_words, structured=False), max_size=4))
def test_json_agrees_with_parsed_text(items: list[Message]) -> None:
    """What OCM text carries, the JSON carries: JSON of the parsed text = JSON of the original."""
    text = Renderer(RenderConfig(profile=Profile.OCM, cot=CoTPolicy.KEEP)).text(items)
    parsed = parse_text(text, check_constraints=False)
    assert [message_to_json(m) for m in parsed] == [message_to_json(m) for m in items]
    assert [message_from_json(message_to_json(m)) for m in parsed] == items


# --- the shape of the JSON --------------------------------------------------------------


def test_tool_call_is_written_as_tool_call() -> None:
    call = Message.tool_call("functions.get_weather", '{"city":"SF"}', call_id="wx1")
    assert message_to_json(call) == {
        "role": "assistant",
        "channel": "commentary",
        "tool_call": {
            "id": "wx1",
            "recipient": "functions.get_weather",
            "content_type": "json",
            "constrained": True,
            "arguments": '{"city":"SF"}',
        },
    }


def test_analysis_is_written_as_thinking() -> None:
    msg = Message.assistant("Let me think.", channel="analysis")
    assert message_to_json(msg) == {"role": "assistant", "channel": "analysis", "thinking": "Let me think."}
    assert message_from_json({"role": "assistant", "thinking": "Let me think."}) == msg


def test_tool_reply_and_attributes() -> None:
    reply = Message.tool_result("functions.get_weather", '{"temp":20}', call_id="wx1")
    assert message_to_json(reply) == {
        "role": "tool",
        "name": "functions.get_weather",
        "channel": "commentary",
        "recipient": "assistant",
        "call_id": "wx1",
        "content": '{"temp":20}',
    }
    preamble = Message.assistant("**Plan:** search, then summarise.", channel="commentary", intent="preamble")
    assert message_to_json(preamble) == {
        "role": "assistant",
        "channel": "commentary",
        "intent": "preamble",
        "content": "**Plan:** search, then summarise.",
    }


def test_content_forms() -> None:
    assert message_to_json(Message(Author(Role.USER))) == {"role": "user"}
    assert message_to_json(Message.user("")) == {"role": "user", "content": ""}
    two = Message(Author(Role.USER, "alice"), (TextContent("a"), TextContent("b")))
    assert message_to_json(two) == {
        "role": "user",
        "name": "alice",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    }
    assert message_from_json({"role": "user", "content": []}) == Message(Author(Role.USER))
    assert message_from_json({"role": "user", "content": None}) == Message(Author(Role.USER))


def test_tool_call_with_parts_keeps_recipient_at_top() -> None:
    msg = Message(Author(Role.ASSISTANT), (), "commentary", "functions.f")
    data = message_to_json(msg)
    assert data == {"role": "assistant", "channel": "commentary", "recipient": "functions.f"}
    assert message_from_json(data) == msg


def test_system_content_fields() -> None:
    assert message_to_json(Message.system()) == {
        "role": "system",
        "content": [
            {
                "type": "system_content",
                "model_identity": "You are ChatGPT, a large language model trained by OpenAI.",
                "reasoning_effort": "medium",
                "knowledge_cutoff": "2024-06",
                "channel_config": {
                    "valid_channels": ["analysis", "commentary", "final"],
                    "channel_required": True,
                },
            }
        ],
    }
    bare = SystemContent(
        model_identity=None, reasoning_effort=None, knowledge_cutoff=None, channel_config=None
    )
    part = message_to_json(Message.system(bare))["content"][0]
    assert part == {
        "type": "system_content",
        "model_identity": None,
        "reasoning_effort": None,
        "knowledge_cutoff": None,
        "channel_config": None,
    }
    # absent keys take the defaults; null is None
    assert message_from_json({"role": "system", "content": [{"type": "system_content"}]}) == Message.system()
    read = message_from_json({"role": "system", "content": [part]})
    assert read.content == (bare,)


def test_builtin_namespaces_round_trip() -> None:
    content = SystemContent(
        tools={"browser": ToolNamespaceConfig.browser(), "python": ToolNamespaceConfig.python()}
    )
    msg = Message.system(content)
    data = json.loads(json.dumps(message_to_json(msg)))
    assert data["content"][0]["tools"]["python"] == {
        "name": "python",
        "description": ToolNamespaceConfig.python().description,
    }
    assert [t["name"] for t in data["content"][0]["tools"]["browser"]["tools"]] == ["search", "open", "find"]
    assert message_from_json(data) == msg
    assert Renderer().text([message_from_json(data)]) == Renderer().text([msg])


def test_developer_content_fields() -> None:
    content = DeveloperContent(
        instructions="Be brief.",
        tools={
            "functions": ToolNamespaceConfig(
                "functions",
                tools=(ToolDescription("lookup", "Look it up.", {"type": "object", "properties": {}}),),
            )
        },
        response_formats=(ResponseFormat("answer", {"type": "object"}, "The answer."),),
    )
    assert message_to_json(Message.developer(content))["content"] == [
        {
            "type": "developer_content",
            "instructions": "Be brief.",
            "tools": {
                "functions": {
                    "name": "functions",
                    "tools": [
                        {
                            "name": "lookup",
                            "description": "Look it up.",
                            "parameters": {"type": "object", "properties": {}},
                        }
                    ],
                }
            },
            "response_formats": [
                {"name": "answer", "schema": {"type": "object"}, "description": "The answer."}
            ],
        }
    ]
    read = message_from_json({"role": "developer", "content": [{"type": "developer_content", "tools": {}}]})
    assert read.content == (DeveloperContent(tools={}),)
    namespace = message_from_json(
        {"role": "developer", "content": [{"type": "developer_content", "tools": {"functions": {}}}]}
    )
    assert namespace.content == (DeveloperContent(tools={"functions": ToolNamespaceConfig("functions")}),)


def test_read_json_is_immutable() -> None:
    msg = message_from_json(
        {
            "role": "developer",
            "content": [
                {
                    "type": "developer_content",
                    "tools": {"functions": {"tools": [{"name": "f", "parameters": {"type": "object"}}]}},
                }
            ],
        }
    )
    part = msg.content[0]
    assert isinstance(part, DeveloperContent) and part.tools is not None
    params = part.tools["functions"].tools[0].parameters
    assert params is not None
    with pytest.raises(TypeError):
        params["type"] = "array"  # type: ignore[index]


# --- §10 ------------------------------------------------------------------------------

SECTION_10 = {
    "role": "assistant",
    "channel": "final",
    "content": "Visible reply",
    "tool_call": {
        "id": "abc123",
        "recipient": "functions.lookup_weather",
        "content_type": "json",
        "arguments": '{"location":"SF"}',
    },
    "thinking": "Private reasoning (analysis)",
    "intent": "preamble",
}


def test_section_10_example_expands_to_a_turn() -> None:
    conv = conversation_from_json({"messages": [SECTION_10]})
    assert list(conv) == [
        Message(Author(Role.ASSISTANT), (TextContent("Private reasoning (analysis)"),), "analysis"),
        Message(Author(Role.ASSISTANT), (TextContent("Visible reply"),), "final", intent="preamble"),
        Message(
            Author(Role.ASSISTANT),
            (TextContent('{"location":"SF"}'),),
            "commentary",
            recipient="functions.lookup_weather",
            content_type="json",
            call_id="abc123",
        ),
    ]
    text = Renderer(RenderConfig(profile=Profile.OCM, cot=CoTPolicy.KEEP)).text(conv)
    assert text.splitlines() == [
        "<|start|>assistant<|channel|>analysis<|message|>Private reasoning (analysis)<|end|>",
        "<|start|>assistant intent=preamble<|channel|>final<|message|>Visible reply<|end|>",
        "<|start|>assistant to=functions.lookup_weather call_id=abc123 content_type=json"
        '<|channel|>commentary<|message|>{"location":"SF"}<|call|>',
    ]
    assert parse_text(text) == list(conv)


def test_section_10_example_is_not_one_message() -> None:
    assert len(messages_from_json(SECTION_10)) == 3
    with pytest.raises(InterchangeError, match=r"E-INTERCHANGE: \$: holds 3 messages"):
        message_from_json(SECTION_10)


def test_turn_of_thinking_and_call() -> None:
    turn = {
        "role": "assistant",
        "thinking": "Need the weather.",
        "tool_call": {
            "recipient": "functions.w",
            "content_type": "json",
            "constrained": True,
            "arguments": "{}",
        },
    }
    assert messages_from_json(turn) == [
        Message.assistant("Need the weather.", channel="analysis"),
        Message.tool_call("functions.w", "{}"),
    ]


def test_section_16_2_round_trip() -> None:
    text = (
        "<|start|>user<|message|>What's the weather in Tokyo?<|end|>\n"
        "<|start|>assistant<|channel|>analysis<|message|>Call functions.get_current_weather.<|end|>\n"
        "<|start|>assistant to=functions.get_current_weather call_id=wx1<|channel|>commentary"
        '<|constrain|>json<|message|>{"location":"Tokyo","format":"celsius"}<|call|>\n'
        "<|start|>tool name=functions.get_current_weather call_id=wx1 to=assistant<|channel|>commentary"
        '<|message|>{"ok":true,"content":{"temperature":20,"sunny":true}}<|end|>\n'
        "<|start|>assistant<|channel|>final<|message|>It’s 20 °C and sunny in Tokyo right now.<|return|>"
    )
    conv = parse_transcript(text).conversation
    data = json.loads(json.dumps(conversation_to_json(conv)))
    assert data["messages"][2]["tool_call"]["id"] == "wx1"
    assert data["messages"][3]["call_id"] == "wx1"
    assert data["messages"][1] == {
        "role": "assistant",
        "channel": "analysis",
        "thinking": "Call functions.get_current_weather.",
    }
    assert conversation_from_json(data) == conv


# --- the transcript header --------------------------------------------------------------


def test_header_fields_and_extra_keys() -> None:
    text = (
        "version: 2.2\nmodel: gpt-oss-120b\ngeneration_settings:\n  temperature: 0.7\n"
        "released: 2025-08-08\nflavour: vanilla\n<|start|>user<|message|>hi<|end|>"
    )
    conv = parse_transcript(text).conversation
    data = conversation_to_json(conv)
    assert data["header"] == {
        "version": "2.2",
        "model": "gpt-oss-120b",
        "generation_settings": {"temperature": 0.7},
        "released": "2025-08-08",
        "flavour": "vanilla",
    }
    json.dumps(data)
    header = header_from_json(data["header"])
    assert header.extra == {"released": "2025-08-08", "flavour": "vanilla"}
    assert header.generation_settings == {"temperature": 0.7}
    assert header_to_json(TranscriptHeader()) == {"version": "2.2"}
    assert header_from_json({"version": 2.2}).version == "2.2"


# --- parser events ----------------------------------------------------------------------


def test_event_to_json() -> None:
    parser = StreamParser(strict=False)
    events = parser.feed_text(
        "version: 2.2\n<|start|>assistant to=functions.f<|channel|>commentary<|constrain|>json"
        "<|message|>{x<|call|>stray<|start|>user<|message|>hi"
    )
    events += parser.close()
    out = [json.loads(json.dumps(event_to_json(e))) for e in events]
    assert out[0] == {"type": "document_header", "header": {"version": "2.2"}}
    assert out[1] == {
        "type": "message_started",
        "index": 0,
        "header": {
            "role": "assistant",
            "channel": "commentary",
            "recipient": "functions.f",
            "content_type": "json",
            "constrained": True,
        },
    }
    assert out[2] == {"type": "content_delta", "index": 0, "channel": "commentary", "text": "{x"}
    assert out[3]["type"] == "repaired"
    assert out[3]["code"] == "E-BODY-CONSTRAINT-VIOLATION"
    assert out[3]["kind"] == "constraint_violation"
    assert out[3]["position"] == {"offset": 97, "unit": "char", "line": 2, "column": 85}
    assert out[4]["type"] == "message_done"
    assert out[4]["terminator"] == "<|call|>"
    assert out[4]["message"]["tool_call"]["arguments"] == "{x"
    assert [e["type"] for e in out[5:]] == [
        "repaired",
        "message_started",
        "content_delta",
        "repaired",
        "message_done",
    ]
    assert out[-1]["terminator"] is None
    assert out[-2]["code"] == "E-STREAM-TRUNCATED"


# --- errors -----------------------------------------------------------------------------

GOOD_CALL = {"role": "assistant", "tool_call": {"recipient": "functions.f", "arguments": "{}"}}


def _conversation(*items: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "hi"}, *items]}


ERRORS: list[tuple[Any, str]] = [
    ("nope", "$: expected an object, not a string"),
    ({}, "messages: missing (expected an array of messages)"),
    ({"messages": {}}, "messages: expected an array of messages, not an object"),
    ({"messages": [], "extra": 1}, "extra: unknown key"),
    (_conversation(7), "messages[1]: expected an object, not a number"),
    (_conversation({"content": "x"}), "messages[1].role: missing (expected a string)"),
    (
        _conversation({"role": "robot"}),
        "messages[1].role: expected one of system, developer, user, assistant, tool",
    ),
    (_conversation({"role": "user", "chanel": "final"}), "messages[1].chanel: unknown key (expected one of:"),
    (_conversation({"role": "user", "channel": 3}), "messages[1].channel: expected a string, not a number"),
    (
        _conversation({"role": "user", "constrained": "yes"}),
        "messages[1].constrained: expected true or false",
    ),
    (
        _conversation({"role": "user", "content": 3}),
        "messages[1].content: expected a string or an array of parts",
    ),
    (
        _conversation({"role": "user", "content": [{"type": "image"}]}),
        "messages[1].content[0].type: expected text, system_content or developer_content, not 'image'",
    ),
    (_conversation({"role": "user", "content": [{"text": "x"}]}), "messages[1].content[0].type: missing"),
    (
        _conversation({"role": "user", "content": [{"type": "text", "text": None}]}),
        "messages[1].content[0].text: expected a string, not null",
    ),
    (
        _conversation({"role": "user", "content": [{"type": "system_content"}]}),
        "messages[1].content[0]: system_content belongs in a system message, not user",
    ),
    (
        _conversation({"role": "system", "content": [{"type": "developer_content"}]}),
        "messages[1].content[0]: developer_content belongs in a developer message, not system",
    ),
    (
        _conversation({"role": "system", "content": [{"type": "system_content", "reasoning_effort": "max"}]}),
        "messages[1].content[0].reasoning_effort: expected one of low, medium, high, not 'max'",
    ),
    (
        _conversation(
            {
                "role": "system",
                "content": [{"type": "system_content", "channel_config": {"valid_channels": ["a", 1]}}],
            }
        ),
        "messages[1].content[0].channel_config.valid_channels[1]: expected a string, not a number",
    ),
    (
        _conversation(
            {
                "role": "developer",
                "content": [
                    {
                        "type": "developer_content",
                        "tools": {"my-ns": {"tools": [{"name": "f", "parameters": []}]}},
                    }
                ],
            }
        ),
        'messages[1].content[0].tools["my-ns"].tools[0].parameters: expected an object, not an array',
    ),
    (
        _conversation(
            {
                "role": "developer",
                "content": [{"type": "developer_content", "response_formats": [{"name": "x"}]}],
            }
        ),
        "messages[1].content[0].response_formats[0].schema: missing (expected an object)",
    ),
    (
        _conversation({"role": "tool", "content": "42"}),
        "messages[1].name: a tool message needs the tool's name",
    ),
    (
        _conversation({"role": "user", "thinking": "hm"}),
        "messages[1].thinking: only an assistant message has thinking",
    ),
    (
        _conversation({"role": "assistant", "channel": "final", "thinking": "hm"}),
        "messages[1].channel: thinking is on the analysis channel, not 'final'",
    ),
    (
        _conversation({"role": "assistant", "thinking": 5}),
        "messages[1].thinking: expected a string, not a number",
    ),
    (
        _conversation(
            GOOD_CALL, {"role": "assistant", "tool_call": {"recipient": "functions.f", "arguments": {"a": 1}}}
        ),
        "messages[2].tool_call.arguments: expected a string, not an object",
    ),
    (
        _conversation(GOOD_CALL, GOOD_CALL, {"role": "assistant", "tool_call": {"recipient": "f"}}),
        "messages[3].tool_call.arguments: missing (expected a string)",
    ),
    (
        _conversation({"role": "assistant", "tool_call": {"arguments": "{}"}}),
        "messages[1].tool_call.recipient: missing (expected a string)",
    ),
    (
        _conversation({"role": "assistant", "tool_call": {"to": "f", "arguments": "{}"}}),
        "messages[1].tool_call.to: unknown key",
    ),
    (
        _conversation({"role": "assistant", "call_id": "1", **GOOD_CALL}),
        "messages[1].call_id: give it as tool_call.id, not beside tool_call",
    ),
    (
        _conversation({"role": "user", "tool_call": GOOD_CALL["tool_call"]}),
        "messages[1].tool_call: only an assistant message has tool_call, not user",
    ),
    (
        _conversation({"role": "assistant", "recipient": "f", "content": "x", "thinking": "y"}),
        "messages[1].recipient: not allowed in an object with more than one of thinking, content, tool_call",
    ),
    (
        _conversation({"role": "assistant", "channel": "final", "thinking": "y", **GOOD_CALL}),
        "messages[1].channel: in an object with thinking and tool_call, this belongs to content",
    ),
    ({"header": {"model": "x"}, "messages": []}, "header.version: missing"),
    ({"header": {"version": True}, "messages": []}, "header.version: expected a string such as"),
    ({"header": {"version": "2.2", "profiles": [1]}, "messages": []}, "header.profiles: expected an object"),
    ({"header": {"version": "2.2", "model": 1}, "messages": []}, "header.model: expected a string"),
    ([{"role": "user"}, {"role": 1}], "[1].role: expected a string, not a number"),
]


@pytest.mark.parametrize(("value", "expected"), ERRORS)
def test_bad_json_raises_interchange_error(value: Any, expected: str) -> None:
    with pytest.raises(InterchangeError) as info:
        conversation_from_json(value)
    assert str(info.value.message).startswith(expected)
    assert info.value.path == info.value.message.split(": ", 1)[0]


def test_interchange_error_is_typed() -> None:
    with pytest.raises(OCMError) as info:
        message_from_json({"role": "assistant", "tool_call": {"recipient": "f", "arguments": 1}})
    err = info.value
    assert isinstance(err, InterchangeError)
    assert err.code == "E-INTERCHANGE"
    assert err.fault == "input"
    assert err.path == "tool_call.arguments"
    assert err.to_dict() == {
        "code": "E-INTERCHANGE",
        "message": "tool_call.arguments: expected a string, not a number",
        "fault": "input",
    }


def test_json_text_errors_carry_a_position() -> None:
    with pytest.raises(InterchangeError) as info:
        conversation_from_json_text('{"messages": [\n  {"role": "user",}\n]}')
    err = info.value
    assert err.message.startswith("$: not valid JSON: ")
    assert err.position is not None
    assert (err.position.line, err.position.column) == (2, 19)
    with pytest.raises(InterchangeError, match="not valid JSON"):
        conversation_from_json_text("[" * 100_000)
    with pytest.raises(InterchangeError, match="messages: missing"):
        conversation_from_json_text("{}")


def test_deep_json_is_refused() -> None:
    schema: dict[str, Any] = {}
    for _ in range(200):
        schema = {"type": "array", "items": schema}
    developer = {
        "role": "developer",
        "content": [{"type": "developer_content", "response_formats": [{"name": "deep", "schema": schema}]}],
    }
    with pytest.raises(InterchangeError, match=r"\$: nested more than 128 levels deep"):
        conversation_from_json({"messages": [developer]})
    with pytest.raises(InterchangeError, match=r"messages\[2\]: nested more than 128 levels deep"):
        messages_from_json(developer, "messages[2]")
    with pytest.raises(InterchangeError, match=r"header: nested more than 128 levels deep"):
        header_from_json({"version": "2.2", "profiles": schema})
