"""The MUSTs of OpenChatML 2.2 held by the OCM profile (§2, §5, §6, §8.2, §8.3, §9): each
is a typed error with its code and position when strict, and a reported repair when
lenient; Harmony text, and parsing without a profile, are left as they were."""

from __future__ import annotations

import pytest

from openchatml import (
    CallSchemaError,
    Conversation,
    HeaderError,
    Message,
    OCMError,
    Position,
    RepairKind,
    Role,
    StreamParser,
    StreamTruncatedError,
    TranscriptHeaderError,
    load_encoding,
    parse_text,
)
from openchatml.core.conformance import (
    ConformanceChecker,
    channels_declared_in,
    conversation_violations,
    header_of,
)
from openchatml.core.events import Header
from openchatml.core.messages import Author
from openchatml.core.render import Profile
from transcripts import FIXTURES, SPEC_EXAMPLES

OCM = Profile.OCM
DOC = "version: 2.2\n"


def strict_error(text: str, role: Role | None = None) -> OCMError:
    parser = StreamParser(role, profile=OCM)
    with pytest.raises(OCMError) as info:
        parser.feed_text(text)
        parser.close()
    return info.value


def lenient(text: str, role: Role | None = None) -> StreamParser:
    parser = StreamParser(role, strict=False, profile=OCM)
    parser.feed_text(text)
    parser.close()
    return parser


def at(line: int, column: int, text: str) -> Position:
    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[: line - 1]) + column - 1
    return Position(offset, line, column)


