"""A chat completion body → the response each choice runs: messages as input items, tools,
tool choice and response format as a create-response request has them; every refusal a
400 naming the chat request's ``param``."""

from __future__ import annotations

from typing import Any

import pytest

from openchatml.chat.messages import chat_param
from openchatml.chat.request import ChatRequest, parse_chat_request
from openchatml.responses.errors import RequestError
from openchatml.responses.wire.content import (
    InputFile,
    InputImage,
    InputText,
    OutputText,
    ReasoningText,
    Refusal,
)
from openchatml.responses.wire.items import (
    AssistantMessage,
    DeveloperMessage,
    FunctionCall,
    FunctionCallOutput,
    ReasoningItem,
    SystemMessage,
    UserMessage,
)
from openchatml.responses.wire.tools import (
    AllowedTools,
    FunctionChoice,
    JsonObjectFormat,
    JsonSchemaFormat,
    PlainText,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
HI = [{"role": "user", "content": "hi"}]


def parse(**body: Any) -> ChatRequest:
    return parse_chat_request({"model": "m", "messages": HI, **body})


def refusal(body: dict[str, Any]) -> RequestError:
    with pytest.raises(RequestError) as caught:
        parse_chat_request(body)
    assert caught.value.status == 400
    return caught.value


def test_every_role_becomes_its_items() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {
            "role": "developer",
            "content": [{"type": "text", "text": "Use "}, {"type": "text", "text": "tools."}],
        },
        {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
        {
            "role": "assistant",
            "content": "Let me look.",
            "reasoning_content": "I should call the tool.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny."},
        {"role": "assistant", "content": "It is sunny.", "reasoning": "Done."},
        {"role": "user", "content": "Thanks"},
    ]
    chat = parse_chat_request({"messages": messages, "tools": [WEATHER]})
    items = chat.request.items
    kinds = [type(item) for item in items]
    assert kinds == [
        SystemMessage,
        DeveloperMessage,
        UserMessage,
        ReasoningItem,
        AssistantMessage,
        FunctionCall,
        FunctionCallOutput,
        ReasoningItem,
        AssistantMessage,
        UserMessage,
    ]
    assert items[1].content == (InputText(text="Use tools."),)
    assert items[3].content == (ReasoningText(text="I should call the tool."),)
    preamble, answer = items[4], items[8]
    assert isinstance(preamble, AssistantMessage) and preamble.phase == "commentary"
    assert isinstance(answer, AssistantMessage) and answer.phase == "final_answer"
    assert answer.content == (OutputText(text="It is sunny."),)
    call, output = items[5], items[6]
    assert isinstance(call, FunctionCall) and (call.call_id, call.name, call.arguments) == (
        "call_1",
        "get_weather",
        "{}",
    )
    assert isinstance(output, FunctionCallOutput) and (output.call_id, output.output) == ("call_1", "Sunny.")
    assert items[7].content == (ReasoningText(text="Done."),)
    assert chat.origins[:7] == (
        "messages[0]",
        "messages[1]",
        "messages[2]",
        "messages[3]",
        "messages[3].content",
        "messages[3].tool_calls[0]",
        "messages[4]",
    )
    assert chat.request.store is False


def test_user_parts_and_assistant_refusals() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}
    file = {"type": "file", "file": {"file_data": "aGk=", "filename": "a.txt"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Look"}, image, file]},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
        {"role": "assistant", "content": None, "refusal": "Still no."},
    ]
    items = parse_chat_request({"messages": messages}).request.items
    user = items[0]
    assert isinstance(user, UserMessage)
    assert user.content == (
        InputText(text="Look"),
        InputImage(image_url="https://example.com/a.png", detail="low"),
        InputFile(file_data="aGk=", filename="a.txt"),
    )
    assert items[1].content == (Refusal(refusal="No."),)
    assert items[2].content == (Refusal(refusal="Still no."),)


def test_the_same_reasoning_may_come_by_both_names() -> None:
    message = {"role": "assistant", "content": "ok", "reasoning": "why", "reasoning_content": "why"}
    items = parse_chat_request({"messages": [message]}).request.items
    assert [type(i) for i in items] == [ReasoningItem, AssistantMessage]


def test_tools_are_not_strict_unless_asked_and_choices_map() -> None:
    strict = {"type": "function", "function": {"name": "lookup", "strict": True}}
    chat = parse(tools=[WEATHER, strict], tool_choice={"type": "function", "function": {"name": "lookup"}})
    tools = chat.request.tools
    assert [(t.name, t.strict) for t in tools] == [("get_weather", False), ("lookup", True)]
    assert tools[0].parameters == WEATHER["function"]["parameters"]
    assert chat.request.tool_choice == FunctionChoice(name="lookup")
    allowed = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [{"type": "function", "function": {"name": "lookup"}}],
        },
    }
    choice = parse(tools=[WEATHER, strict], tool_choice=allowed).request.tool_choice
    assert isinstance(choice, AllowedTools) and choice.mode == "required"
    assert [t.name for t in choice.tools] == ["lookup"]
    for mode in ("none", "auto", "required"):
        assert parse(tools=[WEATHER], tool_choice=mode).request.tool_choice == mode
    assert parse(tools=[WEATHER], parallel_tool_calls=False).request.parallel_tool_calls is False


