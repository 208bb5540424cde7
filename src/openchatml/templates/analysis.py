"""Differential analysis of a chat template: render it with controlled variations, diff
the renders, and read a :class:`~.format.TemplateFormat` off them.

Theory of operation. Every probe is a short conversation (a user message, then the
assistant message under study) rendered through the template; only the text after the
user message (its *tail*) is looked at. The messages hold needles with unlikely
spellings (``ANSWERTEXT``, ``THOUGHTTEXT``, tool ``foofoo``/``barbar``, argument
``first``, value ``XXXX``, id ``call00001`` …); each part of the format is the text the
template writes around them, and diffs between probes tell constant markers from the
varying parts. A probe a template refuses (``raise_exception``) is skipped.

0. *Thinking switch.* The caller's variables whose names speak of thinking, reasoning,
   effort or budget are set to the values the template compares them with (else
   ``True``/``False``); the one whose values change the prompt of a user message, into
   values that close the reasoning in the generation prompt (off) and values that do not
   (on), is the template's switch (``enable_thinking``, Granite's ``thinking``, Hy3's
   ``reasoning_effort``, Seed-OSS's ``thinking_budget``). The generation prompts are
   rendered with it unset, on and off.
1. *Header.* The common start of the tails (an answer, another answer, a tool call) is
   the end of the user's turn and the assistant's role header; its part a generation
   prompt starts with is the role header (``GenerationPrompts.header``).
2. *Reasoning.* An answer with and without reasoning (``reasoning_content``, else
   ``reasoning``, ``thinking``, a thinking content chunk; plainly, with the thinking
   switch on, or on a tool-call message) differ by the reasoning and its
   markers. A template that drops reasoning from history shows its markers in the
   generation prompt: an empty block (``<think></think>``), or an opened one whose end
   is proved by the template cutting ``THOUGHT</think>`` off an answer.
3. *Content.* The markers around the answer that a tool-call message does not share.
4. *Tool calls.* One call, two calls, two arguments, an integer argument. The call is
   JSON when a JSON value around the name contains it (the one heuristic); otherwise
   the text after the name is JSON arguments, a Python call, ``{k:<q>v<q>}`` object
   notation, or tagged arguments. What precedes the first call, lies between the calls
   and follows the last splits into section markers (once per message), call markers
   (repeated per call) and the separator.
5. *Ends.* What follows an answer up to the next message (``<|im_end|>``), and what
   follows the last tool call (``<|eom_id|>``).

Markers keep the template's exact text, whitespace included (``"<tool_call>\\n"``): a
grammar can write exactly that, and a parser should treat whitespace at a marker's edges
as optional. Whitespace between a marker and free text (reasoning, an answer) is left to
the text, except where the marker is plain words (functionary's ``">>>all\\n"``).
Template-specific facts no rendering shows are data in :mod:`.patches`, applied last.
"""

from __future__ import annotations

import ast
import copy
import functools
import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from . import _diff as d
from .environment import ChatTemplate
from .errors import TemplateError, UnsupportedTemplateError
from .format import (
    CallIdPosition,
    ContentFormat,
    ContentMode,
    GenerationPrompts,
    ReasoningFormat,
    ReasoningMode,
    TemplateFormat,
    ToolCallFormat,
    ToolSyntax,
)
from .patches import apply_patches

__all__ = ["analyze", "analyze_source", "preserved_tokens"]

USER = "USERMSG"
USER2 = "USERTWO"
ANSWER = "ANSWERTEXT"
OTHER = "OTHERTEXT"
THOUGHT = "THOUGHTTEXT"
NAME1, NAME2 = "foofoo", "barbar"
ID1, ID2 = "call00001", "call99999"
ARG1, ARG2 = "first", "second"
VAL1, VAL2, VAL3 = "XXXX", "YYYY", "ZZZZ"
INT_VALUE = 1234
MARKUP_VALUE = "MM<b>&\nNN"
TOOL_RESULT = "RESULTTEXT"

# the usual reasoning markers, tried only where a template proves one by cutting it
_USUAL_REASONING = (
    ("<think>", "</think>"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
)
_HARMONY_TOKENS = (
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|constrain|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
)
_WORDS = re.compile(r"[A-Za-z0-9]+")
_PUNCT_ONLY = re.compile(r"[^\w\s]+")
_OPEN_CLOSE_WORDS = {"begin", "start", "end", "prefix", "suffix", "open", "close"}

Message = dict[str, Any]


# ---------------------------------------------------------------------------- probes


def _user(text: str = USER) -> Message:
    return {"role": "user", "content": text}


def _assistant(content: Any, **extra: Any) -> Message:
    return {"role": "assistant", "content": content, **extra}


def _call(name: str, args: Mapping[str, Any], call_id: str, as_string: bool) -> Message:
    arguments: Any = json.dumps(args, ensure_ascii=False) if as_string else dict(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _tool(name: str, props: Mapping[str, str]) -> Message:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {
                "type": "object",
                "properties": {k: {"type": t, "description": f"The {k} argument."} for k, t in props.items()},
                "required": list(props),
            },
        },
    }


_STRING_TOOLS = [
    _tool(NAME1, {ARG1: "string", ARG2: "string"}),
    _tool(NAME2, {ARG1: "string", ARG2: "string"}),
]
_INT_TOOLS = [
    _tool(NAME1, {ARG1: "integer", ARG2: "string"}),
    _tool(NAME2, {ARG1: "integer", ARG2: "string"}),
]


class _Probe:
    """Renders through the template, memoised (a template may change the messages it is
    given, so each render gets copies); a refused render is ``None``."""

    def __init__(self, template: ChatTemplate) -> None:
        self.template = template
        self._cache: dict[str, str | None] = {}
        self.errors: list[str] = []

    def render(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Message] | None = None,
        gen: bool = False,
        **variables: Any,
    ) -> str | None:
        key = repr((messages, tools, gen, sorted(variables.items())))
        if key in self._cache:
            return self._cache[key]
        try:
            out: str | None = self.template.render(
                copy.deepcopy(list(messages)),
                tools=copy.deepcopy(list(tools)) if tools is not None else None,
                add_generation_prompt=gen,
                **variables,
            )
        except TemplateError as exc:
            out = None
            self.errors.append(str(exc))
        self._cache[key] = out
        return out


def _tail(text: str | None, needle: str = USER) -> str | None:
    """What follows the last ``needle`` (the user message) in a render."""
    if text is None:
        return None
    i = text.rfind(needle)
    return None if i == -1 else text[i + len(needle) :]


@dataclass(frozen=True, slots=True)
class _Calls:
    """The rendered tool-call probes (tails), with the message shape they rendered with."""

    as_string: bool
    content: Any
    one: str
    two: str | None
    followed: str | None
    pair: str | None
    typed: str | None
    markup: str | None


@dataclass(frozen=True, slots=True)
class _Reasoning:
    fmt: ReasoningFormat = field(default_factory=ReasoningFormat)
    content_start: str = ""
    content_end: str = ""


# ------------------------------------------------------------------------- text helpers


def _tag_core(tag: str) -> str:
    """A marker's name without brackets and open/close words
    (``<|tool_calls_section_begin|>`` → ``toolcallssection``)."""
    body = re.split(r"[=\s]", tag.strip("<>[]"), maxsplit=1)[0]
    words = [w.lower() for w in _WORDS.findall(body.replace("▁", "_"))]
    return "".join(w for w in words if w not in _OPEN_CLOSE_WORDS)


def _closes(opening: str, closing: str) -> bool:
    """Whether marker ``closing`` closes marker ``opening``."""
    if not opening or not closing or opening == closing:
        return False
    core = _tag_core(opening)
    return bool(core) and core == _tag_core(closing)


