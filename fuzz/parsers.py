"""Fuzz targets of the parsers.

* The Harmony / OpenChatML 2.2 parser over text and over token ids, strict and lenient:
  only typed errors (:class:`~openchatml.core.errors.OCMError`, the input's fault, at a
  position of the right unit), lenient never raises, events agree with the messages and
  repairs, and lenient output renders and reads back strictly.
* Streaming equals batch: text cut at random points, token ids one by one and in random
  batches give the same messages, repairs, events and errors as the whole input.
* Render → parse: any message the renderer accepts (header values of any length) reads
  back strictly as itself, in both profiles, as text and as token ids.
* One target per chat template of ``tests/templates/data/templates``: its parser
  (:func:`~openchatml.templates.parsing.open_parser`) over random text made of the
  template's own markers and over damaged known-good outputs never fails on its own
  (``W-INTERNAL``), streams as it parses whole, and its deltas add up to the message.

Inputs are built with plain :mod:`random` from fragments of each grammar's vocabulary and
from damaged known-good transcripts, so that a target tries thousands of inputs a second.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import random
import string
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from openchatml import (
    Author,
    ContentDelta,
    CoTPolicy,
    DocumentHeader,
    Event,
    Header,
    Message,
    MessageDone,
    MessageStarted,
    OCMError,
    Profile,
    RenderConfig,
    Renderer,
    RenderError,
    Repaired,
    RepairKind,
    Role,
    StreamParser,
    TextContent,
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
from openchatml.templates.analysis import analyze_source
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.errors import TemplateError
from openchatml.templates.format import TemplateFormat
from openchatml.templates.parsing import (
    ContentText,
    Delta,
    ParseOptions,
    ReasoningText,
    ToolArgumentsText,
    ToolCallStarted,
    open_parser,
)

from .target import Target, target

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
TEMPLATE_DIR = TESTS / "templates" / "data" / "templates"
CASES_FILE = TESTS / "templates" / "data" / "template-parse-cases.json"

CORE_MINIMUM = 1_000_000
"""Inputs each Harmony / OpenChatML target must try in a full run."""
TEMPLATE_MINIMUM = 100_000
"""Inputs each template parser must try in a full run."""

# --- vocabulary ---------------------------------------------------------------------------

CONTROL = tuple(t.value for t in ControlToken)
CONTROL_IDS = (START_ID, CHANNEL_ID, MESSAGE_ID, CONSTRAIN_ID, END_ID, RETURN_ID, CALL_ID)
FRAGMENTS = (
    *CONTROL,
    *CONTROL,
    *("<" + t for t in CONTROL),
    "<<|start|>",
    "<<|end|>",
    "<<|literal|>",
    *(t[:n] for t in CONTROL for n in (1, 2, 3, 6)),
    *(t[n:] for t in CONTROL for n in (1, 2, 4)),
    "<",
    "<<",
    "|",
    "|>",
    "<|",
    "<|reserved_200000|>",
    "<|endoftext|>",
    "<|start_reflect|>",
    "<|literal|>x<|endliteral|>",
    "<|endliteral|><|literal|>",
    "\u00a0",
    "\u2028",
    "\u200b",
    "\ufeff",
    "\ufffd",
    "\x00",
    "😀",
    "👩‍👩‍👧",
    "漢字かなカナ",
    "e\u0301",
    "\u0301",
    "\u202e",
    '{"a": 1}',
    "```",
)
"""Control tokens, escapes, heads and tails of tokens, and text that stresses the codec."""
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
    "assistant:bob",
    " to=functions.f",
    " to=",
    " to=all",
    " to=assistant",
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
    "json",
    "{}",
    '{"a":1}',
    "version: 2.2\n",
    "model: m\n",
    "- [",
    "---\n",
    "```\n",
    "%YAML 1.2\n",
    "key: <|start|>\n",
)
"""Header words and YAML pieces."""
STRAY = ("-", "x", "hello", " ", "\n", "\t", "\r\n", "  ", "user", "developer", "tool", "system", ".", ":")
"""What lands between messages: words, roles, punctuation and whitespace."""

_TOKEN_PIECES = (172, 241, 222, 4103, 104, 254, 10, 220, 198, 271)
"""Ids of pieces of multi-byte characters, and of whitespace."""
_NOT_IDS: tuple[Any, ...] = (None, "7", 1.5, [1])


@cache
def _word_ids() -> tuple[int, ...]:
    enc = load_encoding()
    return tuple(i for w in (*WORDS, *STRAY) if w.strip() for i in enc.encode_ordinary(w)[:2])


def unicode_text(rng: random.Random, n: int, *, surrogates: bool = True) -> str:
    """``n`` random characters: mostly ASCII, some of every plane (lone surrogates too)."""
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.6:
            c = rng.randint(0x20, 0x7E)
        elif r < 0.75:
            c = rng.randint(0x80, 0x7FF)
        elif r < 0.9:
            c = rng.randint(0x800, 0xFFFD)
            if not surrogates and 0xD800 <= c <= 0xDFFF:
                c = 0xFFFD
        elif r < 0.97:
            c = rng.randint(0x10000, 0x10FFFF)
        else:
            c = rng.randint(0, 0x1F)
        out.append(chr(c))
    return "".join(out)


def long_run(rng: random.Random) -> str:
    """A run of text about as long as a header may be, or as the text before the first message."""
    unit = rng.choice(["a", "ab ", "é", "<", "\n", "x=", "漢"])
    limit = MAX_PRELUDE if rng.random() < 0.05 else MAX_HEADER
    size = limit + rng.choice([-20, -1, 0, 1, 2, 50])
    return (unit * (size // len(unit) + 1))[:size]


# --- core inputs -------------------------------------------------------------------------


@cache
def _corpus() -> tuple[tuple[str, ...], tuple[tuple[int, ...], ...]]:
    """The known-good transcripts of the test suite, as text and as token ids."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    transcripts = importlib.import_module("transcripts")
    texts = tuple(t for t in transcripts.known_good_texts().values() if len(t) <= 400)
    tokens = tuple(tuple(t) for t in transcripts.rendered_tokens().values() if len(t) <= 400)
    return texts, tokens


