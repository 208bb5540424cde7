"""``openchatml.harmony`` against the real ``openai_harmony``, scenario by scenario.

Every scenario is built twice with the same code, once with each package (their APIs
are the same), and must give the same token ids, the same parsed messages and, token by
token, the same streaming state. The scenarios cover those of openai-harmony's own test
suite, rebuilt here, and more. The last sections hold malformed input: strict, read as
the reference reads it (its messages, or a typed error with its words) but for the
documented misreadings; not strict, a recovered message, never an untyped exception.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

import openai_harmony as H
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml import harmony as C
from openchatml import load_encoding
from openchatml.core.errors import (
    HeaderError,
    ParseError,
    RenderError,
    StreamTruncatedError,
    UnexpectedTokenError,
)

from .test_malformed_differential import exempt

Builder = Callable[[Any], Any]
"""Builds a conversation with a module that has the openai_harmony API."""


@pytest.fixture(scope="session")
def ours() -> C.HarmonyEncoding:
    """openchatml's drop-in encoding."""
    return C.load_harmony_encoding(C.HarmonyEncodingName.HARMONY_GPT_OSS)


# --- helpers --------------------------------------------------------------------------


def dicts(messages: Any) -> list[Any]:
    """Messages as plain JSON data, comparable across the two packages."""
    return [json.loads(m.to_json()) for m in messages]


def assert_same_tokens(ours: C.HarmonyEncoding, got: list[int], want: list[int]) -> None:
    """Equal ids; on failure the decoded texts show where they part."""
    if got != want:
        assert ours.decode(got) == ours.decode(want)
        assert got == want


def snapshot(parser: Any, *, with_state_data: bool) -> tuple[Any, ...]:
    """Everything a streaming client reads from a parser."""
    role = parser.current_role
    return (
        parser.state.value,
        None if role is None else role.value,
        parser.current_channel,
        parser.current_recipient,
        parser.current_content_type,
        parser.current_content,
        parser.last_content_delta,
        len(parser.messages),
        parser.state_data if with_state_data else None,
    )


def assert_same_stream(
    oracle: Any, ours: C.HarmonyEncoding, tokens: list[int], role: str | None, *, strict: bool = True
) -> list[Any]:
    """Feed ``tokens`` to both streaming parsers; the state must agree after every token.

    Returns the parsed messages (as dicts) after ``process_eos``.
    """
    ref = H.StreamableParser(oracle, None if role is None else H.Role(role), strict=strict)
    our = C.StreamableParser(ours, None if role is None else C.Role(role), strict=strict)
    every = 1 if len(tokens) <= 300 else 41
    for i, token in enumerate(tokens):
        assert ref.process(token) is ref
        assert our.process(token) is our
        full = i % every == 0 or i == len(tokens) - 1
        assert snapshot(our, with_state_data=full) == snapshot(ref, with_state_data=full), (
            f"after token {i} ({token})"
        )
    assert dicts(our.messages) == dicts(ref.messages)
    ref.process_eos()
    our.process_eos()
    assert snapshot(our, with_state_data=True) == snapshot(ref, with_state_data=True)
    assert our.tokens == ref.tokens == list(tokens)
    got = dicts(our.messages)
    assert got == dicts(ref.messages)
    return got


def assert_same_parse(oracle: Any, ours: C.HarmonyEncoding, tokens: list[int], role: str | None) -> list[Any]:
    """Both batch parsers (strict and lenient) and both streaming parsers agree."""
    want = dicts(oracle.parse_messages_from_completion_tokens(tokens, None if role is None else H.Role(role)))
    for strict in (True, False):
        got = ours.parse_messages_from_completion_tokens(
            tokens, None if role is None else C.Role(role), strict=strict
        )
        assert dicts(got) == want
        assert assert_same_stream(oracle, ours, tokens, role, strict=strict) == want
    return want


def assert_same_render(oracle: Any, ours: C.HarmonyEncoding, build: Builder) -> None:
    """Every render method, with every config, gives the reference's token ids."""
    ref_conv, our_conv = build(H), build(C)
    assert dicts(our_conv.messages) == dicts(ref_conv.messages)
    for drop in (None, True, False):
        ref_cfg = None if drop is None else H.RenderConversationConfig(auto_drop_analysis=drop)
        our_cfg = None if drop is None else C.RenderConversationConfig(auto_drop_analysis=drop)
        assert_same_tokens(
            ours, ours.render_conversation(our_conv, our_cfg), oracle.render_conversation(ref_conv, ref_cfg)
        )
        assert_same_tokens(
            ours,
            ours.render_conversation_for_training(our_conv, our_cfg),
            oracle.render_conversation_for_training(ref_conv, ref_cfg),
        )
        for role in ("assistant", "user", "tool"):
            assert_same_tokens(
                ours,
                ours.render_conversation_for_completion(our_conv, C.Role(role), our_cfg),
                oracle.render_conversation_for_completion(ref_conv, H.Role(role), ref_cfg),
            )
    for ref_msg, our_msg in zip(ref_conv.messages, our_conv.messages, strict=True):
        assert_same_tokens(ours, ours.render(our_msg), oracle.render(ref_msg))
        for has_tools in (False, True):
            assert_same_tokens(
                ours,
                ours.render(our_msg, C.RenderOptions(conversation_has_function_tools=has_tools)),
                oracle.render(ref_msg, H.RenderOptions(conversation_has_function_tools=has_tools)),
            )


# --- conversations (rendering) --------------------------------------------------------

IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."


def simple_convo(M: Any) -> Any:
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(
                M.Role.SYSTEM, M.SystemContent.new().with_model_identity(IDENTITY)
            ),
            M.Message.from_role_and_content(M.Role.USER, "How many legs does a spider have?"),
        ]
    )


def effort_convo(effort: str, instructions: bool) -> Builder:
    def build(M: Any) -> Any:
        system = (
            M.SystemContent.new()
            .with_model_identity(IDENTITY)
            .with_reasoning_effort(M.ReasoningEffort(effort))
        )
        messages = [M.Message.from_role_and_content(M.Role.SYSTEM, system)]
        if instructions:
            dev = M.DeveloperContent.new().with_instructions("Reply in the voice of a lighthouse keeper.")
            messages.append(M.Message.from_role_and_content(M.Role.DEVELOPER, dev))
        messages.append(M.Message.from_role_and_content(M.Role.USER, "Which ocean is the deepest?"))
        return M.Conversation.from_messages(messages)

    return build


def reasoning_system(effort: str, dates: bool) -> Builder:
    def build(M: Any) -> Any:
        system = (
            M.SystemContent.new()
            .with_model_identity(IDENTITY)
            .with_reasoning_effort(M.ReasoningEffort(effort))
            .with_required_channels(["analysis", "final"])
        )
        if dates:
            system = system.with_conversation_start_date("2024-11-05").with_knowledge_cutoff("2023-10")
        return M.Conversation.from_messages(
            [
                M.Message.from_role_and_content(M.Role.SYSTEM, system),
                M.Message.from_role_and_content(M.Role.USER, "What is 17 times 23?"),
            ]
        )

    return build


FORMAT_ENUM = {"type": "string", "enum": ["metric", "imperial"], "default": "metric"}

KITCHEN_SINK = {
    "description": "all sorts of parameters",
    "type": "object",
    "properties": {
        "label": {
            "type": "string",
            "title": "LABEL",
            "description": "A label",
            "examples": ["alpha", "beta"],
        },
        "maybe_label": {
            "type": "string",
            "nullable": True,
            "description": "A label that may be null",
            "default": "none given",
        },
        "letter": {"type": "string", "enum": ["x", "y", "z"]},
        "text_or_count": {
            "oneOf": [
                {"type": "string", "default": "a string default"},
                {"type": "number", "description": "counts are fine too"},
            ],
            "description": "one of two",
            "default": 7,
        },
    },
}