def test_response_formats() -> None:
    assert parse().request.text_format == PlainText()
    assert parse(response_format={"type": "text"}).request.text_format == PlainText()
    assert parse(response_format={"type": "json_object"}).request.text_format == JsonObjectFormat()
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = parse(
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "A", "schema": schema, "strict": True},
        }
    ).request.text_format
    assert isinstance(fmt, JsonSchemaFormat)
    assert (fmt.name, fmt.json_schema, fmt.strict) == ("A", schema, True)


def test_sampling_settings_and_chat_options() -> None:
    chat = parse(
        temperature=0.5,
        top_p=0.9,
        presence_penalty=1,
        frequency_penalty=-1,
        seed=7,
        max_tokens=10,
        reasoning_effort="high",
        logprobs=True,
        top_logprobs=3,
        n=3,
        stop="END",
        stream=True,
        stream_options={"include_usage": True},
        metadata={"k": "v"},
        user="u",
    )
    request = chat.request
    assert (request.temperature, request.top_p, request.presence_penalty, request.frequency_penalty) == (
        0.5,
        0.9,
        1.0,
        -1.0,
    )
    assert (request.max_output_tokens, request.reasoning_effort, request.top_logprobs) == (10, "high", 3)
    assert request.wants_logprobs and chat.logprobs
    assert (chat.n, chat.stop, chat.stream, chat.include_usage) == (3, ("END",), True, True)
    assert request.metadata == {"k": "v"}
    assert [chat.choice(i).seed for i in range(3)] == [7, 8, 9]
    assert parse(max_tokens=10, max_completion_tokens=20).request.max_output_tokens == 20
    assert parse(stop=["a", "b"]).stop == ("a", "b")
    assert not parse(stream_options={"include_usage": True}).include_usage  # only a stream has chunks
    assert not parse().request.wants_logprobs