def soup(rng: random.Random, *, size: int = 40) -> str:
    """Text made of the parser's own vocabulary, in any order."""
    parts = []
    for _ in range(rng.randint(0, size)):
        r = rng.random()
        if r < 0.5:
            parts.append(rng.choice(FRAGMENTS))
        elif r < 0.75:
            parts.append(rng.choice(WORDS))
        elif r < 0.87:
            parts.append(rng.choice(STRAY))
        else:
            parts.append(unicode_text(rng, rng.randint(1, 6)))
    if rng.random() < 0.003:
        parts.insert(rng.randint(0, len(parts)), long_run(rng))
    return "".join(parts)


def damaged(rng: random.Random, text: str) -> str:
    """``text`` with one to four random changes: insertions, deletions, repeats, cuts,
    a control token swapped for another, stray text before a message."""
    for _ in range(rng.randint(1, 4)):
        n = len(text)
        a = rng.randint(0, n)
        op = rng.random()
        if op < 0.3:
            text = text[:a] + soup(rng, size=3) + text[a:]
        elif op < 0.45:
            text = text[:a] + text[a + rng.randint(1, 20) :]
        elif op < 0.55:
            b = min(n, a + rng.randint(1, 40))
            text = text[:b] + text[a:b] + text[b:]
        elif op < 0.65:
            text = text[:a]
        elif op < 0.85:
            found = [i for i in range(n) if text.startswith("<|", i)]
            if found:
                i = rng.choice(found)
                end = text.find("|>", i)
                end = n if end < 0 else end + 2
                text = text[:i] + rng.choice(CONTROL) + text[end:]
        else:
            text = with_stray(rng, text)
    return text


def with_stray(rng: random.Random, text: str) -> str:
    """``text`` with stray words and whitespace before some of its messages and at its end."""
    pieces = text.split("<|start|>")
    out = [pieces[0]]
    for piece in pieces[1:]:
        if rng.random() < 0.5:
            out.append("".join(rng.choice(STRAY) for _ in range(rng.randint(1, 4))))
        out.append("<|start|>" + piece)
    if rng.random() < 0.5:
        out.append("".join(rng.choice(STRAY) for _ in range(rng.randint(1, 4))))
    return "".join(out)


