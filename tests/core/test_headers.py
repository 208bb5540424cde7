"""Message headers: every form of OCM 2.2 and Harmony read into a ``Header``, and every
malformed header refused with ``E-PARSE-HEADER`` (strict) or repaired and noted (lenient)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml import Author, HeaderError, ParseError, Role, load_encoding, parse_text, parse_tokens
from openchatml.core.events import Header, RepairKind
from openchatml.core.headers import UNKNOWN_TOOL, HeaderNotes, parse_header
from openchatml.core.tokens import MESSAGE_ID
from strategies import call_ids, channels, display_names, header_words, intents, recipients, tool_names

A = Author(Role.ASSISTANT)
F = "functions.f"
TOOL_F = Author(Role.TOOL, F)

FORMS: list[tuple[str, Role | None, Header]] = [
    ("assistant", None, Header(A)),
    ("system", None, Header(Author(Role.SYSTEM))),
    ("developer", None, Header(Author(Role.DEVELOPER))),
    ("user:alice", None, Header(Author(Role.USER, "alice"))),
    ("user name=alice", None, Header(Author(Role.USER, "alice"))),
    ("assistant<|channel|>analysis", None, Header(A, channel="analysis")),
    ("  assistant   <|channel|>final  ", None, Header(A, channel="final")),
    # OCM 2.2: attributes after the role, constrain marker after the channel
    (
        f"assistant to={F} call_id=c1<|channel|>commentary<|constrain|>json",
        None,
        Header(A, "commentary", F, "json", True, "c1"),
    ),
    # Harmony: the recipient after the channel, or before it; a space before <|constrain|>
    (
        f"assistant<|channel|>commentary to={F} <|constrain|>json",
        None,
        Header(A, "commentary", F, "json", True),
    ),
    (
        f"assistant to={F}<|channel|>commentary <|constrain|>json",
        None,
        Header(A, "commentary", F, "json", True),
    ),
    # a tool's reply: Harmony names the tool as the role, OCM uses role tool and name=
    (f"{F} to=assistant<|channel|>commentary", None, Header(TOOL_F, "commentary", "assistant")),
    (
        f"tool name={F} call_id=c1 to=assistant<|channel|>commentary",
        None,
        Header(TOOL_F, "commentary", "assistant", call_id="c1"),
    ),
    (f"{F} name={F}", None, Header(TOOL_F)),
    (
        "python to=assistant<|channel|>analysis",
        None,
        Header(Author(Role.TOOL, "python"), "analysis", "assistant"),
    ),
    ("browser", None, Header(Author(Role.TOOL, "browser"))),
    ("browser.search", None, Header(Author(Role.TOOL, "browser.search"))),
    # Harmony: an unknown word followed by attributes is a tool's name
    ("lookup to=assistant", None, Header(Author(Role.TOOL, "lookup"), recipient="assistant")),
    # a dotted first word is a tool's name even when it holds "=", as openai-harmony reads it
    (f"to={F}", None, Header(Author(Role.TOOL, f"to={F}"))),
    # content types: a bare word after the channel, an attribute, an empty constrain
    ("assistant<|channel|>commentary json", None, Header(A, "commentary", content_type="json")),
    ("assistant content_type=text<|channel|>final", None, Header(A, "final", content_type="text")),
    (
        "assistant<|channel|>commentary<|constrain|>",
        None,
        Header(A, "commentary", content_type="", constrained=True),
    ),
    (
        "assistant<|channel|>commentary<|constrain|>json content_type=json",
        None,
        Header(A, "commentary", content_type="json", constrained=True),
    ),
    # bare words after the role: a recipient; two of them: recipient then content type
    (f"assistant {F}<|channel|>commentary", None, Header(A, "commentary", F)),
    (f"assistant {F} json<|channel|>commentary", None, Header(A, "commentary", F, "json")),
    (f"assistant to={F} json", None, Header(A, recipient=F, content_type="json")),
    ("assistant intent=preamble<|channel|>commentary", None, Header(A, "commentary", intent="preamble")),
    (f"assistant to={F} to={F}", None, Header(A, recipient=F)),
    # the role already known (a completion after ``<|start|>assistant``)
    ("<|channel|>final", Role.ASSISTANT, Header(A, "final")),
    ("assistant<|channel|>final", Role.ASSISTANT, Header(A, "final")),
    (
        f" to={F}<|channel|>commentary <|constrain|>json",
        Role.ASSISTANT,
        Header(A, "commentary", F, "json", True),
    ),
    (f"name={F} to=assistant", Role.TOOL, Header(TOOL_F, recipient="assistant")),
    ("", Role.USER, Header(Author(Role.USER))),
]


@pytest.mark.parametrize(("text", "role", "want"), FORMS, ids=[f[0] or "(empty)" for f in FORMS])
def test_every_header_form(text: str, role: Role | None, want: Header) -> None:
    notes = HeaderNotes()
    assert parse_header(text, role) == want
    assert parse_header(text, role, strict=False, notes=notes) == want
    assert notes.items == []


BROKEN = RepairKind.BROKEN_HEADER

MALFORMED: list[tuple[str, Role | None, RepairKind, str, Header]] = [
    ("assistant foo=bar", None, RepairKind.UNKNOWN_ATTRIBUTE, "unknown header attribute 'foo'", Header(A)),
    ("assistant to=", None, BROKEN, "empty value for to=", Header(A)),
    (f"assistant to={F} to=functions.g", None, BROKEN, "to= given twice", Header(A, recipient=F)),
    ("to=assistant", None, BROKEN, "header has no role", Header(A, recipient="assistant")),
    ("", None, BROKEN, "header has no role", Header(A)),
    ("<|channel|>final", None, BROKEN, "header has no role", Header(A, "final")),
    ("bogus", None, BROKEN, "unknown role 'bogus'", Header(Author(Role.TOOL, "bogus"))),
    (
        "assistant<|channel|>analysis<|channel|>final",
        None,
        BROKEN,
        "more than one channel",
        Header(A, "final"),
    ),
    ("assistant<|channel|>", None, BROKEN, "channel marker without a channel name", Header(A)),
    (
        "assistant<|channel|>commentary<|constrain|>json<|constrain|>text",
        None,
        BROKEN,
        "more than one constrain marker",
        Header(A, "commentary", content_type="json", constrained=True),
    ),
    ("assistant a b c", None, BROKEN, "unexpected words in header: ['a']", Header(A, None, "b", "c")),
    (
        "assistant<|channel|>commentary<|constrain|>json content_type=text",
        None,
        BROKEN,
        "two different content types",
        Header(A, "commentary", content_type="json", constrained=True),
    ),
    (f"{F} name=functions.g", None, BROKEN, f"name=functions.g contradicts role {F}", Header(TOOL_F)),
    (
        "tool to=assistant",
        None,
        BROKEN,
        "a tool message needs a name (name=functions.x)",
        Header(Author(Role.TOOL, UNKNOWN_TOOL), recipient="assistant"),
    ),
    (
        "to=assistant",
        Role.TOOL,
        BROKEN,
        "a tool message needs a name",
        Header(Author(Role.TOOL, UNKNOWN_TOOL), None, "assistant"),
    ),
]


@pytest.mark.parametrize(
    ("text", "role", "kind", "detail", "repaired"), MALFORMED, ids=[m[3] for m in MALFORMED]
)
def test_malformed_header_is_refused_or_repaired(
    text: str, role: Role | None, kind: RepairKind, detail: str, repaired: Header
) -> None:
    with pytest.raises(HeaderError) as info:
        parse_header(text, role)
    error = info.value
    assert isinstance(error, ParseError)
    assert (error.code, error.fault, error.position) == ("E-PARSE-HEADER", "input", None)
    assert error.message.startswith(detail)
    notes = HeaderNotes()
    assert parse_header(text, role, strict=False, notes=notes) == repaired
    assert [k for k, _ in notes.items] == [kind]
    assert notes.items[0][1].startswith(detail)
    assert parse_header(text, role, strict=False) == repaired  # notes are optional


def test_every_problem_is_noted_in_order() -> None:
    notes = HeaderNotes()
    header = parse_header("tool foo=bar to= x y z", strict=False, notes=notes)
    assert notes.items == [
        (RepairKind.UNKNOWN_ATTRIBUTE, "unknown header attribute 'foo'"),
        (BROKEN, "empty value for to="),
        (BROKEN, "unexpected words in header: ['x']"),
        (BROKEN, "a tool message needs a name (name=functions.x)"),
    ]
    assert header == Header(Author(Role.TOOL, UNKNOWN_TOOL), recipient="y", content_type="z")


def test_header_errors_from_the_parser_carry_the_position_of_message() -> None:
    text = "<|start|>user<|message|>hi<|end|>\n<|start|>assistant foo=bar<|message|>x<|end|>"
    with pytest.raises(HeaderError) as info:
        parse_text(text)
    where = info.value.position
    assert where is not None and where.unit == "char"
    assert where.offset == text.rindex("<|message|>")
    assert (where.line, where.column) == (2, text.rindex("<|message|>") - text.index("\n"))

    enc = load_encoding()
    tokens = [
        200006,
        *enc.encode_ordinary("assistant foo=bar"),
        MESSAGE_ID,
        *enc.encode_ordinary("x"),
        200007,
    ]
    with pytest.raises(HeaderError) as info:
        parse_tokens(tokens)
    assert info.value.position is not None
    assert (info.value.position.unit, info.value.position.offset) == ("token", tokens.index(MESSAGE_ID))


# --- properties -------------------------------------------------------------------------

PIECES = (
    "assistant", "user", "user:bob", "tool", "developer", F, "python", "bogus", "to=functions.f",
    "to=", "call_id=1", "call_id=2", "name=functions.g", "intent=preamble", "content_type=json",
    "foo=bar", "<|channel|>", "<|constrain|>", "commentary", "json", " ", "\n",
)  # fmt: skip


@given(
    st.lists(st.sampled_from(PIECES), max_size=8).map("".join),
    st.sampled_from([None, Role.ASSISTANT, Role.TOOL]),
)
def test_strict_raises_exactly_the_first_problem_lenient_notes(text: str, role: Role | None) -> None:
    notes = HeaderNotes()
    lenient = parse_header(text, role, strict=False, notes=notes)
    if not notes.items:
        assert parse_header(text, role) == lenient
        return
    with pytest.raises(HeaderError) as info:
        parse_header(text, role)
    assert info.value.message == notes.items[0][1]


@given(
    st.sampled_from([Role.USER, Role.ASSISTANT, Role.SYSTEM, Role.DEVELOPER]),
    st.none() | display_names(),
    st.none() | recipients(),
    st.none() | channels(),
    st.none() | call_ids(),
    st.none() | intents(),
    st.none() | header_words(),
    st.booleans(),
)
def test_ocm_header_attributes_read_back(
    role: Role,
    name: str | None,
    recipient: str | None,
    channel: str | None,
    call_id: str | None,
    intent: str | None,
    content_type: str | None,
    constrained: bool,
) -> None:
    words = [role.value]
    words += [
        f"{key}={value}"
        for key, value in (("to", recipient), ("call_id", call_id), ("name", name), ("intent", intent))
        if value is not None
    ]
    if content_type is not None and not constrained:
        words.append(f"content_type={content_type}")
    text = " ".join(words)
    if channel is not None:
        text += f"<|channel|>{channel}"
    if content_type is not None and constrained:
        text += f"<|constrain|>{content_type}"
    want = Header(
        Author(role, name),
        channel,
        recipient,
        content_type,
        constrained and content_type is not None,
        call_id,
        intent,
    )
    assert parse_header(text) == want


@given(tool_names(), st.none() | channels(custom=False), st.none() | st.sampled_from(["json", "text"]))
def test_harmony_tool_reply_header_reads_back(
    tool: str, channel: str | None, content_type: str | None
) -> None:
    text = f"{tool} to=assistant"
    if channel is not None:
        text += f"<|channel|>{channel}"
        if content_type is not None:
            text += f" {content_type}"
    want = Header(
        Author(Role.TOOL, tool), channel, "assistant", content_type if channel is not None else None
    )
    assert parse_header(text) == want
