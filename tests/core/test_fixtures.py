"""The eight conformance fixtures of OCM 2.2 §17, each with its exact expected parse, and
every repair of the lenient parser with the typed error strict mode raises instead."""

from __future__ import annotations

import json

import pytest

from openchatml import (
    Author,
    BodyConstraintError,
    ChannelMissingError,
    ControlToken,
    HeaderError,
    Message,
    MessageDone,
    OCMError,
    ParseError,
    Position,
    RepairKind,
    Role,
    StreamParser,
    StreamTruncatedError,
    TextContent,
    ToolTimeoutError,
    TranscriptHeaderError,
    UnexpectedTokenError,
    load_encoding,
    parse_text,
    parse_tokens,
    parse_transcript,
)
from openchatml.core.errors import BY_CODE
from openchatml.core.tokens import CALL_ID, CHANNEL_ID, END_ID, MESSAGE_ID, RETURN_ID, START_ID
from openchatml.core.visibility import effective_channel, is_visible, user_view
from transcripts import (
    FIXTURE_1_LEGACY,
    FIXTURE_2_CHANNELED,
    FIXTURE_3_MULTI_TOOL,
    FIXTURE_4_TOOL_ERROR,
    FIXTURE_5_LITERAL,
    FIXTURE_6_BAD_JSON,
    FIXTURE_7_PREAMBLE,
    FIXTURE_8_LEGACY_TOOL_ROLE,
    SPEC_16_4,
)


def terminators(text: str) -> list[ControlToken | None]:
    parser = StreamParser()
    events = parser.feed_text(text) + parser.close()
    return [e.terminator for e in events if isinstance(e, MessageDone)]


def call(tool: str, args: str, call_id: str | None = None) -> Message:
    return Message.tool_call(tool, args, call_id=call_id)


def reply(tool: str, output: str, call_id: str | None = None) -> Message:
    return Message.tool_result(tool, output, call_id=call_id)


# --- §17 ----------------------------------------------------------------------------------------


def test_17_1_legacy_transcript_reads_as_final() -> None:
    parsed = parse_text(FIXTURE_1_LEGACY)
    assert parsed == [
        Message.from_role(Role.SYSTEM, "You are a helpful assistant."),
        Message.user("Hello!"),
        Message.assistant("Hi there. How can I help?", channel=None),
        Message.user("Tell me a joke."),
        Message.assistant("Why did the parser cross the road?", channel=None),
    ]
    assistant = [m for m in parsed if m.role is Role.ASSISTANT]
    assert all(m.channel is None for m in parsed)  # the core keeps what the text says
    assert [effective_channel(m) for m in assistant] == ["final", "final"]
    assert user_view(parsed) == parsed[1:]  # everything but the system message
    # a profile that requires channels repairs the same transcript to final
    repaired = parse_transcript(FIXTURE_1_LEGACY, strict=False, require_channels=True)
    assert [m.channel for m in repaired.conversation if m.role is Role.ASSISTANT] == ["final", "final"]
    assert {r.kind for r in repaired.repairs} == {RepairKind.CHANNEL_MISSING}
    with pytest.raises(ChannelMissingError):
        parse_text(FIXTURE_1_LEGACY, require_channels=True)


def test_17_2_fully_channeled_with_return() -> None:
    parsed = parse_transcript(FIXTURE_2_CHANNELED)
    assert parsed.repairs == ()
    header = parsed.conversation.header
    assert header is not None
    assert (header.version, header.model) == ("2.2", "gpt-oss-120b")
    assert dict(header.generation_settings) == {"temperature": 0.7, "reasoning_effort": "medium"}
    assert list(parsed.conversation) == [
        Message.from_role(Role.SYSTEM, "You are a helpful AI assistant."),
        Message.from_role(Role.DEVELOPER, "# Instructions\n\nAnswer briefly."),
        Message.user("Capital of France?"),
        Message.assistant("Easy: Paris.", channel="analysis"),
        Message.assistant("Paris."),
    ]
    assert terminators(FIXTURE_2_CHANNELED)[-1] is ControlToken.RETURN
    assert parse_text(FIXTURE_2_CHANNELED, require_channels=True) == list(parsed.conversation)