def random_text(rng: random.Random) -> str:
    """Vocabulary soup, a damaged known-good transcript, or one with stray text between messages."""
    r = rng.random()
    if r < 0.4:
        return soup(rng)
    texts, _ = _corpus()
    text = rng.choice(texts)
    if r < 0.85:
        return damaged(rng, text)
    return with_stray(rng, text)


def random_tokens(rng: random.Random) -> list[Any]:
    """Token ids: control ids, header words, any id, reserved ids, pieces of characters,
    ids out of range, now and then something that is no id at all; or a damaged
    known-good token transcript."""
    if rng.random() < 0.5:
        words = _word_ids()
        out: list[Any] = []
        for _ in range(rng.randint(0, 60)):
            r = rng.random()
            if r < 0.3:
                out.append(rng.choice(CONTROL_IDS))
            elif r < 0.55:
                out.append(rng.choice(words))
            elif r < 0.7:
                out.append(rng.randint(0, LAST_SPECIAL_ID))
            elif r < 0.8:
                out.append(rng.randint(199990, LAST_SPECIAL_ID + 5))
            elif r < 0.95:
                out.append(rng.choice(_TOKEN_PIECES))
            elif r < 0.98:
                out.append(rng.choice([-1, -(2**40), LAST_SPECIAL_ID + 1, 2**70]))
            else:
                out.append(rng.choice(_NOT_IDS) if rng.random() < 0.2 else rng.randint(0, 100))
    else:
        _, corpus = _corpus()
        out = list(rng.choice(corpus))
        for _ in range(rng.randint(1, 4)):
            a = rng.randint(0, len(out))
            op = rng.random()
            if op < 0.35:
                out[a:a] = [rng.choice(CONTROL_IDS + _TOKEN_PIECES + (200000, 199999))]
            elif op < 0.55:
                del out[a : a + rng.randint(1, 3)]
            elif op < 0.65:
                out = out[:a]
            elif op < 0.8:
                out[a:a] = [rng.choice(_TOKEN_PIECES + _word_ids()) for _ in range(rng.randint(1, 5))]
            else:
                b = min(len(out), a + rng.randint(1, 20))
                out[b:b] = out[a:b]
    if rng.random() < 0.002:
        at = rng.randint(0, len(out))
        out[at:at] = [START_ID, *[64] * (MAX_HEADER + rng.choice([-2, 0, 1, 5])), MESSAGE_ID]
    return out


def parser_options(rng: random.Random) -> dict[str, Any]:
    """Keyword arguments of :class:`StreamParser` (a completion's role now and then)."""
    return {
        "role": rng.choice([None, None, None, None, Role.ASSISTANT, Role.USER]),
        "check_constraints": rng.random() < 0.7,
        "require_channels": rng.random() < 0.2,
        "allow_truncated": rng.random() < 0.3,
    }


def cuts(rng: random.Random, n: int) -> list[int]:
    """Where to cut an input of length ``n``: a few random points, or everywhere."""
    if n and rng.random() < 0.1 and n <= 600:
        return list(range(1, n))
    return sorted({rng.randint(0, n) for _ in range(rng.randint(1, 10))})


def pieces(seq: Sequence[Any], marks: Sequence[int]) -> list[Any]:
    return [seq[a:b] for a, b in zip([0, *marks], [*marks, len(seq)], strict=True)]


# --- core checks ---------------------------------------------------------------------------


def joined(events: Sequence[Event]) -> list[object]:
    """``events`` with each run of body deltas of one message joined."""
    out: list[object] = []
    for event in events:
        if isinstance(event, ContentDelta):
            assert event.text, "empty ContentDelta"
            last = out[-1] if out else None
            if isinstance(last, ContentDelta) and last.index == event.index:
                out[-1] = ContentDelta(last.index, last.channel, last.text + event.text)
                continue
        out.append(event)
    return out