def _closing_candidates(tag: str) -> list[str]:
    """Spellings of the marker that closes ``tag`` (``<think>`` → ``</think>``)."""
    out: list[str] = []
    for lead in ("<|", "<｜", "<", "["):
        if tag.startswith(lead) and not tag.startswith(lead + "/"):
            out.append(lead + "/" + tag[len(lead) :])
    for a, b in (("START", "END"), ("start", "end"), ("BEGIN", "END"), ("begin", "end")):
        if a in tag:
            out.append(tag.replace(a, b))
    return out


def _find_closer(openings: Sequence[str], text: str) -> re.Match[str] | None:
    """The first marker in ``text`` that closes one of ``openings``."""
    for m in d.MARKER.finditer(text):
        if any(_closes(o, m.group()) for o in openings):
            return m
    return None


def _overlap(text: str, prompt: str) -> str:
    """The longest start of ``prompt`` that ``text`` ends with."""
    for k in range(min(len(text), len(prompt)), 0, -1):
        if text.endswith(prompt[:k]):
            return prompt[:k]
    return ""


def _plausible(marker: str) -> bool:
    """Whether ``marker`` can be a marker: no needle in it, and no quotes or braces outside
    tags (a template that prints a Python list of content chunks writes no marker)."""
    if any(n in marker for n in (ANSWER, THOUGHT, USER, OTHER)):
        return False
    return re.search(r"['\"{}]", d.MARKER.sub("", marker)) is None


def _split_after_first_marker(text: str) -> tuple[str, str]:
    """``text`` cut after its first marker and the whitespace after it."""
    m = d.MARKER.search(text)
    if m is None:
        return text, ""
    end = m.end()
    while end < len(text) and text[end].isspace():
        end += 1
    return text[:end], text[end:]


def _split_name_prefix(head: str) -> tuple[str, str]:
    """The text before a name as ``(before, name_prefix)``: the prefix is an unclosed
    ``<…`` (``<function=``, ``<invoke name="``) or the word glued to the name after the
    last marker (``functions.``, ``call:``, ``>>>``)."""
    lt = d.open_tag_tail(head)
    if lt != -1:
        return head[:lt], head[lt:]
    last = d.last_marker_match(head)
    start = last.end() if last else 0
    rest = head[start:]
    if rest.strip() and not rest[-1].isspace():
        word = rest.lstrip()
        if "\n" not in word:
            return head[: len(head) - len(word)], word
    return head, ""


def _split_name_suffix(name_prefix: str, text: str) -> tuple[str, str]:
    """The text after a name as ``(name_suffix, rest)``: the suffix closes what the prefix
    opened (``>`` for ``<function=``, ``">`` for ``<invoke name="``) and takes the
    whitespace after it; without an opened prefix it is empty."""
    lt = name_prefix.rfind("<")
    if lt != -1 and ">" not in name_prefix[lt:]:
        gt = text.find(">")
        if gt != -1 and "<" not in text[:gt]:
            end = gt + 1
            while end < len(text) and text[end].isspace():
                end += 1
            return text[:end], text[end:]
    if name_prefix.endswith('"') and text.startswith('"'):
        return '"', text[1:]
    return "", text


def _split_value_suffix(text: str) -> tuple[str, str]:
    """The text between a value and the next argument's name prefix as
    ``(value_suffix, separator)``: the suffix runs to the end of its last marker."""
    last = d.last_marker_match(text)
    if last is None:
        rest = text.lstrip()
        if rest.startswith('"'):
            return text[: len(text) - len(rest) + 1], rest[1:]
        return "", text
    return text[: last.end()], text[last.end() :]


