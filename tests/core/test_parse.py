"""Streaming equals batch: every known-good transcript gives the same messages and the
same events whether it is fed whole, one token or one character at a time, split in two
at every point, or cut into random chunks. Events are compared modulo how body text is
split into ``ContentDelta`` s (consecutive deltas of one message are joined).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openchatml import (
    Author,
    ContentDelta,
    ControlToken,
    DocumentHeader,
    Event,
    Message,
    MessageDone,
    MessageStarted,
    OCMError,
    Profile,
    Role,
    StreamParser,
    load_encoding,
    parse_text,
    parse_tokens,
)
from openchatml.core.content import TextContent
from openchatml.core.headers import MAX_HEADER
from openchatml.core.tokens import START_ID
from strategies import as_parsed, stray_transcripts
from transcripts import SAMPLE_CONVERSATIONS, SMALL_TEXTS_LIMIT, known_good_texts, rendered_tokens, renderer

TEXTS = known_good_texts()
TOKENS = rendered_tokens()
SMALL_TEXTS = {k: v for k, v in TEXTS.items() if len(v) <= SMALL_TEXTS_LIMIT}

Normal = tuple[list[object], list[Message]]


def joined(events: Iterable[Event]) -> list[object]:
    """``events`` with each run of deltas of one message joined into one delta."""
    out: list[object] = []
    for event in events:
        if isinstance(event, ContentDelta):
            assert event.text, "empty ContentDelta"
            last = out[-1] if out else None
            if isinstance(last, ContentDelta) and last.index == event.index:
                assert last.channel == event.channel
                out[-1] = ContentDelta(last.index, last.channel, last.text + event.text)
                continue
        out.append(event)
    return out


def feed_text_chunks(chunks: Iterable[str], **kw: object) -> Normal:
    parser = StreamParser(**kw)  # type: ignore[arg-type]
    events: list[Event] = []
    for chunk in chunks:
        events += parser.feed_text(chunk)
    events += parser.close()
    assert parser.events() == []
    return joined(events), parser.messages


def feed_token_ids(tokens: Sequence[int], *, one_by_one: bool, role: Role | None = None) -> Normal:
    parser = StreamParser(role)
    events: list[Event] = []
    if one_by_one:
        for token in tokens:
            parser.process(token)
            events += parser.events()
    else:
        events += parser.feed_tokens(tokens)
    events += parser.close()
    return joined(events), parser.messages


def check_well_formed(events: list[object], messages: list[Message]) -> None:
    """Each message: MessageStarted, its body as deltas, MessageDone; indices in order."""
    done = [e for e in events if isinstance(e, MessageDone)]
    assert [e.message for e in done] == messages
    expect = 0
    open_header = None
    body = ""
    for event in events:
        if isinstance(event, MessageStarted):
            assert open_header is None and event.index == expect
            open_header, body = event.header, ""
        elif isinstance(event, ContentDelta):
            assert open_header is not None and event.index == expect
            assert event.channel == open_header.channel
            body += event.text
        elif isinstance(event, MessageDone):
            assert open_header is not None and event.index == expect
            m = event.message
            assert (m.author, m.channel, m.recipient, m.content_type, m.constrained, m.call_id, m.intent) == (
                open_header.author,
                open_header.channel,
                open_header.recipient,
                open_header.content_type,
                open_header.constrained,
                open_header.call_id,
                open_header.intent,
            )
            assert m.text == body
            expect += 1
            open_header = None
        else:  # known-good input: no repairs
            assert isinstance(event, DocumentHeader), event
    assert open_header is None


@pytest.fixture(scope="module", params=sorted(TEXTS))
def text_case(request: pytest.FixtureRequest) -> tuple[str, Normal]:
    text = TEXTS[request.param]
    whole = feed_text_chunks([text])
    check_well_formed(*whole)
    return text, whole


@pytest.fixture(scope="module", params=sorted(SMALL_TEXTS))
def small_text_case(request: pytest.FixtureRequest) -> tuple[str, Normal]:
    text = SMALL_TEXTS[request.param]
    return text, feed_text_chunks([text])


# --- text --------------------------------------------------------------------------------


def test_corpus_is_known_good(text_case: tuple[str, Normal]) -> None:
    text, (_, messages) = text_case
    assert messages, "every transcript has messages"
    assert all(isinstance(m.author.role, Role) for m in messages)
    assert parse_text(text) == messages


def test_text_one_character_at_a_time(text_case: tuple[str, Normal]) -> None:
    text, whole = text_case
    assert feed_text_chunks(text) == whole


def test_text_every_split_point(small_text_case: tuple[str, Normal]) -> None:
    text, whole = small_text_case
    for i in range(len(text) + 1):
        assert feed_text_chunks([text[:i], text[i:]]) == whole, f"split at {i}"


def test_text_empty_chunks_change_nothing(text_case: tuple[str, Normal]) -> None:
    text, whole = text_case
    half = len(text) // 2
    assert feed_text_chunks(["", text[:half], "", "", text[half:], ""]) == whole


@given(st.sampled_from(sorted(TEXTS)), st.data())
def test_text_random_chunks(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert feed_text_chunks(chunks) == feed_text_chunks([text])


@pytest.mark.parametrize("name", sorted(SAMPLE_CONVERSATIONS))
@pytest.mark.parametrize("profile", list(Profile))
def test_rendered_text_parses_to_the_conversation(name: str, profile: Profile) -> None:
    conv = SAMPLE_CONVERSATIONS[name]
    events, messages = feed_text_chunks([renderer(profile).text(conv)])
    assert messages == as_parsed(conv, harmony=profile is Profile.HARMONY)
    headers = [e.header for e in events if isinstance(e, DocumentHeader)]
    assert headers == ([conv.header] if conv.header is not None else [])


def test_terminators_are_reported() -> None:
    events, _ = feed_text_chunks([TEXTS["spec-16.2"]])
    terminators = [e.terminator for e in events if isinstance(e, MessageDone)]
    assert terminators == [
        ControlToken.END,
        ControlToken.END,
        ControlToken.END,
        ControlToken.END,
        ControlToken.CALL,
        ControlToken.END,
        ControlToken.RETURN,
    ]


# --- token ids -----------------------------------------------------------------------------


@pytest.fixture(scope="module", params=sorted(TOKENS))
def token_case(request: pytest.FixtureRequest) -> tuple[str, list[int], Normal]:
    name = request.param
    tokens = TOKENS[name]
    whole = feed_token_ids(tokens, one_by_one=False)
    check_well_formed(*whole)
    return name, tokens, whole


def test_tokens_one_at_a_time(token_case: tuple[str, list[int], Normal]) -> None:
    _, tokens, whole = token_case
    assert feed_token_ids(tokens, one_by_one=True) == whole


def test_tokens_and_text_agree(token_case: tuple[str, list[int], Normal]) -> None:
    name, tokens, (events, messages) = token_case
    conv_name, profile = name.split("/")
    conv = SAMPLE_CONVERSATIONS[conv_name]
    text = renderer(Profile(profile)).text(conv)
    text_events, text_messages = feed_text_chunks([text])
    assert messages == text_messages == parse_tokens(tokens)
    assert events == [e for e in text_events if not isinstance(e, DocumentHeader)]


@given(st.sampled_from(sorted(TOKENS)), st.data())
def test_tokens_random_batches(name: str, data: st.DataObject) -> None:
    tokens = TOKENS[name]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(tokens)), max_size=10)))
    parser = StreamParser()
    events: list[Event] = []
    for a, b in zip([0, *cuts], [*cuts, len(tokens)], strict=True):
        events += parser.feed_tokens(tokens[a:b])
    events += parser.close()
    assert (joined(events), parser.messages) == feed_token_ids(tokens, one_by_one=False)


def test_public_state_while_streaming_tokens(token_case: tuple[str, list[int], Normal]) -> None:
    """``state``, ``current_*`` and ``last_content_delta`` track the stream token by token."""
    _, tokens, _ = token_case
    parser = StreamParser()
    body = ""
    pieces = ""
    assert parser.state == "ExpectStart"
    for token in tokens:
        before = parser.state
        parser.process(token)
        if before == "Content" and parser.state == "Content" and parser.last_content_delta is not None:
            pieces += parser.last_content_delta
            assert parser.current_content == pieces
        for event in parser.events():
            if isinstance(event, MessageStarted):
                assert parser.current_header == event.header
                assert parser.current_role is event.header.author.role
                assert parser.current_channel == event.header.channel
                assert parser.current_recipient == event.header.recipient
                assert parser.current_content_type == event.header.content_type
                body = ""
            elif isinstance(event, ContentDelta):
                body += event.text
                assert parser.current_content == body
        if token == START_ID:
            pieces = ""
            assert parser.state == "Header"
    assert parser.state == "ExpectStart"
    assert parser.current_header is None
    assert parser.current_content == ""


def test_close_twice_gives_nothing_more() -> None:
    parser = StreamParser()
    parser.feed_text(TEXTS["spec-16.1"])
    assert [type(e) for e in parser.close()] == []
    assert parser.close() == []
    assert len(parser.messages) == 3


# --- completions: the prompt ended in <|start|>assistant ----------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
def test_completion_after_role_streams_like_whole(profile: Profile) -> None:
    conv = SAMPLE_CONVERSATIONS["weather"]
    r = renderer(profile)
    prompt = r.completion_tokens(conv.messages[:3])
    full = r.tokens(conv.messages[:3] + conv.messages[3:5])
    assert full[: len(prompt) - 2] == prompt[:-2]
    sampled = full[len(prompt) - 1 :]  # after <|start|>, from the role word on
    role_ids = load_encoding().encode_ordinary("assistant")
    assert sampled[: len(role_ids)] == role_ids
    completion = sampled[len(role_ids) :]
    whole = feed_token_ids(completion, one_by_one=False, role=Role.ASSISTANT)
    assert feed_token_ids(completion, one_by_one=True, role=Role.ASSISTANT) == whole
    assert whole[1] == as_parsed(conv.messages[3:5], harmony=profile is Profile.HARMONY)


@pytest.mark.parametrize("split", range(0, 40))
def test_completion_text_after_role(split: int) -> None:
    completion = (
        "<|channel|>analysis<|message|>hmm<|end|><|start|>assistant<|channel|>final<|message|>ok<|return|>"
    )
    expected = [Message.assistant("hmm", channel="analysis"), Message.assistant("ok")]
    parser = StreamParser(Role.ASSISTANT)
    parser.feed_text(completion[:split])
    parser.feed_text(completion[split:])
    parser.close()
    assert parser.messages == expected


# --- the text corpus as token ids ---------------------------------------------------------------

TOKENIZABLE = {
    k: v
    for k, v in TEXTS.items()
    if v.startswith("<|start|>") and "<|literal|>" not in v and "<<|" not in v and "/" not in k
}


@pytest.mark.parametrize("name", sorted(TOKENIZABLE))
def test_spec_and_fixture_transcripts_as_tokens(name: str) -> None:
    """The §16 and §17 transcripts, encoded with their control tokens as special ids."""
    text = TOKENIZABLE[name]
    tokens = load_encoding().encode(text, allowed_special="all")
    assert START_ID in tokens
    whole = feed_token_ids(tokens, one_by_one=False)
    check_well_formed(*whole)
    assert whole[1] == parse_text(text)
    assert feed_token_ids(tokens, one_by_one=True) == whole


# --- stray text, strict and lenient: every split equals the whole ---------------------------------


def outcome(
    chunks: Iterable[str] | None, *, strict: bool, tokens: Sequence[object] = (), **kw: object
) -> object:
    """What feeding ``chunks`` of text (or, when ``None``, ``tokens`` one id at a time, or
    as batches when ``tokens`` is a list of lists) comes to: the error and where, or the
    events; with the messages and repairs either way."""
    parser = StreamParser(strict=strict, **kw)  # type: ignore[arg-type]
    events: list[Event] = []
    try:
        if chunks is not None:
            for chunk in chunks:
                events += parser.feed_text(chunk)
        else:
            for item in tokens:
                if isinstance(item, list):
                    events += parser.feed_tokens(item)
                else:
                    parser.process(item)  # type: ignore[arg-type]
                    events += parser.events()
        events += parser.close()
    except OCMError as exc:
        assert strict, f"lenient mode raised {exc!r}"
        return type(exc), exc.message, exc.position, parser.messages, parser.repairs
    return joined(events), parser.messages, parser.repairs, parser.transcript_header


def test_whitespace_between_stray_text_is_kept_in_every_chunking() -> None:
    """A header without ``<|start|>`` takes the role word before it however the text is cut."""
    text = "<|start|>user<|message|>hi<|end|>-\ndeveloper<|message|>x<|end|>"
    whole = outcome([text], strict=False)
    assert parse_text(text, strict=False)[1] == Message(Author(Role.DEVELOPER), (TextContent("x"),))
    assert outcome(text, strict=False) == whole
    for i in range(len(text) + 1):
        assert outcome([text[:i], text[i:]], strict=False) == whole, f"split at {i}"


@settings(max_examples=150)
@given(stray_transcripts(), st.sampled_from([None, Role.ASSISTANT]))
def test_stray_text_every_split_point(text: str, role: Role | None) -> None:
    """Stray text between and around messages: every split point, and one character at a
    time, give the messages, repairs and events (or the error, where) of the whole text,
    strict and lenient."""
    for strict in (False, True):
        whole = outcome([text], strict=strict, role=role)
        assert outcome(text, strict=strict, role=role) == whole
        for i in range(1, len(text)):
            assert outcome([text[:i], text[i:]], strict=strict, role=role) == whole, f"split at {i}"


@settings(max_examples=150)
@given(stray_transcripts(), st.data())
def test_stray_tokens_one_by_one_and_in_batches(text: str, data: st.DataObject) -> None:
    """The same transcripts as token ids: one id at a time and random batches give what the
    whole list gives, strict and lenient."""
    tokens = load_encoding().encode(text, allowed_special="all")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(tokens)), max_size=8)))
    batches = [tokens[a:b] for a, b in zip([0, *cuts], [*cuts, len(tokens)], strict=True)]
    for strict in (False, True):
        whole = outcome(None, strict=strict, tokens=[tokens])
        assert outcome(None, strict=strict, tokens=tokens) == whole
        assert outcome(None, strict=strict, tokens=batches) == whole


# --- token-sized chunks: plain text taken whole --------------------------------------------------

PLAIN_TEXTS = [
    # long bodies over several lines; a control token inside a body, kept as text
    "<|start|>user<|message|>" + "line one\nline two " * 20 + "<|end|>"
    "<|start|>assistant<|channel|>final<|message|>a\nb <|channel|> c\nd<|end|>",
    # a header that outgrows MAX_HEADER, then a message after it
    "<|start|>assistant" + " to\n" * (MAX_HEADER // 4 + 3) + "<|message|>x<|end|>"
    "<|start|>user<|message|>y\nz<|end|>",
    # a header just inside MAX_HEADER
    "<|start|>user" + " " * (MAX_HEADER - len("user")) + "<|message|>ok<|end|>",
]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(PLAIN_TEXTS), st.lists(st.integers(1, 6), min_size=1, max_size=6), st.booleans())
def test_token_sized_chunks_give_what_the_whole_gives(text: str, sizes: list[int], strict: bool) -> None:
    """Text cut into chunks of 1 to 6 characters, as a tokenizer cuts it: chunks of body or
    header text with no ``<`` (taken whole) and chunks around control tokens give the
    messages, events and repairs, with their positions, of the whole text."""
    chunks: list[str] = []
    at = 0
    while at < len(text):
        size = sizes[len(chunks) % len(sizes)]
        chunks.append(text[at : at + size])
        at += size
    assert outcome(chunks, strict=strict) == outcome([text], strict=strict)