def check_consistent(parser: StreamParser, events: Sequence[Event]) -> None:
    """What a closed parser reports agrees with itself: each message is started, streamed
    and finished once, in order; the repairs are the ``Repaired`` events."""
    assert parser.events() == []
    assert parser.close() == []
    assert parser.state in ("ExpectStart", "Header")
    assert parser.current_header is None and parser.current_content == ""
    assert [e.message for e in events if isinstance(e, MessageDone)] == parser.messages
    assert [e for e in events if isinstance(e, Repaired)] == parser.repairs
    assert sum(isinstance(e, DocumentHeader) for e in events) <= 1
    expect, header, body, words_as_body = 0, None, "", False
    last_repair: RepairKind | None = None
    for event in events:
        if isinstance(event, Repaired):
            last_repair = event.kind
            assert event.code.startswith("E-")
        elif isinstance(event, MessageStarted):
            assert header is None and event.index == expect
            header, body = event.header, ""
            words_as_body = last_repair is RepairKind.HEADER_WITHOUT_BODY
        elif isinstance(event, ContentDelta):
            assert header is not None and event.index == expect and event.channel == header.channel
            body += event.text
        elif isinstance(event, MessageDone):
            m = event.message
            assert header is not None and event.index == expect
            assert header == Header(
                m.author, m.channel, m.recipient, m.content_type, m.constrained, m.call_id, m.intent
            )
            assert words_as_body or m.content == (TextContent(body),)
            assert isinstance(m.author.role, Role)
            header, last_repair = None, None
            expect += 1
    assert header is None, "a message was started and never finished"


Outcome = tuple[object, ...]


def run_text(chunks: Sequence[str], strict: bool, options: Mapping[str, Any]) -> Outcome:
    """Feed ``chunks``: what came of it (the error, or the events, messages and repairs)."""
    parser = StreamParser(strict=strict, **options)
    events: list[Event] = []
    try:
        for chunk in chunks:
            events += parser.feed_text(chunk)
        events += parser.close()
    except OCMError as exc:
        assert strict, f"lenient mode raised {exc!r}"
        assert exc.fault == "input", exc
        assert exc.position is None or exc.position.unit == "char", exc
        return (type(exc).__name__, exc.message, exc.position, parser.messages, parser.repairs)
    check_consistent(parser, events)
    return ("ok", joined(events), parser.messages, parser.repairs, parser.transcript_header)


def run_tokens(batches: Sequence[Sequence[Any]] | None, tokens: Sequence[Any], strict: bool) -> Outcome:
    """Feed ``tokens`` in ``batches`` (``None``: one id at a time with :meth:`process`)."""
    parser = StreamParser(strict=strict)
    events: list[Event] = []
    try:
        if batches is None:
            for token in tokens:
                parser.process(token)
                events += parser.events()
        else:
            for batch in batches:
                events += parser.feed_tokens(batch)
        events += parser.close()
    except OCMError as exc:
        assert strict, f"lenient mode raised {exc!r}"
        assert exc.fault == "input", exc
        assert exc.position is None or exc.position.unit == "token", exc
        return (type(exc).__name__, exc.message, exc.position, parser.messages, parser.repairs)
    check_consistent(parser, events)
    return ("ok", joined(events), parser.messages, parser.repairs)


_OCM_KEEP = Renderer(RenderConfig(profile=Profile.OCM, cot=CoTPolicy.KEEP))


def sanitized(message: Message) -> Message:
    """``message`` as a renderer writes it: header values sanitised, ``to=all`` dropped."""

    def clean(value: str | None) -> str | None:
        return sanitize_header_value(value) if value else value

    return message.with_(
        author=Author(message.role, clean(message.name)),
        channel=clean(message.channel),
        recipient=None if message.recipient == "all" else clean(message.recipient),
        content_type=clean(message.content_type),
        call_id=clean(message.call_id),
        intent=clean(message.intent),
    )


def check_reads_back(messages: Sequence[Message]) -> None:
    """Lenient output is a valid conversation: rendered, it reads back strictly."""
    try:
        text = _OCM_KEEP.text(messages)
    except RenderError as exc:
        assert "more than the 4096" in exc.message, exc
        return
    assert parse_text(text, check_constraints=False) == [sanitized(m) for m in messages]


