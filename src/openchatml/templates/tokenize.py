"""Prompt text → token ids with the model's tokenizer (a :class:`~.model_tokenizer.ModelTokenizer`),
where no text of the request can become a control token.

A tokenizer matches its added tokens (``<|im_start|>``, ``<think>``, ``<tool_call>`` …)
anywhere in the text it encodes, so encoding a rendered prompt whole would turn a user's
literal ``<|im_start|>`` into the real marker, wherever the template put it: message
text, reasoning, tool descriptions and JSON schemas (keys included), call names, ids and
arguments, tool outputs, template variables. (Added tokens that are runs of whitespace
are not markers: they are text wherever they come from.)

Theory of operation. Every string of the template's input (messages, tools, variables;
not the roles and ``type`` tags this package writes itself) is data. :func:`prompt_ids`
renders the prompt as it is, then looks for the characters of that data that could take
part in a marker:

* *swapped always*: the first character of every spelling of a marker inside a string
  (any letter case, since a template may upper-case it);
* *swapped where the template stays the same*: every other character that starts a
  marker (``<``, ``[`` …), and a string's edges (raw and whitespace-stripped) that could
  continue or begin a marker the prompt holds (``im_start|>`` after a template's ``<|``;
  ``tool_call`` between a template's ``<`` and ``>``).

Strings that are JSON texts (tool-call arguments, tool outputs) are read as JSON too: the
characters of their decoded strings are swapped where they are written, escapes included.

Each swapped character becomes a private-use stand-in (one per original character,
absent from the template, the prompt and the request, and so is its ``\\uXXXX`` JSON
spelling), and the template is rendered again with the swapped data. A marker in that
render is the template's own. The prompt text is that render with every
stand-in (or its JSON spelling) turned back into its character; the template's markers
are encoded as their ids and the text between them by :func:`encode_literal` (a marker
spelled there is encoded as ordinary characters).

A swap of the second kind is kept only where the template renders the same text with it
(a template that looks a JSON-schema key up, or compares a value, would otherwise render
something else); the swaps are tried together, then in halves down to each string. The
render with the swaps of the first kind is the prompt, even where the template would have
read a marker spelled in a string as its own (a ``</think>`` inside an assistant message
stays text). Where the swapped render is the prompt as rendered at first and holds no
marker the template did not write, the prompt is encoded whole (the same ids as
``apply_chat_template``), as it is when no string needs a swap. A template that refuses
the swapped data makes :class:`TemplateRenderError`.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, Final

from ..core.messages import Conversation, Message
from .environment import ChatTemplate
from .errors import TemplateRenderError
from .model_tokenizer import ModelTokenizer
from .prompt import render_prompt, template_messages

_STAND_INS: Final = range(0xE000, 0xF900)
_PRIVATE: Final = re.compile("[\ue000-\uf8ff]")
_ESCAPED: Final = re.compile(r"\\u([0-9a-fA-F]{4})")
_JSON_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_ESCAPES: Final = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_TRIES: Final = 64
"""The most renders :func:`prompt_ids` tries one prompt's swaps with."""
_OWN: Final = ("thinking", "reasoning", "add_generation_prompt")
"""Settings of :func:`~.prompt.render_prompt` that are not the template's input."""

_Swap = tuple[int, int, str]
"""A span of a string's raw text and the character it spells."""


def _fold(text: str) -> str:
    """``text`` lower-cased character by character (its length kept)."""
    if text.isascii():
        return text.lower()
    return "".join(low if len(low := c.lower()) == 1 else c for c in text)


def _alternation(texts: Iterable[str]) -> str:
    return "|".join(re.escape(t) for t in sorted(texts, key=len, reverse=True))


