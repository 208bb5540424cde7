"""The OCM 2.2 §9 events: the spec's event names and fields, its worked examples as §9
events, streaming at any split point (whole, one character or token at a time, every split
point, random chunks) giving the same events (consecutive deltas joined), hidden channels
never reaching a ``response.delta``, message ids for interleaved streams, cancellation,
the JSON form, and ``openchatml parse --stream --events ocm``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from openchatml import Message, Profile, Role, StreamParser
from openchatml.cli import main
from openchatml.core.events import Event
from openchatml.core.interchange import InterchangeError
from openchatml.core.ocm_events import (
    OcmEvent,
    OcmEventStream,
    OcmResponseCancel,
    OcmResponseDelta,
    OcmResponseDeltaFlush,
    OcmToolCancel,
    ocm_event_from_dict,
    ocm_events,
)
from strategies import conversations
from transcripts import (
    FIXTURES,
    SMALL_TEXTS_LIMIT,
    SPEC_16_1,
    SPEC_16_2,
    SPEC_16_3,
    SPEC_16_4,
    known_good_texts,
    rendered_tokens,
    renderer,
)

PARAGRAPHS = (
    "<|start|>assistant<|channel|>analysis<|message|>hidden\n\nthought<|end|>"
    "<|start|>assistant intent=preamble<|channel|>commentary<|message|>Plan:\n\n1) look<|end|>"
    "<|start|>assistant<|channel|>final<|message|>\n\nOne.\n\n\nTwo\nlines.\n\n\n\nThree\n<|end|>"
    "<|start|>assistant<|channel|>final<|message|>\nFour.\n\n<|return|>"
)
"""Paragraph breaks in every kind of message, at a message's start and end too."""

TEXTS = {**known_good_texts(), "paragraphs": PARAGRAPHS}
SMALL_TEXTS = {k: v for k, v in TEXTS.items() if len(v) <= SMALL_TEXTS_LIMIT}
TOKENS = rendered_tokens()

Delta = OcmResponseDelta
Flush = OcmResponseDeltaFlush


def joined(events: Iterable[OcmEvent]) -> list[OcmEvent]:
    """``events`` with each run of deltas of one message id joined into one delta."""
    out: list[OcmEvent] = []
    for event in events:
        if isinstance(event, Delta):
            assert event.delta, "empty response.delta"
            last = out[-1] if out else None
            if isinstance(last, Delta) and last.message_id == event.message_id:
                out[-1] = Delta(last.delta + event.delta, last.message_id)
                continue
        out.append(event)
    return out


def from_text_chunks(chunks: Iterable[str], **kw: object) -> list[OcmEvent]:
    parser = StreamParser()
    stream = OcmEventStream(**kw)  # type: ignore[arg-type]
    out: list[OcmEvent] = []
    for chunk in chunks:
        out += stream.feed_all(parser.feed_text(chunk))
    out += stream.feed_all(parser.close())
    return joined(out)


def from_tokens(tokens: Sequence[int], *, one_by_one: bool) -> list[OcmEvent]:
    parser = StreamParser()
    stream = OcmEventStream()
    out: list[OcmEvent] = []
    if one_by_one:
        for token in tokens:
            parser.process(token)
            out += stream.feed_all(parser.events())
    else:
        out += stream.feed_all(parser.feed_tokens(tokens))
    out += stream.feed_all(parser.close())
    return joined(out)


def parsed(text: str) -> tuple[list[Event], list[Message]]:
    parser = StreamParser()
    events = parser.feed_text(text) + parser.close()
    return events, parser.messages


# --- the oracle: what §9 shows of whole messages ------------------------------------------

_PARAGRAPH_BREAK = re.compile(r"(?<!\n)\n\n")


def shown(message: Message, *, preambles: bool = False) -> bool:
    """§4 §5 §11: final (or channel-less) assistant text to no tool, not for debug."""
    if message.author.role is not Role.ASSISTANT or message.recipient not in (None, "all"):
        return False
    if message.intent == "debug":
        return False
    if message.channel in (None, "final"):
        return True
    return preambles and message.channel == "commentary" and message.intent == "preamble"


def expected(messages: Iterable[Message], *, preambles: bool = False) -> list[OcmEvent]:
    """The §9 events of whole ``messages``: each shown body cut after every paragraph break,
    a flush after each cut and after the body's last text."""
    out: list[OcmEvent] = []
    for message in messages:
        if not shown(message, preambles=preambles):
            continue
        text = message.text
        start = 0
        for match in _PARAGRAPH_BREAK.finditer(text):
            out += [Delta(text[start : match.end()]), Flush()]
            start = match.end()
        if start < len(text):
            out += [Delta(text[start:]), Flush()]
    return out


