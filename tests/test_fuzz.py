"""Fuzzing the parser: arbitrary text and arbitrary token ids never make it raise anything
but an :class:`~openchatml.core.errors.OCMError`; lenient mode never raises and always ends in a
consistent state; damage to a known-good transcript costs no intact message before it, and
the parser finds its feet again after it.
"""

from __future__ import annotations

import gc
import re
import tracemalloc
from collections.abc import Callable, Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml import (
    Author,
    ContentDelta,
    CoTPolicy,
    DocumentHeader,
    Event,
    Header,
    HeaderError,
    Message,
    MessageDone,
    MessageStarted,
    OCMError,
    ParseError,
    Profile,
    RenderConfig,
    Renderer,
    RenderError,
    Repaired,
    RepairKind,
    Role,
    StreamParser,
    StreamTruncatedError,
    TextContent,
    TranscriptHeaderError,
    UnexpectedTokenError,
    load_encoding,
    parse_text,
    parse_tokens,
)
from openchatml.core.parse import MAX_HEADER, MAX_PRELUDE
from openchatml.core.tokens import (
    CALL_ID,
    CHANNEL_ID,
    CONSTRAIN_ID,
    END_ID,
    LAST_SPECIAL_ID,
    MESSAGE_ID,
    RETURN_ID,
    START_ID,
    ControlToken,
    sanitize_header_value,
)
from strategies import CONTROL_SPELLINGS, TRICKY_FRAGMENTS
from transcripts import SMALL_TEXTS_LIMIT, known_good_texts, rendered_tokens

ENC = load_encoding()
TEXTS = {k: v for k, v in known_good_texts().items() if len(v) <= SMALL_TEXTS_LIMIT}
TOKENS = {k: v for k, v in rendered_tokens().items() if len(v) <= 400}
CONTROL_IDS = (START_ID, CHANNEL_ID, MESSAGE_ID, CONSTRAIN_ID, END_ID, RETURN_ID, CALL_ID)

# --- inputs ------------------------------------------------------------------------------------

WORDS = (
    "user",
    "assistant",
    "system",
    "developer",
    "tool",
    "functions.get_weather",
    "browser.search",
    "python",
    "user:alice",
    " to=functions.f",
    " to=",
    " call_id=c1",
    " name=functions.f",
    " intent=preamble",
    " content_type=json",
    " foo=bar",
    "=",
    "analysis",
    "commentary",
    "final",
    " json",
    "{}",
    '{"a":1}',
    "version: 2.2\n",
    "model: m\n",
    "- [",
    "---\n",
    "```\n",
)
fragments = st.one_of(
    st.sampled_from(CONTROL_SPELLINGS),
    st.sampled_from(TRICKY_FRAGMENTS),
    st.sampled_from(WORDS),
    st.text(max_size=6),
)
texts = st.lists(fragments, max_size=40).map("".join)
"""Text that is mostly the parser's own vocabulary, in any order."""

token_ids = st.one_of(
    st.sampled_from(CONTROL_IDS),
    st.sampled_from([ENC.encode_ordinary(w)[0] for w in WORDS if w.strip()]),
    st.integers(0, LAST_SPECIAL_ID),
    st.integers(199990, LAST_SPECIAL_ID + 5),
    st.sampled_from([172, 241, 222, 4103, 104, 254, 10, 220]),  # pieces of multi-byte characters, spaces
    st.integers(-(2**40), -1),
    st.integers(LAST_SPECIAL_ID + 1, 2**70),
)
token_lists = st.lists(token_ids, max_size=60)
"""Token ids: control tokens, header words, any id, reserved ids, bytes of split
characters, and ids that are negative or out of range."""

options = st.fixed_dictionaries(
    {
        "role": st.sampled_from([None, None, Role.ASSISTANT, Role.USER]),
        "check_constraints": st.booleans(),
        "require_channels": st.booleans(),
        "allow_truncated": st.booleans(),
    }
)


def chunked(text: str, cuts: Iterable[int]) -> list[str]:
    marks = sorted(set(cuts))
    return [text[a:b] for a, b in zip([0, *marks], [*marks, len(text)], strict=True)]


# --- consistency --------------------------------------------------------------------------------