def test_17_3_two_concurrent_calls_with_echoed_call_ids() -> None:
    parsed = parse_text(FIXTURE_3_MULTI_TOOL)
    tool = "functions.get_weather"
    assert parsed == [
        Message.user("Weather in Tokyo and in Paris?"),
        Message.assistant("Two independent lookups; call both.", channel="analysis"),
        call(tool, '{"location":"Tokyo"}', "call_tokyo"),
        call(tool, '{"location":"Paris"}', "call_paris"),
        reply(tool, '{"ok":true,"content":{"temperature":14}}', "call_paris"),
        reply(tool, '{"ok":true,"content":{"temperature":20}}', "call_tokyo"),
        Message.assistant("Tokyo: 20 °C. Paris: 14 °C."),
    ]
    calls = {m.call_id: m for m in parsed if m.is_tool_call}
    replies = {m.call_id: m for m in parsed if m.role is Role.TOOL}
    assert set(calls) == set(replies) == {"call_tokyo", "call_paris"}
    assert all(replies[cid].name == calls[cid].recipient for cid in calls)
    assert terminators(FIXTURE_3_MULTI_TOOL) == [
        ControlToken.END,
        ControlToken.END,
        ControlToken.CALL,
        ControlToken.CALL,
        ControlToken.END,
        ControlToken.END,
        ControlToken.RETURN,
    ]


def test_17_4_tool_error_path() -> None:
    parsed = parse_text(FIXTURE_4_TOOL_ERROR)
    body = (
        '{"ok":false,"content":null,"error":{"code":"E-TOOL-TIMEOUT","message":"deadline_ms 500 exceeded"},'
        '"provenance":{"source":"slow_lookup","timestamp":"2025-08-08T12:00:00Z"}}'
    )
    assert parsed == [
        call("functions.slow_lookup", '{"query":"everything","deadline_ms":500}', "s1"),
        reply("functions.slow_lookup", body, "s1"),
        Message.assistant("The lookup timed out; please try again."),
    ]
    envelope = json.loads(parsed[1].text)
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == ToolTimeoutError.code == "E-TOOL-TIMEOUT"
    assert BY_CODE[envelope["error"]["code"]] is ToolTimeoutError
    assert json.loads(parsed[0].text)["deadline_ms"] == 500
    error = ToolTimeoutError("deadline_ms 500 exceeded")
    assert isinstance(error, OCMError)
    assert error.to_dict() == {
        "code": "E-TOOL-TIMEOUT",
        "message": "deadline_ms 500 exceeded",
        "fault": "input",
    }
    assert not is_visible(parsed[1])


def test_17_5_literal_block_containing_start() -> None:
    parsed = parse_text(FIXTURE_5_LITERAL)
    assert parsed == [
        Message.user(
            "Show the header syntax:<|start|>assistant<|channel|>final<|message|>hi<|end|> (verbatim)"
        ),
        Message.assistant("Here: <|start|> opens a message."),
    ]
    assert parse_text(SPEC_16_4) == [
        Message.user("Please print these markers exactly:\n\n<|start|><|channel|><|message|><|end|>\n")
    ]


def test_17_5_literal_text_on_the_token_path_is_plain_text() -> None:
    """Tokens need no literal blocks: text is never control there, whatever it spells."""
    enc = load_encoding()
    body = "<|literal|><|start|><|endliteral|>"
    tokens = [START_ID, *enc.encode_ordinary("user"), MESSAGE_ID, *enc.encode_ordinary(body), END_ID]
    assert parse_tokens(tokens) == [Message.user(body)]


