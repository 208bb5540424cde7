"""A streaming parser for a model's output, generated from its :class:`TemplateFormat`.

Theory of operation
-------------------

:class:`TemplateParser` reads the assistant message as one text: the ``prefix`` the
prompt already wrote of it (``"<think>\\n"`` when the generation prompt opens the
reasoning) followed by what the model writes, fed in pieces of any size. It is sans-IO:
:meth:`~TemplateParser.feed` takes text and returns :class:`Delta` s, and
:meth:`~TemplateParser.finish` says the output has ended.

Everything it reads sits in one buffer; a state (``_State``) says what the text at the
read position is, and each state's handler consumes what it is sure of and moves on:

==============  ========================================================================
state           reads
==============  ========================================================================
CONTENT         the answer; watches for a reasoning start or end, the content markers,
                the tool-call openers (section start, call start), end-of-turn markers
REASONING       reasoning, until its end marker
HELD_REASONING  reasoning in which a tool-call opener appeared: nothing is emitted until
                the reasoning ends (all of it was reasoning) or the output does (the calls
                were real: they are read again as calls)
HELD_CONTENT    a reasoning start inside the answer: held until its end marker (a
                reasoning block) or the end of output (it was text)
PROBE           a ``{`` or ``[`` opening a format whose calls have no markers (Llama 3.1's
                bare JSON): a call, or content?
SECTION         the tool-call region between calls: call starts, separators, list
                brackets, the section end
HEADER          a call's name (and id) up to where its arguments begin
VALUE           arguments written as one JSON-like value (tag_json, object_notation,
                pythonic), through :class:`~.arguments.Lexer` and
                :class:`~.arguments.JsonWriter`
JSON_CALL       a whole call written as a JSON object (json syntax)
TAGGED          between tagged arguments (tag_tagged)
ARG_NAME        a tagged argument's name
ARG_PREFIX      the marker between its name and its value
ARG_VALUE       its value: a string streamed as it comes, any other type when complete
CALL_END        after the arguments: their end marker, an id written after them, the call
                end marker
DONE            after an end-of-turn marker: the rest is dropped
==============  ========================================================================

A marker is looked for by its text without surrounding whitespace; whitespace the
format puts after it is consumed when present. Text that may be the beginning of a
marker is held back until it is known not to be one, so no piece of a marker ever
reaches a content or reasoning delta. Content and reasoning deltas are slices of the
input. What the ``prefix`` makes certain is part of the message before the first
:meth:`~TemplateParser.feed` and never part of a delta.

The hot path: while plain text continues (content, reasoning, a string inside tool-call
arguments) and a new piece holds no character a marker (or the string's end) begins
with, :meth:`~TemplateParser.feed` emits it without running the state machine.

Malformed or cut-off output never raises: what can be recovered is, and a
:class:`~.errors.ParseWarning` says what was done.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, IntEnum
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, Final

from ..core.messages import Message
from .arguments import (
    T_ATOM,
    T_CLOSE,
    T_COLON,
    T_COMMA,
    T_OPEN,
    T_STR,
    T_STR_BEGIN,
    T_STR_END,
    JsonWriter,
    Lexer,
    encode_string,
    property_names,
    property_schema,
    tool_schemas,
    typed_json,
    value_kinds,
)
from .errors import ParseWarning, UnsupportedTemplateError
from .format import CallIdPosition, ContentMode, ReasoningMode, TemplateFormat, ToolSyntax

__all__ = ["Delta", "ParseOptions", "ParsedMessage", "TemplateParser", "ToolCall", "parse_output"]


# --- the public data ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """How to parse one message.

    ``tools``: the tools offered, OpenAI-style (``{"type": "function", "function": {name,
    description, parameters}}``; a bare function object works too): their schemas type
    raw tagged arguments. ``extract_reasoning``: ``False`` leaves reasoning, markers and
    all, in the content. ``prefix``: the text the prompt already wrote of this message
    (after its role header). ``partial``: the output is cut off mid-stream; what is
    uncertain at the end is left out, open calls stay open, and no truncation is warned
    of. ``json_schema``: the answer is JSON (structured output); a ````` ```json ````` fence
    around it is removed.
    """

    tools: tuple[Mapping[str, Any], ...] = ()
    extract_reasoning: bool = True
    prefix: str = ""
    partial: bool = False
    json_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call: the tool's name, its arguments as JSON text (for a call cut off in a
    partial parse: the JSON text written so far), and the id the model wrote or the
    template's ``id_pattern`` makes (``""`` if none)."""

    name: str
    arguments: str
    id: str = ""


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """A parsed assistant message: its answer, its reasoning, its tool calls, and the
    warnings about what had to be recovered."""

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    warnings: tuple[ParseWarning, ...] = ()

    def to_messages(self, *, call_id: Callable[[], str] | None = None) -> list[Message]:
        """The OpenChatML messages: the reasoning on ``analysis``, the answer on ``final``
        (each stripped of surrounding whitespace, left out when empty), and each tool call
        on ``commentary`` addressed ``to=functions.NAME`` with its arguments as JSON and
        its ``call_id``: the model's id, else ``call_id()``, else none."""
        out: list[Message] = []
        if self.reasoning.strip():
            out.append(Message.assistant(self.reasoning.strip(), channel="analysis"))
        if self.content.strip():
            out.append(Message.assistant(self.content.strip(), channel="final"))
        for call in self.tool_calls:
            cid = call.id or (call_id() if call_id is not None else None)
            out.append(Message.tool_call(f"functions.{call.name}", call.arguments, call_id=cid or None))
        return out


@dataclass(frozen=True, slots=True)
class Delta:
    """One event of the stream.

    ``kind``:

    * ``"content"`` / ``"reasoning"`` — ``text`` is the next piece of the answer / of the
      reasoning;
    * ``"tool_call"`` — call ``index`` begins: its ``name`` and, when written before its
      arguments, its ``id``;
    * ``"tool_arguments"`` — ``text`` is the next piece of call ``index`` 's arguments
      (JSON text: the pieces of a call join into its arguments);
    * ``"tool_id"`` — the ``id`` of call ``index``, written after the call began.
    """

    kind: str
    text: str = ""
    index: int = -1
    name: str = ""
    id: str = ""


CONTENT: Final = "content"
REASONING: Final = "reasoning"
TOOL_CALL: Final = "tool_call"
TOOL_ARGUMENTS: Final = "tool_arguments"
TOOL_ID: Final = "tool_id"

_new = object.__new__
_set_kind = Delta.__dict__["kind"].__set__
_set_text = Delta.__dict__["text"].__set__
_set_index = Delta.__dict__["index"].__set__
_set_name = Delta.__dict__["name"].__set__
_set_id = Delta.__dict__["id"].__set__


def _delta(kind: str, text: str = "", index: int = -1, name: str = "", id: str = "") -> Delta:
    """A :class:`Delta` built without the frozen dataclass's ``__init__`` (a hot path)."""
    d: Delta = _new(Delta)
    _set_kind(d, kind)
    _set_text(d, text)
    _set_index(d, index)
    _set_name(d, name)
    _set_id(d, id)
    return d


def parse_output(fmt: TemplateFormat, text: str, options: ParseOptions = ParseOptions()) -> ParsedMessage:
    """The message ``text`` (the model's whole output, after ``options.prefix``) holds."""
    parser = TemplateParser(fmt, options)
    parser.feed(text)
    parser.finish()
    return parser.message


# --- warnings -------------------------------------------------------------------------------

W_TRUNCATED: Final = "W-TRUNCATED"
W_TOOL_ARGS: Final = "W-TOOL-ARGS"
W_TOOL_UNKNOWN: Final = "W-TOOL-UNKNOWN"
W_MARKER: Final = "W-MARKER"
W_STRAY: Final = "W-STRAY"
W_TOOL_CALL: Final = "W-TOOL-CALL"
W_REASONING_OPEN: Final = "W-REASONING-OPEN"
W_INTERNAL: Final = "W-INTERNAL"


# --- markers and scanners ---------------------------------------------------------------------

_WORD: Final = re.compile(r"\w")
_ALL_WORD: Final = re.compile(r"\w+")


class _A(Enum):
    """What a marker found in free text means."""

    REASON_START = 1
    REASON_END = 2
    CONTENT_START = 3
    CONTENT_END = 4
    SECTION = 5
    CALL = 6
    NAME = 7
    END = 8
    STUTTER = 9
    FENCE = 11
    VALUE_END = 12
    STOP = 13


@dataclass(frozen=True, slots=True)
class _Marker:
    core: str
    """The text looked for."""
    trail: str
    """Whitespace consumed after it when present."""
    action: _A
    drop: int = 0
    """For a stutter: how many leading characters are the repeated part."""


def _split_ws(text: str) -> tuple[str, str, str]:
    core = text.strip()
    if not core:
        return text, "", ""
    start = text.index(core)
    return text[:start], core, text[start + len(core) :]


def _marker(text: str, action: _A, drop: int = 0) -> _Marker | None:
    """The marker for ``text`` (``None`` when it is empty or only whitespace). A marker
    ending in a word character keeps its trailing whitespace as a required part
    (``>>>all\\n`` must not match ``>>>allocate``)."""
    _, core, trail = _split_ws(text)
    if not core:
        return None
    if _WORD.match(core[-1]) and trail:
        core, trail = core + trail, ""
    return _Marker(core, trail, action, drop)


def _core(text: str) -> str:
    return text.strip()


class _Scanner:
    """Finds the first of a set of markers in a buffer, and where text that may begin
    one starts. A marker that begins with a word character needs a non-word character
    before it (``Action:`` is not found in ``Reaction:``); a marker that is only a word
    needs one after it too."""

    __slots__ = ("_by_core", "_contains", "_first", "_longer", "_maxlen", "_prefixes", "_re", "markers")

    def __init__(self, markers: Sequence[_Marker | None], exact: bool = False) -> None:
        uniq: dict[str, _Marker] = {}
        for mk in markers:
            if mk is not None and mk.core and mk.core not in uniq:
                uniq[mk.core] = mk
        self.markers = tuple(uniq.values())
        self._by_core = uniq
        cores = sorted(uniq, key=len, reverse=True)
        parts = []
        for core in cores:
            pat = re.escape(core)
            if not exact:
                if _WORD.match(core[0]):
                    pat = r"(?<!\w)" + pat
                if _ALL_WORD.fullmatch(core):
                    pat += r"(?!\w)"
            parts.append(pat)
        self._re = re.compile("|".join(parts)) if parts else None
        self._prefixes = frozenset(c[:k] for c in cores for k in range(1, len(c)))
        firsts = sorted({c[0] for c in cores})
        self._first = re.compile("[" + "".join(re.escape(c) for c in firsts) + "]") if firsts else None
        self._maxlen = max((len(c) for c in cores), default=0)
        self._longer = {c: tuple(o for o in cores if len(o) > len(c) and o.startswith(c)) for c in cores}
        self._contains = {
            c: tuple(
                (o, k)
                for o in cores
                if len(o) > len(c)
                for k in range(1, len(o) - len(c) + 1)
                if o.startswith(c, k)
            )
            for c in cores
        }

    @property
    def first(self) -> re.Pattern[str] | None:
        """The characters a marker can begin with, as a character class."""
        return self._first

    def find(self, buf: str, i: int, final: bool) -> tuple[int, int, _Marker | None]:
        """``(start, end, marker)`` of the first marker in ``buf[i:]``, ``end`` past the
        whitespace it consumes. With no marker: ``(hold, hold, None)``, ``hold`` where
        text that may begin a marker starts (``len(buf)`` if none, always with ``final``)."""
        n = len(buf)
        if self._re is None:
            return n, n, None
        m = self._re.search(buf, i)
        if m is not None:
            p, q = m.start(), m.end()
            core = m.group()
            mk = self._by_core[core]
            if not final:
                for longer_start, hold in self._earlier_partial(buf, i, p, core):
                    if hold:
                        return longer_start, longer_start, None
                if q == n and _ALL_WORD.fullmatch(core):
                    return p, p, None
                for longer in self._longer[core]:
                    if n - p < len(longer) and longer.startswith(buf[p:]):
                        return p, p, None
                if mk.trail and n - q < len(mk.trail) and mk.trail.startswith(buf[q:]):
                    return p, p, None
            if mk.trail:
                k = 0
                trail = mk.trail
                while k < len(trail) and q + k < n and buf[q + k] == trail[k]:
                    k += 1
                q += k
            return p, q, mk
        if final:
            return n, n, None
        return self._hold(buf, i, n), self._hold(buf, i, n), None

    def _earlier_partial(self, buf: str, i: int, p: int, core: str) -> list[tuple[int, bool]]:
        out = []
        n = len(buf)
        for longer, k in self._contains[core]:
            start = p - k
            if start >= i and n - start < len(longer) and longer.startswith(buf[start:]):
                out.append((start, True))
        return out

    def _hold(self, buf: str, i: int, n: int) -> int:
        first = self._first
        if first is None:
            return n
        j = max(i, n - self._maxlen + 1)
        prefixes = self._prefixes
        while True:
            m = first.search(buf, j)
            if m is None:
                return n
            j = m.start()
            if buf[j:] in prefixes:
                return j
            j += 1


def _match_at(
    buf: str, j: int, candidates: Sequence[tuple[str, Any]], final: bool
) -> tuple[str, Any] | bool | None:
    """The first candidate ``(text, tag)`` that ``buf`` has at ``j`` (the candidates
    longest first); ``False`` when the text there is too short to tell (it is a proper
    prefix of one, longer than any found); ``None`` when none is there."""
    rest = len(buf) - j
    wait = False
    for cand in candidates:
        text = cand[0]
        if buf.startswith(text, j):
            return False if wait else cand
        if not final and rest < len(text) and text.startswith(buf[j:]):
            wait = True
    return False if wait else None


def _skip_ws(buf: str, j: int) -> int:
    n = len(buf)
    while j < n and buf[j] in " \t\r\n":
        j += 1
    return j


def _consume_trail(buf: str, q: int, trail: str) -> int:
    k = 0
    while k < len(trail) and q + k < len(buf) and buf[q + k] == trail[k]:
        k += 1
    return q + k


# --- the grammar: what a format says, compiled ---------------------------------------------------

_JSON_OPENERS: Final = "{[("
_MARKER_SEGMENT: Final = re.compile(r"<[^<>\s]{1,64}>|\[[^\[\]\s]{1,64}\]|<｜[^｜]{1,64}｜>")


def _leading_segment(core: str) -> str:
    """The special-token-like piece a marker begins with (``<|channel>`` of
    ``<|channel>thought``), ``""`` when it is the whole marker or there is none."""
    m = _MARKER_SEGMENT.match(core)
    if m is None or m.end() == len(core):
        return ""
    return m.group()


def _trailing_segments(text: str) -> list[str]:
    """Every suffix of ``text`` made only of special-token-like pieces, shortest first
    (``<|CHATBOT_TOKEN|>``, ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``)."""
    out: list[str] = []
    end = len(text.rstrip())
    start = end
    while start > 0:
        best = -1
        for m in _MARKER_SEGMENT.finditer(text, 0, start):
            if m.end() == start:
                best = m.start()
        if best < 0:
            break
        start = best
        out.append(text[start:end])
    return out


def _id_regex(pattern: str) -> re.Pattern[str] | None:
    """A regex matching ids made by ``id_pattern`` (``functions.{name}:{index}``)."""
    if not pattern or "{" not in pattern:
        return None
    out = []
    for lit, fld, _spec, _conv in _formatter_parse(pattern):
        out.append(re.escape(lit))
        if fld is None:
            continue
        if fld == "name":
            out.append(r"(?P<name>[^\s<>]+?)")
        elif fld == "index":
            out.append(r"\d+")
        else:
            out.append(r".*?")
    try:
        return re.compile("".join(out))
    except re.error:
        return None


def _formatter_parse(pattern: str) -> list[tuple[str, str | None, str | None, str | None]]:
    import string

    try:
        return list(string.Formatter().parse(pattern))
    except ValueError:
        return [(pattern, None, None, None)]


@dataclass(frozen=True, slots=True)
class _Grammar:
    """The scanners and settings a format gives a parser (built once per format)."""

    fmt: TemplateFormat
    extract: bool
    json_answer: bool
    syntax: ToolSyntax
    content_scan: _Scanner
    reasoning_scan: _Scanner
    reasoning_end_scan: _Scanner
    start_in_reasoning: bool
    bare: str
    """``"json"`` or ``"pythonic"`` when calls may open the output with no marker."""
    header_stutters: tuple[str, ...]
    section_cands: tuple[tuple[str, Any], ...]
    call_end_core: str
    args_end_core: str
    args_end_closes: bool
    """The arguments' end marker begins with the JSON value's own closing bracket."""
    section_end_core: str
    call_start_core: str
    name_prefix_core: str
    opener: re.Pattern[str] | None
    value_stops: tuple[str, ...]
    tagged_cands: tuple[tuple[str, Any], ...]
    tagged_first: re.Pattern[str] | None
    arg_name_scan: _Scanner
    arg_prefix_cands: tuple[tuple[str, Any], ...]
    arg_name_trail: str
    value_scan: _Scanner
    id_re: re.Pattern[str] | None
    wrap_start: str
    wrap_end: str
    custom_quote: str


@functools.lru_cache(maxsize=256)
def _grammar(fmt: TemplateFormat, extract: bool, json_answer: bool) -> _Grammar:
    rf, cf, tf = fmt.reasoning, fmt.content, fmt.tools
    syntax = tf.syntax
    has_reasoning = rf.mode is not ReasoningMode.NONE and bool(rf.end)
    tools_on = syntax is not ToolSyntax.NONE

    tool_triggers: list[_Marker | None] = []
    if tools_on:
        tool_triggers.append(_marker(tf.section_start, _A.SECTION))
        tool_triggers.append(_marker(tf.call_start, _A.CALL))
        if (
            not _core(tf.section_start)
            and not _core(tf.call_start)
            and syntax in (ToolSyntax.TAG_JSON, ToolSyntax.TAG_TAGGED, ToolSyntax.OBJECT_NOTATION)
        ):
            tool_triggers.append(_marker(tf.name_prefix, _A.NAME))
    end_markers = [_marker(e, _A.END) for e in fmt.end_markers]

    content: list[_Marker | None] = []
    stutters: list[_Marker | None] = []
    reason_start = (
        _marker(rf.start, _A.REASON_START) if has_reasoning and rf.mode is ReasoningMode.TAGS else None
    )
    if reason_start is not None:
        content.append(reason_start)
    for mk in [reason_start, *tool_triggers]:
        if mk is not None:
            seg = _leading_segment(mk.core)
            if seg:
                stutters.append(_Marker(seg + mk.core, mk.trail, _A.STUTTER, len(seg)))
    content += tool_triggers
    if has_reasoning:
        content.append(_marker(rf.end, _A.REASON_END))
    if cf.mode is not ContentMode.PLAIN:
        content.append(_marker(cf.start, _A.CONTENT_START))
        content.append(_marker(cf.end, _A.CONTENT_END))
    content += end_markers
    content += stutters
    header_stutters: list[str] = []
    if json_answer:
        content.append(_Marker("```json\n", "", _A.FENCE))
        content.append(_Marker("```", "\n", _A.FENCE))
    gp = fmt.generation_prompt
    for prompt in {gp.header} if gp.header else {gp.default, gp.thinking, gp.no_thinking}:
        for seg in _trailing_segments(prompt):
            header_stutters.append(seg)
    reasoning = [_marker(rf.end, _A.REASON_END), *tool_triggers, *end_markers]

    bare = ""
    if not _core(tf.section_start) and not _core(tf.call_start):
        if syntax is ToolSyntax.JSON:
            bare = "json"
        elif syntax is ToolSyntax.PYTHONIC:
            bare = "pythonic"

    section_end = _core(tf.section_end)
    call_start = _core(tf.call_start)
    call_end = _core(tf.call_end)
    args_end = _core(tf.arguments_end)
    args_end_closes = bool(args_end) and args_end[0] in "}])"
    sep = _core(tf.separator)
    cands: list[tuple[str, Any]] = []
    for text, tag in (
        (section_end, "section_end"),
        (call_start, "call_start"),
        (call_end, "call_end"),
        (_core(tf.section_start), "section_start"),
        (sep, "separator"),
    ):
        if text:
            cands.append((text, tag))
    cands += [(_core(e), "end") for e in fmt.end_markers if _core(e)]
    cands.sort(key=lambda c: -len(c[0]))

    name_prefix = _core(tf.name_prefix)
    args_start = _core(tf.arguments_start)
    opener_alts: list[str] = []
    if args_start:
        opener_alts.append(re.escape(args_start))
    if syntax in (ToolSyntax.TAG_JSON, ToolSyntax.OBJECT_NOTATION):
        opener_alts.append(r"\{")
    elif syntax is ToolSyntax.PYTHONIC:
        opener_alts.append(r"\(")
    elif syntax is ToolSyntax.TAG_TAGGED:
        for t in (tf.arg_name_prefix,):
            if _core(t):
                opener_alts.append(re.escape(_core(t)))
    name_suffix = _core(tf.name_suffix)
    for t in (args_end, call_end, section_end):
        # an end marker ends a call with no arguments, unless the name's suffix holds it
        if t and not (syntax is not ToolSyntax.TAG_TAGGED and t[0] in "}])") and t not in name_suffix:
            opener_alts.append(re.escape(t))
    opener_alts.sort(key=len, reverse=True)
    opener = re.compile("|".join(opener_alts)) if opener_alts else None

    stops = [
        t for t in (args_end, call_end, section_end, call_start) if t and t[0] not in _JSON_OPENERS + "}])"
    ]
    stops += [_core(e) for e in fmt.end_markers if _core(e)]

    tagged: list[tuple[str, Any]] = []
    for text, tag in (
        (_core(tf.arg_name_prefix), "arg"),
        (args_end, "args_end"),
        (call_end, "stop"),
        (section_end, "stop"),
        (call_start, "stop"),
        (_core(tf.arg_separator), "separator"),
    ):
        if text:
            tagged.append((text, tag))
    tagged += [(_core(e), "stop") for e in fmt.end_markers if _core(e)]
    tagged.sort(key=lambda c: -len(c[0]))
    tagged_firsts = sorted({t[0][0] for t in tagged})
    tagged_first = (
        re.compile("[" + "".join(re.escape(c) for c in tagged_firsts) + "]") if tagged_firsts else None
    )

    _, name_suffix_core, name_trail = _split_ws(tf.arg_name_suffix)
    _, vp_core, vp_trail = _split_ws(tf.arg_value_prefix)
    _, vpj_core, vpj_trail = _split_ws(tf.arg_value_prefix_json)
    if not name_suffix_core:  # the name ends at a newline: nothing more to consume
        name_trail = ""
    elif not vp_core:  # whitespace between the name's end and the value
        name_trail += tf.arg_value_prefix
    arg_name_markers = [
        _Marker(name_suffix_core, "", _A.VALUE_END) if name_suffix_core else None,
        _Marker(vp_core, "", _A.STOP) if vp_core else None,
        _Marker(vpj_core, "", _A.STOP) if vpj_core else None,
    ]
    if not name_suffix_core and not vp_core:
        arg_name_markers.append(_Marker("\n", "", _A.VALUE_END))
    prefix_cands: list[tuple[str, Any]] = []
    if vpj_core and vpj_core != vp_core:
        prefix_cands.append((vpj_core, ("json", vpj_trail)))
    if vp_core:
        prefix_cands.append((vp_core, ("raw", vp_trail)))
    prefix_cands.sort(key=lambda c: -len(c[0]))

    vs_lead, vs_core, vs_trail = _split_ws(tf.arg_value_suffix)
    value_markers: list[_Marker | None] = []
    if vs_core:
        if vs_lead:
            value_markers.append(_Marker(vs_lead + vs_core, vs_trail, _A.VALUE_END))
        value_markers.append(_Marker(vs_core, vs_trail, _A.VALUE_END))
    an = _core(tf.arg_name_prefix)
    for t in (args_end, call_end, section_end, an if an != vs_core else ""):
        if t:  # where a value left open ends (the suffix's leading whitespace is not the value's)
            if vs_lead:
                value_markers.append(_Marker(vs_lead + t, "", _A.STOP, len(vs_lead)))
            value_markers.append(_Marker(t, "", _A.STOP))

    return _Grammar(
        fmt=fmt,
        extract=extract,
        json_answer=json_answer,
        syntax=syntax,
        content_scan=_Scanner(content),
        reasoning_scan=_Scanner(reasoning),
        reasoning_end_scan=_Scanner([_marker(rf.end, _A.REASON_END)]),
        start_in_reasoning=has_reasoning and rf.mode is ReasoningMode.DELIMITER,
        bare=bare,
        header_stutters=tuple(sorted(set(header_stutters), key=len, reverse=True)),
        section_cands=tuple(cands),
        call_end_core=call_end,
        args_end_core=args_end,
        args_end_closes=args_end_closes,
        section_end_core=section_end,
        call_start_core=call_start,
        name_prefix_core=name_prefix,
        opener=opener,
        value_stops=tuple(stops),
        tagged_cands=tuple(tagged),
        tagged_first=tagged_first,
        arg_name_scan=_Scanner(arg_name_markers, exact=True),
        arg_prefix_cands=tuple(prefix_cands),
        arg_name_trail=name_trail,
        value_scan=_Scanner(value_markers, exact=True),
        id_re=_id_regex(tf.id_pattern),
        wrap_start=tf.arg_value_wrap_start if tf.arg_value_wrap_end else "",
        wrap_end=tf.arg_value_wrap_end,
        custom_quote=_core(tf.string_quote) if syntax is ToolSyntax.OBJECT_NOTATION else "",
    )