@dataclass(frozen=True, slots=True)
class _Markers:
    """A tokenizer's control markers (its added tokens but runs of whitespace), compiled."""

    texts: tuple[str, ...]
    exact: re.Pattern[str]
    """A marker, leftmost-longest as a tokenizer matches them."""
    loose: re.Pattern[str]
    """A marker in any letter case."""
    starts: re.Pattern[str]
    """Where a marker in any letter case starts (overlapping spellings included)."""
    cuts: re.Pattern[str]
    """Where a marker starts (overlapping spellings included)."""
    openers: re.Pattern[str] | None
    """A character a marker starts with (not a letter, digit or space)."""

    @classmethod
    def of(cls, markers: Sequence[str]) -> _Markers | None:
        texts = tuple(sorted({m for m in markers if m.strip()}, key=len, reverse=True))
        if not texts:
            return None
        alternation = _alternation(texts)
        firsts = {m[0] for m in texts if not (m[0].isalnum() or m[0].isspace())}
        return cls(
            texts=texts,
            exact=re.compile(alternation),
            loose=re.compile(alternation, re.IGNORECASE),
            starts=re.compile(f"(?=(?:{alternation}))", re.IGNORECASE),
            cuts=re.compile(f"(?=(?:{alternation}))"),
            openers=re.compile(f"[{''.join(re.escape(c) for c in sorted(firsts))}]") if firsts else None,
        )

    def present(self, text: str) -> frozenset[str]:
        """The markers spelled in ``text`` (any letter case), folded."""
        return frozenset(_fold(m.group()) for m in self.loose.finditer(text))


@lru_cache(maxsize=64)
def _markers(markers: tuple[str, ...]) -> _Markers | None:
    return _Markers.of(markers)


def encode_literal(tokenizer: ModelTokenizer, text: str) -> list[int]:
    """``text`` as ids where every spelling of one of the tokenizer's markers is ordinary
    characters: the text is cut right after a marker's first character, so the tokenizer
    never sees it whole."""
    compiled = _markers(tuple(tokenizer.markers))
    if compiled is None:
        return tokenizer.encode(text) if text else []
    ids: list[int] = []
    at = 0
    for match in compiled.cuts.finditer(text):
        cut = match.start()
        if cut < at:
            continue
        if cut > at:
            ids += tokenizer.encode(text[at:cut])
        ids += tokenizer.encode(text[cut])
        at = cut + 1
    if at < len(text):
        ids += tokenizer.encode(text[at:])
    return ids


# --- which characters of a string to swap --------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Edges:
    """The pieces of some markers (folded) a string's edge could hold."""

    longest: int
    tails: frozenset[str]
    """Proper suffixes: a string starting with one continues a marker."""
    heads: frozenset[str]
    """Proper prefixes: a string ending with one begins a marker."""
    inner: frozenset[str]
    """Pieces short of a whole marker: a string that is one lies inside a marker."""

    def positions(self, text: str) -> set[int]:
        """Positions in ``text`` where one of the markers could run across the string's edge
        (raw, or without surrounding whitespace): its start inside a marker's tail, its end
        inside a marker's head."""
        out: set[int] = set()
        bounds = {(0, len(text)), (len(text) - len(text.lstrip()), len(text.rstrip()))}
        for start, end in bounds:
            if start >= end:
                continue
            if end - start < self.longest and _fold(text[start:end]) in self.inner:
                out.add(start)
            first = _fold(text[start : min(end, start + self.longest)])
            if any(first[:size] in self.tails for size in range(1, len(first) + 1)):
                out.add(start)
            last = _fold(text[max(start, end - self.longest) : end])
            out.update(end - size for size in range(1, len(last) + 1) if last[-size:] in self.heads)
        return out


@lru_cache(maxsize=256)
def _edges(present: frozenset[str]) -> _Edges:
    tails = {m[k:] for m in present for k in range(1, len(m))}
    heads = {m[:k] for m in present for k in range(1, len(m))}
    inner = {
        m[i:j] for m in present for i in range(len(m)) for j in range(i + 1, len(m) + 1) if j - i < len(m)
    }
    return _Edges(
        max((len(m) for m in present), default=0), frozenset(tails), frozenset(heads), frozenset(inner)
    )


def _positions(text: str, markers: _Markers, present: frozenset[str]) -> tuple[set[int], set[int]]:
    """The positions of ``text``'s characters to swap always, and where transparent."""
    always = {m.start() for m in markers.starts.finditer(text)}
    maybe = {m.start() for m in markers.openers.finditer(text)} if markers.openers else set()
    if present:
        maybe |= _edges(present).positions(text)
    return always, maybe - always


