"""The data model: message constructors and accessors, conversations, the transcript header."""

from __future__ import annotations

import dataclasses

import pytest

from openchatml import (
    Author,
    Conversation,
    DeveloperContent,
    Message,
    Role,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
    TranscriptHeader,
)
from openchatml.core.messages import Channel, Intent


def test_roles_channels_and_intents_are_their_wire_words() -> None:
    assert [r.value for r in Role] == ["system", "developer", "user", "assistant", "tool"]
    assert Role("tool") is Role.TOOL
    assert {c.value for c in Channel} == {"analysis", "commentary", "final"}
    assert {i.value for i in Intent} == {"preamble", "status", "debug"}
    assert Channel("final") is Channel.FINAL and isinstance(Channel.FINAL, str)


def test_from_role_takes_text_one_part_or_several() -> None:
    assert Message.from_role("user", "hi") == Message(Author(Role.USER), (TextContent("hi"),))
    system = SystemContent(reasoning_effort=None)
    assert Message.from_role(Role.SYSTEM, system).content == (system,)
    parts = [TextContent("a"), TextContent("b")]
    message = Message.from_role(Role.ASSISTANT, iter(parts), channel="final", name="bot")
    assert message.content == tuple(parts)
    assert (message.author, message.channel) == (Author(Role.ASSISTANT, "bot"), "final")
    with pytest.raises(ValueError):
        Message.from_role("moderator", "x")


def test_constructors() -> None:
    assert Message.system().content == (SystemContent(),)
    assert Message.developer("be brief") == Message(Author(Role.DEVELOPER), (TextContent("be brief"),))
    assert Message.user("hi", name="alice").author == Author(Role.USER, "alice")
    final = Message.assistant("ok")
    assert (final.role, final.channel, final.recipient) == (Role.ASSISTANT, "final", None)
    assert Message.assistant("hm", channel=None).channel is None
    assert Message.assistant("x", channel="commentary", intent="preamble").intent == "preamble"


def test_tool_call_and_result() -> None:
    call = Message.tool_call("functions.f", '{"a":1}', call_id="c1")
    assert call == Message(
        Author(Role.ASSISTANT),
        (TextContent('{"a":1}'),),
        channel="commentary",
        recipient="functions.f",
        content_type="json",
        constrained=True,
        call_id="c1",
    )
    assert call.is_tool_call
    # without a content type there is nothing to constrain
    free = Message.tool_call("python", "print(1)", channel="analysis", content_type=None)
    assert (free.content_type, free.constrained) == (None, False)
    result = Message.tool_result("functions.f", "20", call_id="c1")
    assert result.author == Author(Role.TOOL, "functions.f")
    assert (result.channel, result.recipient, result.call_id) == ("commentary", "assistant", "c1")
    assert not result.is_tool_call


def test_only_an_assistant_with_a_recipient_is_a_tool_call() -> None:
    assert not Message.assistant("x").is_tool_call
    assert not Message.from_role(Role.USER, "x", recipient="functions.f").is_tool_call
    assert Message.assistant("x").with_(recipient="functions.f").is_tool_call


def test_accessors() -> None:
    message = Message.from_role(
        Role.USER, [TextContent("a"), SystemContent(), TextContent("b")], name="alice"
    )
    assert (message.role, message.name) == (Role.USER, "alice")
    assert message.text == "ab"  # text parts only
    assert Message.system().text == ""


def test_messages_are_immutable_values() -> None:
    message = Message.user("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.channel = "final"  # type: ignore[misc]
    changed = message.with_(channel="final")
    assert (message.channel, changed.channel) == (None, "final")
    assert changed.with_(channel=None) == message
    assert hash(changed.with_(channel=None)) == hash(message)
    assert not hasattr(message, "__dict__")


def test_conversation_is_a_sequence_of_messages() -> None:
    a, b, c = Message.user("a"), Message.assistant("b"), Message.user("c")
    conv = Conversation.from_messages([a, b])
    assert (len(conv), conv[0], conv[-1], list(conv)) == (2, a, b, [a, b])
    longer = conv.append(c)
    assert list(longer) == [a, b, c] and list(conv) == [a, b]
    header = TranscriptHeader(model="gpt-oss")
    assert Conversation.from_messages([a], header).append(b).header is header


def test_has_function_tools() -> None:
    tool = ToolDescription("f")
    functions = {"functions": ToolNamespaceConfig("functions", None, (tool,))}
    with_tools = Message.developer(DeveloperContent(tools=functions))
    assert Conversation.from_messages([Message.system(), with_tools]).has_function_tools
    empty = {"functions": ToolNamespaceConfig("functions")}
    assert not Conversation.from_messages(
        [Message.developer(DeveloperContent(tools=empty))]
    ).has_function_tools
    # only a developer message declares function tools; builtin namespaces do not count
    builtin = {"python": ToolNamespaceConfig.python()}
    assert not Conversation.from_messages(
        [Message.developer(DeveloperContent(tools=builtin))]
    ).has_function_tools
    assert not Conversation().has_function_tools


@pytest.mark.parametrize(("version", "major"), [("2.2", 2), ("3", 3), ("10.1.4", 10), ("v2", 0), ("", 0)])
def test_transcript_header_major(version: str, major: int) -> None:
    assert TranscriptHeader(version).major == major


def test_transcript_header_defaults_are_empty_read_only_mappings() -> None:
    header = TranscriptHeader()
    assert header.version == "2.2" and header.model is None
    for mapping in (header.generation_settings, header.capabilities, header.profiles, header.extra):
        assert dict(mapping) == {}
        with pytest.raises(TypeError):
            mapping["x"] = 1  # type: ignore[index]