def test_17_6_constrained_body_that_is_not_json() -> None:
    with pytest.raises(BodyConstraintError) as info:
        parse_text(FIXTURE_6_BAD_JSON)
    err = info.value
    assert err.code == "E-BODY-CONSTRAINT-VIOLATION"
    # the position is the terminator that closed the body: line 2, after the body
    line2 = FIXTURE_6_BAD_JSON.split("\n")[1]
    assert err.position == Position(
        FIXTURE_6_BAD_JSON.index("<|call|>"), 2, line2.index("<|call|>") + 1, "char"
    )

    lenient = parse_transcript(FIXTURE_6_BAD_JSON, strict=False)
    assert list(lenient.conversation) == [
        Message.user("Look up Tokyo."),
        call("functions.get_weather", "{location: Tokyo}", "b1"),
    ]
    assert [(r.kind, r.code) for r in lenient.repairs] == [
        (RepairKind.CONSTRAINT_VIOLATION, "E-BODY-CONSTRAINT-VIOLATION")
    ]
    assert lenient.repairs[0].position == err.position
    # without the check the body is plain data
    assert parse_text(FIXTURE_6_BAD_JSON, check_constraints=False) == list(lenient.conversation)


def test_17_6_constraint_violation_on_the_token_path() -> None:
    enc = load_encoding()
    head = [START_ID, *enc.encode_ordinary("assistant to=functions.f"), CHANNEL_ID]
    tokens = [*head, *enc.encode_ordinary("commentary"), 200003, *enc.encode_ordinary("json")]
    tokens += [MESSAGE_ID, *enc.encode_ordinary("not json"), CALL_ID]
    with pytest.raises(BodyConstraintError) as info:
        parse_tokens(tokens)
    assert info.value.position == Position(len(tokens) - 1, unit="token")


def test_17_7_preamble_on_commentary() -> None:
    parsed = parse_text(FIXTURE_7_PREAMBLE)
    plan = "**Plan:** 1) Search docs 2) Extract figures 3) Summarize."
    assert parsed == [
        Message.user("Summarise the docs."),
        Message.assistant(plan, channel="commentary", intent="preamble"),
        call("browser.search", '{"query":"docs"}', "b2"),
        Message.assistant("internal note, not a preamble", channel="commentary"),
    ]
    assert [is_visible(m) for m in parsed] == [True, True, False, False]


def test_17_8_legacy_functions_role_is_a_tool() -> None:
    parsed = parse_text(FIXTURE_8_LEGACY_TOOL_ROLE)
    assert parsed == [
        Message.tool_call("functions.x", '{"n":1}'),
        Message(
            Author(Role.TOOL, "functions.x"),
            (TextContent('{"ok":true,"content":2}'),),
            channel="commentary",
            recipient="assistant",
        ),
    ]
    assert parsed[1] == reply("functions.x", '{"ok":true,"content":2}')
    canonical = FIXTURE_8_LEGACY_TOOL_ROLE.replace(
        "functions.x to=assistant", "tool name=functions.x to=assistant"
    )
    assert parse_text(canonical) == parsed


# --- lenient repairs, and what strict mode raises instead -------------------------------------