MORE_SCHEMAS = {
    "type": "object",
    "properties": {
        "where": {
            "type": "object",
            "properties": {
                "lat": {"type": "number", "description": "latitude"},
                "lon": {"type": "number"},
                "tags": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"k": {"type": "string"}}},
                },
            },
            "required": ["lat", "lon"],
        },
        "id": {"type": ["integer", "string"]},
        "limit": {"type": "integer", "default": 10},
        "ratio": {"type": "number", "default": 0.25},
        "strict": {"type": "boolean", "default": False},
        "mode": {"type": "string", "enum": ["fast", "slow"], "nullable": True, "default": "fast"},
        "anything": {"description": "free form\nacross two lines"},
        "either": {
            "oneOf": [
                {"type": "object", "properties": {"p": {"type": "string"}}},
                {"type": "string", "nullable": True},
            ],
            "description": "an object or a string",
        },
        "options": {"type": "object", "default": {"depth": 2, "keys": ["a", "b"]}},
        "quote": {"type": "string", "default": 'say "hi"'},
        "list": {"type": "array"},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "fixed": {"const": "v1"},
    },
    "required": ["where"],
}


def function_tools(M: Any) -> list[Any]:
    return [
        M.ToolDescription.new("get_position", "Returns where the user is."),
        M.ToolDescription.new(
            "get_forecast",
            "Returns the forecast for a place.",
            parameters={
                "type": "object",
                "properties": {
                    "place": {"type": "string", "description": "A city and country, e.g. Lyon, France"},
                    "units": FORMAT_ENUM,
                },
                "required": ["place"],
            },
        ),
        M.ToolDescription.new(
            "get_forecasts",
            "Returns forecasts for several places.",
            parameters={
                "type": "object",
                "properties": {
                    "places": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": 'Cities, e.g. ["Lyon, France", "Kyoto, Japan"]',
                    },
                    "units": FORMAT_ENUM,
                },
                "required": ["places"],
            },
        ),
        M.ToolDescription.new("kitchen_sink", "Takes many kinds of parameters.", parameters=KITCHEN_SINK),
        M.ToolDescription.new(
            "more_schemas", "Line one of a description.\nLine two.", parameters=MORE_SCHEMAS
        ),
    ]


def functions_with_parameters(M: Any) -> Any:
    system = (
        M.SystemContent.new()
        .with_reasoning_effort(M.ReasoningEffort.HIGH)
        .with_conversation_start_date("2025-01-31")
    )
    dev = (
        M.DeveloperContent.new().with_instructions("Answer in haiku.").with_function_tools(function_tools(M))
    )
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.SYSTEM, system),
            M.Message.from_role_and_content(M.Role.DEVELOPER, dev),
            M.Message.from_role_and_content(M.Role.USER, "Will it rain in Lyon tomorrow?"),
        ]
    )


def no_tools(M: Any) -> Any:
    system = M.SystemContent.new().with_conversation_start_date("2025-01-31")
    return M.Conversation.from_messages([M.Message.from_role_and_content(M.Role.SYSTEM, system)])


def browser_only(M: Any) -> Any:
    system = M.SystemContent.new().with_conversation_start_date("2025-01-31").with_browser_tool()
    return M.Conversation.from_messages([M.Message.from_role_and_content(M.Role.SYSTEM, system)])


def browser_and_function(M: Any) -> Any:
    system = M.SystemContent.new().with_conversation_start_date("2025-01-31").with_browser_tool()
    tool = M.ToolDescription.new(
        "lookup_tide",
        "Looks up the tide table for a harbour. Call it with 'harbour', any description of a place.",
        parameters={"type": "object", "properties": {"harbour": {"type": "string"}}, "required": ["harbour"]},
    )
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.SYSTEM, system),
            M.Message.from_role_and_content(
                M.Role.DEVELOPER, M.DeveloperContent.new().with_function_tools([tool])
            ),
        ]
    )


def browser_and_python(M: Any) -> Any:
    system = (
        M.SystemContent.new()
        .with_conversation_start_date("2025-01-31")
        .with_browser_tool()
        .with_python_tool()
    )
    return M.Conversation.from_messages([M.Message.from_role_and_content(M.Role.SYSTEM, system)])


def finished_turn_then_question(M: Any) -> Any:
    """A turn that ended in a final answer, then a new question: its analysis is dropped."""
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.USER, "What is 6 × 7?"),
            M.Message.from_role_and_content(
                M.Role.ASSISTANT, "The user asks “6 × 7”. Multiply: 42."
            ).with_channel("analysis"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "6 × 7 = 42.").with_channel("final"),
            M.Message.from_role_and_content(M.Role.USER, "And 9 / 4?"),
        ]
    )


def ongoing_analysis(M: Any) -> Any:
    """A turn still in progress (a tool call and its reply): nothing is dropped."""
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.USER, "Is the harbour at Brest open?"),
            M.Message.from_role_and_content(
                M.Role.ASSISTANT, "The user asks about “Brest”. Use lookup_tide."
            ).with_channel("analysis"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, '{"harbour": "Brest"}')
            .with_channel("commentary")
            .with_recipient("functions.lookup_tide")
            .with_content_type("<|constrain|>json"),
            M.Message.from_author_and_content(
                M.Author.new(M.Role.TOOL, "functions.lookup_tide"), '{"high": "06:12", "open": true}'
            ),
        ]
    )


def analysis_between_finals(M: Any) -> Any:
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.USER, "1 + 1?"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "adding 1 and 1").with_channel("analysis"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "2").with_channel("final"),
            M.Message.from_role_and_content(M.Role.USER, "2 + 3?"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "adding 2 and 3").with_channel("analysis"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "5").with_channel("final"),
        ]
    )


def single_user(M: Any) -> Any:
    return M.Conversation.from_messages([M.Message.from_role_and_content(M.Role.USER, "Hello there")])


def training_final(M: Any) -> Any:
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.USER, "hi"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "hello!").with_channel("final"),
        ]
    )


def tool_reply(M: Any) -> Any:
    return M.Conversation.from_messages(
        [
            M.Message.from_author_and_content(
                M.Author.new(M.Role.TOOL, "browser.search"), '{"result": "https://example.org/"}'
            )
            .with_channel("commentary")
            .with_recipient("assistant")
        ]
    )


def full_agent_turn(M: Any) -> Any:
    """System, developer tools, a preamble, tool calls (functions, browser, python), replies, a final."""
    system = (
        M.SystemContent.new()
        .with_conversation_start_date("2025-01-31")
        .with_reasoning_effort(M.ReasoningEffort.LOW)
        .with_browser_tool()
        .with_python_tool()
    )
    dev = M.DeveloperContent.new().with_instructions("Be brief.").with_function_tools(function_tools(M)[:3])
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.SYSTEM, system),
            M.Message.from_role_and_content(M.Role.DEVELOPER, dev),
            M.Message.from_role_and_content(M.Role.USER, "Plan my weekend in Kyoto 京都 ☀️"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "Need the forecast first.").with_channel(
                "analysis"
            ),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "Let me check the forecast.").with_channel(
                "commentary"
            ),
            M.Message.from_role_and_content(M.Role.ASSISTANT, '{"place": "Kyoto, Japan"}')
            .with_channel("commentary")
            .with_recipient("functions.get_forecast")
            .with_content_type("<|constrain|>json"),
            M.Message.from_author_and_content(
                M.Author.new(M.Role.TOOL, "functions.get_forecast"), '{"sky": "clear"}'
            )
            .with_channel("commentary")
            .with_recipient("assistant"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, '{"query": "Kyoto events"}')
            .with_channel("analysis")
            .with_recipient("browser.search")
            .with_content_type("code"),
            M.Message.from_author_and_content(
                M.Author.new(M.Role.TOOL, "browser.search"), "【0†Events†example.org】"
            )
            .with_channel("analysis")
            .with_recipient("assistant"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "print(2 * 21)")
            .with_channel("analysis")
            .with_recipient("python")
            .with_content_type("code"),
            M.Message.from_author_and_content(M.Author.new(M.Role.TOOL, "python"), "42\n")
            .with_channel("analysis")
            .with_recipient("assistant"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "Clear skies: visit the temples.").with_channel(
                "final"
            ),
        ]
    )


