"""Round trips: render → parse → render is an identity, and parse(render(c)) gives ``c``
back for every conversation the profile can represent, as text and as token ids.

The Harmony profile has no ``call_id`` or ``intent`` (dropped by design), so for it the
strategies build only what Harmony can carry (``harmony_representable``). Structured
system and developer contents come back as their rendered text (:func:`as_parsed`).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from openchatml import (
    Author,
    Conversation,
    CoTPolicy,
    Message,
    Profile,
    RenderConfig,
    Renderer,
    RenderError,
    Role,
    TextContent,
    TranscriptHeader,
    parse_text,
    parse_tokens,
    parse_transcript,
)
from openchatml.core.headers import MAX_HEADER
from openchatml.core.render import select_messages
from openchatml.core.tokens import (
    CALL_ID,
    CHANNEL_ID,
    CONSTRAIN_ID,
    END_ID,
    FIRST_SPECIAL_ID,
    MESSAGE_ID,
    RETURN_ID,
    START_ID,
    TOKEN_RE,
    escape_text,
)
from strategies import (
    TRICKY_FRAGMENTS,
    any_length_header_words,
    as_parsed,
    body_texts,
    conversations,
    header_of,
    header_words,
    messages,
    transcript_headers,
)

KEEP = {p: Renderer(RenderConfig(profile=p, cot=CoTPolicy.KEEP)) for p in Profile}


def token_across_parts(conv: Conversation) -> bool:
    """Whether a message's text parts spell a control token only once joined.

    The text renderer escapes each part alone, so such a token becomes control (see
    ``test_text_parts_cannot_join_into_a_control_token``); the properties below leave
    these cases to that test, until the core is fixed and the filter can go.
    """
    for m in conv.messages:
        texts = [p.text for p in m.content if isinstance(p, TextContent)]
        if len(texts) < 2:
            continue
        bounds, at = set(), 0
        for t in texts[:-1]:
            at += len(t)
            bounds.add(at)
        if any(a < b_ < b for a, b in (x.span() for x in TOKEN_RE.finditer("".join(texts))) for b_ in bounds):
            return True
    return False


def representable(profile: Profile) -> st.SearchStrategy[Conversation]:
    return conversations(harmony_representable=profile is Profile.HARMONY).filter(
        lambda c: not token_across_parts(c)
    )


@pytest.mark.parametrize("profile", list(Profile))
def test_text_parts_cannot_join_into_a_control_token(profile: Profile) -> None:
    msg = Message(Author(Role.USER), (TextContent("x<|end|"), TextContent(">y")))
    assert parse_text(KEEP[profile].text([msg])) == [Message.user("x<|end|>y")]


# --- escaping ------------------------------------------------------------------------------


@example("<|start|>user<|message|>x<|end|>")
@example("<")
@example("a<|literal|>b<|endliteral|>c<")
@example("<<|end|><")
@example("<|endliteral|>")
@given(body_texts())
def test_any_body_text_survives_text_render_and_parse(text: str) -> None:
    for profile in Profile:
        for msg in (Message.user(text), Message.assistant(text), Message.from_role(Role.DEVELOPER, text)):
            rendered = KEEP[profile].text([msg])
            assert parse_text(rendered) == [msg]


@given(st.lists(st.sampled_from(TRICKY_FRAGMENTS), max_size=8).map("".join))
def test_escape_text_is_read_back_exactly(text: str) -> None:
    escaped = escape_text(text)
    assert parse_text(f"<|start|>user<|message|>{escaped}<|end|>") == [Message.user(text)]


@pytest.mark.parametrize(
    "text", ["<<", "a<<", "<|end|><<", "x <<", "<<<", "<|end|<", "<<|end|", "<|literal|><"]
)
def test_escape_of_trailing_lt_runs(text: str) -> None:
    for profile in Profile:
        rendered = KEEP[profile].text([Message.user(text)])
        assert parse_text(rendered) == [Message.user(text)]


@given(body_texts())
def test_body_text_survives_token_render_and_parse(text: str) -> None:
    for profile in Profile:
        msg = Message.assistant(text, channel="analysis")
        assert parse_tokens(KEEP[profile].tokens([msg])) == [msg]


@given(header_words())
def test_header_words_survive_both_profiles(word: str) -> None:
    msgs = [
        Message.from_role(Role.USER, "x", name=word),
        Message.tool_call("functions.f", "{}", channel=word),
        Message.from_role(Role.ASSISTANT, "x", channel="final", recipient=word if word != "all" else "al"),
        Message.from_role(Role.ASSISTANT, "x", channel="commentary", content_type=word, constrained=True),
    ]
    for profile in Profile:
        for msg in msgs:
            assert parse_text(KEEP[profile].text([msg])) == [msg], profile
            assert parse_tokens(KEEP[profile].tokens([msg])) == [msg], profile
    ocm_only = [
        Message.from_role(Role.TOOL, "x", name=word),
        Message.from_role(Role.ASSISTANT, "x", call_id=word, intent=word),
        Message.from_role(Role.ASSISTANT, "x", content_type=word),
    ]
    for msg in ocm_only:
        assert parse_text(KEEP[Profile.OCM].text([msg])) == [msg]
        assert parse_tokens(KEEP[Profile.OCM].tokens([msg])) == [msg]


def header_length(text: str) -> int:
    """The characters between ``<|start|>`` and ``<|message|>`` of one rendered message."""
    return text.index("<|message|>") - len("<|start|>")


@pytest.mark.parametrize("profile", list(Profile))
@given(word=any_length_header_words())
def test_header_values_of_any_length_read_back_or_are_refused(profile: Profile, word: str) -> None:
    """Render → strict parse is an identity for every header the renderer accepts, as text
    and as token ids; text refuses (``E-RENDER``) exactly the headers longer than
    ``MAX_HEADER`` characters, tokens only headers with a long value."""
    makers: list[Callable[[str], Message]] = [
        lambda w: Message.from_role(Role.USER, "x", name=w),
        lambda w: Message.tool_call("functions.f", "{}", channel=w),
        lambda w: Message.from_role(Role.ASSISTANT, "x", channel="final", recipient=w),
        lambda w: Message.from_role(
            Role.ASSISTANT, "x", channel="commentary", content_type=w, constrained=True
        ),
        lambda w: Message.tool_result("functions." + w, "x"),
    ]
    if profile is Profile.OCM:
        makers += [
            lambda w: Message.from_role(Role.TOOL, "x", name=w),
            lambda w: Message.from_role(Role.ASSISTANT, "x", call_id=w),
            lambda w: Message.from_role(Role.ASSISTANT, "x", intent=w),
            lambda w: Message.from_role(Role.ASSISTANT, "x", content_type=w),
        ]
    renderer = KEEP[profile]
    word = word if word != "all" else "al"
    for make in makers:
        msg = make(word)
        size = header_length(renderer.text([make("w")])) + len(word) - 1
        try:
            text = renderer.text([msg])
        except RenderError as exc:
            assert exc.code == "E-RENDER" and size > MAX_HEADER, exc
        else:
            assert size <= MAX_HEADER
            assert parse_text(text) == [msg]
        try:
            tokens = renderer.tokens([msg])
        except RenderError as exc:
            assert exc.code == "E-RENDER" and "tokens" in exc.message and len(word) > MAX_HEADER // 4, exc
        else:
            assert parse_tokens(tokens) == [msg]


# --- parse(render(c)) == c ----------------------------------------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
@given(data=st.data())
def test_parse_of_render_is_the_conversation(profile: Profile, data: st.DataObject) -> None:
    conv = data.draw(representable(profile))
    expected = as_parsed(conv, harmony=profile is Profile.HARMONY)
    parsed = parse_transcript(KEEP[profile].text(conv))
    assert list(parsed.conversation.messages) == expected
    assert parsed.repairs == ()
    assert header_of(parsed.conversation) == header_of(conv)
    assert parse_tokens(KEEP[profile].tokens(conv)) == expected


@pytest.mark.parametrize("profile", list(Profile))
@given(msg=messages(harmony_representable=True))
def test_harmony_representable_messages_survive(profile: Profile, msg: Message) -> None:
    expected = as_parsed([msg], harmony=True)
    assert parse_text(KEEP[profile].text([msg])) == expected
    assert parse_tokens(KEEP[profile].tokens([msg])) == expected


@given(conv=conversations())
def test_harmony_profile_drops_only_call_id_and_intent(conv: Conversation) -> None:
    stripped = Conversation(tuple(m.with_(call_id=None, intent=None) for m in conv.messages), conv.header)
    harmony = KEEP[Profile.HARMONY]
    assert harmony.text(conv) == harmony.text(stripped)
    assert harmony.tokens(conv) == harmony.tokens(stripped)
    ocm = KEEP[Profile.OCM]
    if any(m.call_id is not None or m.intent is not None for m in conv.messages):
        assert ocm.tokens(conv) != ocm.tokens(stripped)


# --- render(parse(render(c))) == render(c) -----------------------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
@given(data=st.data())
def test_render_parse_render_is_identity(profile: Profile, data: st.DataObject) -> None:
    """Under every CoT policy, as text and as tokens."""
    conv = data.draw(representable(profile))
    for cot in CoTPolicy:
        renderer = Renderer(RenderConfig(profile=profile, cot=cot))
        text = renderer.text(conv)
        text_again = renderer.text(parse_transcript(text).conversation)
        tokens = renderer.tokens(conv)
        again = renderer.tokens(parse_tokens(tokens))
        if all(len(m.content) == 1 for m in conv.messages):
            assert text_again == text, cot
            assert again == tokens, cot
        else:
            # text parts are escaped and encoded one by one and read back as one body:
            # the escapes and the token split may differ, the messages may not; from
            # then on it is stable
            assert parse_transcript(text_again) == parse_transcript(text), cot
            assert renderer.text(parse_transcript(text_again).conversation) == text_again, cot
            assert parse_tokens(again) == parse_tokens(tokens), cot
            assert renderer.tokens(parse_tokens(again)) == again, cot


@pytest.mark.parametrize("profile", list(Profile))
@given(data=st.data())
def test_cot_policy_selects_what_is_rendered(profile: Profile, data: st.DataObject) -> None:
    conv = data.draw(representable(profile))
    for cot in CoTPolicy:
        renderer = Renderer(RenderConfig(profile=profile, cot=cot))
        kept = select_messages(conv.messages, cot)
        parsed = parse_text(renderer.text(Conversation(conv.messages)))
        assert parsed == as_parsed(Conversation(tuple(kept)), harmony=profile is Profile.HARMONY)
        assert all(m.channel == "analysis" for m in conv.messages if m not in kept)


# --- structural properties of rendered tokens --------------------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
@given(data=st.data())
def test_text_never_becomes_a_control_token(profile: Profile, data: st.DataObject) -> None:
    conv = data.draw(conversations(harmony_representable=profile is Profile.HARMONY))
    tokens = KEEP[profile].tokens(conv)
    special = [t for t in tokens if t >= FIRST_SPECIAL_ID]
    n = len(conv.messages)
    assert set(special) <= {START_ID, CHANNEL_ID, CONSTRAIN_ID, MESSAGE_ID, END_ID, CALL_ID}
    assert special.count(CHANNEL_ID) == sum(1 for m in conv.messages if m.channel is not None)
    assert special.count(CONSTRAIN_ID) == sum(
        1 for m in conv.messages if m.constrained and m.content_type is not None
    )
    assert special.count(START_ID) == n
    assert special.count(MESSAGE_ID) == n
    assert special.count(END_ID) + special.count(CALL_ID) == n
    assert RETURN_ID not in special
    calls = sum(1 for m in conv.messages if m.role is Role.ASSISTANT and m.recipient not in (None, "all"))
    assert special.count(CALL_ID) == calls


# --- completion and training forms -------------------------------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
@given(data=st.data(), answer=body_texts())
def test_completion_text_plus_sample_parses(profile: Profile, data: st.DataObject, answer: str) -> None:
    conv = data.draw(representable(profile))
    renderer = KEEP[profile]
    prompt = renderer.completion_text(conv)
    sample = "<|channel|>final<|message|>" + escape_text(answer) + "<|return|>"
    parsed = parse_transcript(prompt + sample).conversation
    expected = [*as_parsed(conv, harmony=profile is Profile.HARMONY), Message.assistant(answer)]
    assert list(parsed.messages) == expected


@pytest.mark.parametrize("profile", list(Profile))
@given(data=st.data())
def test_training_form_parses_to_the_same_messages(profile: Profile, data: st.DataObject) -> None:
    conv = data.draw(representable(profile))
    renderer = KEEP[profile]
    expected = as_parsed(conv, harmony=profile is Profile.HARMONY)
    text = renderer.training_text(conv)
    tokens = renderer.training_tokens(conv)
    assert parse_text(text) == expected
    assert parse_tokens(tokens) == expected
    ends_final = bool(conv.messages) and conv[-1].role is Role.ASSISTANT and conv[-1].channel == "final"
    assert text.endswith("<|return|>") == ends_final
    assert (bool(tokens) and tokens[-1] == RETURN_ID) == ends_final


# --- the transcript header ----------------------------------------------------------------------


@given(transcript_headers())
def test_transcript_header_round_trips(header: TranscriptHeader) -> None:
    conv = Conversation((Message.user("hi"),), header)
    for profile in Profile:
        parsed = parse_transcript(KEEP[profile].text(conv)).conversation
        assert header_of(parsed) == header_of(conv)
        assert list(parsed.messages) == [Message.user("hi")]


def test_transcript_header_without_messages() -> None:
    conv = Conversation((), TranscriptHeader(model="gpt-oss-20b"))
    parsed = parse_transcript(KEEP[Profile.OCM].text(conv)).conversation
    assert parsed.messages == ()
    assert header_of(parsed) == header_of(conv)


def test_transcript_header_naming_control_tokens() -> None:
    header = TranscriptHeader(capabilities={"tokens": ["<|start|>", "<|end|>"]})
    conv = Conversation((Message.user("hi"),), header)
    parsed = parse_transcript(KEEP[Profile.OCM].text(conv)).conversation
    assert header_of(parsed) == header_of(conv)
    assert list(parsed.messages) == [Message.user("hi")]


def test_spec_section_2_header_parses() -> None:
    text = (
        "version: 2.2\n"
        "model:   gpt-oss-120b\n"
        "capabilities:\n"
        '  tokens: ["<|start|>","<|channel|>","<|message|>","<|call|>","<|constrain|>",'
        '"<|return|>","<|end|>","<|literal|>","<|endliteral|>"]\n'
        "<|start|>user<|message|>hi<|end|>\n"
    )
    parsed = parse_transcript(text).conversation
    assert parsed.header is not None
    assert parsed.header.capabilities["tokens"][0] == "<|start|>"
    assert list(parsed.messages) == [Message.user("hi")]