def check_text(case: tuple[str, bool, dict[str, Any]]) -> None:
    text, strict, options = case
    outcome = run_text([text], strict, options)
    if not strict:
        check_reads_back(outcome[2])  # type: ignore[arg-type]


def check_text_stream(case: tuple[str, list[int], dict[str, Any]]) -> None:
    text, marks, options = case
    chunks = pieces(text, marks)
    for strict in (True, False):
        whole = run_text([text], strict, options)
        split = run_text(chunks, strict, options)
        assert split == whole, f"strict={strict}: cut at {marks}:\n  {split}\n  {whole}"


def check_tokens(case: tuple[list[Any], bool]) -> None:
    tokens, strict = case
    one_by_one = run_tokens(None, tokens, strict)
    assert run_tokens([tokens], tokens, strict) == one_by_one
    if not strict:
        check_reads_back(one_by_one[2])  # type: ignore[arg-type]


def check_tokens_stream(case: tuple[list[Any], list[int]]) -> None:
    tokens, marks = case
    for strict in (True, False):
        whole = run_tokens([tokens], tokens, strict)
        assert run_tokens(pieces(tokens, marks), tokens, strict) == whole, f"strict={strict}, cut at {marks}"


# --- render → parse ---------------------------------------------------------------------------

_IDENT = string.ascii_letters + "_"
_WORD_CHARS = string.ascii_letters + string.digits + "_-.:/@#+=%<>|!?*'\""
_BUILTIN_RECIPIENTS = ("python", "browser.search", "browser.open", "browser.find")
_ROLE_WORDS = frozenset(r.value for r in Role)


def _identifier(rng: random.Random) -> str:
    word = rng.choice(_IDENT) + "".join(rng.choice(_IDENT + string.digits) for _ in range(rng.randint(0, 10)))
    return word + "_" if word in _ROLE_WORDS else word