# --- the spec's table (§9) and §8.2's tool.cancel ------------------------------------------


def test_event_names_are_the_specs() -> None:
    assert Delta("x").to_dict() == {"type": "response.delta", "delta": "x"}
    assert Flush().to_dict() == {"type": "response.delta.flush"}
    assert OcmResponseCancel().to_dict() == {"type": "response.cancel"}
    assert OcmToolCancel("xyz789", "deadline").to_dict() == {
        "type": "tool.cancel",
        "call_id": "xyz789",
        "reason": "deadline",
    }


def test_optional_fields_appear_only_when_set() -> None:
    assert Delta("x", "m1").to_dict() == {"type": "response.delta", "delta": "x", "message_id": "m1"}
    assert Flush("m1").to_dict() == {"type": "response.delta.flush", "message_id": "m1"}
    assert OcmResponseCancel("user stop", "m1").to_dict() == {
        "type": "response.cancel",
        "reason": "user stop",
        "message_id": "m1",
    }


def test_user_built_events_are_checked() -> None:
    with pytest.raises(ValueError):
        OcmToolCancel("", "why")
    with pytest.raises(TypeError):
        OcmToolCancel("c1", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        OcmResponseCancel(3)  # type: ignore[arg-type]


# --- the spec's worked examples (§16) and fixtures (§17) as §9 events ---------------------


def test_spec_16_1_shows_only_the_final_answer() -> None:
    assert from_text_chunks([SPEC_16_1]) == [Delta("4."), Flush()]


def test_spec_16_2_hides_the_call_and_its_reply() -> None:
    assert from_text_chunks([SPEC_16_2]) == [Delta("It’s 20 °C and sunny in Tokyo right now."), Flush()]


def test_spec_16_3_preamble_only_when_asked_for() -> None:
    assert from_text_chunks([SPEC_16_3]) == []
    plan = "**Plan:** 1) Search docs 2) Extract figures 3) Summarize."
    assert from_text_chunks([SPEC_16_3], preambles=True) == [Delta(plan), Flush()]


def test_spec_16_4_user_text_is_no_response() -> None:
    assert from_text_chunks([SPEC_16_4]) == []


def test_fixture_17_1_legacy_assistant_text_is_final() -> None:
    assert from_text_chunks([FIXTURES["17.1-legacy"]]) == [
        Delta("Hi there. How can I help?"),
        Flush(),
        Delta("Why did the parser cross the road?"),
        Flush(),
    ]


def test_fixture_17_7_hides_commentary_that_is_no_preamble() -> None:
    text = FIXTURES["17.7-preamble"]
    assert from_text_chunks([text]) == []
    events = from_text_chunks([text], preambles=True)
    assert [e.delta for e in events if isinstance(e, Delta)] == [
        "**Plan:** 1) Search docs 2) Extract figures 3) Summarize."
    ]


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_known_good_transcripts_match_the_oracle(name: str) -> None:
    _, messages = parsed(TEXTS[name])
    for preambles in (False, True):
        assert from_text_chunks([TEXTS[name]], preambles=preambles) == expected(messages, preambles=preambles)


# --- flush: paragraph and segment boundaries ----------------------------------------------


def test_paragraph_breaks_are_flushed_once() -> None:
    text = "<|start|>assistant<|channel|>final<|message|>one\ntwo\n\n\nthree\n\nfour<|return|>"
    assert from_text_chunks([text]) == [
        Delta("one\ntwo\n\n"),
        Flush(),
        Delta("\nthree\n\n"),
        Flush(),
        Delta("four"),
        Flush(),
    ]


def test_no_flush_twice_in_a_row_nor_for_an_empty_body() -> None:
    text = (
        "<|start|>assistant<|channel|>final<|message|>a\n\n<|end|>"
        "<|start|>assistant<|channel|>final<|message|><|end|>"
        "<|start|>assistant<|channel|>final<|message|>\n\n<|return|>"
    )
    assert from_text_chunks([text]) == [Delta("a\n\n"), Flush(), Delta("\n\n"), Flush()]


# --- streaming equals batch -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_one_character_at_a_time(name: str) -> None:
    text = TEXTS[name]
    assert from_text_chunks(text) == from_text_chunks([text])


@pytest.mark.parametrize("name", sorted(SMALL_TEXTS))
def test_every_split_point(name: str) -> None:
    text = SMALL_TEXTS[name]
    whole = from_text_chunks([text])
    for i in range(len(text) + 1):
        assert from_text_chunks([text[:i], text[i:]]) == whole, f"split at {i}"


@given(st.sampled_from(sorted(TEXTS)), st.data())
def test_random_chunks(name: str, data: st.DataObject) -> None:
    text = TEXTS[name]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert from_text_chunks(chunks) == from_text_chunks([text])


@pytest.mark.parametrize("name", sorted(TOKENS))
def test_tokens_whole_and_one_at_a_time(name: str) -> None:
    tokens = TOKENS[name]
    whole = from_tokens(tokens, one_by_one=False)
    assert from_tokens(tokens, one_by_one=True) == whole
    parser = StreamParser()
    parser.feed_tokens(tokens)
    parser.close()
    assert whole == expected(parser.messages)


@given(st.sampled_from(list(Profile)), st.data())
def test_property_only_final_text_is_shown(profile: Profile, data: st.DataObject) -> None:
    conversation = data.draw(conversations(harmony_representable=profile is Profile.HARMONY))
    text = renderer(profile).text(conversation)
    _, messages = parsed(text)
    whole = from_text_chunks([text])
    assert whole == expected(messages)
    hidden = [m.text for m in messages if not shown(m) and m.text]
    shown_text = "".join(e.delta for e in whole if isinstance(e, Delta))
    assert shown_text == "".join(m.text for m in messages if shown(m))
    assert all(isinstance(e, Delta | Flush) for e in whole)
    if not any(shown(m) for m in messages):
        assert whole == [], hidden
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    assert from_text_chunks(chunks) == whole


def test_hidden_channels_never_give_a_delta() -> None:
    hidden = (
        "<|start|>assistant<|channel|>analysis<|message|>secret thought<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>secret note<|end|>"
        "<|start|>assistant intent=debug<|channel|>final<|message|>secret debug<|end|>"
        "<|start|>assistant to=functions.f<|channel|>final<|message|>secret call<|call|>"
        "<|start|>assistant<|channel|>custom<|message|>secret custom<|end|>"
        "<|start|>system<|message|>secret system<|end|>"
        "<|start|>developer<|message|>secret developer<|end|>"
        "<|start|>tool name=functions.f call_id=c to=assistant<|channel|>commentary"
        "<|message|>secret reply<|end|>"
        "<|start|>user<|message|>secret user<|end|>"
    )
    for preambles in (False, True):
        assert from_text_chunks([hidden], preambles=preambles) == []
        assert from_text_chunks(hidden, preambles=preambles) == []


def test_a_delta_of_a_message_never_seen_starting_is_dropped() -> None:
    events, _ = parsed("<|start|>assistant<|channel|>final<|message|>ok<|return|>")
    assert ocm_events(events[1:]) == []


# --- message ids, interleaving, cancellation ------------------------------------------------


def test_message_ids_tag_every_delta_and_flush() -> None:
    events, _ = parsed(FIXTURES["17.1-legacy"])
    assert joined(ocm_events(events, message_id_prefix="r1-")) == [
        Delta("Hi there. How can I help?", "r1-2"),
        Flush("r1-2"),
        Delta("Why did the parser cross the road?", "r1-4"),
        Flush("r1-4"),
    ]


def test_interleaved_streams_are_told_apart_by_message_id() -> None:
    texts = {
        "a-": "<|start|>assistant<|channel|>final<|message|>first answer\n\nmore<|return|>",
        "b-": "<|start|>assistant<|channel|>analysis<|message|>hmm<|end|>"
        "<|start|>assistant<|channel|>final<|message|>second answer<|return|>",
    }
    parsers = {prefix: StreamParser() for prefix in texts}
    streams = {prefix: OcmEventStream(message_id_prefix=prefix) for prefix in texts}
    merged: list[OcmEvent] = []
    longest = max(len(t) for t in texts.values())
    for i in range(longest):
        for prefix, text in texts.items():
            if i < len(text):
                merged += streams[prefix].feed_all(parsers[prefix].feed_text(text[i]))
    for prefix in texts:
        merged += streams[prefix].feed_all(parsers[prefix].close())
    by_id: dict[str | None, str] = {}
    for event in merged:
        assert isinstance(event, Delta | Flush) and event.message_id is not None
        if isinstance(event, Delta):
            by_id[event.message_id] = by_id.get(event.message_id, "") + event.delta
    assert by_id == {"a-0": "first answer\n\nmore", "b-1": "second answer"}


def test_cancel_stops_rendering() -> None:
    parser = StreamParser()
    stream = OcmEventStream(message_id_prefix="m")
    shown_so_far = stream.feed_all(parser.feed_text("<|start|>assistant<|channel|>final<|message|>Hel"))
    assert joined(shown_so_far) == [Delta("Hel", "m0")]
    assert stream.cancel("user pressed stop") == OcmResponseCancel("user pressed stop", "m0")
    assert stream.cancelled
    assert stream.feed_all(parser.feed_text("lo<|return|>") + parser.close()) == []


def test_cancel_between_messages_names_no_message() -> None:
    assert OcmEventStream(message_id_prefix="m").cancel() == OcmResponseCancel()


# --- the JSON form --------------------------------------------------------------------------

_ids = st.none() | st.text(max_size=8)
ocm_event_values = st.one_of(
    st.builds(Delta, st.text(min_size=1), _ids),
    st.builds(Flush, _ids),
    st.builds(OcmResponseCancel, _ids, _ids),
    st.builds(OcmToolCancel, st.text(min_size=1), st.text()),
)


@given(ocm_event_values)
def test_json_round_trip(event: OcmEvent) -> None:
    wire = json.loads(json.dumps(event.to_dict()))
    assert ocm_event_from_dict(wire) == event
    assert wire["type"] == event.type


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"type": "response.done"}, "$.type"),
        ({"delta": "x"}, "$.type"),
        ({"type": "response.delta"}, "$.delta"),
        ({"type": "response.delta", "delta": 3}, "$.delta"),
        ({"type": "response.delta.flush", "extra": "x"}, "$.extra"),
        ({"type": "tool.cancel", "call_id": "c"}, "$.reason"),
        ({"type": "tool.cancel", "call_id": "", "reason": "r"}, "$.call_id"),
        ({"type": "response.cancel", "reason": None}, "$.reason"),
    ],
)
def test_bad_json_is_an_interchange_error(value: dict[str, object], path: str) -> None:
    with pytest.raises(InterchangeError) as caught:
        ocm_event_from_dict(value)
    assert caught.value.path == path