def content_types(M: Any) -> Any:
    """Plain, constrained and bare-constrained content types, with and without recipients."""
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.ASSISTANT, "{}")
            .with_channel("commentary")
            .with_recipient("functions.f")
            .with_content_type("json"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, '{"ok": true}')
            .with_channel("final")
            .with_content_type("<|constrain|>json"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "x")
            .with_channel("commentary")
            .with_content_type("<|constrain|>"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "a: 1")
            .with_recipient("functions.g")
            .with_content_type("<|constrain|>yaml"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "to all")
            .with_channel("final")
            .with_recipient("all"),
        ]
    )


def odd_system(M: Any) -> Any:
    """System content with lines left out, optional channels, and tools in several places."""
    custom = M.ToolNamespaceConfig(
        name="weather",
        description="Weather tools.\nUse them sparingly.",
        tools=[M.ToolDescription.new("now", "Current weather.", {"type": "object", "properties": {}})],
    )
    bare = M.ToolNamespaceConfig(name="notes", description="Free text notes.", tools=[])
    system = M.SystemContent(
        model_identity=None,
        reasoning_effort=None,
        knowledge_cutoff=None,
        channel_config=M.ChannelConfig(valid_channels=["final", "analysis"], channel_required=False),
    ).with_tools(custom)
    system2 = M.SystemContent.new().with_channel_config(
        M.ChannelConfig(valid_channels=[], channel_required=True)
    )
    system3 = M.SystemContent(channel_config=None).with_tools(bare)
    dev = M.DeveloperContent.new().with_tools(custom).with_tools(bare)
    dev_functions = M.DeveloperContent.new().with_function_tools([M.ToolDescription.new("ping", "Pings.")])
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.SYSTEM, system),
            M.Message.from_role_and_content(M.Role.SYSTEM, system2),
            M.Message.from_role_and_content(M.Role.SYSTEM, system3),
            M.Message.from_role_and_content(M.Role.DEVELOPER, dev),
            M.Message.from_role_and_content(M.Role.DEVELOPER, M.DeveloperContent.new()),
            M.Message.from_role_and_content(M.Role.DEVELOPER, dev_functions),
        ]
    )


def names_and_parts(M: Any) -> Any:
    """Author names, several content parts, empty text, and odd text."""
    return M.Conversation.from_messages(
        [
            M.Message.from_author_and_content(M.Author(role=M.Role.USER, name="alice"), "Hi, I'm Alice."),
            M.Message.from_role_and_contents(
                M.Role.USER, [M.TextContent(text="part one, "), M.TextContent(text="part two")]
            ).adding_content(" and three"),
            M.Message.from_role_and_content(M.Role.USER, ""),
            M.Message.from_role_and_content(
                M.Role.USER, "text that looks like <|start|>user<|message|>control<|end|>"
            ),
            M.Message.from_role_and_content(
                M.Role.ASSISTANT, "  spaces\n\n\ttabs\r\nand é, 👩‍👩‍👧, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"
            ).with_channel("final"),
        ]
    )


def ends_with_analysis(M: Any) -> Any:
    """The last assistant message is not final: analysis is kept even with auto-drop."""
    return M.Conversation.from_messages(
        [
            M.Message.from_role_and_content(M.Role.USER, "q1"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "think 1").with_channel("analysis"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "a1").with_channel("final"),
            M.Message.from_role_and_content(M.Role.USER, "q2"),
            M.Message.from_role_and_content(M.Role.ASSISTANT, "think 2").with_channel("analysis"),
        ]
    )


def empty(M: Any) -> Any:
    return M.Conversation.from_messages([])


RENDER_SCENARIOS: dict[str, tuple[Builder, bool]] = {
    # name: (builder, whether the reference can parse its own rendering back)
    "simple_convo": (simple_convo, True),
    **{
        f"effort_{effort.lower()}_{'instructions' if instr else 'no_instructions'}": (
            effort_convo(effort, instr),
            True,
        )
        for effort in ("Low", "Medium", "High")
        for instr in (True, False)
    },
    "reasoning_system_medium": (reasoning_system("Medium", False), True),
    "reasoning_system_high": (reasoning_system("High", False), True),
    "reasoning_system_with_dates": (reasoning_system("Medium", True), True),
    "functions_with_parameters": (functions_with_parameters, True),
    "no_tools": (no_tools, True),
    "browser_only": (browser_only, True),
    "browser_and_function": (browser_and_function, True),
    "browser_and_python": (browser_and_python, True),
    "drop_cot_of_finished_turn": (finished_turn_then_question, True),
    "keep_cot_of_ongoing_turn": (ongoing_analysis, False),  # a bare tool name does not parse back there
    "analysis_between_finals": (analysis_between_finals, True),
    "single_user_message": (single_user, True),
    "training_final": (training_final, True),
    "tool_reply": (tool_reply, True),
    "full_agent_turn": (full_agent_turn, True),
    "content_types": (content_types, False),  # a bare <|constrain|> does not parse back there
    "odd_system": (odd_system, True),
    "names_and_parts": (names_and_parts, False),  # user:alice does not parse back there
    "ends_with_analysis": (ends_with_analysis, True),
    "empty": (empty, True),
}


@pytest.mark.parametrize("name", sorted(RENDER_SCENARIOS))
def test_render_matches_reference(oracle: Any, ours: C.HarmonyEncoding, name: str) -> None:
    assert_same_render(oracle, ours, RENDER_SCENARIOS[name][0])


@pytest.mark.parametrize("name", sorted(n for n, (_, ok) in RENDER_SCENARIOS.items() if ok))
def test_rendered_conversation_parses_like_reference(oracle: Any, ours: C.HarmonyEncoding, name: str) -> None:
    conv = RENDER_SCENARIOS[name][0](H)
    tokens = oracle.render_conversation(conv, H.RenderConversationConfig(auto_drop_analysis=False))
    assert_same_parse(oracle, ours, tokens, None)
    training = oracle.render_conversation_for_training(conv)
    assert_same_parse(oracle, ours, training, None)


@pytest.mark.parametrize("name", sorted(RENDER_SCENARIOS))
def test_models_serialise_like_reference(name: str) -> None:
    ref_conv, our_conv = RENDER_SCENARIOS[name][0](H), RENDER_SCENARIOS[name][0](C)
    assert json.loads(our_conv.to_json()) == json.loads(ref_conv.to_json())
    payload = ref_conv.to_json()
    assert json.loads(C.Conversation.from_json(payload).to_json()) == json.loads(
        H.Conversation.from_json(payload).to_json()
    )
    for ref_msg, our_msg in zip(ref_conv, our_conv, strict=True):
        data = json.loads(ref_msg.to_json())
        assert json.loads(C.Message.from_dict(data).to_json()) == json.loads(
            H.Message.from_dict(data).to_json()
        )
        assert our_msg.model_dump(mode="json") == ref_msg.model_dump(mode="json")


def test_render_roundtrip_single_message(ours: C.HarmonyEncoding) -> None:
    msg = C.Message.from_role_and_content(C.Role.USER, "Hello")
    conv = C.Conversation.from_messages([msg])
    assert ours.render(msg) == ours.render_conversation(conv)
    completion = ours.render_conversation_for_completion(conv, C.Role.ASSISTANT)
    assert completion[: len(ours.render(msg))] == ours.render(msg)
    assert ours.decode_utf8(completion[len(ours.render(msg)) :]) == "<|start|>assistant"


def test_training_ends_in_return_only_after_a_final(ours: C.HarmonyEncoding) -> None:
    final = training_final(C)
    regular, training = ours.render_conversation(final), ours.render_conversation_for_training(final)
    end = ours.encode("<|end|>", allowed_special={"<|end|>"})[0]
    ret = ours.encode("<|return|>", allowed_special={"<|return|>"})[0]
    assert regular[:-1] == training[:-1]
    assert (regular[-1], training[-1]) == (end, ret)
    user_only = single_user(C)
    assert ours.render_conversation_for_training(user_only) == ours.render_conversation(user_only)


def test_auto_drop_default_and_keep(ours: C.HarmonyEncoding) -> None:
    conv = finished_turn_then_question(C)
    dropped = ours.decode_utf8(ours.render_conversation_for_completion(conv, C.Role.ASSISTANT))
    kept = ours.decode_utf8(
        ours.render_conversation_for_completion(
            conv, C.Role.ASSISTANT, C.RenderConversationConfig(auto_drop_analysis=False)
        )
    )
    assert "<|channel|>analysis" not in dropped
    assert "<|channel|>analysis" in kept
    assert dropped == ours.decode_utf8(
        ours.render_conversation_for_completion(conv, C.Role.ASSISTANT, C.RenderConversationConfig())
    )