def header_word(rng: random.Random, *, no_eq: bool = False) -> str:
    """One header word (no whitespace, no ``<|``), now and then a very long one."""
    r = rng.random()
    if r < 0.03:
        unit = rng.choice(["a", "b1", "é", "漢", "😀", "x.y"])
        word = unit * rng.randint(MAX_HEADER // 8, MAX_HEADER + 200)
    elif r < 0.5:
        word = _identifier(rng)
    elif r < 0.8:
        word = "".join(rng.choice(_WORD_CHARS) for _ in range(rng.randint(1, 12)))
    else:
        word = unicode_text(rng, rng.randint(1, 8), surrogates=False)
    word = "".join(c for c in word if not c.isspace())
    while "<|" in word:
        word = word.replace("<|", "<")
    if no_eq:
        word = word.replace("=", "")
    return word or "w"


def tool_name(rng: random.Random) -> str:
    """A tool name Harmony reads back as a tool: dotted or built in."""
    r = rng.random()
    if r < 0.2:
        return rng.choice(_BUILTIN_RECIPIENTS)
    if r < 0.97:
        return "functions." + _identifier(rng)
    return "functions." + "f" * rng.randint(MAX_HEADER // 2, MAX_HEADER + 100)


def body(rng: random.Random) -> str:
    parts = [
        rng.choice(FRAGMENTS)
        if rng.random() < 0.4
        else unicode_text(rng, rng.randint(0, 8), surrogates=False)
    ]
    for _ in range(rng.randint(0, 5)):
        parts.append(rng.choice(FRAGMENTS) if rng.random() < 0.4 else unicode_text(rng, 4, surrogates=False))
    return "".join(parts)


def random_message(rng: random.Random, harmony: bool) -> Message:
    """A message with any mix of header values; with ``harmony``, only what Harmony can
    carry (no ``call_id`` or ``intent``, tools named as tools, a plain content type only
    after a channel and without ``=``)."""
    role = rng.choice(list(Role))
    name = channel = recipient = content_type = call_id = intent = None
    constrained = False
    text = body(rng)
    if role is Role.TOOL:
        name = tool_name(rng) if harmony or rng.random() < 0.5 else header_word(rng)
    elif rng.random() < 0.3:
        name = header_word(rng)
    if rng.random() < 0.6:
        channel = rng.choice(["analysis", "commentary", "final"]) if rng.random() < 0.6 else header_word(rng)
    if rng.random() < 0.4:
        recipient = rng.choice([tool_name(rng), "assistant", header_word(rng)])
        if recipient == "all":
            recipient = None
    if role in (Role.ASSISTANT, Role.TOOL) and rng.random() < 0.4:
        constrained = rng.random() < 0.5
        if constrained:
            content_type = rng.choice(["json", "text", *([] if harmony else [""])])
            if content_type == "json":
                text = json.dumps({"a": body(rng)}, ensure_ascii=rng.random() < 0.5)
        elif channel is not None or not harmony:
            content_type = header_word(rng, no_eq=harmony)
    if not harmony:
        if rng.random() < 0.3:
            call_id = header_word(rng)
        if rng.random() < 0.2:
            intent = header_word(rng)
    return Message(
        Author(role, name),
        (TextContent(text),),
        channel,
        recipient,
        content_type,
        constrained,
        call_id,
        intent,
    )


_KEEP = {p: Renderer(RenderConfig(profile=p, cot=CoTPolicy.KEEP)) for p in Profile}


def check_round_trip(case: tuple[Profile, list[Message]]) -> None:
    profile, messages = case
    renderer = _KEEP[profile]
    for form in ("text", "tokens"):
        try:
            if form == "text":
                got = parse_text(renderer.text(messages))
            else:
                got = parse_tokens(renderer.tokens(messages))
        except RenderError as exc:
            assert "more than the 4096" in exc.message, exc
            longest = max(
                len(v or "")
                for m in messages
                for v in (m.name, m.recipient, m.channel, m.content_type, m.call_id, m.intent)
            )
            assert longest > MAX_HEADER // 8, f"refused a header without a long value: {exc}"
            continue
        assert got == messages, f"{form}: read back {got}"


def make_round_trip(rng: random.Random) -> tuple[Profile, list[Message]]:
    profile = rng.choice(list(Profile))
    harmony = profile is Profile.HARMONY
    return profile, [random_message(rng, harmony) for _ in range(rng.randint(1, 4))]


# --- template parsers ---------------------------------------------------------------------------

SHARDS = (
    "{", "}", "[", "]", "(", ")", '"', "'", ":", ",", "=", "\\", '\\"', "\\u00e9", "\\ud83d", "\\ude00",
    " ", "\n", "get_weather", "city", "days", "Paris", "1", "-2.5e3", "true", "None", "<", ">", "</",
    "é", "😀", '{"name": "get_weather", "arguments": {"city": "Paris"}}', '<|"|>', "call:", "```",
    "```json\n", "<![CDATA[", "]]>", "lookup", "query", "null", "[{", "}]", "\t", "\\n", "\x1c",
    "\u00a0", "\u2028",
)  # fmt: skip
"""JSON and Python shards: what tool-call arguments are made of."""

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "o": {"type": "object"}},
            "required": ["city"],
        },
    },
}
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Search.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


@dataclasses.dataclass(frozen=True, slots=True)
class TemplateData:
    """What a template's fuzzer draws from: its format, the markers it names, known-good
    outputs, the tools its cases offer and the prefixes its prompts write."""

    fmt: TemplateFormat
    markers: tuple[str, ...]
    seeds: tuple[str, ...]
    tools: tuple[tuple[Mapping[str, Any], ...], ...]
    prefixes: tuple[str, ...]


def markers(fmt: TemplateFormat) -> tuple[str, ...]:
    """Every marker a format names (for a Harmony format, the control tokens and header words)."""
    if fmt.harmony:
        return (
            *CONTROL,
            "analysis",
            "final",
            "commentary",
            " to=functions.get_weather",
            " json",
            "assistant",
        )
    found: set[str] = set()

    def walk(value: Any) -> None:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, str) and value and len(value) < 60:
            found.add(value)
        elif isinstance(value, tuple):
            for item in value:
                walk(item)

    walk((fmt.reasoning, fmt.content, fmt.tools, fmt.end_markers, fmt.generation_prompt))
    return tuple(sorted(found - {"name", "arguments", "parameters", "function"}))


