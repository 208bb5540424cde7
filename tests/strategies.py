"""Hypothesis strategies for openchatml: header words, codec-stressing text, JSON Schema tool
parameters, system and developer contents, messages and whole conversations.

Every strategy that builds messages takes ``harmony_representable``: when true it only
builds what openai-harmony can express and what Harmony's text form carries back
unchanged — no ``call_id`` or ``intent``, tool messages named with a dotted or built-in
tool name, no ``ResponseFormat``, a plain (unconstrained) content type only after a
channel. Without it, anything OpenChatML 2.2 can carry is fair game.

Use them from a test module next to this one::

    from strategies import conversations, messages
"""

from __future__ import annotations

import json
import string
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from hypothesis import strategies as st

from openchatml import (
    Author,
    ChannelConfig,
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    ResponseFormat,
    Role,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
    TranscriptHeader,
)
from openchatml.core.content import Content
from openchatml.core.tokens import ControlToken

__all__ = [
    "BUILTIN_RECIPIENTS",
    "CONTROL_SPELLINGS",
    "STRAY_FRAGMENTS",
    "TRICKY_FRAGMENTS",
    "any_length_header_words",
    "as_parsed",
    "body_texts",
    "call_ids",
    "channels",
    "content_text",
    "content_types",
    "conversations",
    "developer_contents",
    "display_names",
    "header_of",
    "header_words",
    "identifiers",
    "intents",
    "json_bodies",
    "json_schemas",
    "json_values",
    "message_lists",
    "messages",
    "recipients",
    "response_formats",
    "stray_transcripts",
    "system_contents",
    "tool_descriptions",
    "tool_names",
    "tool_parameters",
    "transcript_headers",
]

# --- header words ---------------------------------------------------------------------

ROLE_WORDS = frozenset(r.value for r in Role)
BUILTIN_RECIPIENTS = ("python", "browser.search", "browser.open", "browser.find")

_ident_start = st.sampled_from(string.ascii_letters + "_")
_ident_rest = st.text(string.ascii_letters + string.digits + "_", max_size=10)
identifiers = st.builds(lambda a, b: a + b, _ident_start, _ident_rest).filter(lambda s: s not in ROLE_WORDS)
"""Python-style identifiers that are not role names (``get_weather``, ``_x1``)."""


def _header_safe(word: str) -> bool:
    return bool(word) and not any(c.isspace() for c in word) and "<|" not in word


@cache
def header_words(*, max_size: int = 12) -> st.SearchStrategy[str]:
    """Single words a header carries unchanged: non-empty, no whitespace, no ``<|``.

    Mostly ASCII identifiers and punctuation, sometimes any unicode (emoji, CJK, ``=``,
    ``<``, ``|``, ``:``), so a sanitiser that over-reaches shows up.
    """
    ascii_word = st.text(string.ascii_letters + string.digits + "_-.:/@#+=%<>|!?*'\"", min_size=1)
    unicode_word = st.text(st.characters(exclude_categories=["Cs", "Zs", "Zl", "Zp", "Cc"]), min_size=1)
    return st.one_of(identifiers, ascii_word, unicode_word).map(lambda w: w[:max_size]).filter(_header_safe)


@cache
def any_length_header_words() -> st.SearchStrategy[str]:
    """:func:`header_words`, and now and then a word of hundreds to thousands of
    characters (ASCII, accented, CJK, emoji), around the parser's header limit."""
    long_words = st.builds(
        lambda unit, n: unit * n,
        st.sampled_from(["a", "b1", "é", "漢", "😀", "x.y", "é|"]),
        st.integers(300, 4200),
    )
    return st.one_of(header_words(), long_words)


@cache
def tool_names() -> st.SearchStrategy[str]:
    """Tool names as a recipient or a tool reply's name: ``functions.get_weather``,
    ``browser.search``, ``python``, ``ns.tool``. Always dotted or built-in, so Harmony's
    ``<|start|>{tool}`` form reads back as a tool."""
    return st.one_of(
        identifiers.map(lambda n: "functions." + n),
        st.sampled_from(BUILTIN_RECIPIENTS),
        st.builds(lambda ns, n: f"{ns}.{n}", identifiers, identifiers),
    )