#: name → (text, lenient messages, repair kinds, strict error, (line, column) of the error)
REPAIRS: dict[str, tuple[str, list[Message], list[RepairKind], type[ParseError], tuple[int, int]]] = {
    "missing start": (
        "<|start|>user<|message|>hi<|end|>\n<|channel|>final<|message|>x<|end|>",
        [Message.user("hi"), Message.assistant("x")],
        [RepairKind.MISSING_START],
        UnexpectedTokenError,
        (2, 1),
    ),
    "missing start, role left as text": (
        "<|start|>user<|message|>hi<|end|>user<|message|>again<|end|>",
        [Message.user("hi"), Message.user("again")],
        [RepairKind.STRAY_TEXT, RepairKind.MISSING_START],
        UnexpectedTokenError,
        (1, 34),
    ),
    "missing end": (
        "<|start|>user<|message|>a\n<|start|>assistant<|channel|>final<|message|>b<|end|>",
        [Message.user("a\n"), Message.assistant("b")],
        [RepairKind.MISSING_END],
        UnexpectedTokenError,
        (2, 1),
    ),
    "terminator inside a header": (
        "<|start|>user<|message|>a<|end|>\n<|start|>assistant<|channel|>final<|end|>"
        "<|start|>user<|message|>c<|end|>",
        [Message.user("a"), Message.assistant(""), Message.user("c")],
        [RepairKind.HEADER_WITHOUT_BODY],
        HeaderError,
        (2, 35),
    ),
    "stray text between messages": (
        "<|start|>user<|message|>a<|end|>garbage<|start|>user<|message|>b<|end|>",
        [Message.user("a"), Message.user("b")],
        [RepairKind.STRAY_TEXT],
        UnexpectedTokenError,
        (1, 33),
    ),
    "stray control token between messages": (
        "<|start|>user<|message|>a<|end|><|end|><|start|>user<|message|>b<|end|>",
        [Message.user("a"), Message.user("b")],
        [RepairKind.STRAY_CONTROL],
        UnexpectedTokenError,
        (1, 33),
    ),
    "control token inside a body": (
        "<|start|>user<|message|>a<|channel|>b<|end|>",
        [Message.user("a<|channel|>b")],
        [RepairKind.STRAY_CONTROL],
        UnexpectedTokenError,
        (1, 26),
    ),
    "truncated body": (
        "<|start|>user<|message|>a<|end|>\n<|start|>assistant<|channel|>final<|message|>par",
        [Message.user("a"), Message.assistant("par")],
        [RepairKind.TRUNCATED],
        StreamTruncatedError,
        (2, 49),
    ),
    "truncated header": (
        "<|start|>user<|message|>a<|end|>\n<|start|>assistant<|chan",
        [Message.user("a")],
        [RepairKind.TRUNCATED],
        StreamTruncatedError,
        (2, 25),
    ),
    "truncated literal block": (
        "<|start|>user<|message|>a<|literal|>xx<|end|>",
        [Message.user("axx<|end|>")],
        [RepairKind.TRUNCATED],
        StreamTruncatedError,
        (1, 46),
    ),
    "unknown header attribute": (
        "<|start|>user<|message|>a<|end|>\n<|start|>assistant foo=bar<|channel|>final<|message|>x<|end|>",
        [Message.user("a"), Message.assistant("x")],
        [RepairKind.UNKNOWN_ATTRIBUTE],
        HeaderError,
        (2, 43),
    ),
    "start inside a header": (
        "<|start|>user<|start|>user<|message|>b<|end|>",
        [Message.user("b")],
        [RepairKind.BROKEN_HEADER],
        HeaderError,
        (1, 14),
    ),
    "two channels": (
        "<|start|>assistant<|channel|>final<|channel|>analysis<|message|>b<|end|>",
        [Message.assistant("b", channel="analysis")],
        [RepairKind.BROKEN_HEADER],
        HeaderError,
        (1, 54),
    ),
}


@pytest.mark.parametrize("name", sorted(REPAIRS))
def test_lenient_repair(name: str) -> None:
    text, expected, kinds, _, _ = REPAIRS[name]
    parsed = parse_transcript(text, strict=False)
    assert list(parsed.conversation) == expected
    assert [r.kind for r in parsed.repairs] == kinds
    assert all(r.position is not None and r.position.unit == "char" for r in parsed.repairs)


@pytest.mark.parametrize("name", sorted(REPAIRS))
def test_strict_raises_the_typed_error_at_its_position(name: str) -> None:
    text, _, _, error, (line, column) = REPAIRS[name]
    with pytest.raises(error) as info:
        parse_text(text)
    err = info.value
    assert type(err) is error
    assert err.fault == "input"
    assert err.position is not None
    assert (err.position.line, err.position.column) == (line, column)
    lines = text.split("\n")
    assert err.position.offset == sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
    # lenient mode reports the first repair at the same place, with the same code
    first = parse_transcript(text, strict=False).repairs[0]
    assert (first.code, first.position) == (err.code, err.position)