def check_consistent(parser: StreamParser, events: Sequence[Event]) -> None:
    """What a closed parser reports agrees with itself."""
    assert parser.events() == []
    assert parser.close() == []
    assert parser.state in ("ExpectStart", "Header")
    assert parser.current_header is None
    assert parser.current_content == ""
    done = [e for e in events if isinstance(e, MessageDone)]
    assert [e.message for e in done] == parser.messages
    assert [e for e in events if isinstance(e, Repaired)] == parser.repairs
    assert sum(isinstance(e, DocumentHeader) for e in events) <= 1
    expect = 0
    header = None
    body = ""
    words_as_body = False
    last_repair: RepairKind | None = None
    for event in events:
        if isinstance(event, Repaired):
            last_repair = event.kind
        elif isinstance(event, MessageStarted):
            assert header is None and event.index == expect
            header, body = event.header, ""
            # see test_header_words_kept_as_body_are_streamed
            words_as_body = last_repair is RepairKind.HEADER_WITHOUT_BODY
        elif isinstance(event, ContentDelta):
            assert header is not None and event.index == expect and event.channel == header.channel
            body += event.text
        elif isinstance(event, MessageDone):
            assert header is not None and event.index == expect
            message = event.message
            assert header == Header(
                message.author,
                message.channel,
                message.recipient,
                message.content_type,
                message.constrained,
                message.call_id,
                message.intent,
            )
            if not words_as_body:
                assert message.content == (TextContent(body),)
            assert isinstance(message.author.role, Role)
            header = None
            last_repair = None
            expect += 1
    assert header is None, "a message was started and never finished"
    for repair in parser.repairs:
        assert repair.code.startswith("E-")


def run_text(chunks: Sequence[str], *, strict: bool, **kw: object) -> tuple[object, list[Message]]:
    """Feed ``chunks``: ``"ok"`` or the class of the error raised, and the messages read."""
    parser = StreamParser(strict=strict, **kw)  # type: ignore[arg-type]
    events: list[Event] = []
    try:
        for chunk in chunks:
            events += parser.feed_text(chunk)
        events += parser.close()
    except OCMError as exc:
        assert strict, f"lenient mode raised {exc!r}"
        assert exc.fault == "input"
        return type(exc), parser.messages
    check_consistent(parser, events)
    return "ok", parser.messages


def run_tokens(
    tokens: Sequence[int], *, strict: bool, batch: bool, **kw: object
) -> tuple[object, list[Message]]:
    parser = StreamParser(strict=strict, **kw)  # type: ignore[arg-type]
    events: list[Event] = []
    try:
        if batch:
            events += parser.feed_tokens(tokens)
        else:
            for token in tokens:
                parser.process(token)
                events += parser.events()
        events += parser.close()
    except OCMError as exc:
        assert strict, f"lenient mode raised {exc!r}"
        assert exc.position is None or exc.position.unit == "token"
        return type(exc), parser.messages
    check_consistent(parser, events)
    return "ok", parser.messages


# --- arbitrary input ----------------------------------------------------------------------------


@given(texts, st.booleans(), options)
def test_arbitrary_text_whole(text: str, strict: bool, kw: dict[str, object]) -> None:
    run_text([text], strict=strict, **kw)


def text_outcome(chunks: Sequence[str], *, strict: bool, **kw: object) -> tuple[object, ...]:
    """All that feeding ``chunks`` comes to: the error (its class, message and position) or
    the events, with the messages, the repairs and the YAML header."""
    parser = StreamParser(strict=strict, **kw)  # type: ignore[arg-type]
    events: list[Event] = []
    try:
        for chunk in chunks:
            events += parser.feed_text(chunk)
        events += parser.close()
    except OCMError as exc:
        assert strict, f"lenient mode raised {exc!r}"
        return type(exc), exc.message, exc.position, parser.messages, parser.repairs
    return joined(events), parser.messages, parser.repairs, parser.transcript_header


def joined(events: Iterable[Event]) -> list[object]:
    """``events`` with each run of body deltas of one message joined."""
    out: list[object] = []
    for event in events:
        last = out[-1] if out else None
        if isinstance(event, ContentDelta) and isinstance(last, ContentDelta) and last.index == event.index:
            out[-1] = ContentDelta(last.index, last.channel, last.text + event.text)
        else:
            out.append(event)
    return out


@given(texts, st.data(), options)
def test_arbitrary_text_in_chunks_is_read_as_whole(
    text: str, data: st.DataObject, kw: dict[str, object]
) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    for strict in (True, False):
        whole = text_outcome([text], strict=strict, **kw)
        assert text_outcome(chunked(text, cuts), strict=strict, **kw) == whole