def _contains(value: Any, needle: str, depth: int = 0) -> bool:
    """Whether ``needle`` is a string value or key somewhere in JSON ``value``."""
    if depth > 4:
        return False
    if value == needle:
        return True
    if isinstance(value, dict):
        return any(k == needle or _contains(v, needle, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_contains(v, needle, depth + 1) for v in value)
    return False


_DECODER = json.JSONDecoder()


def _json_at(text: str, start: int) -> tuple[Any, int] | None:
    """The JSON value starting at ``text[start]`` and where it ends, or ``None``."""
    try:
        return _DECODER.raw_decode(text, start)
    except ValueError:
        return None


def _json_containing(text: str, needle: str) -> tuple[Any, int, int] | None:
    """The outermost JSON object or array that starts before ``needle`` and contains it
    (the one heuristic of the analysis): ``(value, start, end)``."""
    limit = text.find(needle)
    for i in range(max(limit, 0)):
        if text[i] in "{[":
            found = _json_at(text, i)
            if found is not None and found[1] > limit and _contains(found[0], needle):
                return found[0], i, found[1]
    return None


def _matching_close(text: str, start: int, opening: str, closing: str) -> int:
    """Index after the bracket that closes ``text[start]`` (quotes respected), or -1."""
    depth = 0
    quote = ""
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _python_call(text: str) -> bool:
    """Whether ``text`` is one Python call expression (``f(a='x')``)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return isinstance(node, ast.Call)


# ---------------------------------------------------------------------- thinking switches


@dataclass(frozen=True, slots=True)
class _Switch:
    """A template's thinking switch: the variable, its on and off values, effort levels."""

    name: str
    on: Any
    off: Any
    efforts: tuple[str, ...] = ()


# a caller's variable that may switch thinking, by its name
_SWITCH_NAME = re.compile(r"think|reason|effort|budget", re.IGNORECASE)
_NEGATES = re.compile(r"(?:^|_)(?:skip|no|disable|disabled|without|drop)(?:_|$)", re.IGNORECASE)
_EFFORT_RANKS = {
    "none": 0,
    "no_think": 0,
    "nothink": 0,
    "off": 0,
    "disabled": 0,
    "minimal": 1,
    "low": 2,
    "medium": 3,
    "high": 4,
    "xhigh": 5,
    "max": 5,
}
_COMMON_EFFORTS = ("none", "minimal", "low", "medium", "high")
_JINJA_LITERAL = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?\d+|\b(?:true|false|True|False)\b"""
_JINJA_VALUES = rf"""(?:{_JINJA_LITERAL}|\[[^\[\]]*\]|\([^()]*\))"""
_DIGITS = re.compile(r"\d+")


def _effort_rank(value: Any) -> int:
    """Where an effort name stands (``none`` 0 … ``xhigh`` 5); -1 for other values."""
    return _EFFORT_RANKS.get(value.lower(), -1) if isinstance(value, str) else -1


def _same_value(value: Any, among: Sequence[Any]) -> bool:
    """``value in among`` where ``True`` is not ``1``."""
    return any(type(value) is type(v) and value == v for v in among)


def _masked(text: str) -> str:
    """``text`` with digits blanked: renders that differ only by a clock are alike."""
    return _DIGITS.sub("0", text)


def _jinja_values(text: str) -> list[Any]:
    """The literals in a piece of Jinja source (a literal, a list or a tuple of them)."""
    out: list[Any] = []
    for lit in re.findall(_JINJA_LITERAL, text):
        if lit in ("true", "True"):
            out.append(True)
        elif lit in ("false", "False"):
            out.append(False)
        else:
            try:
                out.append(ast.literal_eval(lit))
            except (ValueError, SyntaxError):
                continue
    return out


_Candidate = tuple[str, tuple[Any, ...], tuple[Any, ...]]


@functools.lru_cache(maxsize=256)
def _switch_candidates_of(source: str, variables: frozenset[str]) -> tuple[_Candidate, ...]:
    out: list[_Candidate] = []
    for name in sorted(variables):
        if not _SWITCH_NAME.search(name):
            continue
        var = rf"(?<![\w.'\"]){re.escape(name)}\b"
        if re.search(rf"\bset\s+{re.escape(name)}\s*=", source) and not re.search(
            rf"{var}\s+is\s+(?:not\s+)?(?:defined|undefined)|{var}\s*\|\s*default\b", source
        ):
            continue  # the template's own variable, never the caller's
        found: list[Any] = []
        filters = r"(?:\s*\|\s*\w+(?:\([^()]*\))?)*"
        ops = r"(?:==|!=|<=|>=|<|>|\bnot\s+in\b|\bin\b)"
        for pattern in (
            rf"{var}{filters}\s*{ops}\s*({_JINJA_VALUES})",
            rf"({_JINJA_LITERAL})\s*(?:==|!=)\s*{var}",
            rf"\bset\s+{re.escape(name)}\s*=\s*({_JINJA_LITERAL})\s*-?%\}}",
            rf"{var}\s*\|\s*default\(\s*({_JINJA_LITERAL})",
        ):
            for m in re.finditer(pattern, source):
                found += _jinja_values(m.group(1))
        strings = [v for v in found if isinstance(v, str)]
        numbers = [v for v in found if isinstance(v, int) and not isinstance(v, bool)]
        values: list[Any]
        if "effort" in name.lower() or any(_effort_rank(v) >= 0 for v in strings):
            values = [*strings, *_COMMON_EFFORTS]
        elif strings:
            values = strings
        elif numbers:
            values = numbers
        else:
            values = [True, False]
        unique: list[Any] = []
        for v in values:
            if not _same_value(v, unique):
                unique.append(v)
        out.append((name, tuple(unique), tuple(found)))
    return tuple(out)


def _switch_candidates(template: ChatTemplate) -> tuple[_Candidate, ...]:
    """The variables of ``template`` that may switch thinking, with the values to try and
    the literals the template itself compares them with.

    A candidate is a variable the caller may set (the template reads it before setting
    it, or sets it only when it is undefined) whose name speaks of thinking, reasoning,
    effort or budget. Its values: the string literals the template compares it with
    (``x in ['high', 'low', 'no_think']``, ``x | lower == "none"``), with the usual effort
    names where it names efforts; else the numbers it compares it with (``x == 0``,
    ``x == -1``); else ``True`` and ``False``."""
    return _switch_candidates_of(template.source, template.variables)


def _ends_block(opening: str, closing: str) -> bool:
    """Whether marker ``closing``, written after ``opening``, closes it: the same name
    (``<think>`` … ``</think>``, ``<|channel>`` … ``<channel|>``) or a bare end
    (``<|end|>``)."""
    if _closes(opening, closing):
        return True
    words = {w.lower() for w in _WORDS.findall(closing)}
    return closing != opening and not _tag_core(closing) and bool(words & {"end", "close"})


def _closes_reasoning(other: str, tail: str) -> bool:
    """Whether ``tail`` (a render's end, with its generation prompt) closes a block where
    ``other`` does not: in what ``tail`` writes instead of ``other``, a marker closes one
    written before it, or closes what ``other`` opens there."""
    split = d.diff_split(other, tail)
    own = d.markers(split.right)
    before = d.markers(split.prefix)
    theirs = d.markers(split.left)
    for i, marker in enumerate(own):
        if any(_ends_block(o, marker) for o in (*before[-2:], *own[:i])):
            return True
        if any(marker in _closing_candidates(o) for o in theirs):
            return True
    return False


# ------------------------------------------------------------------------ the analysis


class _Analysis:
    """One template's analysis (see the module docstring)."""

    def __init__(self, template: ChatTemplate) -> None:
        self.t = template
        self.p = _Probe(template)
        self.base: list[Message] = [_user()]
        self.switch: _Switch | None = None

    def tail(
        self, *messages: Message, tools: Sequence[Message] | None = None, gen: bool = False, **v: Any
    ) -> str | None:
        """The tail of the base conversation followed by ``messages``."""
        return _tail(self.p.render([*self.base, *messages], tools=tools, gen=gen, **v))

    def last_error(self) -> str:
        return self.p.errors[-1] if self.p.errors else "the answer is dropped"

    def run(self) -> TemplateFormat:
        name = self.t.name
        if self.p.render(self.base) is None:
            self.base = [{"role": "system", "content": "SYSTEMMSG"}, _user()]
            if self.p.render(self.base) is None:
                raise UnsupportedTemplateError(
                    f"{name}: not even one user message renders: {self.last_error()}"
                )
        answer = self.tail(_assistant(ANSWER))
        if answer is None or ANSWER not in answer:
            raise UnsupportedTemplateError(
                f"{name}: the assistant's content cannot be derived: a user + assistant conversation "
                f"does not render the answer ({self.last_error()})"
            )
        if "<|channel|>" in answer and "<|message|>" in answer and "<|start|>assistant" in answer:
            return TemplateFormat(
                name=name,
                harmony=True,
                generation_prompt=replace(self.generation_prompts(None), header="<|start|>assistant"),
                end_markers=("<|return|>", "<|call|>", "<|end|>"),
                preserved_tokens=_HARMONY_TOKENS,
            )
        self.switch = self.thinking_switch()
        gens = self.generation_prompts(self.switch)
        calls = self.tool_probes()
        tails = [answer, self.tail(_assistant(OTHER)) or "", *([calls.one] if calls else [])]
        raw_header = tails[0][: d.lcp_marker_safe([t for t in tails if t])]
        reasoning = self.reasoning(gens, calls, raw_header)
        header = self.trim_header(raw_header, reasoning.fmt)

        tools, tool_end = ToolCallFormat(), ""
        tool_analysis = _ToolAnalysis(self, calls, header, reasoning.fmt) if calls else None
        if tool_analysis is not None:
            try:
                tools = tool_analysis.run()
            except UnsupportedTemplateError:
                tool_analysis = None  # tool calls render but cannot be read: none offered
        content, end_text = self.content(
            answer, header, reasoning, tool_analysis.rest if tool_analysis else ""
        )
        if tool_analysis is not None:
            section_end, tool_end = tool_analysis.split_rest(end_text)
            tools = replace(tools, section_end=section_end)

        ends: list[str] = []
        # a turn without an end marker of its own ends where the next message's header
        # begins (``<|user|>`` after an answer, ``<|observation|>`` after calls)
        answer_end = self.end_marker(end_text) or self.next_header_marker()
        tools_end = ""
        if tool_analysis is not None:
            tools_end = self.end_marker(tool_end) or tool_analysis.next_header_marker(tools.section_end)
        for marker in (answer_end, tools_end):
            if marker and marker not in ends:
                ends.append(marker)
        role_header = self.role_header(header, gens, ends)
        # what follows a message and is the next turn's header does not end a turn
        ends = [e for e in ends if e not in role_header]
        return TemplateFormat(
            name=name,
            reasoning=reasoning.fmt,
            content=content,
            tools=tools,
            generation_prompt=replace(gens, header=role_header),
            end_markers=tuple(ends),
        )

    # -- generation prompts and the header

    def generation_prompts(self, switch: _Switch | None) -> GenerationPrompts:
        """What ``add_generation_prompt`` appends, with thinking unset, on and off (by the
        template's ``switch``; without one, by ``enable_thinking``, for Harmony)."""

        def prompt(**v: Any) -> str:
            # tails: a clock in a system prompt must not show in the diff
            plain = self.tail(**v)
            with_prompt = self.tail(gen=True, **v)
            if plain is None or with_prompt is None:
                return ""
            if with_prompt.startswith(plain):
                return with_prompt[len(plain) :]
            return d.diff_split(plain, with_prompt).right

        if switch is None:
            if "enable_thinking" not in self.t.variables:
                default = prompt()
                return GenerationPrompts(default, default, default)
            return GenerationPrompts(prompt(), prompt(enable_thinking=True), prompt(enable_thinking=False))
        off = prompt(**{switch.name: switch.off}) if switch.off is not None else prompt()
        return GenerationPrompts(prompt(), prompt(**{switch.name: switch.on}), off)

    # -- the thinking switch

    def thinking_switch(self) -> _Switch | None:
        """The variable that switches thinking (see :func:`_switch_candidates`): one whose
        values change the render of a user message and the generation prompt, into an "on"
        and an "off" class. ``enable_thinking`` first, then a switch with effort levels, a
        boolean one, any other; ``None`` when there is none."""
        errors = len(self.p.errors)
        found = [s for s in (self.try_switch(*candidate) for candidate in _switch_candidates(self.t)) if s]
        del self.p.errors[errors:]  # refused values are not the template's failures
        if not found:
            return None
        return min(
            found,
            key=lambda s: (
                s.name != "enable_thinking",
                not s.efforts,
                s.off is None,
                not isinstance(s.on, bool),
                s.name,
            ),
        )

    def try_switch(self, name: str, values: Sequence[Any], own: Sequence[Any]) -> _Switch | None:
        """``name`` as a switch, from the renders of a user message with a generation
        prompt under each of ``values`` (a value the template refuses is dropped); ``own``
        are the values the template names, preferred for on and the effort levels.

        Values rendering alike (digits aside: a clock) form a class. A class is *off* where
        its generation prompt, against another's, closes the reasoning: an empty or filled
        block (``<think>\\n\\n</think>``, ``<|think|><|end|>``, a budget note inside
        ``<seed:think>…</seed:think>``) or the closing marker of what the other opens
        (``</think>`` for ``<think>``). Without such evidence, ``False`` is off (``True`` for
        a name that negates: ``skip_thinking``), ``0`` for a budget, an effort named
        ``none``/``no_think``. On is ``True``, the highest effort, the default budget."""
        rendered: list[tuple[Any, str]] = []
        for value in values:
            text = self.p.render(self.base, gen=True, **{name: value})
            if text is not None:
                rendered.append((value, text))
        classes = {_masked(text) for _, text in rendered}
        if len(classes) < 2:
            return None
        default = self.p.render(self.base, gen=True)
        default_class = _masked(default) if default is not None else None
        tails = [(v, _tail(text) or "", _masked(text)) for v, text in rendered]
        off_values = [
            v for v, tail, cls in tails if any(cls != c and _closes_reasoning(t, tail) for _, t, c in tails)
        ]
        if len(off_values) == len(tails):
            off_values = []
        valid = [v for v, _, _ in tails]
        if not off_values:
            if all(isinstance(v, bool) for v in valid):
                off_values = [_NEGATES.search(name) is not None]
            elif all(isinstance(v, int) and not isinstance(v, bool) for v in valid):
                off_values = [v for v in valid if v == 0]
            else:
                off_values = [v for v in valid if _effort_rank(v) == 0]
        off_classes = {cls for v, _, cls in tails if _same_value(v, off_values)}
        on = [(v, cls) for v, _, cls in tails if cls not in off_classes]
        if not on:
            return None
        ons = [v for v, _ in on]
        efforts: tuple[str, ...] = ()
        if all(isinstance(v, bool) for v in valid):
            on_value: Any = not off_values[0] if off_values else True
            off_value: Any = off_values[0] if off_values else None
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in valid):
            on_value = next((v for v, cls in on if cls == default_class), max(ons))
            off_value = off_values[0] if off_values else None
        else:
            pool = [v for v in ons if _same_value(v, own)] or ons
            ranked = sorted((v for v in pool if _effort_rank(v) > 0), key=_effort_rank)
            on_value = (
                ranked[-1]
                if ranked
                else next((v for v, c in on if c == default_class and v in pool), pool[0])
            )
            if len({cls for v, cls in on if v in ranked}) > 1:
                efforts = tuple(ranked)
            off_value = min(off_values, key=_effort_rank) if off_values else None
        if off_value is None and not efforts:
            return None
        return _Switch(name, on_value, off_value, efforts)

    def trim_header(self, header: str, reasoning: ReasoningFormat) -> str:
        """The end of the user's turn and the assistant's role header: the common start
        of the assistant's messages without a trailing punctuation word (functionary's
        ``>>>``, which starts both answers and calls) or reasoning markers
        (``<think>\\n\\n</think>\\n\\n`` written before every answer)."""
        last = d.last_marker_match(header)
        after = header[last.end() :] if last else header
        if after.strip() and after.rstrip() == after:
            ws = max(after.rfind(c) for c in " \n\t")
            word = after[ws + 1 :]
            if ws != -1 and _PUNCT_ONLY.fullmatch(word):
                header = header[: len(header) - len(word)]
        for marker in (reasoning.end, reasoning.start):
            body = header.rstrip()
            if marker and d.is_marker(marker) and body.endswith(marker):
                header = body[: len(body) - len(marker)]
        return header

    def role_header(self, header: str, gens: GenerationPrompts, ends: Sequence[str]) -> str:
        """The part of ``header`` a generation prompt starts with; for a template that
        writes the prompt whatever ``add_generation_prompt`` says, what follows the
        marker that ends a turn."""
        for prompt in (gens.default, gens.thinking, gens.no_thinking):
            if prompt:
                best = max(_overlap(header, prompt), _overlap(header.rstrip(), prompt), key=len)
                if best:
                    return best
        for end in ends:
            if end in header:
                return header[header.rfind(end) + len(end) :].lstrip()
        return ""

    # -- reasoning

    def reasoning_variants(self, calls: _Calls | None) -> Iterator[tuple[Message, Message, dict[str, Any]]]:
        """``(message with reasoning, without, render options)``, likeliest first: thinking
        left alone, then switched on."""
        shapes: list[tuple[Message, dict[str, Any]]] = [(_assistant(ANSWER), {})]
        if calls is not None:
            call = _call(NAME1, {ARG1: VAL1}, ID1, calls.as_string)
            shapes.append((_assistant(calls.content, tool_calls=[call]), {"tools": _STRING_TOOLS}))
        thinking: list[dict[str, Any]] = [{}]
        if self.switch is not None:
            thinking.append({self.switch.name: self.switch.on})
        elif "enable_thinking" in self.t.variables:
            thinking.append({"enable_thinking": True})
        for variables in thinking:
            for base, opts in shapes:
                for key in ("reasoning_content", "reasoning", "thinking"):
                    yield {**base, key: THOUGHT}, base, {**opts, **variables}
                if base.get("content") == ANSWER:
                    chunks = [{"type": "thinking", "thinking": THOUGHT}, {"type": "text", "text": ANSWER}]
                    yield {**base, "content": chunks}, base, {**opts, **variables}

    def reasoning(self, gens: GenerationPrompts, calls: _Calls | None, header: str) -> _Reasoning:
        return self.with_switch(self.find_reasoning(gens, calls, header))

    def with_switch(self, found: _Reasoning) -> _Reasoning:
        """``found`` with the thinking switch recorded."""
        s = self.switch
        if s is None:
            return found
        return replace(found, fmt=replace(found.fmt, switch=s.name, on=s.on, off=s.off, efforts=s.efforts))

    def find_reasoning(self, gens: GenerationPrompts, calls: _Calls | None, header: str) -> _Reasoning:
        toggles = gens.thinking != gens.no_thinking
        for with_r, without, opts in self.reasoning_variants(calls):
            plain = self.tail(without, **opts)
            thought = self.tail(with_r, **opts)
            if plain is None or thought is None or THOUGHT not in thought:
                continue
            found = self.reasoning_markers(plain, thought)
            if found is None or not (_plausible(found.fmt.start) and _plausible(found.fmt.end)):
                continue
            fmt = found.fmt
            if fmt.mode is ReasoningMode.DELIMITER:
                # history without a start marker, but a prompt that opens one
                for prompt in (gens.thinking, gens.default):
                    opened = d.last_marker(prompt)
                    if opened and prompt.rstrip().endswith(opened) and fmt.end in _closing_candidates(opened):
                        fmt = replace(fmt, mode=ReasoningMode.TAGS, start=opened)
                        break
            fmt = replace(fmt, toggles=toggles, tools_only="tool_calls" in without)
            return replace(found, fmt=fmt)
        return self.reasoning_from_prompt(gens, toggles, header)

    def reasoning_markers(self, without: str, with_r: str) -> _Reasoning | None:
        """The markers around ``THOUGHT`` in ``with_r`` that ``without`` lacks or writes as
        an empty block."""
        split = d.diff_split(without, with_r)
        i = split.right.find(THOUGHT)
        if i == -1:
            return None
        before, after = split.right[:i], split.right[i + len(THOUGHT) :]
        content_start = content_end = ""
        end = after.strip()
        if end:
            # a content wrapper opened after the reasoning (``</think><response>``)
            j = split.suffix.find(ANSWER)
            opened = d.last_marker(end)
            closing = d.first_marker(split.suffix[j + len(ANSWER) :]) if j != -1 else ""
            if opened and end != opened and _closes(opened, closing):
                content_start, content_end = opened, closing
                end = end[: len(end) - len(opened)].rstrip()
        else:
            # the end marker is in the message without reasoning too (an empty block)
            first = d.first_marker(split.suffix)
            if first and split.suffix.lstrip().startswith(first):
                end = first
        if not end:
            return None
        start = before.strip()
        if not start:
            # an empty block in the plain message: the start marker ends the common prefix
            cand = d.last_marker(split.prefix)
            if (
                cand
                and split.prefix.rstrip().endswith(cand)
                and without[len(split.prefix) :].lstrip().startswith(end)
            ):
                start = cand
        mode = ReasoningMode.TAGS if start else ReasoningMode.DELIMITER
        return _Reasoning(ReasoningFormat(mode, start, end), content_start, content_end)

    def reasoning_from_prompt(self, gens: GenerationPrompts, toggles: bool, header: str) -> _Reasoning:
        """Templates that drop reasoning from history: an empty block in a generation
        prompt shows both markers; an opened one (``<think>\\n``) is closed by the start
        marker's closing spelling, proved by the template cutting ``THOUGHT<end>`` off an
        answer; last, the usual markers, each proved the same way."""
        extras = [p[len(_overlap(header, p)) :] for p in (gens.thinking, gens.default, gens.no_thinking)]
        for extra in extras:
            found = list(d.MARKER.finditer(extra))
            for m, nxt in itertools.pairwise(found):
                if not extra[m.end() : nxt.start()].strip() and nxt.group() in _closing_candidates(m.group()):
                    return _Reasoning(
                        ReasoningFormat(ReasoningMode.TAGS, m.group(), nxt.group(), toggles=toggles)
                    )
        for extra in extras:
            for tag in reversed(d.markers(extra)):
                for end in _closing_candidates(tag):
                    if self.cuts_reasoning(end):
                        return _Reasoning(ReasoningFormat(ReasoningMode.TAGS, tag, end, toggles=toggles))
        for start, end in _USUAL_REASONING:
            if self.cuts_reasoning(end):
                return _Reasoning(ReasoningFormat(ReasoningMode.TAGS, start, end, toggles=toggles))
        return _Reasoning(ReasoningFormat(toggles=toggles))

    def cuts_reasoning(self, end: str) -> bool:
        """Whether the template cuts ``THOUGHT<end>`` off an answer (in history, before a
        later answer, or last)."""
        msg = _assistant(THOUGHT + end + ANSWER)
        for tail in (
            self.tail(msg, _user(USER2)),
            self.tail(msg, _user(USER2), _assistant(OTHER)),
            self.tail(msg),
        ):
            if tail is not None and ANSWER in tail and THOUGHT not in tail:
                return True
        return False

    # -- content and ends

    def content(
        self, answer: str, header: str, reasoning: _Reasoning, tool_rest: str
    ) -> tuple[ContentFormat, str]:
        """The content markers, and the text that ends an answer's turn."""
        at = answer.find(ANSWER)
        pre, after = answer[:at], answer[at + len(ANSWER) :]
        before = pre[len(header) :] if pre.startswith(header) else ""
        after = self.bound_answer_end(after)
        r = reasoning.fmt
        if r.end and r.end in before:  # the empty reasoning block written before answers
            before = before[before.find(r.end) + len(r.end) :]
        elif r.start and before.strip() == r.start:
            before = ""
        start = before.strip()
        # the turn ends where a tool-call message ends too, else at a marker that also
        # ends the user's turn
        common = d.lcs_marker_safe([after.rstrip(), tool_rest.rstrip()]) if tool_rest else 0
        end_at = len(after.rstrip()) - common if common else self.first_turn_marker(after, header)
        end, ending = after[:end_at].strip(), after[end_at:]
        if start or end:
            start_text = before[before.find(start) :] if start else ""
            return ContentFormat(ContentMode.ALWAYS_WRAPPED, start_text, end), ending
        if reasoning.content_start:
            wrapped = ContentMode.WRAPPED_WITH_REASONING
            return ContentFormat(wrapped, reasoning.content_start, reasoning.content_end), ending
        return ContentFormat(), ending

    def bound_answer_end(self, after: str) -> str:
        """What follows an answer, cut where another message would follow instead (some
        templates append text after the last message; some end a turn only before the
        next one)."""
        following = self.tail(_assistant(ANSWER), _user(USER2))
        if following is None or ANSWER not in following:
            return after
        rest = following[following.find(ANSWER) + len(ANSWER) :]
        if after.strip():
            return after[: d.lcp_marker_safe([after, rest])]
        # written only before a next message: the markers up to the user's header
        rendered = self.p.render(self.base) or ""
        user_header = d.markers(rendered[: rendered.rfind(USER)][-120:])
        for m in d.MARKER.finditer(rest):
            if m.group() in user_header or USER2 in rest[: m.start()]:
                return rest[: m.start()] if USER2 not in rest[: m.start()] else ""
        return ""

    def first_turn_marker(self, after: str, header: str) -> int:
        """Where in ``after`` the first marker that also ends the user's turn begins (else
        the first marker)."""
        user_end = self.tail() or ""
        for m in d.MARKER.finditer(after):
            if m.group() in header or m.group() in user_end:
                return m.start()
        found = d.MARKER.search(after)
        return found.start() if found else len(after)

    def next_header_marker(self) -> str:
        """The first marker between an answer and the next user message."""
        following = self.tail(_assistant(ANSWER), _user(USER2))
        if following is None or ANSWER not in following or USER2 not in following:
            return ""
        return d.first_marker(following[following.find(ANSWER) + len(ANSWER) : following.rfind(USER2)])

    @staticmethod
    def end_marker(text: str) -> str:
        """The marker ``text`` (what ends a turn) starts with."""
        text = text.strip()
        m = d.MARKER.match(text)
        if m is not None:
            return m.group()
        return text.split()[0] if text else ""

    # -- tool calls

    def tool_probes(self) -> _Calls | None:
        """The tool-call probes, rendered with the first message shape the template
        writes calls for: content ``None`` or ``""``, arguments a dict or a JSON string."""
        one_arg = {ARG1: VAL1}
        result = {"role": "tool", "tool_call_id": ID1, "name": NAME1, "content": TOOL_RESULT}
        for content in (None, ""):
            for as_string in (False, True):
                call = functools.partial(_call, as_string=as_string)

                def msg(*calls: Message, content: Any = content) -> Message:
                    return _assistant(content, tool_calls=list(calls))

                one = self.tail(msg(call(NAME1, one_arg, ID1)), tools=_STRING_TOOLS)
                if one is None or NAME1 not in one:
                    continue
                if not as_string and "{'" in one:
                    continue  # a dict written with str(): the template wants a JSON string
                if "None" in one:
                    continue  # content None written as text
                two = self.tail(
                    msg(call(NAME1, one_arg, ID1), call(NAME2, {ARG1: VAL2}, ID2)), tools=_STRING_TOOLS
                )
                return _Calls(
                    as_string=as_string,
                    content=content,
                    one=one,
                    two=two if two is not None and NAME1 in two and NAME2 in two else None,
                    followed=self.tail(msg(call(NAME1, one_arg, ID1)), result, tools=_STRING_TOOLS),
                    pair=self.tail(msg(call(NAME1, {ARG1: VAL1, ARG2: VAL3}, ID1)), tools=_STRING_TOOLS),
                    typed=self.tail(msg(call(NAME1, {ARG1: INT_VALUE}, ID1)), tools=_INT_TOOLS),
                    markup=self.tail(msg(call(NAME1, {ARG1: MARKUP_VALUE}, ID1)), tools=_STRING_TOOLS),
                )
        return None


# ---------------------------------------------------------------- tool-call analysis


@dataclass(frozen=True, slots=True)
class _TaggedArgs:
    """The markers of tagged arguments (the ``arg_*`` fields of the format)."""

    name_prefix: str = ""
    name_suffix: str = ""
    value_prefix: str = ""
    value_suffix: str = ""
    value_prefix_json: str = ""
    separator: str = ""
    wrap_start: str = ""
    wrap_end: str = ""


@dataclass(slots=True)
class _Layout:
    """What surrounds the calls of a message: ``section`` (before the first call),
    ``head`` (before each call's name or JSON), ``tail`` (after each call's arguments),
    ``separator`` (between calls) and ``rest`` (after the last call's tail)."""

    section: str
    head: str
    tail: str
    separator: str
    rest: str


class _ToolAnalysis:
    """Step 4 of the analysis; ``rest`` (what follows the last call) is split into the
    section's end and the turn's end by :meth:`split_rest` once an answer's end is known."""

    def __init__(self, a: _Analysis, calls: _Calls, header: str, reasoning: ReasoningFormat) -> None:
        self.a = a
        self.calls = calls
        self.header = header
        self.reasoning = reasoning
        self.section = ""
        self.rest = ""

    def body(self, tail: str | None) -> str | None:
        """A tail without the header."""
        if tail is None:
            return None
        if tail.startswith(self.header):
            return tail[len(self.header) :]
        return tail[d.lcp_marker_safe([tail, self.header]) :]

    def run(self) -> ToolCallFormat:
        one = self.body(self.calls.one) or ""
        found = _json_containing(one, NAME1)
        fmt = self.json_format(one, found) if found is not None else self.tag_format(one)
        self.bound_rest()
        return fmt

    # -- layout

    def layout(self, body: str, cores: list[tuple[int, int]]) -> _Layout:
        """The text around the calls' cores (a core: a call's name to the end of its
        arguments, or its JSON); placeholders stand for names and ids while comparing."""
        before = body[: cores[0][0]]
        if len(cores) < 2:
            return _Layout(before, "", "", "", body[cores[0][1] :])
        between = body[cores[0][1] : cores[1][0]]
        after = body[cores[1][1] :]
        n = d.lcs_marker_safe([self.norm(before), self.norm(between)])
        head = before[len(before) - n :] if n else ""
        n = len(head.lstrip())  # whitespace after the previous marker stays with it
        section = before[: len(before) - n]
        between = between[: len(between) - n]
        k = d.lcp_marker_safe([self.norm(between), self.norm(after)])
        return _Layout(section, before[len(before) - n :], between[:k], between[k:], after[k:])

    @staticmethod
    def norm(text: str) -> str:
        """``text`` with ids and names replaced by placeholders of the same length."""
        for needle, mark in ((ID1, "\x03"), (ID2, "\x03"), (NAME1, "\x01"), (NAME2, "\x01")):
            text = text.replace(needle, mark * len(needle))
        return text

    def strip_reasoning(self, text: str) -> str:
        """``text`` without the (empty) reasoning block some templates write before calls."""
        r = self.reasoning
        if r.end and r.end in text:
            j = text.find(r.end)
            if not r.start or r.start in text[:j] or not text[:j].strip():
                return text[j + len(r.end) :]
        return text

    def sections(self, layout: _Layout, single: bool) -> tuple[str, str]:
        """``(section_start, call_start-ish head)``: with one call only, the markers before
        it are the call's; whitespace and reasoning before the first marker go."""
        section, head = layout.section, layout.head
        if single:
            section, head = "", section
        section = self.strip_reasoning(section)
        if not section.strip():
            return "", self.strip_reasoning(section + head).lstrip()
        return section.lstrip(), head

    def next_header_marker(self, section_end: str) -> str:
        """The first marker between the last call (and the section's end) and a tool
        result that follows."""
        following = self.following()
        if following is None or TOOL_RESULT not in following:
            return ""
        after = following[: following.find(TOOL_RESULT)]
        if section_end and after.startswith(section_end):
            after = after[len(section_end) :]
        return d.first_marker(after)

    def following(self) -> str | None:
        """What follows the last call when a tool result follows it (from where
        :attr:`rest` starts)."""
        followed = self.body(self.calls.followed)
        one = self.body(self.calls.one) or ""
        if followed is None or not one.endswith(self.rest):
            return None
        prefix = one[: len(one) - len(self.rest)]
        return followed[len(prefix) :] if followed.startswith(prefix) else None

    def bound_rest(self) -> None:
        """Cut what follows the last call where a tool result would follow instead
        (templates that append instructions after the last message)."""
        following = self.following() if self.rest else None
        if following is not None:
            n = d.lcp_marker_safe([self.rest, following])
            if n and self.rest[n:].strip():
                self.rest = self.rest[:n]

    def split_rest(self, answer_end: str) -> tuple[str, str]:
        """What follows the last call as ``(section_end, turn end)``: the section ends
        with the marker closing its start, else before the marker that ends an answer."""
        rest = self.rest
        if not self.section.strip():
            return "", rest
        closer = _find_closer(d.markers(self.section), rest)
        if closer is not None:
            return rest[: closer.end()], rest[closer.end() :]
        first_end = d.first_marker(answer_end.strip())
        if first_end and first_end in rest:
            j = rest.find(first_end)
            return rest[:j], rest[j:]
        m = d.MARKER.search(rest)  # a closing text without markers (``\n```)
        if m is not None:
            return rest[: m.start()], rest[m.start() :]
        return rest, ""

    # -- json

    def json_format(self, one: str, found: tuple[Any, int, int]) -> ToolCallFormat:
        value, start, end = found
        array = isinstance(value, list)
        element = value[0] if array and value else value
        if not isinstance(element, dict):
            raise UnsupportedTemplateError(
                f"{self.a.t.name}: a tool call is JSON but not an object: {element!r}"
            )
        keys = self.json_keys(element)
        two = self.body(self.calls.two)
        parallel = two is not None
        if array:
            separator = ""
            found2 = _json_containing(two, NAME1) if two is not None else None
            if found2 is not None and isinstance(found2[0], list) and len(found2[0]) == 2:
                first_open = two.find("{", found2[1]) if two is not None else -1
                first = _json_at(two, first_open) if two is not None and first_open != -1 else None
                if two is not None and first is not None:
                    separator = two[first[1] : two.find("{", first[1])]
            else:
                parallel = False
            self.section, self.rest = self.strip_reasoning(one[:start]).lstrip(), one[end:]
            return ToolCallFormat(
                syntax=ToolSyntax.JSON,
                section_start=self.section,
                separator=separator,
                parallel=parallel,
                array=True,
                **keys,
            )
        body, cores = one, [(start, end)]
        if two is not None:
            c1, c2 = _json_containing(two, NAME1), _json_containing(two, NAME2)
            if c1 is not None and c2 is not None and c1[2] <= c2[1]:
                body, cores = two, [(c1[1], c1[2]), (c2[1], c2[2])]
            else:
                parallel = False
        layout = self.layout(body, cores)
        section, head = self.sections(layout, len(cores) == 1)
        tail, rest = layout.tail, layout.rest
        if len(cores) == 1:
            closer = _find_closer(d.markers(head), rest)
            if closer is not None:
                tail, rest = rest[: closer.end()], rest[closer.end() :]
        self.section, self.rest = section, rest
        return ToolCallFormat(
            syntax=ToolSyntax.JSON,
            section_start=section,
            call_start=head,
            call_end=tail,
            separator=layout.separator,
            parallel=parallel,
            **keys,
        )

    @staticmethod
    def json_keys(element: dict[str, Any]) -> dict[str, Any]:
        """The keys of a JSON call: name, arguments (maybe a JSON string), id (ours, or
        numbered by the template), a wrapper object, the name as the key."""
        as_string = False

        def is_args(v: Any) -> bool:
            nonlocal as_string
            if v == {ARG1: VAL1}:
                return True
            if isinstance(v, str) and v.lstrip().startswith("{"):
                try:
                    as_string = bool(json.loads(v) == {ARG1: VAL1})
                except ValueError:
                    return False
                return as_string
            return False

        name_key, args_key, id_key, wrapper, id_pattern = "name", "arguments", "", "", ""
        if NAME1 in element and is_args(element[NAME1]):
            return {"name_is_key": True}
        inner = element
        for k, v in element.items():
            if isinstance(v, dict) and _contains(v, NAME1) and not is_args(v):
                wrapper, inner = k, v
                break
        for k, v in inner.items():
            if v == NAME1:
                name_key = k
            elif is_args(v):
                args_key = k
        for obj in (element, inner):
            for k, v in obj.items():
                if v == ID1:
                    id_key = k
                elif v in ("0", 0) and k not in (name_key, args_key) and not id_key:
                    id_key, id_pattern = k, "{index}"
        return {
            "name_key": name_key,
            "arguments_key": args_key,
            "id_key": id_key,
            "id_pattern": id_pattern,
            "wrapper_key": wrapper,
            "arguments_as_string": as_string,
            "key_order": tuple(element),
        }

    # -- name, then arguments: tag_json, tag_tagged, pythonic, object notation

    def args_kind(self, body: str) -> str:
        """How the arguments follow the name: ``json``, ``python``, ``object`` or ``tagged``."""
        if self.args_span("json", body, NAME1, VAL1) is not None:
            return "json"
        after = body[body.find(NAME1) + len(NAME1) :]
        if after.startswith("("):
            end = _matching_close(after, 0, "(", ")")
            if end != -1 and _python_call(NAME1 + after[:end]):
                return "python"
        if re.match(r"\{\s*" + ARG1 + r"\s*:", after):
            return "object"
        return "tagged"

    @staticmethod
    def args_span(kind: str, body: str, name: str, value: str) -> tuple[int, int] | None:
        """Where the arguments of the call named ``name`` sit in ``body`` (tagged: from
        the first argument's name to the end of its value)."""
        at = body.find(name)
        if at == -1:
            return None
        at += len(name)
        v = body.find(value, at)
        if v == -1:
            return None
        if kind == "json":
            for j in range(at, v):
                if body[j] == "{":
                    got = _json_at(body, j)
                    if got is not None and got[0] == {ARG1: value}:
                        return j, got[1]
            return None
        if kind in ("python", "object"):
            j = at if kind == "python" else body.find("{", at)
            end = _matching_close(body, j, body[j], ")" if kind == "python" else "}")
            return (j, end) if end != -1 else None
        k = body.find(ARG1, at)
        return (k, v + len(value)) if k != -1 else None

    def tag_format(self, one: str) -> ToolCallFormat:
        kind = self.args_kind(one)
        span = self.args_span(kind, one, NAME1, VAL1)
        if span is None:
            raise UnsupportedTemplateError(f"{self.a.t.name}: the arguments of a tool call cannot be located")
        name_at = one.find(NAME1)
        arg = self.tagged_arguments(one) if kind == "tagged" else _TaggedArgs()
        body, cores, parallel = one, [(name_at, span[1])], False
        two = self.body(self.calls.two)
        if two is not None:
            s1, s2 = self.args_span(kind, two, NAME1, VAL1), self.args_span(kind, two, NAME2, VAL2)
            if s1 is not None and s2 is not None and s1[1] <= two.find(NAME2):
                body, cores, parallel = two, [(two.find(NAME1), s1[1]), (two.find(NAME2), s2[1])], True
        layout = self.layout(body, cores)
        array = False
        if (
            kind == "python"
            and layout.section.rstrip().endswith("[")
            and layout.rest.lstrip().startswith("]")
        ):
            array = True
            layout.section = layout.section.rstrip()[:-1]
            layout.rest = layout.rest.lstrip()[1:]
        section, head = self.sections(layout, not parallel)
        tail, rest = layout.tail, layout.rest

        # before the name: the call's start, an id written first, the name's prefix
        id_position, id_prefix, id_suffix, id_pattern = CallIdPosition.NONE, "", "", ""
        if ID1 in head:
            call_start, after_id = head.split(ID1, 1)
            id_suffix, name_prefix = _split_name_prefix(after_id)
            id_position = CallIdPosition.BEFORE_NAME
        else:
            call_start, name_prefix = _split_name_prefix(head)

        # between the name and the arguments: the name's suffix, an id, the arguments' start
        mid = one[name_at + len(NAME1) : span[0]]
        if arg.name_prefix and mid.endswith(arg.name_prefix):
            mid = mid[: len(mid) - len(arg.name_prefix)]
        name_suffix, arguments_start = _split_name_suffix(name_prefix, mid)
        if ID1 in mid:
            # ``[CALL_ID]id[ARGS]``; ``<call name=f id=id>``: the tag the prefix opened
            # closes after the id
            before_id, after_id = mid.split(ID1, 1)
            name_suffix, id_prefix = _split_name_suffix(name_prefix, before_id)
            if ">" in name_suffix:
                id_suffix, arguments_start = "", after_id
            else:
                name_suffix, id_prefix = "", before_id
                id_suffix, arguments_start = _split_name_suffix(name_prefix, after_id)
            id_position = CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS
        elif parallel and id_position is CallIdPosition.NONE:
            numbered = self.numbered_id(body, cores, kind)
            if numbered is not None:
                id_prefix, arguments_start = numbered
                if id_prefix.startswith(name_suffix):
                    id_prefix = id_prefix[len(name_suffix) :]
                id_position = CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS
                # an id glued to the name in one run of text is that text (``functions.f:0``)
                glued = name_prefix and not name_suffix and not d.has_marker(name_prefix + id_prefix)
                id_pattern = f"{name_prefix}{{name}}{id_prefix}{{index}}" if glued else "{index}"

        # after the arguments: the last value's suffix, the arguments' end, an id, the call's end
        value_suffix = arg.value_suffix
        if not parallel:
            tail, rest = "", one[span[1] :]
            closer = _find_closer(d.markers(call_start) + d.markers(name_prefix), rest)
            if closer is not None:
                tail, rest = rest[: closer.end()], rest[closer.end() :]
        if value_suffix and tail.startswith(value_suffix):
            tail = tail[len(value_suffix) :]
        arguments_end, call_end = tail, ""
        if ID1 in tail:
            id_position = CallIdPosition.AFTER_ARGUMENTS
            before_id, after_id = tail.split(ID1, 1)
            last = d.last_marker_match(before_id)
            if last is not None and last.end() == len(before_id):
                arguments_end, id_prefix = before_id[: last.start()], last.group()
            else:
                arguments_end, id_prefix = _split_name_prefix(before_id)
            id_suffix, call_end = _split_after_first_marker(after_id)
        else:
            closer = _find_closer(d.markers(call_start), tail)
            if closer is not None:
                arguments_end, call_end = tail[: closer.start()], tail[closer.start() :]
        self.section, self.rest = section, rest
        syntax = {
            "json": ToolSyntax.TAG_JSON,
            "python": ToolSyntax.PYTHONIC,
            "object": ToolSyntax.OBJECT_NOTATION,
            "tagged": ToolSyntax.TAG_TAGGED,
        }[kind]
        return ToolCallFormat(
            syntax=syntax,
            section_start=section,
            call_start=call_start,
            call_end=call_end,
            separator=layout.separator,
            parallel=parallel,
            name_prefix=name_prefix,
            name_suffix=name_suffix,
            arguments_start=arguments_start,
            arguments_end=arguments_end,
            id_position=id_position,
            id_prefix=id_prefix,
            id_suffix=id_suffix,
            id_pattern=id_pattern,
            array=array,
            string_quote=self.string_quote(one, span) if kind == "object" else "",
            arg_name_prefix=arg.name_prefix,
            arg_name_suffix=arg.name_suffix,
            arg_value_prefix=arg.value_prefix,
            arg_value_suffix=arg.value_suffix,
            arg_value_prefix_json=arg.value_prefix_json,
            arg_separator=arg.separator,
            arg_value_wrap_start=arg.wrap_start,
            arg_value_wrap_end=arg.wrap_end,
        )

    def numbered_id(self, body: str, cores: list[tuple[int, int]], kind: str) -> tuple[str, str] | None:
        """An id the template numbers itself (``functions.f:0``): the text between name and
        arguments of the first and second call differs by ``0`` and ``1``; ``(before, after)``."""
        texts = []
        for (start, _), name, value in ((cores[0], NAME1, VAL1), (cores[1], NAME2, VAL2)):
            span = self.args_span(kind, body, name, value)
            if span is None:
                return None
            texts.append(body[start + len(name) : span[0]])
        a, b = texts
        p = d.common_prefix([a, b])
        s = d.common_suffix([a[p:], b[p:]])
        if a[p : len(a) - s] != "0" or b[p : len(b) - s] != "1":
            return None
        return a[:p], a[len(a) - s :]

    @staticmethod
    def string_quote(one: str, span: tuple[int, int]) -> str:
        """What object notation writes around strings (``<|"|>``)."""
        text = one[span[0] : span[1]]
        return text[text.find(ARG1) + len(ARG1) : text.find(VAL1)].lstrip(": ")

    def tagged_arguments(self, one: str) -> _TaggedArgs:
        """The markers of tagged arguments, from one argument, two, and an integer."""
        at = one.find(NAME1) + len(NAME1)
        k = one.find(ARG1, at)
        v = one.find(VAL1, k)
        mid, q_str, after_value = one[at:k], one[k + len(ARG1) : v], one[v + len(VAL1) :]
        between = ""
        pair = self.body(self.calls.pair)
        if pair is not None:
            pv = pair.find(VAL1, pair.find(NAME1))
            pk = pair.find(ARG2, pv)
            if pv != -1 and pk != -1:
                between = pair[pv + len(VAL1) : pk]
        if between:
            # the name prefix ends what precedes the first name and the second alike
            n = d.lcs_marker_safe([mid, between])
            name_prefix = mid[len(mid) - n :].lstrip() if n else ""
            value_suffix, separator = _split_value_suffix(between[: len(between) - len(name_prefix)])
        else:
            name_prefix = _split_name_prefix(mid)[1]
            m = d.MARKER.search(after_value)
            value_suffix, separator = (after_value[: m.end()] if m else ""), ""
        q_int = ""
        typed = self.body(self.calls.typed)
        if typed is not None:
            tk = typed.find(ARG1, typed.find(NAME1))
            tv = typed.find(str(INT_VALUE), tk)
            if tk != -1 and tv != -1:
                q_int = typed[tk + len(ARG1) : tv]
        value_prefix_json = ""
        if q_int and q_int != q_str:
            # non-strings get another value prefix (``string="false">``): the name's suffix
            # is what both share, up to a space
            p = d.common_prefix([q_str, q_int])
            cut = max((i for i in range(min(p, len(q_str))) if q_str[i].isspace()), default=p)
            name_suffix, value_prefix, value_prefix_json = q_str[:cut], q_str[cut:], q_int[cut:]
        else:
            name_suffix, value_prefix = _split_name_suffix(name_prefix, q_str)
            if not name_suffix:
                name_suffix, value_prefix = _split_after_first_marker(q_str)
        wrap_start, wrap_end = self.value_wrap(name_suffix + value_prefix, value_suffix)
        return _TaggedArgs(
            name_prefix,
            name_suffix,
            value_prefix,
            value_suffix,
            value_prefix_json,
            separator,
            wrap_start,
            wrap_end,
        )

    def value_wrap(self, before_value: str, value_suffix: str) -> tuple[str, str]:
        """What a template puts around a string value holding markup and a line break
        (``<![CDATA[`` … ``]]>``)."""
        markup = self.body(self.calls.markup)
        core = value_suffix.strip()
        if markup is None or MARKUP_VALUE not in markup or not core:
            return "", ""
        k = markup.find(ARG1, markup.find(NAME1))
        v = markup.find(MARKUP_VALUE, k)
        before, after = markup[k + len(ARG1) : v], markup[v + len(MARKUP_VALUE) :]
        end = after.find(core)
        if k == -1 or end == -1 or not before.startswith(before_value):
            return "", ""
        start, stop = before[len(before_value) :], after[:end]
        lead = value_suffix[: len(value_suffix) - len(value_suffix.lstrip())]
        if lead and stop.endswith(lead):
            stop = stop[: len(stop) - len(lead)]
        return (start, stop) if start.strip() and stop.strip() else ("", "")


# ---------------------------------------------------------------------------- public API


def analyze(template: ChatTemplate) -> TemplateFormat:
    """The :class:`TemplateFormat` of ``template``, derived by rendering variations and
    diffing them, with the data patches of :mod:`.patches` applied.

    A template without tools gets ``ToolSyntax.NONE``, without reasoning
    ``ReasoningMode.NONE``. Raises :class:`UnsupportedTemplateError` only when not even
    the assistant's content can be derived (no user + assistant conversation renders).
    """
    fmt = apply_patches(_Analysis(template).run(), template.source)
    if fmt.harmony or fmt.preserved_tokens:
        return fmt
    return replace(fmt, preserved_tokens=preserved_tokens(fmt))


@functools.lru_cache(maxsize=64)
def _compiled(source: str, name: str) -> ChatTemplate:
    return ChatTemplate(source, name=name or "<template>")


def analyze_source(source: str, *, name: str = "") -> TemplateFormat:
    """:func:`analyze` for template text (compiled templates are cached by text)."""
    return analyze(_compiled(source, name))


def preserved_tokens(fmt: TemplateFormat) -> tuple[str, ...]:
    """Every marker of ``fmt`` (stripped) in order, once each, then the end markers; the
    small pieces around names and values only when they are not bare words
    (``functions.``, ``:``)."""
    r, c, t = fmt.reasoning, fmt.content, fmt.tools
    structural = (r.start, r.end, c.start, c.end, t.section_start, t.section_end, t.call_start, t.call_end)
    pieces = (
        t.name_prefix,
        t.name_suffix,
        t.id_prefix,
        t.id_suffix,
        t.arguments_start,
        t.arguments_end,
        t.arg_name_prefix,
        t.arg_name_suffix,
        t.arg_value_prefix,
        t.arg_value_suffix,
        t.arg_value_prefix_json,
        t.arg_value_wrap_start,
        t.arg_value_wrap_end,
        t.string_quote,
    )
    out: list[str] = []
    for cand, words_too in (
        *((x, True) for x in structural),
        *((x, False) for x in pieces),
        *((x, True) for x in fmt.end_markers),
    ):
        token = cand.strip()
        if token and token not in out and (words_too or not re.fullmatch(r"[\w.:,\s]*", token)):
            out.append(token)
    return tuple(out)