@pytest.mark.parametrize("name", sorted(REPAIRS))
def test_strict_error_is_the_same_when_streamed(name: str) -> None:
    text, _, _, error, _ = REPAIRS[name]
    with pytest.raises(error) as whole:
        parse_text(text)
    parser = StreamParser()
    with pytest.raises(error) as streamed:
        for ch in text:
            parser.feed_text(ch)
        parser.close()
    assert streamed.value.position == whole.value.position


def test_stray_text_position_does_not_depend_on_chunks() -> None:
    text = "<|start|>user<|message|>a<|end|>\n  garbage\n<|start|>user<|message|>b<|end|>"
    with pytest.raises(UnexpectedTokenError) as whole:
        parse_text(text)
    cut = text.index("garbage")
    parser = StreamParser()
    with pytest.raises(UnexpectedTokenError) as split:
        parser.feed_text(text[:cut])
        parser.feed_text(text[cut:])
        parser.close()
    assert whole.value.position == split.value.position


def test_header_words_after_terminator_become_the_body() -> None:
    parsed = parse_transcript("<|start|>assistant<|channel|>final hello there<|return|>", strict=False)
    assert list(parsed.conversation) == [Message.assistant("hello there")]
    assert [r.kind for r in parsed.repairs] == [RepairKind.HEADER_WITHOUT_BODY]


def test_require_channels() -> None:
    text = "<|start|>assistant<|message|>b<|end|>"
    assert parse_text(text) == [Message.assistant("b", channel=None)]
    with pytest.raises(ChannelMissingError) as info:
        parse_text(text, require_channels=True)
    assert info.value.position == Position(
        text.index("<|message|>"), 1, text.index("<|message|>") + 1, "char"
    )
    assert parse_text(text, strict=False, require_channels=True) == [Message.assistant("b")]
    # only assistant messages need one
    assert parse_text("<|start|>user<|message|>u<|end|>", require_channels=True) == [Message.user("u")]


def test_no_role_and_tool_without_name() -> None:
    with pytest.raises(HeaderError):
        parse_text("<|start|>to=x<|message|>b<|end|>")
    with pytest.raises(HeaderError):
        parse_text("<|start|>tool<|message|>b<|end|>")
    lenient = parse_text("<|start|>to=x<|message|>b<|end|>", strict=False)
    assert [(m.role, m.recipient, m.text) for m in lenient] == [(Role.ASSISTANT, "x", "b")]


# --- token ids: positions are token indices ---------------------------------------------------------


def _ids(text: str) -> list[int]:
    return load_encoding().encode_ordinary(text)


def test_token_stray_text_and_missing_start() -> None:
    tokens = [START_ID, *_ids("user"), MESSAGE_ID, *_ids("a"), END_ID]
    tokens += [*_ids("junk"), CHANNEL_ID, *_ids("final"), MESSAGE_ID, *_ids("x"), END_ID]
    junk_at = tokens.index(CHANNEL_ID) - len(_ids("junk"))
    with pytest.raises(UnexpectedTokenError) as info:
        parse_tokens(tokens)
    assert info.value.position == Position(junk_at, unit="token")
    parser = StreamParser(strict=False)
    parser.feed_tokens(tokens)
    parser.close()
    assert parser.messages == [Message.user("a"), Message.assistant("x")]
    # as in strict mode, the first repair is the stray text, where it began
    assert [r.kind for r in parser.repairs] == [RepairKind.STRAY_TEXT, RepairKind.MISSING_START]
    assert parser.repairs[0].position == Position(junk_at, unit="token")
    assert parser.repairs[1].position == Position(tokens.index(CHANNEL_ID), unit="token")


def test_token_missing_end() -> None:
    tokens = [START_ID, *_ids("user"), MESSAGE_ID, *_ids("a"), START_ID, *_ids("user"), MESSAGE_ID, END_ID]
    second = 3 + len(_ids("a"))
    with pytest.raises(UnexpectedTokenError) as info:
        parse_tokens(tokens)
    assert info.value.position == Position(second, unit="token")
    assert parse_tokens(tokens, strict=False) == [Message.user("a"), Message.user("")]