_NEVER: Final = re.compile(r"(?!)")
_FAST_CONTENT: Final = 0
_FAST_REASONING: Final = 1
_FAST_STRING: Final = 2
"""Raw text of a string value."""
_FAST_QSTRING: Final = 3
"""The inside of a double-quoted string (escapes decoded)."""
_FAST_SQSTRING: Final = 4
"""The inside of a single-quoted string."""
_STRING_ENDS: Final = {
    '"': (re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S), _FAST_QSTRING),
    "'": (re.compile(r"[^'\\]*(?:\\[^'][^'\\]*)*", re.S), _FAST_SQSTRING),
}
_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_NOT_AS_IS: Final = re.compile(r'\\[^"\\bfnrt]|[\x00-\x1f]')
"""What in a double-quoted string body :func:`~.arguments.encode_string` would write otherwise."""
_SINGLE_NOT_AS_IS: Final = re.compile(r'\\[^"\\bfnrt]|[\x00-\x1f"]')


# --- probing a markerless call -----------------------------------------------------------------

_PROBE_JSON: Final = re.compile(r"\s*(?:\[\s*)?\{\s*([\"'])([^\"'\\\n]{1,64})\1\s*:")
_PROBE_JSON_PARTIAL: Final = re.compile(
    r"\s*(?:\[\s*(?:\{\s*(?:[\"'][^\"'\\\n]{0,64}(?:[\"']\s*)?)?)?|\{\s*(?:[\"'][^\"'\\\n]{0,64}(?:[\"']\s*)?)?)?"
)
_PROBE_PY: Final = re.compile(r"\s*\[\s*([A-Za-z_][\w.\-]*)\s*\(")
_PROBE_PY_PARTIAL: Final = re.compile(r"\s*\[\s*(?:[A-Za-z_][\w.\-]*\s*)?")
_NAME_TOKEN: Final = re.compile(r"[^\s<>\"'`\[\]{}(),;|]+")