@cache
def recipients() -> st.SearchStrategy[str]:
    """``to=`` destinations: tool names and ``assistant`` (a tool reply's address).

    Never ``all``: the renderers treat it as no recipient.
    """
    return st.one_of(tool_names(), st.just("assistant"), header_words().filter(lambda w: w != "all"))


@cache
def call_ids() -> st.SearchStrategy[str]:
    """Call ids: ``call_abc123``, ``wx1``, uuid-ish strings, any header word."""
    return st.one_of(
        st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8).map(lambda s: "call_" + s),
        st.sampled_from(["wx1", "c1", "c2", "xyz789"]),
        st.uuids().map(str),
        header_words(),
    )


@cache
def display_names() -> st.SearchStrategy[str]:
    """Author names of non-tool messages (``alice``, ``bot-2``, any header word)."""
    return st.one_of(st.sampled_from(["alice", "bob", "bot-2", "Ada_L"]), header_words())


@cache
def channels(*, custom: bool = True) -> st.SearchStrategy[str]:
    """``analysis``, ``commentary``, ``final`` and (with ``custom``) any other word."""
    standard = st.sampled_from(["analysis", "commentary", "final"])
    return st.one_of(standard, header_words()) if custom else standard


@cache
def intents() -> st.SearchStrategy[str]:
    """``preamble``, ``status``, ``debug`` or any other word."""
    return st.one_of(st.sampled_from(["preamble", "status", "debug"]), header_words())


@cache
def content_types(*, harmony_representable: bool = False) -> st.SearchStrategy[str]:
    """Content types: ``json``, ``text``, ``markdown``, ``code``, MIME types, other words.

    Harmony writes a plain content type as a bare word after the channel, where
    ``key=value`` reads as an attribute; representable ones contain no ``=``.
    """
    known = st.sampled_from(["json", "text", "markdown", "code", "application/json", "text/x-python"])
    words = header_words()
    if harmony_representable:
        words = words.filter(lambda w: "=" not in w)
    return st.one_of(known, words)


# --- body text ------------------------------------------------------------------------

CONTROL_SPELLINGS: tuple[str, ...] = tuple(t.value for t in ControlToken)
"""The nine control tokens as text."""

TRICKY_FRAGMENTS: tuple[str, ...] = (
    *CONTROL_SPELLINGS,
    *("<" + t for t in CONTROL_SPELLINGS),
    *("<<" + t for t in ("<|start|>", "<|end|>", "<|literal|>")),
    *(t[:n] for t in ("<|start|>", "<|endliteral|>") for n in (1, 2, 3, 6)),
    *(t[n:] for t in ("<|end|>", "<|start|>", "<|literal|>") for n in (1, 2, 4)),
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
    "\n",
    "\r\n",
    "\t",
    " ",
    "\u00a0",
    "\u2028",
    "\u200b",
    "\ufeff",
    "\ufffd",
    "\x00",
    "😀",
    "👩‍👩‍👧",
    "🇯🇵",
    "👍🏽",
    "漢字かなカナ",
    "한국어",
    "e\u0301",
    "\u0301",
    "a\u0308\u0323",
    "שלום",
    "\u202e",
    '{"a": 1}',
    "```",
)
"""Text that stresses the codec: control-token spellings, escapes, heads and tails of tokens,
multi-byte and multi-token characters, combining marks, bidi and zero-width marks."""

any_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)

STRAY_FRAGMENTS: tuple[str, ...] = (
    "-", "x", "hello", ".", ":", "=", " ", "  ", "\n", "\t", "\r\n", "\u00a0",
    "user", "assistant", "developer", "system", "tool", "functions.f", "user:alice",
    "<", "<|", "<|sta", "|>", "<|reserved_200000|>", "<|endliteral|>",
)  # fmt: skip
"""What lands between or around messages: words, role names, whitespace, pieces and
stray spellings of control tokens."""