# --- openchatml parse --stream --events ocm --------------------------------------------------


def test_cli_prints_one_json_line_per_event() -> None:
    text = SPEC_16_1.replace("4.", "Four.\n\nThat is all.")
    result = CliRunner().invoke(main, ["parse", "-", "--stream", "--events", "ocm"], input=text)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert joined(ocm_event_from_dict(line) for line in lines) == [
        Delta("Four.\n\n"),
        Flush(),
        Delta("That is all."),
        Flush(),
    ]


def test_cli_tokens_one_at_a_time() -> None:
    name = sorted(TOKENS)[0]
    ids = TOKENS[name]
    result = CliRunner().invoke(
        main, ["parse", "-", "--stream", "--events", "ocm", "--tokens"], input=json.dumps(ids)
    )
    assert result.exit_code == 0, result.output
    lines = [ocm_event_from_dict(json.loads(line)) for line in result.stdout.splitlines()]
    assert joined(lines) == from_tokens(ids, one_by_one=True)


def test_cli_default_stream_is_the_parsers_events() -> None:
    result = CliRunner().invoke(main, ["parse", "-", "--stream"], input=SPEC_16_1)
    assert result.exit_code == 0
    assert json.loads(result.stdout.splitlines()[0])["type"] == "message_started"
    explicit = CliRunner().invoke(main, ["parse", "-", "--stream", "--events", "parser"], input=SPEC_16_1)
    assert explicit.stdout == result.stdout


def test_cli_lenient_repairs_go_to_stderr() -> None:
    result = CliRunner().invoke(
        main,
        ["parse", "-", "--stream", "--events", "ocm", "--lenient"],
        input="<|start|>assistant<|channel|>final<|message|>cut",
    )
    assert result.exit_code == 0
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"type": "response.delta", "delta": "cut"},
        {"type": "response.delta.flush"},
    ]
    assert result.stderr.startswith("warning: E-STREAM-TRUNCATED")


def test_cli_events_needs_stream() -> None:
    result = CliRunner().invoke(main, ["parse", "-", "--events", "ocm"], input=SPEC_16_1)
    assert result.exit_code == 2
    assert "--events needs --stream" in result.output