def test_token_terminator_inside_header() -> None:
    tokens = [START_ID, *_ids("assistant"), CHANNEL_ID, *_ids("final"), RETURN_ID]
    with pytest.raises(HeaderError) as info:
        parse_tokens(tokens)
    assert info.value.position == Position(len(tokens) - 1, unit="token")
    assert parse_tokens(tokens, strict=False) == [Message.assistant("")]


def test_token_truncated() -> None:
    tokens = [START_ID, *_ids("assistant"), CHANNEL_ID, *_ids("final"), MESSAGE_ID, *_ids("partial")]
    with pytest.raises(StreamTruncatedError) as info:
        parse_tokens(tokens)
    assert info.value.position == Position(len(tokens) - 1, unit="token")
    assert parse_tokens(tokens, strict=False) == [Message.assistant("partial")]
    assert parse_tokens(tokens, allow_truncated=True) == [Message.assistant("partial")]


@pytest.mark.parametrize("bad", [-1, 201089, 10**12])
def test_token_out_of_range(bad: int) -> None:
    tokens = [START_ID, *_ids("user"), MESSAGE_ID, *_ids("a"), bad, *_ids("b"), END_ID]
    with pytest.raises(UnexpectedTokenError) as info:
        parse_tokens(tokens)
    assert info.value.position == Position(tokens.index(bad), unit="token")
    assert parse_tokens(tokens, strict=False) == [Message.user("a\ufffdb")]


def test_token_unknown_attribute_and_reserved_token() -> None:
    tokens = [START_ID, *_ids("user foo=1"), MESSAGE_ID, *_ids("a"), END_ID]
    with pytest.raises(HeaderError):
        parse_tokens(tokens)
    parser = StreamParser(strict=False)
    parser.feed_tokens(tokens)
    parser.close()
    assert parser.messages == [Message.user("a")]
    assert [r.kind for r in parser.repairs] == [RepairKind.UNKNOWN_ATTRIBUTE]
    reserved = [START_ID, *_ids("user"), MESSAGE_ID, *_ids("a"), 200000, END_ID]
    with pytest.raises(UnexpectedTokenError):
        parse_tokens(reserved)
    assert parse_tokens(reserved, strict=False) == [Message.user("a<|reserved_200000|>")]


# --- invalid UTF-8 across token boundaries ------------------------------------------------------


def _split_char() -> tuple[str, list[int]]:
    """A character whose UTF-8 bytes the tokenizer spreads over several ids."""
    for ch in ("𓀀", "🫠", "𝔘", "ꙮ"):
        ids = _ids(ch)
        enc = load_encoding()
        if len(ids) > 1 and all(enc.token_str[t] is None for t in ids):
            return ch, ids
    raise AssertionError("no multi-token character found")


def test_utf8_split_across_tokens_is_joined() -> None:
    ch, ids = _split_char()
    tokens = [START_ID, *_ids("user"), MESSAGE_ID, *ids, *_ids(" ok"), *ids, END_ID]
    parser = StreamParser(strict=False)
    for t in tokens:
        parser.process(t)
    parser.close()
    assert parser.messages == [Message.user(f"{ch} ok{ch}")]
    assert parser.repairs == []
    assert parse_tokens(tokens) == parser.messages


def test_utf8_cut_by_a_terminator_is_repaired() -> None:
    _, ids = _split_char()
    tokens = [START_ID, *_ids("user"), MESSAGE_ID, *_ids("a"), ids[0], END_ID]
    tokens += [START_ID, *_ids("user"), MESSAGE_ID, *ids[1:], *_ids("b"), END_ID]
    parser = StreamParser(strict=False)
    parser.feed_tokens(tokens)
    parser.close()
    assert [m.text for m in parser.messages] == ["a\ufffd", "\ufffd" * (len(ids) - 1) + "b"]
    assert parser.repairs and {r.kind for r in parser.repairs} == {RepairKind.INVALID_UTF8}
    assert all(r.position is not None and r.position.unit == "token" for r in parser.repairs)
    assert parser.repairs[0].position == Position(tokens.index(END_ID), unit="token")


