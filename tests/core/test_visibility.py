"""What an end user may see (OCM 2.2 §4, §5, §11): per message, per conversation, and on
a stream of parser events, where nothing hidden may ever leak."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml import (
    Author,
    ContentDelta,
    Conversation,
    CoTPolicy,
    DeveloperContent,
    Event,
    Header,
    Message,
    MessageDone,
    MessageStarted,
    Profile,
    RenderConfig,
    Renderer,
    Role,
    StreamParser,
    SystemContent,
    VisibilityError,
    parse_text,
)
from openchatml.core.visibility import (
    VisibleDeltaFilter,
    effective_channel,
    ensure_visible,
    header_is_visible,
    hidden_reason,
    is_visible,
    user_view,
    visible_text,
)
from strategies import conversations
from transcripts import FIXTURE_1_LEGACY, FIXTURE_7_PREAMBLE, SPEC_16_2

A = Role.ASSISTANT


def assistant(channel: str | None, **attrs: object) -> Message:
    return Message.from_role(A, f"on {channel}", channel=channel, **attrs)


VISIBLE = {
    "user": Message.user("hi"),
    "user with a name": Message.user("hi", name="alice"),
    "final": assistant("final"),
    "no channel (1.x)": assistant(None),
    "final, to=all": assistant("final", recipient="all"),
    "final, intent=status": assistant("final", intent="status"),
    "final, named": assistant("final", name="bot"),
    "preamble": assistant("commentary", intent="preamble"),
    "preamble, call_id": assistant("commentary", intent="preamble", call_id="c1"),
}

HIDDEN = {
    "system": Message.system(),
    "system text": Message.from_role(Role.SYSTEM, "rules"),
    "developer": Message.developer(DeveloperContent(instructions="secret")),
    "analysis": assistant("analysis"),
    "analysis preamble": assistant("analysis", intent="preamble"),
    "commentary": assistant("commentary"),
    "commentary, intent=status": assistant("commentary", intent="status"),
    "commentary, intent=debug": assistant("commentary", intent="debug"),
    "final, intent=debug": assistant("final", intent="debug"),
    "no channel, intent=debug": assistant(None, intent="debug"),
    "custom channel": assistant("scratchpad"),
    "tool call": Message.tool_call("functions.f", "{}"),
    "tool call on final": assistant("final", recipient="functions.f"),
    "preamble to a tool": assistant("commentary", intent="preamble", recipient="functions.f"),
    "built-in call on analysis": Message.tool_call("python", "1+1", channel="analysis", content_type=None),
    "tool reply": Message.tool_result("functions.f", '{"ok":true}'),
    "tool reply on final": Message.tool_result("functions.f", "x", channel="final", recipient=None),
}


@pytest.mark.parametrize("name", sorted(VISIBLE))
def test_visible(name: str) -> None:
    msg = VISIBLE[name]
    assert is_visible(msg)
    assert hidden_reason(msg) is None
    assert ensure_visible(msg) is msg
    assert user_view([msg]) == [msg]


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_hidden(name: str) -> None:
    msg = HIDDEN[name]
    assert not is_visible(msg)
    reason = hidden_reason(msg)
    assert reason
    with pytest.raises(VisibilityError) as info:
        ensure_visible(msg)
    assert info.value.code == "E-PERM-VISIBILITY"
    assert info.value.fault == "caller"
    assert info.value.http_status == 403
    assert info.value.message == reason
    assert ensure_visible(msg, debug=True) is msg
    assert user_view([msg]) == []
    assert user_view([msg], debug=True) == [msg]


def test_effective_channel() -> None:
    assert effective_channel(assistant(None)) == "final"
    assert effective_channel(assistant("analysis")) == "analysis"
    assert effective_channel(assistant("custom")) == "custom"
    assert effective_channel(Message.user("u")) is None
    assert effective_channel(Message.from_role(Role.USER, "u", channel="final")) == "final"
    assert effective_channel(Message.system()) is None
    assert effective_channel(Message.tool_result("functions.f", "x")) == "commentary"
    assert effective_channel(Message.tool_result("functions.f", "x", channel=None)) is None


def test_header_is_visible_agrees_with_is_visible() -> None:
    for msg in [*VISIBLE.values(), *HIDDEN.values()]:
        header = Header(
            msg.author, msg.channel, msg.recipient, msg.content_type, msg.constrained, msg.call_id, msg.intent
        )
        assert header_is_visible(header) == is_visible(msg)


def test_user_view_of_a_conversation_keeps_order() -> None:
    conv = Conversation.from_messages(parse_text(SPEC_16_2))
    view = user_view(conv)
    assert [(m.role, m.channel) for m in view] == [(Role.USER, None), (A, "final")]
    assert view[1].text == "It’s 20 °C and sunny in Tokyo right now."
    assert user_view(conv, debug=True) == list(conv)


def test_legacy_transcript_is_all_visible_but_system() -> None:
    messages = parse_text(FIXTURE_1_LEGACY)
    assert [is_visible(m) for m in messages] == [False, True, True, True, True]


def test_visible_text_of_messages() -> None:
    messages = parse_text(FIXTURE_7_PREAMBLE)
    plan = "**Plan:** 1) Search docs 2) Extract figures 3) Summarize."
    assert visible_text(messages) == "Summarise the docs.\n\n" + plan
    assert visible_text(messages, separator="|") == "Summarise the docs.|" + plan
    assert "internal note" in visible_text(messages, debug=True)
    assert visible_text([]) == ""


def test_visible_text_refuses_a_mix() -> None:
    parser = StreamParser()
    events = parser.feed_text(FIXTURE_7_PREAMBLE) + parser.close()
    with pytest.raises(TypeError):
        visible_text([Message.user("x"), *events])  # type: ignore[arg-type]


# --- streaming -------------------------------------------------------------------------------


def stream(text: str, chunks: list[int] | None = None) -> list[Event]:
    parser = StreamParser()
    cuts = sorted(set(chunks or []))
    events: list[Event] = []
    for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
        events += parser.feed_text(text[a:b])
    return events + parser.close()


def test_filter_passes_final_and_preambles_only() -> None:
    text = (
        "<|start|>system<|message|>SECRET-SYSTEM<|end|>"
        "<|start|>user<|message|>question<|end|>"
        "<|start|>assistant<|channel|>analysis<|message|>SECRET-COT<|end|>"
        "<|start|>assistant intent=preamble<|channel|>commentary<|message|>plan. <|end|>"
        "<|start|>assistant to=functions.f<|channel|>commentary<|constrain|>json<|message|>{}<|call|>"
        "<|start|>tool name=functions.f to=assistant<|channel|>commentary<|message|>SECRET-TOOL<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>SECRET-NOTE<|end|>"
        "<|start|>assistant<|channel|>final<|message|>answer<|return|>"
    )
    for cuts in ([], list(range(len(text))), [30, 90, 150, 151, 152]):
        events = stream(text, cuts)
        deltas = list(VisibleDeltaFilter().filter(events))
        shown = "".join(d.text for d in deltas)
        assert shown == "questionplan. answer"
        assert "SECRET" not in shown
        assert {d.index for d in deltas} == {1, 3, 7}
        assert "SECRET-COT" in VisibleDeltaFilter(debug=True).text(events)
        assert visible_text(events) == shown


def test_filter_drops_deltas_of_messages_it_never_saw_start() -> None:
    f = VisibleDeltaFilter()
    assert f.feed(ContentDelta(0, "final", "orphan")) is None
    started = MessageStarted(0, Header(Author(A), "final"))
    assert f.feed(started) is None
    delta = ContentDelta(0, "final", "ok")
    assert f.feed(delta) is delta
    done = MessageDone(0, Message.assistant("ok"), None)
    assert f.feed(done) is None
    assert f.feed(ContentDelta(0, "final", "late")) is None
    assert f.feed(ContentDelta(1, "final", "next")) is None


def test_filter_on_a_completion_stream() -> None:
    """A server parsing sampled tokens after ``<|start|>assistant`` streams only final text."""
    renderer = Renderer(RenderConfig(cot=CoTPolicy.KEEP))
    sampled = [
        Message.assistant("thinking hard", channel="analysis"),
        Message.assistant("the answer"),
    ]
    tokens = renderer.tokens(sampled)
    role_len = len(renderer.encoding.encode_ordinary("assistant"))
    parser = StreamParser(Role.ASSISTANT)
    f = VisibleDeltaFilter()
    shown = []
    for token in tokens[1 + role_len :]:
        parser.process(token)
        shown += [d.text for d in f.filter(parser.events())]
    shown += [d.text for d in f.filter(parser.close())]
    assert "".join(shown) == "the answer"
    assert len(shown) > 1  # it streamed, token by token


@pytest.mark.parametrize("profile", list(Profile))
@given(data=st.data())
def test_filter_shows_exactly_the_visible_messages(profile: Profile, data: st.DataObject) -> None:
    conv = data.draw(conversations(harmony_representable=profile is Profile.HARMONY))
    text = Renderer(RenderConfig(profile=profile, cot=CoTPolicy.KEEP)).text(conv)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10))
    events = stream(text, cuts)
    parsed = parse_text(text)
    deltas = list(VisibleDeltaFilter().filter(events))
    visible = [i for i, m in enumerate(parsed) if is_visible(m)]
    assert sorted({d.index for d in deltas}) == [i for i in visible if parsed[i].text]
    for i in range(len(parsed)):
        shown = "".join(d.text for d in deltas if d.index == i)
        assert shown == (parsed[i].text if i in visible else "")
    assert visible_text(parsed, separator="") == "".join(d.text for d in deltas)


def test_structured_contents_are_hidden() -> None:
    for msg in (Message.system(SystemContent()), Message.developer(DeveloperContent(instructions="x"))):
        assert not is_visible(msg)
        assert "hidden" in (hidden_reason(msg) or "")