def _json_value(raw: str, start: int, end: int) -> tuple[str, list[tuple[int, int]]]:
    """The JSON string ``raw[start:end]`` (without its quotes) decoded, and the raw span of
    each decoded character."""
    chars: list[str] = []
    spans: list[tuple[int, int]] = []
    i = start
    while i < end:
        c = raw[i]
        if c != "\\":
            chars.append(c)
            spans.append((i, i + 1))
            i += 1
            continue
        kind = raw[i + 1]
        if kind != "u":
            chars.append(_JSON_ESCAPES[kind])
            spans.append((i, i + 2))
            i += 2
            continue
        code = int(raw[i + 2 : i + 6], 16)
        j = i + 6
        if 0xD800 <= code < 0xDC00 and raw.startswith("\\u", j):
            low = int(raw[j + 2 : j + 6], 16)
            if 0xDC00 <= low < 0xE000:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                j += 6
        chars.append(chr(code))
        spans.append((i, j))
        i = j
    return "".join(chars), spans


def _is_json(text: str) -> bool:
    if text.lstrip()[:1] not in ("{", "[", '"'):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _plan(text: str, markers: _Markers, present: frozenset[str]) -> tuple[list[_Swap], list[_Swap]]:
    """The swaps of ``text`` to make always, and where transparent. A JSON text is read
    by its decoded strings (keys and values), each character swapped where it is spelled."""
    if not _is_json(text):
        always, maybe = _positions(text, markers, present)
        return [(i, i + 1, text[i]) for i in sorted(always)], [(i, i + 1, text[i]) for i in sorted(maybe)]
    sure: list[_Swap] = []
    tried: list[_Swap] = []
    for token in _JSON_STRING.finditer(text):
        value, spans = _json_value(text, token.start() + 1, token.end() - 1)
        always, maybe = _positions(value, markers, present)
        sure += [(*spans[i], value[i]) for i in sorted(always)]
        tried += [(*spans[i], value[i]) for i in sorted(maybe)]
    return sure, tried


# --- the template's input, and its strings ---------------------------------------------------

_Map = Callable[[str], str]


def _data(value: Any, fn: _Map) -> Any:
    """``value`` with ``fn`` applied to every string in it, mapping keys included."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, Mapping):
        return {fn(k) if isinstance(k, str) else k: _data(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_data(v, fn) for v in value]
    return value


def _function(value: Any, fn: _Map) -> Any:
    """A function (its name, description, parameters or arguments) with its keys kept."""
    if not isinstance(value, Mapping):
        return _data(value, fn)
    return {k: _data(v, fn) for k, v in value.items()}


def _entry(value: Any, fn: _Map) -> Any:
    """A tool, a tool call or a content part: its keys and ``type`` kept."""
    if not isinstance(value, Mapping):
        return _data(value, fn)
    if "function" not in value and "name" in value:  # a bare function
        return _function(value, fn)
    return {
        k: v if k == "type" else _function(v, fn) if k == "function" else _data(v, fn)
        for k, v in value.items()
    }


def _message(message: Mapping[str, Any], fn: _Map) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in message.items():
        if key == "role":
            out[key] = value
        elif key in ("tool_calls", "content") and isinstance(value, list):
            out[key] = [_entry(v, fn) for v in value]
        else:
            out[key] = _data(value, fn)
    return out


@dataclass(frozen=True, slots=True)
class _Input:
    """What a render gives the template: messages, tools and variables."""

    messages: list[dict[str, Any]]
    tools: list[Any] | None
    variables: dict[str, Any]

    def mapped(self, fn: _Map) -> _Input:
        """The input with ``fn`` applied to every string of the request."""
        return _Input(
            [_message(m, fn) for m in self.messages],
            None if self.tools is None else [_entry(t, fn) for t in self.tools],
            {k: _data(v, fn) for k, v in self.variables.items()},
        )

    def strings(self) -> list[str]:
        out: list[str] = []

        def keep(text: str) -> str:
            out.append(text)
            return text

        self.mapped(keep)
        return out


# --- stand-ins ----------------------------------------------------------------------------


class _StandIns:
    """A private-use stand-in for each swapped character, absent (as itself and as its JSON
    ``\\uXXXX`` spelling) from every text in ``taken``."""

    def __init__(self, taken: Iterable[str]) -> None:
        used: set[int] = set()
        for text in taken:
            used.update(ord(c) for c in _PRIVATE.findall(text))
            used.update(int(h, 16) for h in _ESCAPED.findall(text))
        self._free = (chr(c) for c in _STAND_INS if c not in used)
        self.of: dict[str, str] = {}
        self._back: dict[str, str] = {}
        self._pattern: re.Pattern[str] | None = None

    def add(self, char: str) -> None:
        if char in self.of:
            return
        stand_in = next(self._free, None)
        if stand_in is None:
            raise TemplateRenderError(
                "the request holds too many private-use characters to be rendered safely"
            )
        self.of[char] = stand_in
        self._back[stand_in] = char
        self._back[f"\\u{ord(stand_in):04x}"] = json.dumps(char)[1:-1]
        self._pattern = None

    def apply(self, text: str, swaps: Sequence[_Swap]) -> str:
        """``text`` with each swap's span replaced by the stand-in of its character."""
        if not swaps:
            return text
        parts: list[str] = []
        at = 0
        for start, end, char in swaps:
            if start < at:
                continue
            parts += [text[at:start], self.of[char]]
            at = end
        parts.append(text[at:])
        return "".join(parts)

    def back(self, text: str) -> str:
        """``text`` with every stand-in, or its JSON spelling, turned back."""
        if not self._back:
            return text
        if self._pattern is None:
            self._pattern = re.compile(_alternation(self._back))
        return self._pattern.sub(lambda m: self._back[m.group()], text)