def test_constrain_marker_is_one_special_token(oracle: Any, ours: C.HarmonyEncoding) -> None:
    conv = ongoing_analysis(C)
    tokens = ours.render_conversation_for_completion(conv, C.Role.ASSISTANT)
    text = ours.decode_utf8(tokens)
    assert " <|constrain|>json<|message|>" in text
    assert ours.encode(text, allowed_special="all") == tokens
    assert oracle.encode(text, allowed_special="all") == tokens


# --- completions (parsing) --------------------------------------------------------------

ARGS = '{"place": "Lyon, France", "units": "metric"}'

COMPLETIONS: dict[str, tuple[str, str | None]] = {
    # name: (text, role the prompt opened)
    "reasoning_response": (
        "<|channel|>analysis<|message|>The user wants 3 + 4. Simple.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>3 + 4 = 7.<|return|>",
        "assistant",
    ),
    "tool_call_code": (
        "<|channel|>analysis<|message|>Need the forecast tool.<|end|>"
        f"<|start|>assistant<|channel|>analysis to=get_forecast code<|message|>{ARGS}<|call|>",
        "assistant",
    ),
    "tool_call_constrain_after_space": (
        "<|start|>assistant to=functions.get_forecast<|channel|>commentary"
        f" <|constrain|>json<|message|>{ARGS}<|call|>",
        None,
    ),
    "tool_call_constrain_adjacent": (
        "<|start|>assistant to=functions.get_forecast<|channel|>commentary"
        f"<|constrain|>json<|message|>{ARGS}<|call|>",
        None,
    ),
    "channel_before_recipient_constrain_adjacent": (
        "<|start|>assistant<|channel|>commentary to=functions.get_forecast"
        '<|constrain|>json<|message|>{"lat":45.76,"lon":4.84}<|call|>',
        None,
    ),
    "channel_before_recipient_constrain_after_space": (
        "<|start|>assistant<|channel|>commentary to=functions.get_forecast"
        ' <|constrain|>json<|message|>{"lat":45.76}<|call|>',
        None,
    ),
    "plain_json_content_type": (
        "<|start|>assistant to=functions.get_forecast<|channel|>commentary json<|message|>{}<|call|>",
        None,
    ),
    "recipient_without_channel": ("<|start|>assistant to=functions.f<|message|>{}<|call|>", None),
    "recipient_after_role_content_type_before_channel": (
        "<|start|>assistant to=functions.f json<|channel|>commentary<|message|>{}<|call|>",
        None,
    ),
    "three_messages": (
        "<|channel|>analysis<|message|>Think about the question.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>Working on it…<|end|>"
        "<|start|>assistant<|channel|>final<|message|>Here is the answer.<|return|>",
        "assistant",
    ),
    "preamble_then_tool_call": (
        "<|channel|>commentary<|message|>Let me look up the forecast.<|end|>"
        "<|start|>assistant to=functions.get_forecast<|channel|>commentary <|constrain|>json"
        f"<|message|>{ARGS}<|call|>",
        "assistant",
    ),
    "function_reply": (
        '<|start|>functions.get_forecast to=assistant<|channel|>commentary<|message|>{"sky": "clear"}<|end|>',
        None,
    ),
    "browser_call_and_reply": (
        '<|start|>assistant<|channel|>analysis to=browser.search code<|message|>{"query": "tides"}<|call|>'
        "<|start|>browser.search to=assistant<|channel|>analysis<|message|>【0†Tides†example.org】<|end|>",
        None,
    ),
    "python_call_and_reply": (
        "<|start|>assistant<|channel|>analysis to=python code<|message|>print(6 * 7)<|call|>"
        "<|start|>python to=assistant<|channel|>analysis<|message|>42<|end|>",
        None,
    ),
    "unknown_tool_name_with_recipient": ("<|start|>mytool to=assistant<|message|>done<|end|>", None),
    "plain_roles": (
        "<|start|>system<|message|>You are terse.<|end|>"
        "<|start|>developer<|message|># Instructions\n\nBe brief.<|end|>"
        "<|start|>user<|message|>Hi!<|end|>"
        "<|start|>assistant<|message|>Hello.<|end|>",
        None,
    ),
    "role_word_repeated_after_prompt": ("assistant<|channel|>final<|message|>ok<|return|>", "assistant"),
    "prompt_opened_user": ("<|message|>a user turn<|end|>", "user"),
    "truncated_body": ("<|channel|>final<|message|>The answer is", "assistant"),
    "truncated_after_message_token": ("<|channel|>analysis<|message|>", "assistant"),
    "ends_after_stop_token": ("<|channel|>final<|message|>done<|return|>", "assistant"),
    "unicode_body": (
        "<|channel|>final<|message|>Grüße, Γειά σου, Привет, שלום, مرحبا, नमस्ते, "
        "こんにちは, 안녕하세요, 你好 — "
        "naïve vs naïve, emoji 😊👋🏾👩‍👩‍👧‍👦🇫🇷, math 𝔘𝔫𝔦<|return|>",
        "assistant",
    ),
    "empty_bodies": (
        "<|start|>assistant<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|><|return|>",
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(COMPLETIONS))
def test_completion_parses_like_reference(oracle: Any, ours: C.HarmonyEncoding, name: str) -> None:
    text, role = COMPLETIONS[name]
    tokens = oracle.encode(text, allowed_special="all")
    assert ours.encode(text, allowed_special="all") == tokens
    messages = assert_same_parse(oracle, ours, tokens, role)
    assert messages


def test_constrained_output_without_recipient(oracle: Any, ours: C.HarmonyEncoding) -> None:
    # openai-harmony's own suite expects a content type here; its 0.0.8 build reads a recipient
    text = '<|start|>assistant<|channel|>final <|constrain|>json<|message|>{"answer":true}<|return|>'
    expected = (
        C.Message.from_role_and_content(C.Role.ASSISTANT, '{"answer":true}')
        .with_channel("final")
        .with_content_type("<|constrain|>json")
    )
    tokens = _tokens(ours, text)
    for strict in (True, False):
        assert ours.parse_messages_from_completion_tokens(tokens, strict=strict) == [expected]
        parser = C.StreamableParser(ours, None, strict=strict)
        for token in tokens:
            parser.process(token)
        assert parser.messages == [expected]
    assert ours.render(expected) == [*tokens[:-1], ours.encode("<|end|>", allowed_special="all")[0]]
    (ref_msg,) = oracle.parse_messages_from_completion_tokens(tokens)
    assert (ref_msg.recipient, ref_msg.content_type) in (
        (None, "<|constrain|>json"),
        ("<|constrain|>json", None),
    )


def test_parsed_messages_equal_built_ones(ours: C.HarmonyEncoding) -> None:
    text = COMPLETIONS["channel_before_recipient_constrain_adjacent"][0]
    parsed = ours.parse_messages_from_completion_tokens(ours.encode(text, allowed_special="all"))
    expected = [
        C.Message.from_role_and_content(C.Role.ASSISTANT, '{"lat":45.76,"lon":4.84}')
        .with_channel("commentary")
        .with_recipient("functions.get_forecast")
        .with_content_type("<|constrain|>json")
    ]
    assert parsed == expected
    text = COMPLETIONS["reasoning_response"][0]
    parsed = ours.parse_messages_from_completion_tokens(
        ours.encode(text, allowed_special="all"), C.Role.ASSISTANT
    )
    assert parsed == [
        C.Message.from_role_and_content(C.Role.ASSISTANT, "The user wants 3 + 4. Simple.").with_channel(
            "analysis"
        ),
        C.Message.from_role_and_content(C.Role.ASSISTANT, "3 + 4 = 7.").with_channel("final"),
    ]
    assert isinstance(parsed[0].author.role, C.Role)


def test_parsed_constrained_call_renders_back(oracle: Any, ours: C.HarmonyEncoding) -> None:
    text = COMPLETIONS["tool_call_constrain_after_space"][0]
    tokens = ours.encode(text, allowed_special="all")
    parsed = ours.parse_messages_from_completion_tokens(tokens)
    assert ours.render_conversation(C.Conversation.from_messages(parsed)) == tokens
    assert ours.decode_utf8(tokens) == text


def test_rendered_tool_reply_without_end_parses(oracle: Any, ours: C.HarmonyEncoding) -> None:
    ref_msg, our_msg = tool_reply(H).messages[0], tool_reply(C).messages[0]
    tokens = ours.render(our_msg)[:-1]
    assert tokens == oracle.render(ref_msg)[:-1]
    assert ours.decode_utf8(tokens) == (
        '<|start|>browser.search to=assistant<|channel|>commentary<|message|>{"result": "https://example.org/"}'
    )
    assert assert_same_parse(oracle, ours, tokens, None) == dicts([our_msg])


def test_streaming_three_messages(ours: C.HarmonyEncoding) -> None:
    tokens = ours.encode(COMPLETIONS["three_messages"][0], allowed_special="all")
    parser = C.StreamableParser(ours, C.Role.ASSISTANT)
    deltas = []
    channels = set()
    for token in tokens:
        parser.process(token)
        if parser.last_content_delta is not None:
            deltas.append(parser.last_content_delta)
            channels.add(parser.current_channel)
    assert len(parser.messages) == 3
    assert "".join(deltas) == "Think about the question.Working on it…Here is the answer."
    assert channels == {"analysis", "commentary", "final"}
    assert parser.state is C.StreamState.EXPECT_START


def test_messages_are_built_once(ours: C.HarmonyEncoding) -> None:
    tokens = ours.encode(COMPLETIONS["three_messages"][0], allowed_special="all")
    parser = C.StreamableParser(ours, C.Role.ASSISTANT)
    for token in tokens:
        parser.process(token)
    first, second = parser.messages, parser.messages
    assert first == second and first is not second
    assert all(a is b for a, b in zip(first, second, strict=True))


def test_process_after_eos_starts_a_new_stream(oracle: Any, ours: C.HarmonyEncoding) -> None:
    parts = ["<|channel|>final<|message|>first", "<|start|>assistant<|channel|>final<|message|>second"]
    results = []
    for M, enc in ((H, oracle), (C, ours)):
        parser = M.StreamableParser(enc, M.Role.ASSISTANT)
        for part in parts:
            for token in enc.encode(part, allowed_special="all"):
                parser.process(token)
            parser.process_eos()
        results.append((dicts(parser.messages), parser.tokens, parser.state.value))
    assert results[0] == results[1]


# --- invalid UTF-8 inside bodies --------------------------------------------------------


def assert_same_final_text(oracle: Any, ours: C.HarmonyEncoding, tokens: list[int]) -> str:
    """Same messages as the reference, and deltas that always add up to the content.

    After an invalid UTF-8 sequence the reference holds the text that follows until the
    next token (and may never report it as a delta); openchatml reports it at once.
    """
    want = dicts(oracle.parse_messages_from_completion_tokens(tokens))
    for strict in (True, False):
        assert dicts(ours.parse_messages_from_completion_tokens(tokens, strict=strict)) == want
        ref, our = (
            H.StreamableParser(oracle, None, strict=strict),
            C.StreamableParser(ours, None, strict=strict),
        )
        deltas: list[str] = []
        for token in tokens:
            ref.process(token)
            our.process(token)
            if our.last_content_delta is not None:
                deltas.append(our.last_content_delta)
            if our.state is C.StreamState.CONTENT:
                assert "".join(deltas) == our.current_content
                assert our.current_content.startswith(ref.current_content)
            else:
                deltas = []
        ref.process_eos()
        our.process_eos()
        assert dicts(our.messages) == dicts(ref.messages) == want
    text: str = want[-1]["content"][0]["text"]
    return text


def _body(ours: C.HarmonyEncoding, ids: list[int], end: str = "<|end|>") -> list[int]:
    prefix = ours.encode("<|start|>assistant<|message|>", allowed_special="all")
    return prefix + ids + ours.encode(end, allowed_special="all")


def test_invalid_utf8_tokens(oracle: Any, ours: C.HarmonyEncoding) -> None:
    # 9552 is the bytes b" \xf0\x9f": a space and the start of a four-byte sequence
    tokens = _body(ours, [9552, 9552], "worked<|end|>")
    assert assert_same_final_text(oracle, ours, tokens) == " \ufffd \ufffdworked"


def test_invalid_utf8_split_across_tokens(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = _body(ours, [9552, *ours.encode("XY")])
    assert assert_same_final_text(oracle, ours, tokens) == " \ufffdXY"


def test_invalid_utf8_before_a_multibyte_token(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = _body(ours, [9552, *ours.encode(" interesting")])
    assert assert_same_final_text(oracle, ours, tokens) == " \ufffd interesting"


def test_invalid_utf8_without_end(oracle: Any, ours: C.HarmonyEncoding) -> None:
    prefix = ours.encode("<|start|>assistant<|message|>", allowed_special="all")
    tokens = [*prefix, 9552, *ours.encode(" interesting"), *ours.encode(" story")]
    parser = C.StreamableParser(ours, None)
    deltas = []
    for token in tokens:
        parser.process(token)
        if parser.last_content_delta is not None:
            deltas.append(parser.last_content_delta)
    assert parser.current_content == " \ufffd interesting story"
    assert "".join(deltas) == " \ufffd interesting story"
    parser.process(ours.encode("Y")[0])
    assert parser.last_content_delta == "Y"
    assert parser.current_content == " \ufffd interesting storyY"
    assert_same_final_text(oracle, ours, [*tokens, ours.encode("Y")[0]])


def test_trailing_incomplete_utf8(oracle: Any, ours: C.HarmonyEncoding) -> None:
    prefix = ours.encode("<|start|>assistant<|message|>", allowed_special="all")
    assert assert_same_final_text(oracle, ours, [*prefix, *ours.encode("ok"), 9552]) == "ok \ufffd"
    assert assert_same_final_text(oracle, ours, _body(ours, [9552])) == " \ufffd"


def test_multibyte_characters_split_over_tokens(oracle: Any, ours: C.HarmonyEncoding) -> None:
    text = "Some rare ones: 𓀀𓂀 ꙮ 🜁 𝌆 and mixed é̃ ǅ 🏳️‍🌈"
    ids = ours.encode(text)
    assert any(load_encoding().token_str[t] is None for t in ids)  # some ids are not UTF-8 alone
    deltas = []
    parser = C.StreamableParser(ours, None)
    for token in _body(ours, ids):
        parser.process(token)
        if parser.last_content_delta is not None:
            deltas.append(parser.last_content_delta)
    assert "".join(deltas) == text
    assert assert_same_parse(oracle, ours, _body(ours, ids), None)[0]["content"][0]["text"] == text


_RARE_WORDS = ["𓀀", "𓂀", "ꙮ", "🜁", "𝌆", "é̃", "ǅ", "🏳️‍🌈", "東京", "☀️", " hello", " world", "é", "\n"]
SPLIT_UTF8_IDS = sorted(
    {t for t in load_encoding().encode("".join(_RARE_WORDS)) if load_encoding().token_str[t] is None}
)
"""Ids whose bytes are a piece of a UTF-8 sequence."""


@given(words=st.lists(st.sampled_from(_RARE_WORDS), max_size=20))
def test_bodies_of_whole_and_split_utf8_stream_as_the_reference(
    oracle: Any, ours: C.HarmonyEncoding, words: list[str]
) -> None:
    """Ids that are text on their own (taken as they are) between ids that begin or go on
    a UTF-8 sequence: what a streaming client reads agrees with openai-harmony after every
    id."""
    assert SPLIT_UTF8_IDS
    assert_same_stream(oracle, ours, _body(ours, ours.encode("".join(words))), None)


@given(ids=st.lists(st.sampled_from([*SPLIT_UTF8_IDS, 9552, *load_encoding().encode(" ok é")]), max_size=30))
def test_bodies_with_invalid_utf8_stream_as_the_reference(
    oracle: Any, ours: C.HarmonyEncoding, ids: list[int]
) -> None:
    """Ids in any order, pieces of UTF-8 sequences that may not go together and ids that
    are no UTF-8 (9552): the messages of openai-harmony, and deltas that add up to the
    content."""
    assert_same_final_text(oracle, ours, _body(ours, ids))


# --- reference-suite cases of malformed input --------------------------------------------

MISSING_MESSAGE_TOKEN = {
    "plain_text": "No can do<|end|>"
    "<|start|>assistant<|channel|>analysis<|message|>Declining this one<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Sorry, I won't do that.<|return|>",
    "channel_then_text": "<|channel|>analysis No can do<|end|>"
    "<|start|>assistant<|channel|>analysis<|message|>Declining this one<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Sorry, I won't do that.<|return|>",
    "before_tool_call": "Calling the forecast tool now.<|end|>"
    "<|start|>assistant to=functions.get_forecast<|channel|>commentary json"
    '<|message|>{"place": "Lyon"}<|call|>',
}


@pytest.mark.parametrize("name", sorted(MISSING_MESSAGE_TOKEN))
def test_missing_message_token_strict_raises_typed(oracle: Any, ours: C.HarmonyEncoding, name: str) -> None:
    tokens = ours.encode(MISSING_MESSAGE_TOKEN[name], allowed_special="all")
    ref = H.StreamableParser(oracle, H.Role.ASSISTANT, strict=True)
    with pytest.raises(H.HarmonyError):
        for token in tokens:
            ref.process(token)
    our = C.StreamableParser(ours, C.Role.ASSISTANT, strict=True)
    with pytest.raises(C.HarmonyError, match="unexpected tokens remaining in message header") as info:
        for token in tokens:
            our.process(token)
    assert isinstance(info.value, HeaderError)
    assert info.value.position is not None
    assert ours.decode([tokens[info.value.position.offset]]) == "<|message|>"  # where the reference raises
    with pytest.raises(HeaderError, match="unexpected tokens remaining in message header"):
        ours.parse_messages_from_completion_tokens(tokens, C.Role.ASSISTANT)


def test_missing_message_token_after_channel_recovers_like_reference(
    oracle: Any, ours: C.HarmonyEncoding
) -> None:
    tokens = ours.encode(MISSING_MESSAGE_TOKEN["channel_then_text"], allowed_special="all")
    got = assert_same_stream(oracle, ours, tokens, "assistant", strict=False)
    assert got[0]["content"][0]["text"] == "No can do"
    assert got[0]["channel"] == "analysis"


@pytest.mark.parametrize("name", ["plain_text", "before_tool_call"])
def test_missing_message_token_recovers_body_text(oracle: Any, ours: C.HarmonyEncoding, name: str) -> None:
    tokens = ours.encode(MISSING_MESSAGE_TOKEN[name], allowed_special="all")
    assert_same_stream(oracle, ours, tokens, "assistant", strict=False)


# --- documented differences on malformed input -----------------------------------------


def _tokens(ours: C.HarmonyEncoding, text: str) -> list[int]:
    return ours.encode(text, allowed_special="all")


def test_named_user_parses_where_reference_cannot(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = _tokens(ours, "<|start|>user:bob<|message|>hi<|end|>")
    with pytest.raises(H.HarmonyError):
        oracle.parse_messages_from_completion_tokens(tokens)
    for strict in (True, False):
        (msg,) = ours.parse_messages_from_completion_tokens(tokens, strict=strict)
        assert (msg.author.role, msg.author.name, msg.content[0].to_dict()["text"]) == (
            C.Role.USER,
            "bob",
            "hi",
        )
        assert (
            ours.render(msg)
            == tokens
            == oracle.render(H.Message.from_author_and_content(H.Author(role=H.Role.USER, name="bob"), "hi"))
        )


@pytest.mark.parametrize("text", ["<|start|>assistant<|channel|>fin", "<|start|>", "<|start|>assistant"])
def test_truncated_header(oracle: Any, ours: C.HarmonyEncoding, text: str) -> None:
    tokens = _tokens(ours, text)
    with pytest.raises(H.HarmonyError):
        oracle.parse_messages_from_completion_tokens(tokens)
    with pytest.raises(StreamTruncatedError) as info:
        ours.parse_messages_from_completion_tokens(tokens)
    assert isinstance(info.value, C.HarmonyError)
    assert ours.parse_messages_from_completion_tokens(tokens, strict=False) == []
    parser = C.StreamableParser(ours, None)
    for token in tokens:
        parser.process(token)
    assert parser.state is C.StreamState.HEADER
    with pytest.raises(C.HarmonyError):
        parser.process_eos()
    lenient = C.StreamableParser(ours, None, strict=False)
    for token in tokens:
        lenient.process(token)
    assert lenient.process_eos().messages == []


def test_empty_completion(oracle: Any, ours: C.HarmonyEncoding) -> None:
    with pytest.raises(H.HarmonyError):
        oracle.parse_messages_from_completion_tokens([], H.Role.ASSISTANT)
    with pytest.raises(StreamTruncatedError):
        ours.parse_messages_from_completion_tokens([], C.Role.ASSISTANT)
    assert ours.parse_messages_from_completion_tokens([], C.Role.ASSISTANT, strict=False) == []
    assert (
        ours.parse_messages_from_completion_tokens([])
        == oracle.parse_messages_from_completion_tokens([])
        == []
    )


def test_tool_reply_without_recipient_parses_where_reference_cannot(
    oracle: Any, ours: C.HarmonyEncoding
) -> None:
    def build(M: Any) -> Any:
        return M.Message.from_author_and_content(M.Author.new(M.Role.TOOL, "functions.lookup_tide"), "{}")

    tokens = ours.render(build(C))
    assert tokens == oracle.render(build(H))
    with pytest.raises(H.HarmonyError):
        oracle.parse_messages_from_completion_tokens(tokens)
    assert ours.parse_messages_from_completion_tokens(tokens) == [build(C)]


def test_start_inside_body(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = _tokens(ours, "<|start|>assistant<|message|>a<|start|>assistant<|message|>b<|end|>")
    (ref_msg,) = oracle.parse_messages_from_completion_tokens(tokens)
    assert ref_msg.content[0].text == "a<|start|>assistant<|message|>b"
    assert assert_same_stream(oracle, ours, tokens, None) == dicts([ref_msg])
    assert dicts(ours.parse_messages_from_completion_tokens(tokens)) == dicts([ref_msg])
    texts = [
        m.content[0].to_dict()["text"]
        for m in ours.parse_messages_from_completion_tokens(tokens, strict=False)
    ]
    assert texts == ["a", "b"]


def test_reserved_token_inside_body(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = _tokens(ours, "<|start|>assistant<|message|>x<|reserved_200014|>y<|end|>")
    want = dicts(oracle.parse_messages_from_completion_tokens(tokens))
    assert want[0]["content"][0]["text"] == "x<|reserved_200014|>y"
    assert assert_same_stream(oracle, ours, tokens, None) == want
    assert dicts(ours.parse_messages_from_completion_tokens(tokens, strict=False)) == want


def test_whitespace_between_messages(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = _tokens(ours, "<|start|>assistant<|message|>a<|end|>\n<|start|>assistant<|message|>b<|end|>")
    with pytest.raises(H.HarmonyError) as ref_info:
        oracle.parse_messages_from_completion_tokens(tokens)
    with pytest.raises(UnexpectedTokenError) as info:
        ours.parse_messages_from_completion_tokens(tokens)
    assert info.value.message == str(ref_info.value)
    lenient = ours.parse_messages_from_completion_tokens(tokens, strict=False)
    assert [m.content[0].to_dict()["text"] for m in lenient] == ["a", "b"]


def test_text_between_messages(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = _tokens(ours, "<|start|>user<|message|>a<|end|>oops<|start|>user<|message|>b<|end|>")
    with pytest.raises(H.HarmonyError):
        oracle.parse_messages_from_completion_tokens(tokens)
    with pytest.raises(UnexpectedTokenError):
        ours.parse_messages_from_completion_tokens(tokens)
    assert len(ours.parse_messages_from_completion_tokens(tokens, strict=False)) == 2


def test_bare_constrain_content_type_parses_back(ours: C.HarmonyEncoding) -> None:
    msg = C.Message.from_role_and_content(C.Role.ASSISTANT, "x").with_channel("commentary")
    msg = msg.with_content_type("<|constrain|>")
    (parsed,) = ours.parse_messages_from_completion_tokens(ours.render(msg))
    assert parsed == msg


@pytest.mark.parametrize(
    "text",
    [
        "<|start|>assistant<|channel|><|message|>x<|end|>",
        "<|start|>mytool<|message|>x<|end|>",
        "<|start|>assistant to=functions.x<|channel|>commentary <|constrain|>json extra<|message|>x<|call|>",
        "<|channel|>final<|message|>no start<|end|>",
        "<|end|>",
    ],
)
def test_malformed_headers_raise_typed_or_recover(oracle: Any, ours: C.HarmonyEncoding, text: str) -> None:
    tokens = _tokens(ours, text)
    with pytest.raises(H.HarmonyError):
        oracle.parse_messages_from_completion_tokens(tokens)
    with pytest.raises(C.HarmonyError) as info:
        ours.parse_messages_from_completion_tokens(tokens)
    assert isinstance(info.value, ParseError)
    ours.parse_messages_from_completion_tokens(tokens, strict=False)


def test_header_values_are_sanitised(oracle: Any, ours: C.HarmonyEncoding) -> None:
    def build(M: Any) -> Any:
        return (
            M.Message.from_role_and_content(M.Role.ASSISTANT, "{}")
            .with_channel("commentary")
            .with_recipient("a b")
        )

    assert "to=a b<|channel|>" in oracle.decode(oracle.render(build(H)))
    text = ours.decode(ours.render(build(C)))
    assert "to=a_b<|channel|>" in text
    (parsed,) = ours.parse_messages_from_completion_tokens(ours.render(build(C)))
    assert parsed.recipient == "a_b"


@pytest.mark.parametrize("token", [-1, 10**9, 201089])
def test_out_of_range_ids(oracle: Any, ours: C.HarmonyEncoding, token: int) -> None:
    for state_text in ("", "<|start|>assistant", "<|start|>assistant<|message|>"):
        parser = C.StreamableParser(ours, None)
        for t in _tokens(ours, state_text):
            parser.process(t)
        with pytest.raises(UnexpectedTokenError) as info:
            parser.process(token)
        assert isinstance(info.value, C.HarmonyError)
    with pytest.raises(C.HarmonyError, match="Invalid token for decoding"):
        ours.decode_utf8([1, token])
    with pytest.raises(C.HarmonyError):
        ours.decode([token])


def test_non_int_token_in_body_raises_typed(ours: C.HarmonyEncoding) -> None:
    parser = C.StreamableParser(ours, None)
    for t in _tokens(ours, "<|start|>assistant<|message|>"):
        parser.process(t)
    with pytest.raises(C.HarmonyError):
        parser.process("x")  # type: ignore[arg-type]


def test_non_int_token_outside_body_raises_typed(ours: C.HarmonyEncoding) -> None:
    parser = C.StreamableParser(ours, None)
    with pytest.raises(UnexpectedTokenError):
        parser.process("x")  # type: ignore[arg-type]


def test_core_decode_bytes_rejects_negative_ids() -> None:
    with pytest.raises(ValueError):
        load_encoding().decode_bytes([-1])


TOKEN_ALPHABET = [
    200006,  # <|start|>
    200005,  # <|channel|>
    200008,  # <|message|>
    200003,  # <|constrain|>
    200007,  # <|end|>
    200002,  # <|return|>
    200012,  # <|call|>
    200014,  # a reserved token
    199999,  # <|endoftext|>
    9552,  # the start of a four-byte UTF-8 sequence
    *load_encoding().encode_ordinary("assistant user functions.f to=x json commentary final hi ☀️ :bob \n"),
]


@given(
    tokens=st.lists(st.sampled_from(TOKEN_ALPHABET), max_size=40),
    role=st.sampled_from([None, "assistant", "user", "tool"]),
)
def test_any_token_sequence_gives_messages_or_a_typed_error(
    oracle: Any, ours: C.HarmonyEncoding, tokens: list[int], role: str | None
) -> None:
    our_role = None if role is None else C.Role(role)
    try:
        strict = dicts(ours.parse_messages_from_completion_tokens(tokens, our_role))
    except C.HarmonyError as exc:
        assert isinstance(exc, ParseError)
        strict = [exc.message]
    try:
        want = dicts(
            oracle.parse_messages_from_completion_tokens(tokens, None if role is None else H.Role(role))
        )
    except H.HarmonyError as exc:
        want = [str(exc)]
    assert strict == want or exempt(ours, tokens, role)
    streamed = C.StreamableParser(ours, our_role)
    try:
        for token in tokens:
            streamed.process(token)
        streamed.process_eos()
    except C.HarmonyError as exc:
        assert strict == [exc.message]
    else:
        assert dicts(streamed.messages) == strict
    lenient = ours.parse_messages_from_completion_tokens(tokens, our_role, strict=False)
    parser = C.StreamableParser(ours, our_role, strict=False)
    for token in tokens:
        parser.process(token)
        _ = (parser.current_content_type, parser.current_role, parser.state_data, parser.messages)
    assert dicts(parser.process_eos().messages) == dicts(lenient)


# --- encoding -------------------------------------------------------------------------------


def test_encoding_basics(oracle: Any, ours: C.HarmonyEncoding) -> None:
    assert ours.name == oracle.name == "HarmonyGptOss"
    assert ours.special_tokens_set == oracle.special_tokens_set
    assert set(ours.stop_tokens()) == set(oracle.stop_tokens())
    assert set(ours.stop_tokens_for_assistant_actions()) == set(oracle.stop_tokens_for_assistant_actions())
    for token in (0, 24912, 199997, 199998, 200006, 200014, 201088, 201089):
        assert ours.is_special_token(token) == oracle.is_special_token(token)
    for token in (200014, 201088, 199998, 199999, 200000):
        assert ours.decode_utf8([token]) == oracle.decode_utf8([token])
    assert C.load_harmony_encoding("HarmonyGptOss").name == "HarmonyGptOss"
    for M in (H, C):
        with pytest.raises(ValueError):
            M.load_harmony_encoding("NoSuchEncoding")


@pytest.mark.parametrize(
    "text",
    [
        "hello world",
        "",
        "  leading and trailing  \n",
        "naïve 京都 😊",
        "<|start|>user",
        "a<|end|>b<|reserved_200014|>",
        "<|",
    ],
)
def test_encode_like_reference(oracle: Any, ours: C.HarmonyEncoding, text: str) -> None:
    options: list[dict[str, Any]] = [
        {},
        {"allowed_special": "all"},
        {"allowed_special": {"<|start|>"}},
        {"allowed_special": {"<|end|>", "<|reserved_200014|>"}},
        {"disallowed_special": ()},
        {"disallowed_special": {"<|end|>"}},
        {"allowed_special": {"<|start|>"}, "disallowed_special": ()},
        {"allowed_special": "all", "disallowed_special": {"<|start|>"}},
    ]
    for kwargs in options:
        try:
            want: Any = oracle.encode(text, **kwargs)
        except H.HarmonyError:
            want = "error"
        try:
            got: Any = ours.encode(text, **kwargs)
        except C.HarmonyError as exc:
            assert "disallowed special token" in str(exc)
            got = "error"
        assert got == want, kwargs
        if want != "error":
            assert ours.decode_utf8(got) == text


def test_encode_decode_roundtrip(ours: C.HarmonyEncoding) -> None:
    assert ours.encode("hello world") == [24912, 2375]
    assert ours.decode_utf8(ours.encode("hello world")) == "hello world"
    assert ours.decode(ours.encode("hello world")) == "hello world"
    assert ours.encode("<|start|>", allowed_special={"<|start|>"}) == [200006]
    assert ours.encode("<|start|>", allowed_special="all") == [200006]
    assert ours.encode("<|start|>", disallowed_special=()) == [27, 91, 5236, 91, 29]
    with pytest.raises(C.HarmonyError, match="Encountered text corresponding to disallowed special token"):
        ours.encode("<|start|>")


def test_encode_surrogates_like_reference(oracle: Any, ours: C.HarmonyEncoding) -> None:
    assert ours.encode("a\ud800b") == oracle.encode("a\ud800b")


def test_invalid_utf8_decoding(oracle: Any, ours: C.HarmonyEncoding) -> None:
    tokens = [*ours.encode("Bonjour"), 9552]
    with pytest.raises(H.HarmonyError):
        oracle.decode_utf8(tokens)
    with pytest.raises(C.HarmonyError, match="Invalid utf-8"):
        ours.decode_utf8(tokens)
    assert ours.decode(tokens) == oracle.decode(tokens) == "Bonjour \ufffd"
    assert ours.decode(tokens, errors="ignore") == oracle.decode(tokens, errors="ignore")
    with pytest.raises(C.HarmonyError):
        ours.decode_utf8([99999999])
    with pytest.raises(H.HarmonyError):
        oracle.decode_utf8([99999999])


# --- models and errors ----------------------------------------------------------------------

PUBLIC_NAMES = [
    "Author",
    "ChannelConfig",
    "Content",
    "Conversation",
    "DeveloperContent",
    "HarmonyEncoding",
    "HarmonyEncodingName",
    "HarmonyError",
    "Message",
    "ReasoningEffort",
    "RenderConversationConfig",
    "RenderOptions",
    "Role",
    "StreamState",
    "StreamableParser",
    "SystemContent",
    "TextContent",
    "ToolDescription",
    "ToolNamespaceConfig",
    "load_harmony_encoding",
]
"""``openchatml.harmony.__all__``: the public names of openai-harmony 0.0.8's module."""


def test_public_names_are_those_of_the_reference() -> None:
    assert sorted(C.__all__) == PUBLIC_NAMES
    assert set(H.__all__) <= set(C.__all__)
    reference_classes = {
        name
        for name in dir(H)
        if isinstance(getattr(H, name), type) and getattr(H, name).__module__ == H.__name__
    }
    assert reference_classes <= set(C.__all__)
    for name in [*PUBLIC_NAMES, "CONSTRAIN_MARKER"]:
        namespace: dict[str, Any] = {}
        exec(f"from openchatml.harmony import {name}", namespace)
        assert namespace[name] is getattr(C, name)
    assert C.CONSTRAIN_MARKER == "<|constrain|>"


def test_builtin_namespaces_match_reference() -> None:
    assert C.ToolNamespaceConfig.browser().model_dump() == H.ToolNamespaceConfig.browser().model_dump()
    assert C.ToolNamespaceConfig.python().model_dump() == H.ToolNamespaceConfig.python().model_dump()
    assert json.loads(json.dumps(C.SystemContent.new().with_browser_tool().to_dict())) == json.loads(
        json.dumps(H.SystemContent.new().with_browser_tool().to_dict())
    )


def test_enums_match_reference() -> None:
    for ours_enum, ref_enum in (
        (C.Role, H.Role),
        (C.ReasoningEffort, H.ReasoningEffort),
        (C.StreamState, H.StreamState),
    ):
        assert [(m.name, m.value) for m in ours_enum] == [(m.name, m.value) for m in ref_enum]
    assert str(C.HarmonyEncodingName.HARMONY_GPT_OSS) == str(H.HarmonyEncodingName.HARMONY_GPT_OSS)
    assert str(C.Role.USER) == str(H.Role.USER)
    for M in (H, C):
        with pytest.raises(ValueError, match="Unknown role"):
            M.Role("robot")


def test_model_defaults_and_builders_match_reference() -> None:
    for build in (
        lambda M: M.SystemContent.new(),
        lambda M: M.SystemContent(),
        lambda M: M.DeveloperContent.new(),
        lambda M: M.ChannelConfig.require_channels(["final"]),
        lambda M: M.Author.new(M.Role.TOOL, "functions.f"),
        lambda M: M.ToolDescription.new("f", "does f"),
        lambda M: M.RenderConversationConfig(),
        lambda M: M.RenderOptions(),
        lambda M: M.Message.from_role_and_content(M.Role.USER, "x"),
        lambda M: M.Conversation(),
        lambda M: M.TextContent(text="t"),
    ):
        assert build(C).model_dump(mode="json") == build(H).model_dump(mode="json")


def test_structured_contents_roundtrip_through_dicts() -> None:
    system = C.SystemContent.new().with_browser_tool().with_conversation_start_date("2025-01-31")
    assert C.SystemContent.from_dict(system.to_dict()) == system
    dev = (
        C.DeveloperContent.new().with_instructions("x").with_function_tools([C.ToolDescription.new("f", "g")])
    )
    assert C.DeveloperContent.from_dict(dev.to_dict()) == dev


def test_message_from_dict_accepts_string_content() -> None:
    data = {"role": "assistant", "content": "hi", "channel": "final"}
    assert C.Message.from_dict(data).to_dict() == H.Message.from_dict(data).to_dict()
    with pytest.raises(ValueError):
        C.Message.from_dict({"role": "user", "content": [{"type": "image"}]})


def test_wrong_types_raise_validation_error() -> None:
    for M in (H, C):
        with pytest.raises(pydantic.ValidationError, match="valid dictionary or instance of Message"):
            M.Conversation.from_messages([M.SystemContent.new()])


def test_conversation_iterates_messages() -> None:
    conv = training_final(C)
    assert list(conv) == conv.messages


@pytest.mark.parametrize(
    "build",
    [
        lambda M: M.Message.from_role_and_content(M.Role.TOOL, "no name"),
        lambda M: M.Message.from_role_and_content(M.Role.USER, M.SystemContent.new()),
        lambda M: M.Message.from_role_and_content(M.Role.SYSTEM, M.DeveloperContent.new()),
    ],
)
def test_unrenderable_messages_raise_harmony_error(
    oracle: Any, ours: C.HarmonyEncoding, build: Builder
) -> None:
    with pytest.raises(RuntimeError):
        oracle.render(build(H))
    for render in (
        lambda m: ours.render(m),
        lambda m: ours.render_conversation(C.Conversation.from_messages([m])),
        lambda m: ours.render_conversation_for_training(C.Conversation.from_messages([m])),
        lambda m: ours.render_conversation_for_completion(
            C.Conversation.from_messages([m]), C.Role.ASSISTANT
        ),
    ):
        with pytest.raises(C.HarmonyError) as info:
            render(build(C))
        assert isinstance(info.value, RenderError)
        assert isinstance(info.value, RuntimeError)
        assert info.value.code == RenderError.code
        assert info.value.fault == "caller"


def test_unrenderable_values_raise_harmony_error(ours: C.HarmonyEncoding) -> None:
    bad_effort = C.SystemContent.new().with_reasoning_effort("extreme")  # type: ignore[arg-type]
    for msg in (
        C.Message.from_role_and_content(C.Role.USER, C.Content()),
        C.Message.from_role_and_content(C.Role.SYSTEM, bad_effort),
        C.Message.model_construct(author=C.Author.model_construct(role="robot"), content=[]),
    ):
        with pytest.raises(C.HarmonyError) as info:
            ours.render(msg)
        assert isinstance(info.value, RenderError)
    lower = C.SystemContent.new().with_reasoning_effort("low")  # type: ignore[arg-type]
    assert ours.render(C.Message.from_role_and_content(C.Role.SYSTEM, lower)) == ours.render(
        C.Message.from_role_and_content(
            C.Role.SYSTEM, C.SystemContent.new().with_reasoning_effort(C.ReasoningEffort.LOW)
        )
    )


def test_harmony_errors_keep_code_and_position_and_pickle(ours: C.HarmonyEncoding) -> None:
    with pytest.raises(C.HarmonyError) as info:
        ours.parse_messages_from_completion_tokens(_tokens(ours, "<|start|>mytool<|message|>x<|end|>"))
    err = info.value
    assert isinstance(err, HeaderError)
    assert err.code == "E-PARSE-HEADER"
    assert err.fault == "input"
    assert err.position is not None and err.position.unit == "token"
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert (back.code, back.message, back.position) == (err.code, err.message, err.position)
    own = C.HarmonyError("plain")
    again = pickle.loads(pickle.dumps(own))
    assert type(again) is C.HarmonyError and again.message == "plain"