_MESSAGE_PIECES = (
    "<|start|>user<|message|>hi<|end|>",
    "<|start|>assistant<|channel|>final<|message|>ok<|return|>",
    "<|start|>assistant to=functions.f<|channel|>commentary <|constrain|>json<|message|>{}<|call|>",
    '<|start|>functions.f to=assistant<|channel|>commentary<|message|>{"t": 1}<|end|>',
    "<|start|>developer<|message|>a <<|end|> b<|end|>",
    "developer<|message|>x<|end|>",
    "<|channel|>analysis<|message|>think<|end|>",
    "<|message|>y<|end|>",
    "user<|channel|>final",
    "<|start|>user<|message|>cut",
    "<|end|>",
    "<|start|>",
)
"""Messages whole, headers without ``<|start|>``, and pieces of messages."""


@cache
def stray_transcripts(*, max_parts: int = 8) -> st.SearchStrategy[str]:
    """Short transcripts with stray text between and around messages: known-good messages,
    messages that lost their ``<|start|>``, pieces of messages, and stray words,
    whitespace and pieces of control tokens in any order."""
    stray = st.lists(st.one_of(st.sampled_from(STRAY_FRAGMENTS), any_text), min_size=1, max_size=4).map(
        "".join
    )
    part = st.one_of(st.sampled_from(_MESSAGE_PIECES), stray)
    return st.lists(part, max_size=max_parts).map("".join)


@cache
def body_texts(*, max_fragments: int = 10) -> st.SearchStrategy[str]:
    """Message body text: arbitrary unicode (no lone surrogates) mixed with
    :data:`TRICKY_FRAGMENTS`; often ends in ``<``."""
    fragment = st.one_of(st.sampled_from(TRICKY_FRAGMENTS), any_text)
    return st.lists(fragment, max_size=max_fragments).map("".join)