# --- the parser ---------------------------------------------------------------------------------


class _State(IntEnum):
    """What the text at the read position is (see the module docstring)."""

    CONTENT = 0
    REASONING = 1
    HELD_REASONING = 2
    HELD_CONTENT = 3
    PROBE = 4
    SECTION = 5
    HEADER = 6
    VALUE = 7
    JSON_CALL = 8
    TAGGED = 9
    ARG_NAME = 10
    ARG_PREFIX = 11
    ARG_VALUE = 12
    CALL_END = 13
    DONE = 14


_CALL_STATES: Final = frozenset(
    {
        _State.HEADER,
        _State.VALUE,
        _State.JSON_CALL,
        _State.TAGGED,
        _State.ARG_NAME,
        _State.ARG_PREFIX,
        _State.ARG_VALUE,
    }
)


class _Call:
    """A tool call being read."""

    __slots__ = ("announced", "closed", "id", "index", "name", "parts", "schema", "start")

    def __init__(self, index: int, start: int) -> None:
        self.index = index
        self.start = start
        """Where the call begins in the text (an absolute offset)."""
        self.name = ""
        self.id = ""
        self.parts: list[str] = []
        self.announced = False
        self.closed = False
        self.schema: Mapping[str, Any] = {}


class _JsonCall:
    """Reads one call written as a JSON object, token by token: its name, id and
    arguments (under the format's keys, or common ones), the arguments written out by a
    :class:`JsonWriter`."""

    __slots__ = (
        "_arg_keys",
        "_capture",
        "_depth",
        "_id_keys",
        "_key",
        "_level",
        "_mode",
        "_name_is_key",
        "_name_keys",
        "_skip",
        "_state",
        "_sub_buf",
        "_sub_i",
        "_sub_lexer",
        "_wrapper_keys",
        "args_started",
        "done",
        "id",
        "name",
        "out",
        "positional",
        "writer",
    )

    _K, _C, _V, _N = 0, 1, 2, 3

    def __init__(self, fmt: TemplateFormat) -> None:
        tf = fmt.tools
        self._name_keys = {k for k in (tf.name_key, "name") if k}
        self._arg_keys = {k for k in (tf.arguments_key, "arguments", "parameters") if k}
        self._id_keys = {k for k in (tf.id_key, "id") if k}
        self._wrapper_keys = {k for k in (tf.wrapper_key, "function") if k}
        self._name_is_key = tf.name_is_key
        self._level = 0
        self._state = self._K
        self._mode = ""
        self._key = ""
        self._capture: list[str] = []
        self._skip = 0
        self._depth = 0
        self._sub_lexer: Lexer | None = None
        self._sub_buf = ""
        self._sub_i = 0
        self.writer: JsonWriter | None = None
        self.args_started = False
        self.done = False
        self.name: str | None = None
        self.id: str | None = None
        self.out: list[str] = []
        self.positional: Sequence[str] = ()

    def feed(self, tokens: list[tuple[int, str]]) -> None:
        n = len(tokens)
        k = 0
        while k < n:
            if self.done:
                return
            mode = self._mode
            if mode == "args":
                assert self.writer is not None
                out: list[str] = []
                k = self.writer.write_from(tokens, k, out)
                if out:
                    self.out.append("".join(out))
                if self.writer.done:
                    self._mode = ""
                    self._state = self._N
                continue
            kind, value = tokens[k]
            k += 1
            if mode == "key":
                if kind == T_STR:
                    self._capture.append(value)
                elif kind == T_STR_END:
                    self._key = "".join(self._capture)
                    self._mode = ""
                    self._state = self._C
                continue
            if mode in ("name", "id"):
                if kind == T_STR:
                    self._capture.append(value)
                    continue
                if kind == T_STR_BEGIN:
                    continue
                if kind in (T_STR_END, T_ATOM):
                    if kind == T_ATOM:
                        self._capture.append(value)
                    text = "".join(self._capture)
                    if mode == "name":
                        self.name = text
                    else:
                        self.id = text
                    self._mode = ""
                    self._state = self._N
                    continue
                self._mode = "skip"  # a container where a name or id should be
                self._skip = 0
                mode = "skip"
            if mode == "skip":
                if kind == T_OPEN:
                    self._skip += 1
                elif kind == T_CLOSE:
                    self._skip -= 1
                elif kind == T_STR_BEGIN and self._skip == 0:
                    self._skip = -1  # a string at the top of the skipped value
                    continue
                if self._skip <= 0 and kind in (T_CLOSE, T_ATOM, T_STR_END):
                    self._mode = ""
                    self._state = self._N
                    self._skip = 0
                continue
            if mode == "args_str":
                if kind == T_STR:
                    self._sub_buf += value
                    self._sub_run(False)
                elif kind == T_STR_END:
                    self._sub_run(True)
                    assert self.writer is not None
                    closing = self.writer.close()
                    if closing:
                        self.out.append(closing)
                    self._mode = ""
                    self._state = self._N
                continue
            self._structure(kind, value)

    @property
    def in_args(self) -> bool:
        """Whether the arguments object is being written (not as a string)."""
        return self._mode == "args"

    def _sub_run(self, final: bool) -> None:
        assert self._sub_lexer is not None and self.writer is not None
        self._sub_i = self._sub_lexer.run(self._sub_buf, self._sub_i, final)
        text = self.writer.write(self._sub_lexer.tokens)
        self._sub_lexer.tokens.clear()
        if text:
            self.out.append(text)
        if self._sub_i > 4096:
            self._sub_buf = self._sub_buf[self._sub_i :]
            self._sub_i = 0

    def _structure(self, kind: int, value: str) -> None:
        if self._level == 0:
            if kind == T_OPEN and value == "{":
                self._level = 1
                self._state = self._K
            return
        state = self._state
        if state in (self._K, self._N):
            if kind == T_STR_BEGIN:
                self._mode = "key"
                self._capture = []
            elif kind == T_OPEN:  # a container where a key should be: skipped
                self._mode = "skip"
                self._skip = 1
            elif kind == T_ATOM:
                self._key = value
                self._state = self._C
            elif kind == T_CLOSE:
                self._level -= 1
                self._state = self._N
                if self._level == 0:
                    self.done = True
            elif kind == T_COMMA:
                self._state = self._K
            return
        if state == self._C:
            self._state = self._V
            if kind == T_COLON:
                return
        # a value for self._key
        key = self._key
        if key in self._wrapper_keys and kind == T_OPEN and value == "{" and self.name is None:
            self._level += 1
            self._state = self._K
            return
        if key in self._name_keys and kind in (T_STR_BEGIN, T_ATOM) and self.name is None:
            self._begin_capture("name", kind, value)
            return
        if key in self._id_keys and kind in (T_STR_BEGIN, T_ATOM):
            self._begin_capture("id", kind, value)
            return
        is_args = key in self._arg_keys and not self.args_started
        if (
            not is_args
            and self._name_is_key
            and self.name is None
            and kind == T_OPEN
            and value == "{"
            and key not in ("type", *self._id_keys)
        ):
            self.name = key
            is_args = True
        if is_args:
            self.args_started = True
            self.writer = JsonWriter(self.positional)
            if kind == T_STR_BEGIN:
                self._mode = "args_str"
                self._sub_lexer = Lexer()
                return
            self._mode = "args"
            text = self.writer.write(((kind, value),))
            if text:
                self.out.append(text)
            if self.writer.done:
                self._mode = ""
                self._state = self._N
            return
        if kind == T_CLOSE:  # a key with no value
            self._level -= 1
            self._state = self._N
            if self._level == 0:
                self.done = True
            return
        self._mode = "skip"
        self._skip = 0
        if kind == T_OPEN:
            self._skip = 1
        elif kind == T_STR_BEGIN:
            self._skip = -1
        else:
            self._mode = ""
            self._state = self._N

    def _begin_capture(self, mode: str, kind: int, value: str) -> None:
        if kind == T_ATOM:
            if mode == "name":
                self.name = value
            else:
                self.id = value
            self._state = self._N
            return
        self._mode = mode
        self._capture = []

    def close(self) -> str:
        """Text that ends the arguments now (``""`` if they have not begun)."""
        if self.writer is None:
            return ""
        if self._mode == "args_str":
            self._sub_run(True)
        return self.writer.close()