def test_unknown_and_unused_fields_are_named_not_refused() -> None:
    chat = parse(top_k=40, logit_bias={"1": 5}, chat_template_kwargs={"x": 1}, prediction=None)
    assert chat.ignored == ("top_k", "chat_template_kwargs", "logit_bias")
    assert parse().ignored == ()
    assert parse(store=True).ignored == ("store",)  # chat completions are never stored
    assert parse(store=False).ignored == ()
    many = parse(**{f"extra_{n}": n for n in range(40)})
    assert len(many.ignored) == 16


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({}, "messages", "missing_required_parameter"),
        ({"messages": []}, "messages", "invalid_value"),
        ({"messages": "hi"}, "messages", "invalid_type"),
        ({"messages": [{"role": "bot", "content": "x"}]}, "messages[0].role", "invalid_value"),
        ({"messages": ["hi"]}, "messages[0]", "invalid_type"),
        (
            {"messages": [{"role": "user", "content": [{"type": "video"}]}]},
            "messages[0].content[0].type",
            None,
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "messages[0].content[0]",
            None,
        ),
        (
            {"messages": [{"role": "system", "content": [{"type": "image_url"}]}]},
            "messages[0].content[0].type",
            None,
        ),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id", "invalid_type"),
        (
            {"messages": [{"role": "assistant", "reasoning": "a", "reasoning_content": "b"}]},
            "messages[0].reasoning",
            None,
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "function": {"name": "a b", "arguments": ""}}],
                    }
                ]
            },
            "messages[0].tool_calls[0].function.name",
            None,
        ),
        ({"messages": HI, "tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools[0].type", None),
        ({"messages": HI, "tools": [WEATHER, WEATHER]}, "tools[1].function.name", None),
        ({"messages": HI, "tool_choice": "always"}, "tool_choice", None),
        ({"messages": HI, "tool_choice": {"type": "custom"}}, "tool_choice.type", None),
        (
            {"messages": HI, "tool_choice": {"type": "function", "function": {"name": "x"}}},
            "tool_choice.function.name",
            None,
        ),
        ({"messages": HI, "tool_choice": "required"}, "tool_choice", None),
        ({"messages": HI, "response_format": {"type": "xml"}}, "response_format.type", None),
        (
            {"messages": HI, "response_format": {"type": "json_schema", "json_schema": {"name": "a"}}},
            "response_format.json_schema.schema",
            "missing_required_parameter",
        ),
        ({"messages": HI, "top_logprobs": 2}, "top_logprobs", None),
        ({"messages": HI, "logprobs": True, "top_logprobs": 21}, "top_logprobs", None),
        ({"messages": HI, "n": 0}, "n", None),
        ({"messages": HI, "n": 17}, "n", None),
        ({"messages": HI, "stop": ["a", "b", "c", "d", "e"]}, "stop", None),
        ({"messages": HI, "stop": ["a", ""]}, "stop[1]", None),
        ({"messages": HI, "stop": 3}, "stop", None),
        ({"messages": HI, "temperature": 2.5}, "temperature", None),
        ({"messages": HI, "max_tokens": 0}, "max_tokens", None),
        ({"messages": HI, "reasoning_effort": "extreme"}, "reasoning_effort", None),
        ({"messages": HI, "modalities": ["text", "audio"]}, "modalities[1]", None),
        ({"messages": HI, "audio": {"voice": "x"}}, "audio", "unsupported_parameter"),
        ({"messages": HI, "functions": [{"name": "f"}]}, "functions", "unsupported_parameter"),
        ({"messages": HI, "metadata": {str(n): "v" for n in range(17)}}, "metadata", None),
        ([1, 2], "body", "invalid_type"),
    ],
)
def test_bad_bodies_name_their_param(body: Any, param: str, code: str | None) -> None:
    error = refusal(body)
    assert error.param == param, error.message
    if code is not None:
        assert error.code == code
    assert error.message


def test_limits_hold_before_anything_is_read() -> None:
    error = refusal({"messages": [{"role": "user", "content": "x"}] * 5000})
    assert (error.param, error.code) == ("messages", "too_many_input_items")
    deep: Any = "x"
    for _ in range(100):
        deep = [deep]
    error = refusal({"messages": HI, "extra": deep})  # an ignored field is held to the bounds too
    assert error.code == "json_too_deep"


def test_errors_of_the_responses_layer_are_named_in_chat_terms() -> None:
    origins = ("messages[0]", "messages[1].content", "messages[1].tool_calls[0]", "messages[2]")
    assert chat_param("input[0].content[1]", origins) == "messages[0].content[1]"
    assert chat_param("input[1].content[0]", origins) == "messages[1].content[0]"
    assert chat_param("input[2].arguments", origins) == "messages[1].tool_calls[0].function.arguments"
    assert chat_param("input[3].call_id", origins) == "messages[2].tool_call_id"
    assert chat_param("input", origins) == "messages"
    assert chat_param("tools[2].parameters", origins) == "tools[2].function.parameters"
    assert chat_param("tool_choice.name", origins) == "tool_choice.function.name"
    assert chat_param("text.format.schema", origins) == "response_format.json_schema.schema"
    assert chat_param("max_output_tokens", origins) == "max_completion_tokens"
    assert chat_param("model", origins) == "model"
    assert chat_param(None, origins) is None
    chat = parse()
    error = chat.error(RequestError("Bad 'input[0].content[0]'.", param="input[0].content[0]"))
    assert (error.param, error.message) == ("messages[0].content[0]", "Bad 'messages[0].content[0]'.")