# --- the prompt -------------------------------------------------------------------------------


def _input_of(conversation: Conversation | Sequence[Message], render: Mapping[str, Any]) -> _Input:
    messages, declared = template_messages(conversation)
    given = render.get("hf_messages")
    if given is not None:
        messages = [dict(m) for m in given]
    tools = render.get("tools")
    tools = list(tools) if tools is not None else declared
    variables = {k: v for k, v in render.items() if k not in (*_OWN, "tools", "hf_messages")}
    return _Input(messages, tools, variables)


class _Swapped:
    """Renders of ``conversation`` with the request's strings swapped (see the module
    docstring)."""

    def __init__(
        self,
        template: ChatTemplate,
        conversation: Conversation | Sequence[Message],
        source: _Input,
        own: Mapping[str, Any],
        stand_ins: _StandIns,
    ) -> None:
        self.template = template
        self.conversation = conversation
        self.source = source
        self.own = own
        self.stand_ins = stand_ins
        self.plans: dict[str, tuple[list[_Swap], list[_Swap]]] = {}
        self.tries = 0

    def render(self, accepted: Iterable[str]) -> str:
        """The render with every sure swap, and the other swaps of ``accepted`` strings."""
        chosen = set(accepted)

        def swap(text: str) -> str:
            sure, tried = self.plans.get(text, ((), ()))
            if not tried or text not in chosen:
                return self.stand_ins.apply(text, sure)
            return self.stand_ins.apply(text, sorted([*sure, *tried]))

        given = self.source.mapped(swap)
        return render_prompt(
            self.template,
            self.conversation,
            hf_messages=given.messages,
            tools=given.tools,
            **self.own,
            **given.variables,
        )

    def transparent(self, base: Sequence[str], group: Sequence[str], expected: str) -> str | None:
        """The render with ``base`` and ``group`` accepted, if it reads as ``expected``.
        Raises :class:`TemplateRenderError` past :data:`_TRIES` renders."""
        self.tries += 1
        if self.tries > _TRIES:
            raise TemplateRenderError(
                f"{self.template.name}: the template reads too many of the request's texts to render "
                "them safely"
            )
        try:
            shaped = self.render([*base, *group])
        except TemplateRenderError:
            return None
        return shaped if self.stand_ins.back(shaped) == expected else None

    def accept(self, base: list[str], group: list[str], expected: str) -> tuple[list[str], str | None]:
        """The strings of ``group`` whose swaps keep the render reading as ``expected``
        (with ``base`` accepted), and the last such render."""
        shaped = self.transparent(base, group, expected)
        if shaped is not None:
            return group, shaped
        if len(group) == 1:
            return [], None
        half = len(group) // 2
        left, first = self.accept(base, group[:half], expected)
        right, second = self.accept([*base, *left], group[half:], expected)
        return [*left, *right], second if second is not None else first