class TemplateParser:
    """The streaming parser for ``fmt``; see the module docstring.

    :meth:`feed` returns the deltas that what was fed makes certain; :meth:`finish`
    ends the output (flushes, closes what is open, warns of what was recovered);
    :attr:`message` is the parse so far. Never raises on any output text; a Harmony
    format (``fmt.harmony``) raises :class:`~.errors.UnsupportedTemplateError` here: the
    core codec parses it.
    """

    def __init__(self, fmt: TemplateFormat, options: ParseOptions = ParseOptions()) -> None:
        if fmt.harmony:
            raise UnsupportedTemplateError(
                f"{fmt.name or 'this template'} writes Harmony: parse its output with the core codec"
            )
        self._fmt = fmt
        self._opts = options
        self._g = _grammar(fmt, options.extract_reasoning, options.json_schema is not None)
        self._schemas = tool_schemas(options.tools)
        self._rkind = REASONING if options.extract_reasoning else CONTENT
        self._buf = ""
        self._i = 0
        self._base = 0
        self._prefix_len = len(options.prefix)
        self._muted = False
        self._finished = False
        self._out: list[Delta] = []
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_Call] = []
        self._warnings: list[ParseWarning] = []
        self._warned: set[tuple[str, str, int]] = set()
        self._message: ParsedMessage | None = None
        # state
        self._state = _State.REASONING if self._g.start_in_reasoning else _State.CONTENT
        self._at_start = True
        self._fence_open = False
        self._done_at = 0
        """DONE: where the end-of-turn marker ended (an absolute offset)."""
        self._no_mid_reasoning = False
        self._held_at = 0
        """HELD_*: absolute offset where the held text begins."""
        self._held_mark = 0
        """HELD_CONTENT: absolute offset where the reasoning start marker ends."""
        self._scan_at = 0
        """HELD_*: absolute offset from which to look for the reasoning end."""
        self._section_open = False
        self._expect_call = False
        self._list_depth = 0
        self._call: _Call | None = None
        self._lexer: Lexer | None = None
        self._writer: JsonWriter | None = None
        self._jcall: _JsonCall | None = None
        self._args_end_seen = False
        self._end_step = 0
        self._arg_count = 0
        self._arg_name = ""
        self._arg_mode = ""
        self._arg_pieces: list[str] = []
        self._arg_started = False
        self._arg_cdata = 0
        self._handlers: list[Callable[[bool], bool]] = [
            self._h_content,  # CONTENT
            self._h_reasoning,  # REASONING
            self._h_held_reasoning,  # HELD_REASONING
            self._h_held_content,  # HELD_CONTENT
            self._h_probe,  # PROBE
            self._h_section,  # SECTION
            self._h_header,  # HEADER
            self._h_value,  # VALUE
            self._h_json_call,  # JSON_CALL
            self._h_tagged,  # TAGGED
            self._h_arg_name,  # ARG_NAME
            self._h_arg_prefix,  # ARG_PREFIX
            self._h_arg_value,  # ARG_VALUE
            self._h_call_end,  # CALL_END
            self._h_done,  # DONE
        ]
        self._fast: tuple[re.Pattern[str], int] | None = None
        """The hot path, when the next text can only continue what is being read:
        (the characters that would end it, what it is: ``_FAST_*``)."""
        if options.prefix:
            self._muted = True
            self.feed(options.prefix)
            self._muted = False

    # --- public ----------------------------------------------------------------------

    @property
    def message(self) -> ParsedMessage:
        """The message parsed so far (after :meth:`finish`, the final one)."""
        if self._message is not None:
            return self._message
        msg = ParsedMessage(
            content="".join(self._content),
            reasoning="".join(self._reasoning),
            tool_calls=tuple(ToolCall(c.name, "".join(c.parts), c.id) for c in self._calls if c.announced),
            warnings=tuple(self._warnings),
        )
        if self._finished:
            self._message = msg
        return msg

    def feed(self, text: str) -> list[Delta]:
        """Read ``text`` (the next piece of the output); return the deltas it makes
        certain. After :meth:`finish`, nothing is read."""
        if not text or self._finished:
            return []
        fast = self._fast
        if fast is not None and self._i == len(self._buf):
            # the hot path: the text continues what is being read, and nothing in it can end it
            what = fast[1]
            if what >= _FAST_QSTRING:
                hot = self._hot_qstring(text, fast[0], what == _FAST_SQSTRING)
                if hot is not None:
                    return [hot]
            elif fast[0].search(text) is None:
                if what == _FAST_CONTENT:
                    self._content.append(text)
                    hot = _delta(CONTENT, text)
                elif what == _FAST_REASONING:
                    self._reasoning.append(text)
                    hot = _delta(REASONING, text)
                else:
                    hot = self._hot_string(text)
                self._base += len(self._buf)
                self._buf = text
                self._i = len(text)
                return [hot]
        out: list[Delta] = []
        self._out = out
        i = self._i
        buf = self._buf
        if i > 1:
            self._base += i - 1
            self._buf = buf[i - 1 :] + text
            self._i = 1
        else:
            self._buf = buf + text
        try:
            self._run(False)
        except Exception as exc:  # a parser bug: keep the stream alive, say so
            self._internal_error(exc)
        self._fast = self._fast_path()
        return out

    def _hot_string(self, text: str) -> Delta:
        """The hot path inside a raw string value of tool-call arguments."""
        call = self._call
        assert call is not None
        piece = encode_string(text)
        call.parts.append(piece)
        return _delta(TOOL_ARGUMENTS, piece, call.index)

    def _hot_qstring(self, text: str, body_re: re.Pattern[str], single: bool) -> Delta | None:
        """The hot path inside a quoted string of tool-call arguments: ``None`` when the
        string may end in ``text`` or holds an escape JSON does not know."""
        m = body_re.match(text)
        used = m.end() if m is not None else 0
        if used == 0 or used < len(text) - 1 or (used == len(text) - 1 and text[-1] != "\\"):
            return None  # a closing quote (or a character the quick decoder cannot take)
        body = text[:used]
        if (_SINGLE_NOT_AS_IS if single else _NOT_AS_IS).search(body) is None:
            piece = body  # already JSON as the writer spells it
        elif "\\" in body:
            if _SURROGATE.search(body):  # pairs and lone halves: the full parser
                return None
            if single and '"' in body:  # its raw double quotes escaped for JSON
                if '\\"' in body:
                    return None
                body = body.replace('"', '\\"')
            try:
                piece = encode_string(scanstring(body + '"', 0, False)[0])
            except ValueError:
                return None
        else:
            piece = encode_string(body)
        call = self._call
        assert call is not None
        if not piece:
            return None
        call.parts.append(piece)
        self._base += len(self._buf)
        self._buf = text
        self._i = used
        return _delta(TOOL_ARGUMENTS, piece, call.index)

    def _fast_path(self) -> tuple[re.Pattern[str], int] | None:
        """What the hot path of the next :meth:`feed` is, if there is one."""
        if self._muted or self._i != len(self._buf):
            return None
        state = self._state
        g = self._g
        if state is _State.CONTENT:
            if self._at_start:
                return None
            return (g.content_scan.first or _NEVER, _FAST_CONTENT)
        if state is _State.REASONING:
            return (
                g.reasoning_scan.first or _NEVER,
                _FAST_REASONING if self._opts.extract_reasoning else _FAST_CONTENT,
            )
        call = self._call
        if call is None or not call.announced:
            return None
        if state is _State.ARG_VALUE:
            if self._arg_mode == "string" and self._arg_cdata == -1 and self._arg_started:
                return (g.value_scan.first or _NEVER, _FAST_STRING)
            return None
        lexer = self._lexer
        if lexer is None or not lexer.in_string:
            return None
        writer = self._writer if state is _State.VALUE else None
        if state is _State.JSON_CALL and self._jcall is not None and self._jcall.in_args:
            writer = self._jcall.writer
        if writer is None or not writer.in_string:
            return None
        ends = _STRING_ENDS.get(lexer.quote)
        return ends if ends is not None else (re.compile(re.escape(lexer.quote[0])), _FAST_STRING)

    def finish(self) -> list[Delta]:
        """End of output: flush what was held, close what is open, recover and warn.
        Returns the last deltas; later calls return nothing."""
        if self._finished:
            return []
        out: list[Delta] = []
        self._out = out
        self._fast = None
        try:
            self._finish()
        except Exception as exc:
            self._internal_error(exc)
        self._finished = True
        return out

    # --- plumbing ----------------------------------------------------------------------

    def _run(self, final: bool) -> None:
        handlers = self._handlers
        guard = 8 * (len(self._buf) - self._i) + 256
        while handlers[self._state](final):
            guard -= 1
            if guard < 0:  # pragma: no cover - a handler that never settles
                raise RuntimeError("parser loop did not settle")

    def _internal_error(self, exc: Exception) -> None:
        self._fast = None
        self._warn(W_INTERNAL, f"parser error {type(exc).__name__}: {exc}; the rest is kept as content")
        rest = self._buf[self._i :]
        self._i = len(self._buf)
        self._state = _State.CONTENT
        self._at_start = False
        if rest:
            self._content.append(rest)
            if not self._muted:
                self._out.append(_delta(CONTENT, rest))

    def _abs(self, j: int) -> int:
        return self._base + j

    def _warn(self, code: str, message: str, at: int | None = None) -> None:
        """Record a warning about the text at buffer index ``at`` (by default: the end
        of what was read)."""
        offset = max(0, self._abs(len(self._buf) if at is None else at) - self._prefix_len)
        key = (code, message, self._call.index if self._call is not None else -1)
        if key in self._warned:
            return
        self._warned.add(key)
        self._warnings.append(ParseWarning(code, message, offset))

    def _emit(self, kind: str, a: int, b: int) -> None:
        """Emit ``buf[a:b]`` as ``kind`` (content or reasoning)."""
        if b <= a:
            return
        text = self._buf[a:b]
        (self._content if kind == CONTENT else self._reasoning).append(text)
        if not self._muted:
            self._out.append(_delta(kind, text))

    def _emit_reasoning_marker(self, a: int, b: int) -> None:
        """A reasoning marker: part of the content when reasoning is not extracted."""
        if not self._opts.extract_reasoning:
            self._emit(CONTENT, a, b)

    # --- calls -------------------------------------------------------------------------

    def _new_call(self, at: int) -> _Call:
        call = _Call(len(self._calls), self._abs(at))
        self._calls.append(call)
        self._call = call
        return call

    def _announce(self, call: _Call, name: str, id: str) -> None:
        call.name = name
        call.schema = self._schemas.get(name, {})
        if not id and self._fmt.tools.id_pattern:
            try:
                id = self._fmt.tools.id_pattern.format(name=name, index=call.index)
            except (KeyError, IndexError, ValueError):
                id = ""
        call.id = id
        call.announced = True
        if self._schemas and name not in self._schemas:
            self._warn(
                W_TOOL_UNKNOWN, f"call to {name!r}, a tool that was not offered", call.start - self._base
            )
        if not name:
            self._warn(W_TOOL_CALL, "a tool call without a name", call.start - self._base)
        if not self._muted:
            self._out.append(_delta(TOOL_CALL, "", call.index, name, id))
            if call.parts:
                self._out.append(_delta(TOOL_ARGUMENTS, "".join(call.parts), call.index))

    def _args(self, text: str) -> None:
        call = self._call
        if not text or call is None:
            return
        call.parts.append(text)
        if call.announced and not self._muted:
            self._out.append(_delta(TOOL_ARGUMENTS, text, call.index))

    def _late_id(self, call: _Call, id: str) -> None:
        if not id or id == call.id:
            return
        call.id = id
        if call.announced and not self._muted:
            self._out.append(_delta(TOOL_ID, "", call.index, "", id))

    def _clean_name(self, text: str) -> str:
        """A tool name from the text where one was written (quotes and spaces dropped)."""
        name = text.strip().strip("\"'`").strip()
        if not name or _NAME_TOKEN.fullmatch(name):
            return name
        # a name with more around it: an offered tool's name in it, else its first word
        known = [k for k in self._schemas if k in name]
        if known:
            return max(known, key=len)
        m = _NAME_TOKEN.search(name)
        return m.group() if m else ""

    def _split_header(self, header: str) -> tuple[str, str]:
        """The name and id in the text between a call's start and its arguments."""
        tf = self._fmt.tools
        h = header.strip()
        g = self._g
        if g.id_re is not None:  # the id names the tool (``functions.get_weather:0``)
            m = g.id_re.fullmatch(h)
            if m is not None and "name" in m.groupdict():
                return self._clean_name(m.group("name")), m.group()
        id_ = ""
        id_prefix, id_suffix = _core(tf.id_prefix), _core(tf.id_suffix)
        if tf.id_position is CallIdPosition.BEFORE_NAME and id_prefix and h.startswith(id_prefix):
            rest = h[len(id_prefix) :]
            cut = rest.find(id_suffix) if id_suffix else -1
            if cut < 0 and g.name_prefix_core:
                cut = rest.find(g.name_prefix_core)
            if cut >= 0:
                id_, h = (
                    rest[:cut].strip(),
                    rest[cut + (len(id_suffix) if id_suffix and rest.startswith(id_suffix, cut) else 0) :],
                )
            else:
                id_, h = rest.strip(), ""
            h = h.strip()
        npfx = g.name_prefix_core
        if npfx:
            k = h.find(npfx)
            if k >= 0:
                h = h[k + len(npfx) :]
        if id_prefix and not id_:
            k = h.find(id_prefix)
            if k >= 0:
                rest = h[k + len(id_prefix) :]
                h = h[:k]
                if id_suffix and id_suffix in rest:
                    rest = rest[: rest.index(id_suffix)]
                id_ = rest.strip()
        nsfx = _core(tf.name_suffix)
        if nsfx:
            k = h.find(nsfx)
            if k >= 0:
                h = h[:k]
        return self._clean_name(h), id_

    def _begin_args(self) -> None:
        self._args_end_seen = False
        self._end_step = 0
        self._arg_count = 0

    # --- handlers ----------------------------------------------------------------------

    def _h_content(self, final: bool) -> bool:
        buf, i = self._buf, self._i
        n = len(buf)
        if i >= n:
            return False
        g = self._g
        if self._at_start:
            j = _skip_ws(buf, i)
            if j == n:
                if final:
                    self._emit(CONTENT, i, n)
                    self._i = n
                return False
            if self._abs(j) == self._prefix_len and g.header_stutters and not self._muted:
                hit = _match_at(buf, j, [(s, None) for s in g.header_stutters], final)
                if hit is False:
                    return False
                if hit is not None:
                    assert isinstance(hit, tuple)
                    self._warn(W_STRAY, f"dropped {hit[0]!r}, a repeat of the role header", j)
                    self._i = j + len(hit[0])
                    return True
            if g.bare and buf[j] in "{[":
                self._i = j
                self._state = _State.PROBE
                return True
        p, q, mk = g.content_scan.find(buf, i, final)
        if mk is None:
            if p > i:
                if self._at_start and not buf[i:p].strip():
                    if final:
                        self._emit(CONTENT, i, p)
                        self._i = p
                    return False
                self._at_start = False
                self._emit(CONTENT, i, p)
                self._i = p
            return False
        before_blank = not buf[i:p].strip()
        if not (self._at_start and before_blank):
            self._emit(CONTENT, i, p)
            self._at_start = False
        act = mk.action
        if act is _A.REASON_START:
            if self._at_start:
                self._emit_reasoning_marker(p, q)
                self._i = q
                self._state = _State.REASONING
                return True
            if self._no_mid_reasoning:
                self._emit(CONTENT, p, q)
                self._i = q
                return True
            self._i = p
            self._held_at = self._abs(p)
            self._held_mark = self._abs(q)
            self._scan_at = self._abs(q)
            self._state = _State.HELD_CONTENT
            return True
        if act is _A.REASON_END:
            if self._opts.extract_reasoning:
                self._warn(W_STRAY, f"dropped {mk.core!r}: it ends reasoning that never began", p)
            else:
                self._emit(CONTENT, p, q)
            self._i = q
            return True
        if act in (_A.CONTENT_START, _A.CONTENT_END):
            self._i = q
            return True
        if act is _A.END:
            self._i = q
            self._done_at = self._abs(q)
            self._state = _State.DONE
            return True
        if act is _A.SECTION:
            self._i = q
            self._at_start = False
            self._section_open = True
            self._expect_call = True
            self._list_depth = 0
            self._state = _State.SECTION
            return True
        if act is _A.CALL:
            self._i = q
            self._at_start = False
            self._section_open = False
            self._list_depth = 0
            if g.syntax is ToolSyntax.JSON:
                self._state = _State.SECTION
            else:
                self._start_header()
            return True
        if act is _A.NAME:
            self._i = p
            self._at_start = False
            self._section_open = False
            self._start_header()
            return True
        if act is _A.STUTTER:
            self._warn(W_STRAY, f"dropped {mk.core[: mk.drop]!r}, repeated before {mk.core[mk.drop :]!r}", p)
            self._i = p + mk.drop
            return True
        if act is _A.FENCE:  # a code fence around a JSON answer
            if self._at_start and not self._fence_open:
                self._fence_open = True
            elif self._fence_open:
                self._fence_open = False
            else:
                self._emit(CONTENT, p, q)
                self._at_start = False
            self._i = q
            return True
        self._emit(CONTENT, p, q)  # pragma: no cover - every action is handled above
        self._i = q
        return True

    def _h_reasoning(self, final: bool) -> bool:
        buf, i = self._buf, self._i
        if i >= len(buf):
            return False
        p, q, mk = self._g.reasoning_scan.find(buf, i, final)
        self._emit(self._rkind, i, p)
        self._i = p
        if mk is None:
            return False
        act = mk.action
        if act is _A.REASON_END:
            self._emit_reasoning_marker(p, q)
            self._i = q
            self._state = _State.CONTENT
            self._at_start = True
            return True
        if act is _A.END:
            self._i = q
            self._done_at = self._abs(q)
            self._state = _State.DONE
            return True
        # a tool-call opener inside the reasoning: hold until we know which it was
        self._held_at = self._abs(p)
        self._scan_at = self._abs(p)
        self._state = _State.HELD_REASONING
        return True

    def _h_held_reasoning(self, final: bool) -> bool:
        buf = self._buf
        s = self._scan_at - self._base
        p, q, mk = self._g.reasoning_end_scan.find(buf, s, final)
        if mk is None:
            self._scan_at = self._abs(p)
            return False
        self._emit(self._rkind, self._i, p)
        self._emit_reasoning_marker(p, q)
        self._i = q
        self._state = _State.CONTENT
        self._at_start = True
        return True

    def _h_held_content(self, final: bool) -> bool:
        buf = self._buf
        s = self._scan_at - self._base
        p, q, mk = self._g.reasoning_end_scan.find(buf, s, final)
        if mk is None:
            self._scan_at = self._abs(p)
            return False
        mark = self._held_mark - self._base
        self._emit_reasoning_marker(self._i, mark)
        self._emit(self._rkind, mark, p)
        self._emit_reasoning_marker(p, q)
        self._i = q
        self._state = _State.CONTENT
        return True

    def _h_probe(self, final: bool) -> bool:
        buf, i = self._buf, self._i
        text = buf[i:]
        g = self._g
        call = False
        undecided = False
        if g.bare == "json":
            m = _PROBE_JSON.match(text)
            if m is not None:
                key = m.group(2)
                tf = self._fmt.tools
                keys = {tf.name_key, tf.arguments_key, tf.id_key, tf.wrapper_key, "name", "function", "type"}
                call = key in keys or (tf.name_is_key and (not self._schemas or key in self._schemas))
            else:
                undecided = len(text) < 96 and _PROBE_JSON_PARTIAL.fullmatch(text) is not None
        else:
            m = _PROBE_PY.match(text)
            if m is not None:
                call = not self._schemas or m.group(1) in self._schemas
            else:
                undecided = len(text) < 96 and _PROBE_PY_PARTIAL.fullmatch(text) is not None
        if undecided:
            if not final:
                return False
            if self._opts.partial:  # uncertain: left out
                self._i = len(buf)
                self._at_start = False
                self._state = _State.CONTENT
                return False
        self._at_start = False
        if call:
            self._section_open = False
            self._list_depth = 0
            self._state = _State.SECTION
        else:
            self._state = _State.CONTENT
        return True

    def _h_done(self, final: bool) -> bool:
        """After an end-of-turn marker: the rest is dropped."""
        buf, i = self._buf, self._i
        if i < len(buf):
            if buf[i:].strip():
                self._warn(W_STRAY, "dropped text after the end of the turn", self._done_at - self._base)
            self._i = len(buf)
        return False

    def _start_header(self) -> None:
        self._expect_call = False
        self._state = _State.HEADER

    def _exit_tools(self, j: int, why: str = "") -> bool:
        if self._section_open and self._g.section_end_core and why:
            self._warn(W_TOOL_CALL, why, j)
        self._i = j
        self._section_open = False
        self._list_depth = 0
        self._call = None
        self._state = _State.CONTENT
        return True

    def _h_section(self, final: bool) -> bool:
        buf = self._buf
        j = _skip_ws(buf, self._i)
        n = len(buf)
        self._i = j
        if j >= n:
            return False
        g = self._g
        hit = _match_at(buf, j, g.section_cands, final)
        if hit is False:
            return False
        if hit is not None:
            assert isinstance(hit, tuple)
            text, tag = hit
            q = j + len(text)
            if tag == "section_end" or tag == "end":
                self._i = q
                self._section_open = False
                self._list_depth = 0
                self._state = _State.CONTENT if tag == "section_end" else _State.DONE
                self._done_at = self._abs(q)
                self._call = None
                return True
            self._i = q
            if tag == "call_start" and g.syntax is not ToolSyntax.JSON:
                self._start_header()
            elif tag in ("section_start", "separator"):
                self._expect_call = True
            return True
        c = buf[j]
        syntax = g.syntax
        if syntax is ToolSyntax.JSON:
            if c == "{":
                self._new_call(j)
                self._jcall = _JsonCall(self._fmt)
                self._lexer = Lexer(stops=g.value_stops)
                self._state = _State.JSON_CALL
                return True
            if c in "[,;" or (c == "]" and self._list_depth > 0):
                self._list_depth += 1 if c == "[" else -1 if c == "]" else 0
                self._i = j + 1
                return True
            return self._exit_tools(j, "the tool-call section was not closed")
        if syntax is ToolSyntax.PYTHONIC:
            if c == "[" or c == ",":
                self._list_depth += 1 if c == "[" else 0
                self._i = j + 1
                return True
            if c == "]" and self._list_depth > 0:
                self._list_depth -= 1
                self._i = j + 1
                return True
            m = re.compile(r"[A-Za-z_][\w.\-]*\s*\(").match(buf, j)
            if m is not None:
                self._start_header()
                return True
            if not final and re.fullmatch(r"[A-Za-z_][\w.\-]*\s*", buf[j:]):
                return False
            return self._exit_tools(j, "the tool-call section was not closed")
        # tag syntaxes: a call may begin without a call start marker
        if not g.call_start_core:
            npfx = g.name_prefix_core
            if npfx:
                if buf.startswith(npfx, j):
                    self._start_header()
                    return True
                if not final and npfx.startswith(buf[j:]):
                    return False
            elif self._expect_call:
                self._start_header()
                return True
        return self._exit_tools(j, "the tool-call section was not closed")

    def _h_header(self, final: bool) -> bool:
        buf, i = self._buf, self._i
        g = self._g
        n = len(buf)
        m = g.opener.search(buf, i) if g.opener is not None else None
        if (
            m is not None
            and not final
            and any(
                len(o) > len(m.group()) and n - m.start() < len(o) and o.startswith(buf[m.start() :])
                for o in self._openers()
            )
        ):  # the opener found may be the start of a longer one
            m = None
        if m is None:
            if n - i > 1024:
                self._warn(W_MARKER, "a tool call whose name never ended; kept as content", i)
                self._emit(CONTENT, i, n)
                self._i = n
                self._state = _State.CONTENT
                return False
            if final:
                return False
            return False
        header = buf[i : m.start()]
        name, id_ = self._split_header(header)
        call = self._new_call(i)
        self._announce(call, name, id_)
        self._begin_args()
        opener = m.group()
        syntax = g.syntax
        if syntax is ToolSyntax.TAG_TAGGED:
            if opener == _core(self._fmt.tools.arguments_start):
                self._i = m.end()
            else:
                self._i = m.start()
            self._args("{")
            self._state = _State.TAGGED
            return True
        if opener in ("{", "("):
            self._i = m.start()
        elif opener == _core(self._fmt.tools.arguments_start):
            self._i = m.end()
            if opener[-1] in _JSON_OPENERS:
                self._i -= 1
        else:  # the call ends before any arguments
            self._i = m.start()
            self._args("{}")
            self._state = _State.CALL_END
            return True
        positional = property_names(call.schema) if syntax is ToolSyntax.PYTHONIC else ()
        self._lexer = Lexer(custom_quote=g.custom_quote, stops=g.value_stops)
        self._writer = JsonWriter(positional)
        self._state = _State.VALUE
        return True

    def _openers(self) -> list[str]:
        tf = self._fmt.tools
        return [
            _core(t)
            for t in (tf.arguments_start, tf.arg_name_prefix, tf.arguments_end, tf.call_end, tf.section_end)
            if _core(t)
        ]

    def _h_value(self, final: bool) -> bool:
        lexer, writer = self._lexer, self._writer
        assert lexer is not None and writer is not None
        j = lexer.run(self._buf, self._i, final)
        self._i = j
        text = writer.write(lexer.tokens)
        lexer.tokens.clear()
        self._args(text)
        if writer.done or lexer.ended or lexer.stopped:
            if lexer.stopped:
                self._warn(W_TOOL_ARGS, "the arguments were not closed before the call ended", j)
            self._args(writer.close() if writer.started else "{}")
            self._state = _State.CALL_END
            return True
        return False

    def _h_json_call(self, final: bool) -> bool:
        lexer, jc = self._lexer, self._jcall
        call = self._call
        assert lexer is not None and jc is not None and call is not None
        j = lexer.run(self._buf, self._i, final)
        self._i = j
        if not jc.done:
            jc.feed(lexer.tokens)
            self._json_call_progress(jc, call)
        lexer.tokens.clear()
        if lexer.ended or lexer.stopped:  # the lexer says where the object ends
            if lexer.stopped:
                self._warn(W_TOOL_ARGS, "the tool call was not closed before its end marker", j)
            if jc.done:
                self._json_call_done(jc, call)
            else:
                self._json_call_close(jc, call)
            self._state = _State.SECTION
            return True
        return False

    def _json_call_progress(self, jc: _JsonCall, call: _Call) -> None:
        if jc.out:
            text = "".join(jc.out)
            jc.out.clear()
            self._args(text)
        if not call.announced and jc.name is not None:
            self._announce(call, self._clean_name(jc.name) or jc.name, jc.id or "")
        if call.announced and jc.id is not None and jc.id != call.id:
            self._late_id(call, jc.id)

    def _json_call_done(self, jc: _JsonCall, call: _Call) -> None:
        if jc.writer is None or not jc.writer.started:  # no arguments, or nothing of them
            if jc.args_started:
                self._warn(
                    W_TOOL_ARGS,
                    "the tool call's arguments held no value; {} was used",
                    call.start - self._base,
                )
            self._args("{}")
        if not call.announced:
            self._announce(call, "", jc.id or "")
        call.closed = True
        self._jcall = None

    def _json_call_close(self, jc: _JsonCall, call: _Call) -> None:
        text = jc.close()
        self._json_call_progress(jc, call)
        if text:
            self._args(text)
        self._json_call_done(jc, call)

    def _h_tagged(self, final: bool) -> bool:
        buf = self._buf
        j = _skip_ws(buf, self._i)
        self._i = j
        n = len(buf)
        if j >= n:
            return False
        g = self._g
        hit = _match_at(buf, j, g.tagged_cands, final)
        if hit is False:
            return False
        if hit is None:
            # text that is no argument: skipped
            first = g.tagged_first
            m = first.search(buf, j + 1) if first is not None else None
            k = m.start() if m is not None else n
            self._warn(W_TOOL_ARGS, "skipped text between arguments that is no argument", j)
            self._i = k
            return k < n or final
        assert isinstance(hit, tuple)
        text, tag = hit
        if tag == "arg":
            self._i = j + len(text)
            self._arg_name = ""
            self._state = _State.ARG_NAME
            return True
        if tag == "separator":
            self._i = j + len(text)
            return True
        if tag == "args_end":
            self._i = j + len(text)
            self._args_end_seen = True
        self._state = _State.CALL_END
        return True

    def _h_arg_name(self, final: bool) -> bool:
        buf, i = self._buf, self._i
        g = self._g
        p, q, mk = g.arg_name_scan.find(buf, i, final)
        if mk is None:
            if len(buf) - i > 512 or final:
                self._warn(W_TOOL_ARGS, "an argument name that never ended", i)
                self._i = len(buf) if final else i + 512
                self._state = _State.TAGGED
                return not final
            return False
        if mk.action is _A.VALUE_END:  # the name's own end marker
            trail = g.arg_name_trail
            if trail and not final and len(buf) - q < len(trail) and trail.startswith(buf[q:]):
                return False  # the name is read again with more text
            self._arg_name = buf[i:p].strip().strip("\"'").strip()
            self._i = _consume_trail(buf, q, trail) if trail else q
        else:
            self._arg_name = buf[i:p].strip().strip("\"'").strip()
            self._i = p
        self._state = _State.ARG_PREFIX
        return True

    def _h_arg_prefix(self, final: bool) -> bool:
        buf, i = self._buf, self._i
        g = self._g
        mode = "raw"
        if g.arg_prefix_cands:
            j = _skip_ws(buf, i)
            if j >= len(buf) and not final:
                return False
            hit = _match_at(buf, j, g.arg_prefix_cands, final)
            if hit is False:
                return False
            if hit is not None:
                assert isinstance(hit, tuple)
                text, (mode, trail) = hit
                q = j + len(text)
                if trail:
                    if not final and len(buf) - q < len(trail) and trail.startswith(buf[q:]):
                        return False
                    q = _consume_trail(buf, q, trail)
                i = q
        self._i = i
        call = self._call
        kinds: frozenset[str] = frozenset()
        if call is not None and call.schema:
            kinds = value_kinds(property_schema(call.schema, self._arg_name), call.schema)
        self._arg_pieces = []
        self._arg_cdata = 0
        self._arg_started = False
        if mode == "json":
            self._arg_mode = "json"
        elif kinds == {"string"}:
            self._arg_mode = "string"
        else:
            self._arg_mode = "typed"
        self._arg_kinds = kinds
        self._state = _State.ARG_VALUE
        return True

    def _arg_key(self) -> str:
        sep = ", " if self._arg_count else ""
        self._arg_count += 1
        return sep + '"' + encode_string(self._arg_name) + '": '

    def _arg_piece(self, text: str) -> None:
        if not text:
            return
        if self._arg_mode == "string":
            self._args(encode_string(text))
        else:
            self._arg_pieces.append(text)

    def _arg_open(self) -> None:
        if not self._arg_started:
            self._arg_started = True
            if self._arg_mode == "string":
                self._args(self._arg_key() + '"')

    def _arg_close(self) -> None:
        self._arg_open()
        if self._arg_mode == "string":
            self._args('"')
            return
        raw = "".join(self._arg_pieces)
        kinds = self._arg_kinds
        if self._arg_mode == "json":
            kinds = kinds - {"string"} if kinds and kinds != {"string"} else frozenset()
        self._args(self._arg_key() + typed_json(raw, kinds))

    def _h_arg_value(self, final: bool) -> bool:
        buf, i = self._buf, self._i
        n = len(buf)
        self._arg_open()
        if self._arg_cdata == 0:  # is the value in the template's wrapper (``<![CDATA[``)?
            head = self._g.wrap_start
            if not head:
                self._arg_cdata = -1
            elif buf.startswith(head, i):
                self._arg_cdata = 1
                i += len(head)
                self._i = i
            elif not final and n - i < len(head) and head.startswith(buf[i:]):
                return False
            else:
                self._arg_cdata = -1
        if self._arg_cdata == 1:  # inside the wrapper: everything up to its end is the value
            tail = self._g.wrap_end
            k = buf.find(tail, i)
            if k < 0:
                end = n
                if not final:
                    for t in range(min(len(tail) - 1, n - i), 0, -1):
                        if tail.startswith(buf[n - t :]):
                            end = n - t
                            break
                self._arg_piece(buf[i:end])
                self._i = end
                return False
            self._arg_piece(buf[i:k])
            self._i = k + len(tail)
            self._arg_cdata = 2
            i = self._i
        p, q, mk = self._g.value_scan.find(buf, i, final)
        if self._arg_cdata == 2:  # after the CDATA section: only the closing marker
            if mk is None:
                self._i = p
                return False
        else:
            self._arg_piece(buf[i:p])
        self._i = p
        if mk is None:
            return False
        if mk.action is _A.VALUE_END:
            self._i = q
        else:
            self._i = p + mk.drop
            self._warn(W_TOOL_ARGS, f"argument {self._arg_name!r} was not closed", p)
        self._arg_close()
        self._state = _State.TAGGED
        return True

    def _h_call_end(self, final: bool) -> bool:
        g = self._g
        call = self._call
        tf = self._fmt.tools
        if self._end_step == 0:
            if g.syntax is ToolSyntax.TAG_TAGGED:
                self._args("}")
            self._end_step = 1
        buf = self._buf
        while True:
            j = _skip_ws(buf, self._i)
            if j >= len(buf) and not final:
                return False
            step = self._end_step
            if step == 1:  # the arguments' end marker
                core = g.args_end_core
                if g.args_end_closes:  # its first character was the value's closing bracket
                    core = core[1:].strip()
                if core and not self._args_end_seen:
                    hit = _match_at(buf, j, [(core, None)], final)
                    if hit is False:
                        return False
                    if hit is not None:
                        self._i = j + len(core)
                        self._args_end_seen = True
                self._end_step = 2
            elif step == 2:  # an id written after the arguments
                id_prefix, id_suffix = _core(tf.id_prefix), _core(tf.id_suffix)
                if tf.id_position is CallIdPosition.AFTER_ARGUMENTS and id_prefix:
                    hit = _match_at(buf, j, [(id_prefix, None)], final)
                    if hit is False:
                        return False
                    if hit is not None:
                        start = j + len(id_prefix)
                        found = [
                            k
                            for k in (buf.find(e, start) for e in (id_suffix, g.call_end_core) if e)
                            if k >= 0
                        ]
                        if not found and not final:
                            return False
                        stop = min(found) if found else len(buf)
                        if call is not None:
                            self._late_id(call, buf[start:stop].strip())
                        if id_suffix and buf.startswith(id_suffix, stop):
                            stop += len(id_suffix)
                        self._i = stop
                self._end_step = 3
            else:  # the call's end marker
                if g.call_end_core:
                    hit = _match_at(buf, j, [(g.call_end_core, None)], final)
                    if hit is False:
                        return False
                    if hit is not None:
                        trail = tf.call_end[len(tf.call_end.rstrip()) :]
                        self._i = _consume_trail(buf, j + len(g.call_end_core), trail)
                if call is not None:
                    call.closed = True
                self._call = None
                self._state = _State.SECTION
                return True

    # --- the end -------------------------------------------------------------------------

    def _finish(self) -> None:
        if self._opts.partial:  # the output goes on: what is still uncertain is left out
            self._finish_partial()
            return
        self._run(True)
        for _ in range(64):
            state = self._state
            if state is _State.HELD_REASONING:
                self._warn(
                    W_REASONING_OPEN,
                    "the reasoning was never closed; the tool call inside it was taken as the message's",
                    self._held_at - self._base,
                )
                self._i = self._held_at - self._base
                self._state = _State.CONTENT
                self._at_start = True
            elif state is _State.HELD_CONTENT:
                mark = self._held_mark - self._base
                self._emit(CONTENT, self._i, mark)
                self._i = mark
                self._no_mid_reasoning = True
                self._at_start = False
                self._state = _State.CONTENT
            else:
                break
            self._run(True)
        state = self._state
        buf, i = self._buf, self._i
        if state is _State.CONTENT:
            if i < len(buf):
                self._emit(CONTENT, i, len(buf))
                self._i = len(buf)
        elif state is _State.REASONING:
            self._warn(W_TRUNCATED, "the output ended inside the reasoning")
        elif state in _CALL_STATES or state is _State.CALL_END:
            self._finish_call(False)
        elif state is _State.SECTION and self._section_open and self._g.section_end_core:
            self._warn(W_TRUNCATED, "the output ended before the tool-call section's end marker")

    def _finish_partial(self) -> None:
        state = self._state
        if state in _CALL_STATES or state is _State.CALL_END:
            self._finish_call(True)

    def _finish_call(self, partial: bool) -> None:
        state = self._state
        call = self._call
        if state is _State.HEADER:
            if not partial:
                self._warn(W_TRUNCATED, "the output ended inside a tool call's name")
            return
        if call is None:
            return
        if state is _State.CALL_END:
            if self._g.syntax is ToolSyntax.TAG_TAGGED and self._end_step == 0:
                self._args("}")
            if self._g.call_end_core and not partial:
                self._warn(W_TRUNCATED, "the output ended before the tool call's end marker")
            call.closed = True
            return
        if partial:
            if state is _State.ARG_VALUE and self._arg_mode != "string" and self._arg_pieces:
                self._args(self._arg_key() + "".join(self._arg_pieces).strip())
            return
        self._warn(W_TRUNCATED, "the output ended inside a tool call")
        if state is _State.JSON_CALL:
            assert self._jcall is not None
            self._json_call_close(self._jcall, call)
        elif state is _State.VALUE:
            assert self._writer is not None
            self._args(self._writer.close() if self._writer.started else "{}")
        else:  # tagged
            if state is _State.ARG_VALUE:
                self._arg_close()
            self._args("}")
        call.closed = True