# Each case: the text, the error strict mode raises, the 1-based line and column it names
# (the header's <|message|>, or the end of input), the repair kind, and what the repaired
# message at ``index`` holds.
CASES: dict[str, tuple[str, type[OCMError], tuple[int, int], RepairKind, int, dict[str, object]]] = {
    "8.2 call without call_id": (
        DOC + "<|start|>assistant to=functions.f<|channel|>commentary<|constrain|>json<|message|>{}<|call|>",
        HeaderError,
        (2, 72),
        RepairKind.CALL_ID,
        0,
        {"call_id": "call-1"},
    ),
    "8.2 two calls, one call_id": (
        DOC
        + "<|start|>assistant to=functions.f call_id=a<|channel|>commentary<|message|>{}<|call|>\n"
        + "<|start|>assistant to=functions.g call_id=a<|channel|>commentary<|message|>{}<|call|>",
        HeaderError,
        (3, 65),
        RepairKind.CALL_ID,
        1,
        {"call_id": "a-2"},
    ),
    "8.2 reply to no call": (
        DOC
        + "<|start|>assistant to=functions.f call_id=a<|channel|>commentary<|message|>{}<|call|>\n"
        + "<|start|>tool name=functions.f call_id=zz to=assistant<|channel|>commentary<|message|>1<|end|>",
        CallSchemaError,
        (3, 76),
        RepairKind.CALL_ID,
        1,
        {"call_id": "zz"},
    ),
    "8.2 reply without call_id": (
        DOC
        + "<|start|>assistant to=functions.f call_id=a<|channel|>commentary<|message|>{}<|call|>\n"
        + "<|start|>tool name=functions.f to=assistant<|channel|>commentary<|message|>1<|end|>",
        HeaderError,
        (3, 65),
        RepairKind.CALL_ID,
        1,
        {"call_id": "a"},
    ),
    "8.3 function on analysis": (
        DOC + "<|start|>assistant to=functions.f call_id=a<|channel|>analysis<|message|>{}<|call|>",
        HeaderError,
        (2, 63),
        RepairKind.MISROUTED_CALL,
        0,
        {"channel": "commentary"},
    ),
    "8.3 function on final": (
        DOC + "<|start|>assistant to=functions.f call_id=a<|channel|>final<|message|>{}<|call|>",
        HeaderError,
        (2, 60),
        RepairKind.MISROUTED_CALL,
        0,
        {"channel": "commentary"},
    ),
    "8.3 built-in on final": (
        DOC + "<|start|>assistant to=python call_id=a<|channel|>final<|message|>1+1<|call|>",
        HeaderError,
        (2, 55),
        RepairKind.MISROUTED_CALL,
        0,
        {"channel": "commentary"},
    ),
    "5 bogus channel": (
        DOC + "<|start|>assistant<|channel|>bogus<|message|>x<|end|>",
        HeaderError,
        (2, 35),
        RepairKind.UNKNOWN_CHANNEL,
        0,
        {"channel": "analysis"},
    ),
    "5 dashed channel": (
        DOC + "<|start|>assistant<|channel|>––commentary<|message|>x<|end|>",
        HeaderError,
        (2, 42),
        RepairKind.UNKNOWN_CHANNEL,
        0,
        {"channel": "commentary"},
    ),
    "6 undefined intent": (
        DOC + "<|start|>assistant intent=shout<|channel|>commentary<|message|>x<|end|>",
        HeaderError,
        (2, 53),
        RepairKind.UNKNOWN_INTENT,
        0,
        {"intent": None, "channel": "commentary"},
    ),
    "2 no document header": (
        "<|start|>user<|message|>x<|end|>",
        TranscriptHeaderError,
        (1, 1),
        RepairKind.MISSING_DOCUMENT_HEADER,
        0,
        {"channel": None},
    ),
    "2 empty transcript": (
        "",
        TranscriptHeaderError,
        (1, 1),
        RepairKind.MISSING_DOCUMENT_HEADER,
        -1,
        {},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_strict_raises_with_code_and_position(name: str) -> None:
    text, error, (line, column), _, _, _ = CASES[name]
    raised = strict_error(text)
    assert type(raised) is error
    assert raised.code == error.code
    assert raised.position == at(line, column, text)


@pytest.mark.parametrize("name", list(CASES))
def test_lenient_repairs_and_reports(name: str) -> None:
    text, error, (line, column), kind, index, fields = CASES[name]
    parser = lenient(text)
    assert [(r.kind, r.code, r.position) for r in parser.repairs] == [
        (kind, error.code, at(line, column, text))
    ]
    for field, value in fields.items():
        assert getattr(parser.messages[index], field) == value


@pytest.mark.parametrize("name", list(CASES))
def test_the_same_in_any_chunking(name: str) -> None:
    text = CASES[name][0]
    whole = lenient(text)
    parser = StreamParser(strict=False, profile=OCM)
    for char in list(text) or [""]:
        parser.feed_text(char)
    parser.close()
    assert parser.repairs == whole.repairs
    assert parser.messages == whole.messages


def test_without_a_profile_nothing_changes() -> None:
    for name, (text, *_rest) in CASES.items():
        parse_text(text)  # strict, and no error
        parser = StreamParser(strict=False)
        parser.feed_text(text)
        parser.close()
        assert parser.repairs == [], name


# --- §9: a completion ends in a stop token -----------------------------------------------


def test_a_completion_that_ends_after_end_is_incomplete() -> None:
    text = "<|channel|>final<|message|>Hi<|end|>"
    raised = strict_error(text, Role.ASSISTANT)
    assert isinstance(raised, StreamTruncatedError) and raised.code == "E-STREAM-TRUNCATED"
    assert raised.position == Position(len(text), 1, len(text) + 1)
    parser = lenient(text, Role.ASSISTANT)
    assert [(r.kind, r.code) for r in parser.repairs] == [(RepairKind.MISSING_STOP, "E-STREAM-TRUNCATED")]
    assert parser.messages[0].text == "Hi"


@pytest.mark.parametrize(
    "text",
    [
        "<|channel|>final<|message|>Hi<|return|>",
        "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hi<|return|>",
        "<|channel|>commentary to=functions.f call_id=c1<|constrain|>json<|message|>{}<|call|>",
    ],
)
def test_a_completion_that_ends_in_a_stop_token_is_complete_and_needs_no_document_header(text: str) -> None:
    assert lenient(text, Role.ASSISTANT).repairs == []
    assert parse_text(text, Role.ASSISTANT, profile=OCM)


def test_an_empty_completion_has_no_stop_token() -> None:
    raised = strict_error("", Role.ASSISTANT)
    assert isinstance(raised, StreamTruncatedError)


def test_a_token_completion_is_held_to_the_same_rule() -> None:
    enc = load_encoding()
    ids = enc.encode("<|channel|>final<|message|>Hi<|end|>", allowed_special="all")
    parser = StreamParser(Role.ASSISTANT, profile=OCM)
    parser.feed_tokens(ids)
    with pytest.raises(StreamTruncatedError) as info:
        parser.close()
    assert info.value.position == Position(len(ids) - 1, unit="token")
    good = StreamParser(Role.ASSISTANT, profile=OCM)
    good.feed_tokens(enc.encode("<|channel|>final<|message|>Hi<|return|>", allowed_special="all"))
    good.close()


def test_a_stream_cut_inside_a_body_is_truncated() -> None:
    raised = strict_error("<|channel|>final<|message|>Hi", Role.ASSISTANT)
    assert isinstance(raised, StreamTruncatedError)


# --- §2: the document header ---------------------------------------------------------------


def test_token_input_needs_no_document_header() -> None:
    enc = load_encoding()
    parser = StreamParser(profile=OCM)
    parser.feed_tokens(enc.encode("<|start|>user<|message|>x<|end|>", allowed_special="all"))
    parser.close()
    assert parser.repairs == []


def test_harmony_text_needs_no_document_header() -> None:
    parser = StreamParser(profile=Profile.HARMONY)
    parser.feed_text("<|start|>user<|message|>x<|end|>")
    parser.close()
    assert parser.transcript_header is None


def test_a_document_header_without_version_is_still_refused() -> None:
    raised = strict_error("model: x\n<|start|>user<|message|>x<|end|>")
    assert isinstance(raised, TranscriptHeaderError)


# --- §5: the valid channels a transcript declares ---------------------------------------------


def test_the_document_header_declares_the_valid_channels() -> None:
    doc = "version: 2.2\ncapabilities:\n  channels: [analysis, final, notes]\n"
    ok = doc + "<|start|>assistant<|channel|>notes<|message|>x<|end|>"
    assert lenient(ok).repairs == []
    bad = doc + "<|start|>assistant<|channel|>commentary<|message|>x<|end|>"
    assert [r.kind for r in lenient(bad).repairs] == [RepairKind.UNKNOWN_CHANNEL]


def test_a_system_message_declares_the_valid_channels() -> None:
    system = "<|start|>system<|message|>Hi.\n# Valid channels: analysis, final. Channel required.<|end|>\n"
    text = DOC + system + "<|start|>assistant<|channel|>commentary<|message|>x<|end|>"
    raised = strict_error(text)
    assert isinstance(raised, HeaderError) and "analysis, final" in raised.message


def test_channels_declared_in_a_system_prompt() -> None:
    line = "# Valid channels: analysis, commentary, final. Channel must be included for every message."
    assert channels_declared_in("You are ChatGPT.\n" + line) == ("analysis", "commentary", "final")
    assert channels_declared_in("no such line") is None


# --- §8.2: calls and replies ------------------------------------------------------------------


def test_replies_answer_calls_in_any_order() -> None:
    assert lenient(DOC + FIXTURES["17.3-multi-tool"]).repairs == []


def test_a_reply_without_call_id_answers_the_oldest_open_call_to_its_tool() -> None:
    text = (
        DOC
        + "<|start|>assistant to=functions.f call_id=a<|channel|>commentary<|message|>{}<|call|>"
        + "<|start|>assistant to=functions.g call_id=b<|channel|>commentary<|message|>{}<|call|>"
        + "<|start|>tool name=functions.g to=assistant<|channel|>commentary<|message|>1<|end|>"
        + "<|start|>tool name=functions.f to=assistant<|channel|>commentary<|message|>2<|end|>"
    )
    parser = lenient(text)
    assert [m.call_id for m in parser.messages] == ["a", "b", "b", "a"]
    assert [r.kind for r in parser.repairs] == [RepairKind.CALL_ID, RepairKind.CALL_ID]


def test_a_repeated_call_id_is_renamed_and_its_second_reply_follows() -> None:
    text = (
        DOC
        + "<|start|>assistant to=functions.f call_id=a<|channel|>commentary<|message|>{}<|call|>"
        + "<|start|>assistant to=functions.f call_id=a<|channel|>commentary<|message|>{}<|call|>"
        + "<|start|>tool name=functions.f call_id=a to=assistant<|channel|>commentary<|message|>1<|end|>"
        + "<|start|>tool name=functions.f call_id=a to=assistant<|channel|>commentary<|message|>2<|end|>"
    )
    parser = lenient(text)
    assert [m.call_id for m in parser.messages] == ["a", "a-2", "a", "a-2"]
    assert len(parser.repairs) == 2


def test_built_ins_may_be_called_on_analysis_or_commentary() -> None:
    for channel in ("analysis", "commentary"):
        for tool in ("python", "browser.search"):
            text = DOC + f"<|start|>assistant to={tool} call_id=x<|channel|>{channel}<|message|>1<|call|>"
            assert lenient(text).repairs == [], (tool, channel)


# --- what must keep working ----------------------------------------------------------------


@pytest.mark.parametrize("name", [*SPEC_EXAMPLES, *(n for n in FIXTURES if n not in ("17.6-bad-json",))])
def test_the_specification_examples_hold_to_the_profile(name: str) -> None:
    text = {**SPEC_EXAMPLES, **FIXTURES}[name]
    repairs = lenient(text if text.startswith("version:") else DOC + text).repairs
    if name == "17.8-legacy-tool-role":  # a Harmony-style call and reply: no call_id
        assert {r.kind for r in repairs} == {RepairKind.CALL_ID}
    else:
        assert repairs == []


def test_harmony_calls_without_call_id_are_valid_harmony() -> None:
    text = FIXTURES["17.8-legacy-tool-role"]
    for profile in (None, Profile.HARMONY):
        parser = StreamParser(profile=profile)
        parser.feed_text(text)
        parser.close()
        assert [m.call_id for m in parser.messages] == [None, None]


def test_a_json_conversation_is_held_to_the_same_rules() -> None:
    conversation = Conversation(
        (
            Message.tool_call("functions.f", "{}"),
            Message(Author(Role.ASSISTANT), channel="bogus", intent="loud").with_(recipient=None),
        )
    )
    found = [(index, v.error.code, v.kind) for index, v in conversation_violations(conversation)]
    assert found == [
        (0, "E-PARSE-HEADER", RepairKind.CALL_ID),
        (1, "E-PARSE-HEADER", RepairKind.UNKNOWN_CHANNEL),
        (1, "E-PARSE-HEADER", RepairKind.UNKNOWN_INTENT),
    ]


def test_the_checker_returns_the_header_as_repaired() -> None:
    checker = ConformanceChecker()
    header = Header(Author(Role.ASSISTANT), "final", "functions.f")
    repaired, found = checker.check(header)
    assert repaired == Header(Author(Role.ASSISTANT), "commentary", "functions.f", call_id="call-1")
    assert [v.kind for v in found] == [RepairKind.MISROUTED_CALL, RepairKind.CALL_ID]
    assert header_of(Message.tool_call("functions.f", "{}", call_id="q")).call_id == "q"