def test_utf8_cut_by_a_terminator_is_an_error_when_strict() -> None:
    _, ids = _split_char()
    tokens = [START_ID, *_ids("user"), MESSAGE_ID, *_ids("a"), ids[0], END_ID]
    with pytest.raises(ParseError):
        parse_tokens(tokens)


def test_header_that_is_not_utf8() -> None:
    _, ids = _split_char()
    tokens = [START_ID, *_ids("user"), ids[0], MESSAGE_ID, *_ids("a"), END_ID]
    with pytest.raises(HeaderError) as info:
        parse_tokens(tokens)
    assert info.value.position == Position(tokens.index(MESSAGE_ID), unit="token")


def test_header_text_never_becomes_control_on_the_token_path() -> None:
    tokens = [START_ID, *_ids("user<|channel|>final"), MESSAGE_ID, *_ids("hi"), END_ID]
    parsed = parse_tokens(tokens, strict=False)
    assert all(m.channel is None for m in parsed)


# --- §6 attribute positions --------------------------------------------------------------------

GRAMMAR = {
    "to= and call_id= after the channel (HIP-1)": (
        "<|start|>assistant<|channel|>commentary to=functions.x call_id=c9"
        "<|constrain|>json<|message|>{}<|call|>",
        Message.tool_call("functions.x", "{}", call_id="c9"),
    ),
    "intent= after the channel": (
        "<|start|>assistant<|channel|>commentary intent=preamble<|message|>x<|end|>",
        Message.assistant("x", channel="commentary", intent="preamble"),
    ),
    "content_type= after the channel": (
        "<|start|>assistant<|channel|>final content_type=markdown<|message|>x<|end|>",
        Message.assistant("x", content_type="markdown"),
    ),
    "whitespace around the tags": (
        "<|start|>assistant <|channel|>final\t<|constrain|>json<|message|>{}<|end|>",
        Message.assistant("{}", content_type="json", constrained=True),
    ),
    "Harmony: bare content type before <|constrain|>": (
        "<|start|>assistant to=functions.x<|channel|>commentary <|constrain|>json<|message|>{}<|call|>",
        Message.tool_call("functions.x", "{}"),
    ),
    "every start-header attribute, in §6 order": (
        "<|start|>assistant to=functions.x call_id=wx1 name=planner intent=status content_type=json"
        "<|channel|>commentary<|message|>{}<|call|>",
        Message.from_role(
            Role.ASSISTANT,
            "{}",
            name="planner",
            channel="commentary",
            recipient="functions.x",
            content_type="json",
            call_id="wx1",
            intent="status",
        ),
    ),
    "legacy tool role with call_id": (
        "<|start|>functions.x call_id=1 to=assistant<|channel|>commentary<|message|>{}<|end|>",
        reply("functions.x", "{}", "1"),
    ),
    "user with a name": ("<|start|>user name=alice<|message|>x<|end|>", Message.user("x", name="alice")),
    "Harmony user:name": ("<|start|>user:alice<|message|>x<|end|>", Message.user("x", name="alice")),
}


@pytest.mark.parametrize("name", sorted(GRAMMAR))
def test_header_grammar(name: str) -> None:
    text, expected = GRAMMAR[name]
    assert parse_text(text) == [expected]
    enc = load_encoding()
    tokens = enc.encode(text, allowed_special="all")
    assert parse_tokens(tokens) == [expected]


def test_document_header_error_position_is_the_same_in_lenient_mode() -> None:
    text = "model: x\n<|start|>user<|message|>b<|end|>"
    with pytest.raises(TranscriptHeaderError) as info:
        parse_text(text)
    lenient = parse_transcript(text, strict=False)
    assert list(lenient.conversation) == [Message.user("b")]
    assert lenient.repairs[0].code == info.value.code
    assert lenient.repairs[0].position == info.value.position