@settings(max_examples=60)
@given(st.lists(fragments, max_size=14).map("".join), options)
def test_arbitrary_text_every_split_point(text: str, kw: dict[str, object]) -> None:
    """Strict and lenient, every split point gives the messages, repairs, events and error
    (with its position) of the whole text."""
    for strict in (True, False):
        whole = text_outcome([text], strict=strict, **kw)
        for i in range(1, len(text)):
            assert text_outcome([text[:i], text[i:]], strict=strict, **kw) == whole, f"split at {i}"


@given(st.text(max_size=80), st.booleans())
def test_any_unicode_text(text: str, strict: bool) -> None:
    run_text([text], strict=strict)
    run_text(list(text), strict=strict)


@given(token_lists, st.booleans(), options)
def test_arbitrary_token_ids(tokens: list[int], strict: bool, kw: dict[str, object]) -> None:
    one_by_one = run_tokens(tokens, strict=strict, batch=False, **kw)
    assert run_tokens(tokens, strict=strict, batch=True, **kw) == one_by_one


@given(token_lists, st.data())
def test_token_batches_are_read_as_one_by_one(tokens: list[int], data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(tokens)), max_size=6)))
    for strict in (True, False):
        parser = StreamParser(strict=strict)
        result: object = "ok"
        try:
            for a, b in zip([0, *cuts], [*cuts, len(tokens)], strict=True):
                parser.feed_tokens(tokens[a:b])
            parser.close()
        except OCMError as exc:
            result = type(exc)
        assert (result, parser.messages) == run_tokens(tokens, strict=strict, batch=False)


def test_lenient_repairs_do_not_depend_on_token_batching() -> None:
    tokens = [
        START_ID,
        *ENC.encode_ordinary("user"),
        MESSAGE_ID,
        172,
        241,
        END_ID,
        172,
        START_ID,
        5,
        MESSAGE_ID,
    ]
    whole = StreamParser(strict=False)
    whole.feed_tokens(tokens)
    whole.close()
    single = StreamParser(strict=False)
    for token in tokens:
        single.process(token)
    single.close()
    assert whole.messages == single.messages
    assert whole.repairs == single.repairs


def test_lenient_repairs_do_not_depend_on_text_chunks() -> None:
    text = "<|start|>user<|message|>a<|end|>stray text<|start|>user<|message|>b<|end|>"
    whole = parse_text_repairs([text])
    split = parse_text_repairs([text[:37], text[37:]])
    assert split == whole


def parse_text_repairs(chunks: Sequence[str]) -> list[Repaired]:
    parser = StreamParser(strict=False)
    for chunk in chunks:
        parser.feed_text(chunk)
    parser.close()
    return parser.repairs


@pytest.mark.parametrize("bad", [None, "7", [1], 1.5])
def test_an_id_that_is_not_an_int_outside_a_body(bad: object) -> None:
    parser = StreamParser()
    with pytest.raises(ParseError):
        parser.process(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "7",
        [1],
        pytest.param(
            1.5,
        ),
    ],
)
def test_an_id_that_is_not_an_int_inside_a_body(bad: object) -> None:
    for strict in (True, False):
        parser = StreamParser(strict=strict)
        parser.feed_tokens([START_ID, *ENC.encode_ordinary("user"), MESSAGE_ID])
        try:
            parser.process(bad)  # type: ignore[arg-type]
            parser.process(END_ID)
            parser.close()
        except OCMError:
            assert strict
        else:
            assert not strict
            assert parser.messages == [Message.user("\ufffd")]


def test_header_words_kept_as_body_are_streamed() -> None:
    parser = StreamParser(strict=False)
    events = parser.feed_text("<|start|>assistant<|channel|>final hello there<|return|>") + parser.close()
    assert parser.messages == [Message.assistant("hello there")]
    deltas = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert deltas == "hello there"


# --- lenient output is a valid conversation ----------------------------------------------------------

OCM = Renderer(RenderConfig(profile=Profile.OCM, cot=CoTPolicy.KEEP))


@given(texts)
def test_lenient_output_renders_and_reads_back_strictly(text: str) -> None:
    messages = parse_text(text, strict=False)
    assert parse_text(OCM.text(messages)) == [sanitized(m) for m in messages]


def sanitized(message: Message) -> Message:
    """``message`` with its header values as a renderer writes them (``<|`` loses its ``|``)."""

    def clean(value: str | None) -> str | None:
        return sanitize_header_value(value) if value else value

    return message.with_(
        author=Author(message.role, clean(message.name)),
        channel=clean(message.channel),
        recipient=clean(message.recipient),
        content_type=clean(message.content_type),
        call_id=clean(message.call_id),
        intent=clean(message.intent),
    )


