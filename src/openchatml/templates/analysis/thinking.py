"""The thinking switch: the caller's variable that turns a template's reasoning on and off
(``enable_thinking``, Granite's ``thinking``, Hy3's ``reasoning_effort``, Seed-OSS's
``thinking_budget``).

The caller's variables whose names speak of thinking, reasoning, effort or budget are set
to the values the template compares them with (else ``True``/``False``); the one whose
values change the generation prompt after a user message, into values that close the
reasoning (off) and values that do not (on), is the switch.

Some prompts open the reasoning whatever the caller sets (DeepSeek-R1's ``<think>\n``,
Apriel's reasoning up to ``[BEGIN FINAL RESPONSE]``): :func:`open_reasoning` says whether
what a prompt wrote of the answer leaves the reasoning open, and :func:`reasoning_closer`
gives the text that closes it as an empty block, for thinking switched off where no switch
can."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..environment import ChatTemplate
from ..format import ReasoningFormat, ReasoningMode
from .closers import closing_candidates, ends_block
from .diff import diff_split, markers
from .probes import ProbeRenderer, tail_of


@dataclass(frozen=True, slots=True)
class ThinkingSwitch:
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

SwitchCandidate = tuple[str, tuple[Any, ...], tuple[Any, ...]]
"""``(variable, values to try, literals the template compares it with)``."""


def effort_rank(value: Any) -> int:
    """Where an effort name stands (``none`` 0 … ``xhigh`` 5); -1 for other values."""
    return _EFFORT_RANKS.get(value.lower(), -1) if isinstance(value, str) else -1


def same_value(value: Any, among: Sequence[Any]) -> bool:
    """``value in among`` where ``True`` is not ``1``."""
    return any(type(value) is type(v) and value == v for v in among)


def _masked(text: str) -> str:
    """``text`` with digits blanked: renders that differ only by a clock are alike."""
    return _DIGITS.sub("0", text)


def jinja_values(text: str) -> list[Any]:
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


def _compared_literals(source: str, name: str) -> list[Any]:
    """The literals ``source`` compares variable ``name`` with, sets it to or defaults it
    to."""
    var = rf"(?<![\w.'\"]){re.escape(name)}\b"
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
            found += jinja_values(m.group(1))
    return found


def _values_to_try(name: str, found: Sequence[Any]) -> tuple[Any, ...]:
    """The values to try for variable ``name`` given the literals ``found`` for it, once
    each: its strings (and the usual effort names where it names efforts), else its
    numbers, else ``True`` and ``False``."""
    strings = [v for v in found if isinstance(v, str)]
    numbers = [v for v in found if isinstance(v, int) and not isinstance(v, bool)]
    values: list[Any]
    if "effort" in name.lower() or any(effort_rank(v) >= 0 for v in strings):
        values = [*strings, *_COMMON_EFFORTS]
    elif strings:
        values = strings
    elif numbers:
        values = numbers
    else:
        values = [True, False]
    unique: list[Any] = []
    for v in values:
        if not same_value(v, unique):
            unique.append(v)
    return tuple(unique)


@functools.lru_cache(maxsize=256)
def _switch_candidates_of(source: str, variables: frozenset[str]) -> tuple[SwitchCandidate, ...]:
    out: list[SwitchCandidate] = []
    for name in sorted(variables):
        if not _SWITCH_NAME.search(name):
            continue
        var = rf"(?<![\w.'\"]){re.escape(name)}\b"
        if re.search(rf"\bset\s+{re.escape(name)}\s*=", source) and not re.search(
            rf"{var}\s+is\s+(?:not\s+)?(?:defined|undefined)|{var}\s*\|\s*default\b", source
        ):
            continue  # the template's own variable, never the caller's
        found = _compared_literals(source, name)
        out.append((name, _values_to_try(name, found), tuple(found)))
    return tuple(out)


def switch_candidates(template: ChatTemplate) -> tuple[SwitchCandidate, ...]:
    """The variables of ``template`` that may switch thinking, with the values to try and
    the literals the template itself compares them with (cached by the template's text).

    A candidate is a variable the caller may set (the template reads it before setting
    it, or sets it only when it is undefined) whose name speaks of thinking, reasoning,
    effort or budget. Its values: the string literals the template compares it with
    (``x in ['high', 'low', 'no_think']``, ``x | lower == "none"``), with the usual effort
    names where it names efforts; else the numbers it compares it with (``x == 0``,
    ``x == -1``); else ``True`` and ``False``."""
    return _switch_candidates_of(template.source, template.variables)


def closes_reasoning(other: str, tail: str) -> bool:
    """Whether ``tail`` (a render's end, with its generation prompt) closes a block where
    ``other`` does not: in what ``tail`` writes instead of ``other``, a marker closes one
    written before it, or closes what ``other`` opens there."""
    split = diff_split(other, tail)
    own = markers(split.right)
    before = markers(split.prefix)
    theirs = markers(split.left)
    for i, marker in enumerate(own):
        if any(ends_block(o, marker) for o in (*before[-2:], *own[:i])):
            return True
        if any(marker in closing_candidates(o) for o in theirs):
            return True
    return False


def find_switch(renderer: ProbeRenderer) -> ThinkingSwitch | None:
    """The variable that switches thinking (see :func:`switch_candidates`): one whose
    values change the render of a user message and the generation prompt, into an "on"
    and an "off" class. ``enable_thinking`` first, then a switch with effort levels, a
    boolean one, any other; ``None`` when there is none."""
    errors = len(renderer.errors)
    found = [
        s
        for s in (try_switch(renderer, *candidate) for candidate in switch_candidates(renderer.template))
        if s
    ]
    del renderer.errors[errors:]  # refused values are not the template's failures
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


_Rendered = tuple[Any, str, str]
"""A value of a switch, the tail of its render and the render's class (digits masked)."""


def try_switch(
    renderer: ProbeRenderer, name: str, values: Sequence[Any], own: Sequence[Any]
) -> ThinkingSwitch | None:
    """``name`` as a switch, from the renders of a user message with a generation prompt
    under each of ``values`` (a value the template refuses is dropped); ``own`` are the
    values the template names, preferred for on and the effort levels.

    Values rendering alike (digits aside: a clock) form a class. A class is *off* where
    its generation prompt, against another's, closes the reasoning: an empty or filled
    block (``<think>\\n\\n</think>``, ``<|think|><|end|>``, a budget note inside
    ``<seed:think>…</seed:think>``) or the closing marker of what the other opens
    (``</think>`` for ``<think>``). Without such evidence, ``False`` is off (``True`` for
    a name that negates: ``skip_thinking``), ``0`` for a budget, an effort named
    ``none``/``no_think``. On is ``True``, the highest effort, the default budget."""
    rendered: list[tuple[Any, str]] = []
    for value in values:
        text = renderer.render(renderer.base, gen=True, **{name: value})
        if text is not None:
            rendered.append((value, text))
    classes = {_masked(text) for _, text in rendered}
    if len(classes) < 2:
        return None
    default = renderer.render(renderer.base, gen=True)
    default_class = _masked(default) if default is not None else None
    tails = [(v, tail_of(text) or "", _masked(text)) for v, text in rendered]
    off_values = _off_values(name, tails)
    off_classes = {cls for v, _, cls in tails if same_value(v, off_values)}
    on = [(v, cls) for v, _, cls in tails if cls not in off_classes]
    if not on:
        return None
    return _switch_of(name, [v for v, _, _ in tails], on, off_values, own, default_class)


def _off_values(name: str, tails: Sequence[_Rendered]) -> list[Any]:
    """The values of switch ``name`` that turn thinking off: those whose render closes
    the reasoning another's leaves open, else by the value alone (``False``, ``0``, an
    effort ranked 0; ``True`` for a name that negates)."""
    off_values = [
        v for v, tail, cls in tails if any(cls != c and closes_reasoning(t, tail) for _, t, c in tails)
    ]
    if len(off_values) == len(tails):
        off_values = []
    if off_values:
        return off_values
    valid = [v for v, _, _ in tails]
    if all(isinstance(v, bool) for v in valid):
        return [_NEGATES.search(name) is not None]
    if all(isinstance(v, int) and not isinstance(v, bool) for v in valid):
        return [v for v in valid if v == 0]
    return [v for v in valid if effort_rank(v) == 0]


def _switch_of(
    name: str,
    valid: Sequence[Any],
    on: Sequence[tuple[Any, str]],
    off_values: Sequence[Any],
    own: Sequence[Any],
    default_class: str | None,
) -> ThinkingSwitch | None:
    """The switch ``name`` with its on value chosen among ``on`` (value, class), its off
    value among ``off_values`` and its effort levels; ``None`` without an off value or
    effort levels."""
    ons = [v for v, _ in on]
    efforts: tuple[str, ...] = ()
    if all(isinstance(v, bool) for v in valid):
        on_value: Any = not off_values[0] if off_values else True
        off_value: Any = off_values[0] if off_values else None
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in valid):
        on_value = next((v for v, cls in on if cls == default_class), max(ons))
        off_value = off_values[0] if off_values else None
    else:
        pool = [v for v in ons if same_value(v, own)] or ons
        ranked = sorted((v for v in pool if effort_rank(v) > 0), key=effort_rank)
        on_value = (
            ranked[-1] if ranked else next((v for v, c in on if c == default_class and v in pool), pool[0])
        )
        if len({cls for v, cls in on if v in ranked}) > 1:
            efforts = tuple(ranked)
        off_value = min(off_values, key=effort_rank) if off_values else None
    if off_value is None and not efforts:
        return None
    return ThinkingSwitch(name, on_value, off_value, efforts)


def open_reasoning(reasoning: ReasoningFormat, prefix: str) -> bool:
    """Whether a model's output starts inside its reasoning, given ``prefix`` (what the
    prompt already wrote of the answer): the prefix opens the block and does not close it
    (``<think>\\n``), or, where the reasoning has no start marker and runs up to its end
    marker (a delimiter), that marker is not written yet."""
    if reasoning.mode is ReasoningMode.NONE or not reasoning.end:
        return False
    end = reasoning.end.strip() or reasoning.end
    if reasoning.mode is ReasoningMode.TAGS and reasoning.start:
        start = reasoning.start.strip() or reasoning.start
        opened = prefix.rfind(start)
        return opened >= 0 and prefix.find(end, opened) < 0
    return end not in prefix


def reasoning_closer(reasoning: ReasoningFormat, prefix: str) -> str:
    """The text that closes the reasoning ``prefix`` leaves open (:func:`open_reasoning`)
    as an empty block: ``"\\n</think>\\n\\n"`` after ``"<think>\\n"``, as Qwen3's prompt
    with thinking off writes it; ``""`` where the prefix leaves none open."""
    if not open_reasoning(reasoning, prefix):
        return ""
    end = reasoning.end.strip() or reasoning.end
    before = "\n" if prefix.endswith("\n") else ""
    after = "\n\n" if reasoning.mode is ReasoningMode.TAGS else "\n"
    return before + end + after