@cache
def json_values(*, max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """JSON values. Floats have short mantissas (a reference that rounds long ones agrees)."""
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**12), 10**12),
        st.builds(lambda m, e: float(f"{m}e{e}"), st.integers(-(10**6), 10**6), st.integers(-12, 24)),
        body_texts(max_fragments=3),
    )
    return st.recursive(
        scalar,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(body_texts(max_fragments=2), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


@cache
def json_bodies() -> st.SearchStrategy[str]:
    """JSON text (tool arguments, tool results), compact or spaced, ASCII-escaped or not."""
    return st.builds(
        lambda value, ascii_only, compact: json.dumps(
            value, ensure_ascii=ascii_only, separators=(",", ":") if compact else None
        ),
        json_values(),
        st.booleans(),
        st.booleans(),
    )


# --- JSON Schema ------------------------------------------------------------------------

prose = st.text(string.ascii_letters + string.digits + " .,-'`()", max_size=30)
"""Descriptions and titles: printable single-line prose."""


def _decorated(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    if draw(st.booleans()):
        schema["description"] = draw(prose)
    if draw(st.integers(0, 4)) == 0:
        schema["title"] = draw(prose)
    if draw(st.integers(0, 4)) == 0:
        schema["examples"] = draw(st.lists(st.one_of(prose, st.integers(-99, 99)), min_size=1, max_size=2))
    if draw(st.integers(0, 5)) == 0:
        schema["nullable"] = True
    return schema


@cache
@st.composite
def _leaf_schema(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "enum", "number", "integer", "boolean", "union", "any"]))
    schema: dict[str, Any]
    if kind == "enum":
        values = draw(st.lists(identifiers, min_size=1, max_size=4, unique=True))
        schema = {"type": "string", "enum": values}
        if draw(st.booleans()):
            schema["default"] = draw(st.sampled_from(values))
    elif kind == "union":
        schema = {
            "type": draw(
                st.lists(
                    st.sampled_from(["string", "number", "integer", "boolean", "null"]),
                    min_size=1,
                    max_size=3,
                    unique=True,
                )
            )
        }
    elif kind == "any":
        schema = {}
    else:
        schema = {"type": kind}
        if draw(st.integers(0, 3)) == 0:
            default: Any = {
                "string": prose,
                "number": st.builds(lambda m: m / 4, st.integers(-40, 40)),
                "integer": st.integers(-5, 100),
                "boolean": st.booleans(),
            }[kind]
            schema["default"] = draw(default)
    return _decorated(draw, schema)


@cache
def json_schemas(*, max_depth: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """JSON Schemas of the shapes tool namespaces render: nested objects with required
    and optional properties, arrays, string enums with defaults, ``nullable``,
    ``oneOf``, type unions, descriptions, titles and examples."""

    def extend(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
        @st.composite
        def object_schema(draw: st.DrawFn) -> dict[str, Any]:
            props = draw(st.dictionaries(identifiers, inner, max_size=4))
            schema: dict[str, Any] = {"type": "object", "properties": props}
            if draw(st.booleans()) and props:
                schema["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
            return _decorated(draw, schema)

        @st.composite
        def array_schema(draw: st.DrawFn) -> dict[str, Any]:
            schema: dict[str, Any] = {"type": "array"}
            if draw(st.integers(0, 5)):
                schema["items"] = draw(inner)
            return _decorated(draw, schema)

        @st.composite
        def one_of_schema(draw: st.DrawFn) -> dict[str, Any]:
            schema: dict[str, Any] = {"oneOf": draw(st.lists(inner, min_size=1, max_size=3))}
            return _decorated(draw, schema)

        return st.one_of(object_schema(), array_schema(), one_of_schema())

    return st.recursive(_leaf_schema(), extend, max_leaves=3 * max_depth)


@cache
@st.composite
def tool_parameters(draw: st.DrawFn) -> dict[str, Any]:
    """A function tool's ``parameters``: an object schema whose properties are any
    :func:`json_schemas`."""
    props = draw(st.dictionaries(identifiers, json_schemas(), max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if draw(st.booleans()) and props:
        schema["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
    return schema


@cache
@st.composite
def tool_descriptions(draw: st.DrawFn) -> ToolDescription:
    """A function tool: a name, a (possibly multi-line) description, parameters or none."""
    description = draw(st.one_of(prose, st.lists(prose, min_size=1, max_size=3).map("\n".join)))
    params = draw(st.one_of(st.none(), tool_parameters()))
    return ToolDescription(draw(identifiers), description, params)


@cache
def response_formats() -> st.SearchStrategy[ResponseFormat]:
    """Named response formats (OpenChatML only: openai-harmony has none)."""
    return st.builds(ResponseFormat, identifiers, tool_parameters(), st.one_of(st.none(), prose))


# --- structured contents -------------------------------------------------------------


@cache
def system_contents() -> st.SearchStrategy[SystemContent]:
    """System contents: identity, cutoff, date, reasoning effort, channels, built-ins."""
    builtins = st.sampled_from(
        [
            None,
            {"browser": ToolNamespaceConfig.browser()},
            {"python": ToolNamespaceConfig.python()},
            {"browser": ToolNamespaceConfig.browser(), "python": ToolNamespaceConfig.python()},
        ]
    )
    channel_configs = st.one_of(
        st.none(),
        st.just(ChannelConfig()),
        st.builds(
            ChannelConfig,
            st.lists(st.sampled_from(["analysis", "commentary", "final"]), unique=True).map(tuple),
            st.booleans(),
        ),
    )
    return st.builds(
        SystemContent,
        model_identity=st.one_of(
            st.just(SystemContent().model_identity), st.none(), body_texts(max_fragments=4)
        ),
        reasoning_effort=st.one_of(st.none(), st.sampled_from(list(ReasoningEffort))),
        conversation_start_date=st.one_of(st.none(), st.dates().map(str)),
        knowledge_cutoff=st.one_of(st.just("2024-06"), st.none(), st.sampled_from(["2023-10", "2025-01"])),
        channel_config=channel_configs,
        tools=builtins,
    )


@cache
@st.composite
def developer_contents(draw: st.DrawFn, *, harmony_representable: bool = False) -> DeveloperContent:
    """Developer contents: instructions, function tools, other tool namespaces and
    (unless ``harmony_representable``) response formats."""
    instructions = draw(st.one_of(st.none(), body_texts(max_fragments=6)))
    tools: dict[str, ToolNamespaceConfig] | None = None
    if draw(st.booleans()):
        tools = {}
        fn_tools = draw(st.lists(tool_descriptions(), max_size=3, unique_by=lambda t: t.name))
        tools["functions"] = ToolNamespaceConfig(
            "functions", draw(st.one_of(st.none(), prose)), tuple(fn_tools)
        )
        if draw(st.integers(0, 3)) == 0:
            name = draw(identifiers.filter(lambda n: n != "functions"))
            ns_tools = draw(st.lists(tool_descriptions(), max_size=2, unique_by=lambda t: t.name))
            tools[name] = ToolNamespaceConfig(name, draw(st.one_of(st.none(), prose)), tuple(ns_tools))
    formats: tuple[ResponseFormat, ...] = ()
    if not harmony_representable and draw(st.integers(0, 3)) == 0:
        formats = tuple(draw(st.lists(response_formats(), min_size=1, max_size=2)))
    return DeveloperContent(instructions, tools, formats)


# --- messages ---------------------------------------------------------------------------


def _text_parts(draw: st.DrawFn, harmony_representable: bool) -> tuple[Content, ...]:
    if harmony_representable:
        return (TextContent(draw(body_texts())),)
    count = draw(st.sampled_from([1, 1, 1, 1, 0, 2]))
    return tuple(TextContent(draw(body_texts())) for _ in range(count))


@cache
@st.composite
def messages(
    draw: st.DrawFn,
    *,
    roles: tuple[Role, ...] = tuple(Role),
    harmony_representable: bool = False,
) -> Message:
    """A message of one of ``roles`` with any mix of attributes its role may carry:
    channel, recipient, ``content_type`` (plain, or ``<|constrain|>``-ed JSON), call id,
    intent, author name. Tool messages always have a name; a ``<|constrain|>json`` body
    is always JSON."""
    hr = harmony_representable
    role = draw(st.sampled_from(list(roles)))
    maybe = st.integers(0, 3)  # 0: the attribute is present (about one in four)
    name: str | None = None
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None
    constrained = False
    call_id: str | None = None
    intent: str | None = None
    parts: tuple[Content, ...]

    if role is Role.SYSTEM:
        parts = (draw(system_contents()),) if draw(st.booleans()) else _text_parts(draw, hr)
    elif role is Role.DEVELOPER:
        parts = (
            (draw(developer_contents(harmony_representable=hr)),)
            if draw(st.booleans())
            else _text_parts(draw, hr)
        )
    else:
        parts = _text_parts(draw, hr)

    if role is Role.TOOL:
        name = draw(tool_names() if hr else st.one_of(tool_names(), header_words()))
        channel = draw(st.one_of(st.just("commentary"), st.none(), channels()))
        recipient = draw(st.one_of(st.just("assistant"), st.none()))
    elif role is Role.ASSISTANT:
        kind = draw(st.sampled_from(["final", "analysis", "call", "preamble", "commentary", "other"]))
        if kind == "call":
            channel = draw(st.sampled_from(["commentary", "commentary", "analysis"]))
            recipient = draw(st.one_of(tool_names(), recipients()))
        elif kind == "preamble":
            channel = "commentary"
            intent = None if hr else "preamble"
        elif kind == "other":
            channel = draw(st.one_of(st.none(), channels()))
            if draw(maybe) == 0:
                recipient = draw(recipients())
        else:
            channel = kind
        if draw(maybe) == 0:
            name = draw(display_names())
    else:
        if draw(maybe) == 0:
            name = draw(display_names())
        if draw(st.integers(0, 7)) == 0:
            channel = draw(channels())
        if draw(st.integers(0, 7)) == 0:
            recipient = draw(recipients())

    if role in (Role.ASSISTANT, Role.TOOL) and draw(st.booleans()):
        constrained = draw(st.booleans())
        if constrained:
            content_type = draw(st.sampled_from(["json", "json", "json", "text", *([] if hr else [""])]))
        elif channel is not None or not hr:
            content_type = draw(content_types(harmony_representable=hr))
        if content_type is not None and content_type.lower() == "json" and constrained:
            parts = (TextContent(draw(json_bodies())),)

    if not hr:
        if draw(maybe) == 0 or (recipient is not None and draw(st.booleans())):
            call_id = draw(call_ids())
        if intent is None and draw(st.integers(0, 5)) == 0:
            intent = draw(intents())

    return Message(
        author=Author(role, name),
        content=parts,
        channel=channel,
        recipient=recipient,
        content_type=content_type,
        constrained=constrained,
        call_id=call_id,
        intent=intent,
    )


@cache
def message_lists(
    *, harmony_representable: bool = False, min_size: int = 0, max_size: int = 8
) -> st.SearchStrategy[list[Message]]:
    """Any sequence of :func:`messages`, in no particular order."""
    return st.lists(
        messages(harmony_representable=harmony_representable), min_size=min_size, max_size=max_size
    )


@cache
def _yaml_scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.booleans(),
        st.integers(-1000, 1000),
        st.sampled_from([0.5, 0.7, 1.0, 2.5]),
        st.text(string.ascii_letters + string.digits + " _-", max_size=12),
    )


@cache
def transcript_headers() -> st.SearchStrategy[TranscriptHeader]:
    """OCM §2 YAML headers: a version, and maybe a model, generation settings,
    capabilities, profiles and unknown keys."""
    settings = st.dictionaries(
        st.sampled_from(["temperature", "reasoning_effort", "builtin_tools", "top_p"]),
        st.one_of(_yaml_scalars(), st.lists(st.sampled_from(["browser", "python"]), max_size=2)),
        max_size=3,
    )
    capabilities = st.dictionaries(
        st.sampled_from(["roles", "channels", "tokens", "streaming"]),
        st.lists(
            st.sampled_from(["system", "user", "analysis", "final", "response.delta"]),
            max_size=3,
        ),
        max_size=3,
    )
    profiles = st.dictionaries(
        st.just("harmony"),
        st.fixed_dictionaries(
            {"enabled": st.booleans()},
            optional={"encoding": st.just("o200k_harmony"), "tool_calls_in": st.just("commentary")},
        ),
        max_size=1,
    )
    extra = st.dictionaries(identifiers.filter(lambda k: k not in _HEADER_KEYS), _yaml_scalars(), max_size=2)
    return st.builds(
        TranscriptHeader,
        version=st.sampled_from(["2.2", "2.1", "2.0", "1.0"]),
        model=st.one_of(st.none(), st.sampled_from(["gpt-oss-120b", "gpt-oss-20b", "m"])),
        generation_settings=settings,
        capabilities=capabilities,
        profiles=profiles,
        extra=extra,
    )


_HEADER_KEYS = frozenset({"version", "model", "generation_settings", "capabilities", "profiles"})


# --- conversations ----------------------------------------------------------------------


@cache
@st.composite
def _turn(draw: st.DrawFn, hr: bool, tools: tuple[str, ...]) -> list[Message]:
    """One user turn: the user's message, then what the assistant does with it."""
    out = [Message.user(draw(body_texts()), name=draw(st.one_of(st.none(), display_names())))]
    calls = draw(st.integers(0, 2))
    if draw(st.booleans()):
        out.append(Message.assistant(draw(body_texts()), channel="analysis"))
    for _ in range(calls):
        tool = draw(st.sampled_from(list(tools))) if tools else draw(tool_names())
        call_id = None if hr else draw(call_ids())
        channel = "analysis" if tool in BUILTIN_RECIPIENTS and draw(st.booleans()) else "commentary"
        out.append(Message.tool_call(tool, draw(json_bodies()), call_id=call_id, channel=channel))
        out.append(Message.tool_result(tool, draw(st.one_of(json_bodies(), body_texts())), call_id=call_id))
        if draw(st.booleans()):
            out.append(Message.assistant(draw(body_texts()), channel="analysis"))
    if draw(st.integers(0, 3)) == 0:
        out.append(
            Message.assistant(draw(body_texts()), channel="commentary", intent=None if hr else "preamble")
        )
    if draw(st.integers(0, 5)):
        out.append(Message.assistant(draw(body_texts())))
    return out


@cache
@st.composite
def conversations(
    draw: st.DrawFn,
    *,
    harmony_representable: bool = False,
    with_header: bool | None = None,
    max_turns: int = 3,
    structured: bool | None = None,
) -> Conversation:
    """A conversation. ``structured``: an optional system and developer message, then
    turns (user → analysis → tool calls and their replies → preamble → final); else
    any :func:`message_lists`. ``None`` picks either. ``with_header``: attach a
    :class:`TranscriptHeader` (``None``: sometimes; never when ``harmony_representable``
    unless asked for)."""
    hr = harmony_representable
    if structured is None:
        structured = draw(st.booleans())
    msgs: list[Message] = []
    if structured:
        if draw(st.booleans()):
            msgs.append(Message.system(draw(st.one_of(system_contents(), body_texts()))))
        tools: list[str] = []
        if draw(st.booleans()):
            dev = draw(developer_contents(harmony_representable=hr))
            tools = ["functions." + t.name for t in dev.function_tools]
            msgs.append(Message.developer(dev))
        for _ in range(draw(st.integers(0 if msgs else 1, max_turns))):
            msgs += draw(_turn(hr, tuple(tools)))
    else:
        msgs = draw(message_lists(harmony_representable=hr))
    if with_header is None:
        with_header = not hr and draw(st.integers(0, 3)) == 0
    header = draw(transcript_headers()) if with_header else None
    return Conversation(tuple(msgs), header)


def content_text(part: Content, has_function_tools: bool) -> str:
    """The text a content part renders to (what a parser reads back)."""
    if isinstance(part, TextContent):
        return part.text
    if isinstance(part, SystemContent):
        return part.to_text(has_function_tools=has_function_tools)
    return part.to_text()


def as_parsed(conversation: Conversation | Sequence[Message], *, harmony: bool = False) -> list[Message]:
    """The messages a parser reads back from ``conversation`` rendered in either profile:
    the content parts become one text part; with ``harmony``, ``call_id`` and
    ``intent`` are gone. (No CoT policy is applied: render with ``CoTPolicy.KEEP``.)"""
    msgs = conversation.messages if isinstance(conversation, Conversation) else tuple(conversation)
    tools = Conversation(tuple(msgs)).has_function_tools
    out: list[Message] = []
    for m in msgs:
        text = "".join(content_text(p, tools) for p in m.content)
        m = m.with_(content=(TextContent(text),))
        if harmony:
            m = m.with_(call_id=None, intent=None)
        out.append(m)
    return out


def header_of(conversation: Conversation) -> Mapping[str, Any] | None:
    """The transcript header of ``conversation`` as plain data (for comparisons)."""
    h = conversation.header
    if h is None:
        return None
    return {
        "version": h.version,
        "model": h.model,
        "generation_settings": dict(h.generation_settings),
        "capabilities": dict(h.capabilities),
        "profiles": dict(h.profiles),
        "extra": dict(h.extra),
    }