def _encoded(
    tokenizer: ModelTokenizer, shaped: str, markers: _Markers, stand_ins: _StandIns
) -> tuple[str, list[int], list[tuple[int, str]]]:
    """The prompt text of a swapped render, its ids, and where its markers are."""
    ids: list[int] = []
    parts: list[str] = []
    found: list[tuple[int, str]] = []
    size = 0
    at = 0
    for match in markers.exact.finditer(shaped):
        text = stand_ins.back(shaped[at : match.start()])
        marker = match.group()
        ids += encode_literal(tokenizer, text)
        ids.append(tokenizer.markers[marker])
        size += len(text)
        found.append((size, marker))
        size += len(marker)
        parts += [text, marker]
        at = match.end()
    text = stand_ins.back(shaped[at:])
    ids += encode_literal(tokenizer, text)
    parts.append(text)
    return "".join(parts), ids, found


def prompt_ids(
    template: ChatTemplate,
    conversation: Conversation | Sequence[Message],
    tokenizer: ModelTokenizer,
    **render: Any,
) -> tuple[str, list[int]]:
    """The prompt text of ``conversation`` (see :func:`~.prompt.render_prompt`, which
    ``render`` reaches: ``tools``, ``thinking`` and the template's ``reasoning`` format,
    template variables) and its ids under ``tokenizer``, where no string of the template's
    input becomes one of its markers (see the module docstring).

    Raises :class:`TemplateRenderError` when the template refuses the conversation, or
    refuses it once the markers spelled in its strings are made data.
    """
    compiled = _markers(tuple(tokenizer.markers))
    if template.now is None:  # every render of this prompt reads the same clock
        template = copy.copy(template)
        template.now = datetime.now()
    text = render_prompt(template, conversation, **render)
    if compiled is None:
        return text, tokenizer.encode(text)
    source = _input_of(conversation, render)
    strings = list(dict.fromkeys(source.strings()))
    present = compiled.present(text)
    plans = {s: _plan(s, compiled, present) for s in strings}
    if not any(sure or tried for sure, tried in plans.values()):
        return text, tokenizer.encode(text)
    stand_ins = _StandIns(
        [template.source, template.bos_token, template.eos_token, text, *strings, *compiled.texts]
    )
    own = {k: v for k, v in render.items() if k in _OWN}
    swapped = _Swapped(template, conversation, source, own, stand_ins)
    for _ in range(len(compiled.texts) + 1):
        swapped.plans = plans
        for sure, tried in plans.values():
            for _start, _end, char in (*sure, *tried):
                stand_ins.add(char)
        if any(sure for sure, _ in plans.values()):
            try:
                base = swapped.render(())
            except TemplateRenderError as exc:
                raise TemplateRenderError(
                    f"{template.name}: the request spells the model's control markers, and the template "
                    f"does not render them as text ({exc.message})",
                    position=exc.position,
                ) from exc
        else:
            base = text
        expected = stand_ins.back(base)
        candidates = [s for s, (_sure, tried) in plans.items() if tried]
        shaped = base
        if candidates:
            _accepted, last = swapped.accept([], candidates, expected)
            shaped = last if last is not None else base
        more = compiled.present(shaped) - present
        if not more:
            break
        present |= more
        plans = {s: _plan(s, compiled, present) for s in strings}
    prompt, ids, found = _encoded(tokenizer, shaped, compiled, stand_ins)
    if prompt == text and [(m.start(), m.group()) for m in compiled.exact.finditer(text)] == found:
        return text, tokenizer.encode(text)
    return prompt, ids