def test_lenient_tool_without_name_can_be_rendered() -> None:
    messages = parse_text("<|start|>tool<|message|>result<|end|>", strict=False)
    try:
        OCM.text(messages)
    except RenderError as exc:
        raise AssertionError(f"lenient output cannot be rendered: {exc}") from None


# --- damage to known-good transcripts ------------------------------------------------------------


def completed_before(text: str, at: int) -> list[Message]:
    """The messages ``text`` completes before character ``at``."""
    parser = StreamParser(strict=False)
    parser.feed_text(text[:at])
    return list(parser.messages)


def text_message_starts(text: str) -> list[int]:
    """Where each message of known-good ``text`` starts (its ``<|start|>``)."""
    parser = StreamParser()
    starts = []
    for i, ch in enumerate(text):
        before = parser.state
        parser.feed_text(ch)
        if parser.state == "Header" and before != "Header":
            starts.append(i + 1 - len(ControlToken.START.value))
    parser.close()
    assert len(starts) == len(parser.messages)
    return starts


_TOKEN_SPANS = re.compile("|".join(re.escape(t) for t in CONTROL_SPELLINGS))
_LITERALS = (ControlToken.LITERAL.value, ControlToken.ENDLITERAL.value)


@st.composite
def text_damage(draw: st.DrawFn) -> tuple[str, str, int, int, bool]:
    """A known-good text, a damaged copy, where the damage starts and ends in the original,
    and whether resynchronisation after it is expected."""
    name = draw(st.sampled_from(sorted(TEXTS)))
    text = TEXTS[name]
    spans = [m.span() for m in _TOKEN_SPANS.finditer(text)]
    kind = draw(st.sampled_from(["delete", "insert", "duplicate", "cut"]))
    if kind == "cut":
        at = draw(st.integers(0, len(text)))
        return text, text[:at], at, len(text), False
    if kind == "insert":
        at = draw(st.integers(0, len(text)))
        token = draw(st.sampled_from(CONTROL_SPELLINGS))
        damaged = text[:at] + token + text[at:]
        resync = token != ControlToken.LITERAL.value
        for a, b in spans:
            if a < at < b:  # inside a control token: that token is damaged too
                resync = resync and text[a:b] not in _LITERALS
                return text, damaged, a, b, resync
            if a == at and text[at - 1 : at] == "<":  # between an escape and its token: unescaped
                return text, damaged, a, b, resync and text[a:b] not in _LITERALS
        return text, damaged, at, at, resync
    a, b = draw(st.sampled_from(spans))
    token = text[a:b]
    if kind == "delete":
        return text, text[:a] + text[b:], a, b, token not in _LITERALS
    return text, text[:b] + token + text[b:], b, b, token not in _LITERALS


@given(text_damage())
def test_damaged_text_keeps_what_came_before(case: tuple[str, str, int, int, bool]) -> None:
    original, damaged, start, end, resync = case
    before = completed_before(original, start)
    _, lenient = run_text([damaged], strict=False)
    assert lenient[: len(before)] == before
    _, strict_messages = run_text([damaged], strict=True)  # an error comes at the damage, not before
    assert strict_messages[: len(before)] == before
    if resync:
        starts = text_message_starts(original)
        whole = parse_text(original)
        after = [m for m, s in zip(whole, starts, strict=True) if s >= end]
        assert lenient[len(lenient) - len(after) :] == after