@cache
def _cases() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    if CASES_FILE.is_file():
        for case in json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]:
            out.setdefault(case["template"], []).append(case)
    return out


def _rendered_outputs(template: ChatTemplate, fmt: TemplateFormat) -> list[str]:
    """What the template writes for an assistant message that calls tools, and for one
    that reasons and answers (the text after the user message and the role header)."""
    calls = [
        {
            "id": "a1b2c3d4e",
            "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
        },
        {
            "id": "f5g6h7i8j",
            "type": "function",
            "function": {"name": "lookup", "arguments": {"query": "rust"}},
        },
    ]
    shapes: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": calls[:1]},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "assistant", "content": "Hello there.", "reasoning_content": "Thinking it over."},
        {"role": "assistant", "content": "Hello there."},
    ]
    out = []
    header = fmt.generation_prompt.header.strip()
    for message in shapes:
        try:
            text = template.render(
                [{"role": "user", "content": "Go ahead."}, message], tools=[WEATHER, LOOKUP]
            )
        except TemplateError:
            continue
        tail = text[text.rfind("Go ahead.") + len("Go ahead.") :]
        if header and header in tail:
            tail = tail[tail.index(header) + len(header) :]
        out.append(tail)
    return out


@cache
def template_data(name: str) -> TemplateData:
    """The fuzzer's material for template file ``name`` (analysed once)."""
    source = (TEMPLATE_DIR / name).read_text(encoding="utf-8")
    fmt = analyze_source(source, name=name)
    cases = _cases().get(name, [])
    seeds = [c["input"] for c in cases]
    if not fmt.harmony:
        seeds += _rendered_outputs(ChatTemplate(source, name=name), fmt)
    tool_sets: list[tuple[Mapping[str, Any], ...]] = [(), (WEATHER,), (WEATHER, LOOKUP)]
    for case in cases:
        tools = tuple(case["options"].get("tools") or ())
        if tools and tools not in tool_sets:
            tool_sets.append(tools)
    prompts = fmt.generation_prompt
    prefixes = {""}
    for prompt in (prompts.default, prompts.thinking, prompts.no_thinking):
        if prompt.startswith(prompts.header):
            prefixes.add(prompt[len(prompts.header) :])
    if fmt.reasoning.start:
        prefixes.add(fmt.reasoning.start)
    return TemplateData(
        fmt, markers(fmt), tuple(s for s in seeds if s), tuple(tool_sets), tuple(sorted(prefixes))
    )


def template_text(rng: random.Random, data: TemplateData) -> str:
    """Marker soup, random text, or a damaged known-good output."""
    r = rng.random()
    if r < 0.4 or not data.seeds:
        parts = []
        for _ in range(rng.randint(0, 30)):
            x = rng.random()
            if x < 0.45 and data.markers:
                parts.append(rng.choice(data.markers))
            elif x < 0.85:
                parts.append(rng.choice(SHARDS))
            else:
                parts.append(unicode_text(rng, rng.randint(1, 6)))
        return "".join(parts)
    if r < 0.47:
        return unicode_text(rng, rng.randint(0, 80))
    text = rng.choice(data.seeds)
    if r < 0.52:
        return text
    for _ in range(rng.randint(1, 3)):
        a = rng.randint(0, len(text))
        b = rng.randint(a, min(len(text), a + 40))
        op = rng.random()
        if op < 0.2:
            text = text[:a] + text[b:]
        elif op < 0.35:
            text = text[:b] + text[a:b] + text[b:]
        elif op < 0.75:
            pool = data.markers if data.markers and rng.random() < 0.5 else SHARDS
            text = text[:a] + rng.choice(pool) + text[a:]
        elif op < 0.85:
            text = text[:a]
        else:
            text = text[:a] + unicode_text(rng, rng.randint(1, 4)) + text[b:]
    return text