@given(st.sampled_from(sorted(TEXTS)), st.data())
def test_cut_text(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    at = data.draw(st.integers(0, len(text)))
    before = completed_before(text, at)
    _, lenient = run_text([text[:at]], strict=False)
    assert lenient[: len(before)] == before
    assert len(lenient) <= len(before) + 1
    try:
        strict = parse_text(text[:at])
    except (StreamTruncatedError, TranscriptHeaderError):
        pass
    except UnexpectedTokenError:  # the cut left part of a <|start|> between messages
        start = ControlToken.START.value
        assert any(text[:at].endswith(start[:k]) for k in range(1, len(start)))
    else:
        assert strict == before


@st.composite
def token_damage(draw: st.DrawFn) -> tuple[list[int], list[int], int, int]:
    name = draw(st.sampled_from(sorted(TOKENS)))
    tokens = TOKENS[name]
    controls = [i for i, t in enumerate(tokens) if t in CONTROL_IDS]
    kind = draw(st.sampled_from(["delete", "insert", "duplicate"]))
    if kind == "insert":
        at = draw(st.integers(0, len(tokens)))
        token = draw(st.sampled_from([*CONTROL_IDS, 200000, 199999]))
        return tokens, [*tokens[:at], token, *tokens[at:]], at, at
    i = draw(st.sampled_from(controls))
    if kind == "delete":
        return tokens, tokens[:i] + tokens[i + 1 :], i, i + 1
    return tokens, [*tokens[: i + 1], tokens[i], *tokens[i + 1 :]], i + 1, i + 1


@given(token_damage())
def test_damaged_tokens_keep_what_came_before_and_resynchronise(
    case: tuple[list[int], list[int], int, int],
) -> None:
    original, damaged, start, end = case
    head = StreamParser(strict=False)
    head.feed_tokens(original[:start])
    before = list(head.messages)
    whole = StreamParser()
    whole.feed_tokens(original)
    whole.close()
    starts = [i for i, t in enumerate(original) if t == START_ID]
    after = [m for m, s in zip(whole.messages, starts, strict=True) if s >= end]
    for batch in (True, False):
        _, lenient = run_tokens(damaged, strict=False, batch=batch)
        assert lenient[: len(before)] == before
        assert lenient[len(lenient) - len(after) :] == after
        run_tokens(damaged, strict=True, batch=batch)


# --- bounded buffers ------------------------------------------------------------------------------


def retained_bytes(feed: Callable[[int], object], rounds: int) -> int:
    """Memory still held after calling ``feed(i)`` for ``i`` in ``range(rounds)``."""
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(rounds):
            feed(i)
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return current


def test_header_is_bounded() -> None:
    text = (
        "<|start|>user " + "a=b " * (MAX_HEADER // 2) + "<|message|>x<|end|><|start|>user<|message|>y<|end|>"
    )
    with pytest.raises(HeaderError):
        parse_text(text)
    parser = StreamParser(strict=False)
    parser.feed_text(text)
    parser.close()
    assert parser.messages[-1] == Message.user("y")
    assert parser.repairs[0].kind is RepairKind.BROKEN_HEADER  # and the rest is read as stray text
    tokens = [START_ID, *ENC.encode_ordinary("user " + "a=b " * MAX_HEADER), MESSAGE_ID, END_ID]
    with pytest.raises(HeaderError):
        StreamParser().feed_tokens(tokens)


def test_text_before_the_first_message_is_bounded() -> None:
    parser = StreamParser(strict=False)
    held = retained_bytes(lambda i: parser.feed_text(f"line {i:08d} of no header\n" * 40), 400)
    assert held < 512 * 1024
    parser.feed_text("<|start|>user<|message|>a<|end|>")
    parser.close()
    assert parser.messages == [Message.user("a")]
    with pytest.raises(UnexpectedTokenError):
        StreamParser().feed_text("x" * (MAX_PRELUDE + 1))


def test_stray_ids_between_messages_are_bounded() -> None:
    parser = StreamParser(strict=False)
    parser.feed_tokens([START_ID, *ENC.encode_ordinary("user"), MESSAGE_ID, END_ID])
    held = retained_bytes(lambda i: parser.feed_tokens(ENC.encode_ordinary(f"stray {i:08d} " * 50)), 400)
    assert held < 512 * 1024


def test_stray_text_between_messages_is_bounded() -> None:
    parser = StreamParser(strict=False)
    parser.feed_text("<|start|>user<|message|>a<|end|>")
    held = retained_bytes(lambda i: parser.feed_text(f"stray {i:08d} " * 2000), 200)
    assert held < 1024 * 1024


# --- chunking never changes what a bounded buffer drops -------------------------------------------


def every_kind_of_chunking(text: str, step: int) -> list[list[str]]:
    """``text`` whole, one character at a time, and split in two every ``step`` characters."""
    return [[text], list(text), *([text[:i], text[i:]] for i in range(1, len(text), step))]


def test_an_overlong_header_is_cut_where_it_overflows_in_every_chunking() -> None:
    """The header is dropped at its 4097th character, reported there, and what follows is
    read as if between messages, however the text is cut."""
    head = "<|start|>user<|message|>a<|end|><|start|>user "
    text = head + "ab " * 2000 + "<|channel|>x<|message|>y<|end|>"
    for strict in (False, True):
        whole = text_outcome([text], strict=strict)
        for chunks in every_kind_of_chunking(text, 97):
            assert text_outcome(chunks, strict=strict) == whole
    parser = StreamParser(strict=False)
    parser.feed_text(text)
    parser.close()
    first = parser.repairs[0]
    assert first.kind is RepairKind.BROKEN_HEADER
    assert first.position is not None and first.position.offset == len(head) - len("user ") + MAX_HEADER
    assert parser.messages[-1] == Message.assistant("y", channel="x")


def test_a_header_marker_cut_by_the_limit_is_read_again_after_it() -> None:
    """The limit falls inside ``<|channel|>``: the rest of the marker is stray text."""
    text = "<|start|>" + "u" * (MAX_HEADER - 4) + "<|channel|>final<|message|>ok<|end|>"
    whole = text_outcome([text], strict=False)
    for chunks in every_kind_of_chunking(text, 61):
        assert text_outcome(chunks, strict=False) == whole


def test_text_before_the_first_message_overflows_at_one_place() -> None:
    text = "y" * (MAX_PRELUDE + 10) + "<|start|>user<|message|>a<|end|>"
    for strict in (False, True):
        whole = text_outcome([text], strict=strict)
        for chunks in ([text[:100], text[100:]], [text[:MAX_PRELUDE], text[MAX_PRELUDE:]]):
            assert text_outcome(chunks, strict=strict) == whole
    with pytest.raises(UnexpectedTokenError) as caught:
        parse_text(text)
    assert caught.value.position is not None and caught.value.position.offset == MAX_PRELUDE
    parser = StreamParser(strict=False)
    parser.feed_text(text)
    parser.close()
    assert parser.messages == [Message.user("a")]
    assert [r.detail for r in parser.repairs] == [
        f"more than {MAX_PRELUDE} characters before the first message"
    ]


def test_an_overlong_token_header_reads_the_next_id_as_between_messages() -> None:
    tokens = [START_ID, *[64] * (MAX_HEADER + 3), MESSAGE_ID, *ENC.encode_ordinary("x"), END_ID]
    for batch in (True, False):
        _, messages = run_tokens(tokens, strict=False, batch=batch)
        assert messages == [Message(Author(Role.ASSISTANT), (TextContent("x"),))]
    parser = StreamParser(strict=False)
    parser.feed_tokens(tokens)
    parser.close()
    assert [r.kind for r in parser.repairs] == [
        RepairKind.BROKEN_HEADER,
        RepairKind.STRAY_TEXT,
        RepairKind.MISSING_START,
    ]


def test_whitespace_ids_inside_stray_text_are_kept() -> None:
    """Stray ids ``-`` ``\\n`` ``developer`` before a ``<|message|>`` read as the role
    ``developer``, as the same text does."""
    text = "<|start|>user<|message|>hi<|end|>-\ndeveloper<|message|>x<|end|>"
    tokens = [*ENC.encode("<|start|>user<|message|>hi<|end|>", allowed_special="all")]
    tokens += [*ENC.encode_ordinary("-"), *ENC.encode_ordinary("\n"), *ENC.encode_ordinary("developer")]
    tokens += ENC.encode("<|message|>x<|end|>", allowed_special="all")
    assert parse_tokens(tokens, strict=False) == parse_text(text, strict=False)
    assert parse_text(text, strict=False)[1].role is Role.DEVELOPER


@pytest.mark.parametrize("bad", [1.5, None, "7"])
def test_an_id_that_is_not_an_int_in_a_batch_of_body_ids(bad: object) -> None:
    """A batch whose body run holds something that is not an int is read id by id."""
    tokens = [START_ID, *ENC.encode_ordinary("user"), MESSAGE_ID, *ENC.encode_ordinary("ab"), bad]
    tokens += [*ENC.encode_ordinary(" cd"), END_ID]
    for strict in (True, False):
        assert run_tokens(tokens, strict=strict, batch=True) == run_tokens(tokens, strict=strict, batch=False)
    assert run_tokens(tokens, strict=False, batch=True)[1] == [Message.user("ab\ufffd cd")]
    assert run_tokens(tokens, strict=True, batch=True)[0] is UnexpectedTokenError


def test_a_role_word_before_a_header_without_body_names_a_tool() -> None:
    """``tool`` before ``<|channel|>…<|end|>`` (no ``<|start|>``, no ``<|message|>``): the
    tool reply gets the placeholder name, so that it can be rendered."""
    messages = parse_text("<|start|>user<|message|>a<|end|>tool<|channel|>commentary<|end|>", strict=False)
    assert messages[1].author == Author(Role.TOOL, "functions.unknown")
    assert parse_text(OCM.text(messages)) == messages