def template_options(rng: random.Random, data: TemplateData) -> ParseOptions:
    return ParseOptions(
        tools=rng.choice(data.tools),
        extract_reasoning=rng.random() < 0.8,
        partial=rng.random() < 0.3,
        prefix=rng.choice(data.prefixes),
        json_schema={"type": "object"} if rng.random() < 0.15 else None,
    )


TemplateCase = tuple[str, str, list[int], ParseOptions]


def check_template(case: TemplateCase) -> None:
    """Whole and streamed parses agree (see :func:`check_streamed`)."""
    name, text, marks, options = case
    fmt = template_data(name).fmt
    whole = open_parser(fmt, options)
    whole.feed(text)
    whole.finish()
    check_streamed(fmt, text, marks, options, whole.message)


def check_streamed(
    fmt: TemplateFormat, text: str, cuts: Sequence[int], options: ParseOptions, whole: Any
) -> None:
    """``text`` fed to ``fmt``'s output parser in the pieces ``cuts`` make gives the
    message ``whole``, with no parser failure of its own; the deltas add up to the message,
    and finished tool-call arguments are JSON."""
    parser = open_parser(fmt, options)
    start = parser.message
    deltas: list[Delta] = []
    for chunk in pieces(text, sorted(set(cuts))):
        deltas += parser.feed(chunk)
    deltas += parser.finish()
    message = parser.message
    assert message == whole, f"streamed {message}\n   whole {whole}"
    assert not [w for w in message.warnings if w.code == "W-INTERNAL"], message.warnings
    reasoning = "".join(d.text for d in deltas if isinstance(d, ReasoningText))
    assert start.content + "".join(d.text for d in deltas if isinstance(d, ContentText)) == message.content
    assert start.reasoning + reasoning == message.reasoning
    arguments: dict[int, str] = {}
    for d in deltas:
        if isinstance(d, ToolCallStarted):
            arguments[d.index] = ""
        elif isinstance(d, ToolArgumentsText):
            arguments[d.index] += d.text
    for index, call in enumerate(message.tool_calls):
        if index >= len(start.tool_calls):
            assert arguments[index] == call.arguments, (index, arguments, call)
        if not options.partial and not fmt.harmony:
            json.loads(call.arguments)


def template_target(name: str) -> Target:
    """The fuzz target of template file ``name``'s parser."""

    def make(rng: random.Random) -> TemplateCase:
        data = template_data(name)
        text = template_text(rng, data)
        return name, text, cuts(rng, len(text)), template_options(rng, data)

    label = name.removesuffix(".jinja")
    return target(f"template:{label}", TEMPLATE_MINIMUM, make, check_template)


# --- the targets ---------------------------------------------------------------------------------


def _text_case(strict: bool) -> Callable[[random.Random], tuple[str, bool, dict[str, Any]]]:
    return lambda rng: (random_text(rng), strict, parser_options(rng))


def _text_stream_case(rng: random.Random) -> tuple[str, list[int], dict[str, Any]]:
    text = random_text(rng)
    return text, cuts(rng, len(text)), parser_options(rng)


def _tokens_stream_case(rng: random.Random) -> tuple[list[Any], list[int]]:
    tokens = random_tokens(rng)
    return tokens, cuts(rng, len(tokens))


TEMPLATE_NAMES = tuple(sorted(p.name for p in TEMPLATE_DIR.glob("*.jinja")))

TARGETS: list[Target] = [
    target("core:text-strict", CORE_MINIMUM, _text_case(True), check_text),
    target("core:text-lenient", CORE_MINIMUM, _text_case(False), check_text),
    target("core:tokens-strict", CORE_MINIMUM, lambda rng: (random_tokens(rng), True), check_tokens),
    target("core:tokens-lenient", CORE_MINIMUM, lambda rng: (random_tokens(rng), False), check_tokens),
    target("core:text-stream", CORE_MINIMUM, _text_stream_case, check_text_stream),
    target("core:tokens-stream", CORE_MINIMUM, _tokens_stream_case, check_tokens_stream),
    target("core:render-parse", CORE_MINIMUM, make_round_trip, check_round_trip),
    *(template_target(name) for name in TEMPLATE_NAMES),
]
"""Every parser target: the core's, then one per chat template."""
