"""The handlers of the machine's free-text states (see :mod:`.machine`): the answer, the
reasoning, text held until it is known what it is, a markerless call's first bracket,
and what follows the end of the turn."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from ..format import ToolSyntax
from .call_states import start_header
from .markers import Marker, MarkerAction, match_at, skip_whitespace
from .states import State
from .warning_codes import W_STRAY

if TYPE_CHECKING:
    from .machine import Machine

_PROBE_JSON: Final = re.compile(r"\s*(?:\[\s*)?\{\s*([\"'])([^\"'\\\n]{1,64})\1\s*:")
_PROBE_JSON_PARTIAL: Final = re.compile(
    r"\s*(?:\[\s*(?:\{\s*(?:[\"'][^\"'\\\n]{0,64}(?:[\"']\s*)?)?)?|\{\s*(?:[\"'][^\"'\\\n]{0,64}(?:[\"']\s*)?)?)?"
)
_PROBE_PY: Final = re.compile(r"\s*\[\s*([A-Za-z_][\w.\-]*)\s*\(")
_PROBE_PY_PARTIAL: Final = re.compile(r"\s*\[\s*(?:[A-Za-z_][\w.\-]*\s*)?")
_CALL_OPENERS: Final = (MarkerAction.SECTION_START, MarkerAction.CALL_START, MarkerAction.NAME_PREFIX)


def read_content(m: Machine, final: bool) -> bool:
    """CONTENT: the answer, up to the next marker."""
    buf, i = m.buf, m.pos
    n = len(buf)
    if i >= n:
        return False
    if m.at_start:
        settled = _read_start(m, final)
        if settled is not None:
            return settled
    p, q, marker = m.plan.content_scanner.find(buf, i, final)
    if marker is None:
        if p > i:
            if m.at_start and not buf[i:p].strip():
                if final:
                    m.emit_content(i, p)
                    m.pos = p
                return False
            m.at_start = False
            m.emit_content(i, p)
            m.pos = p
        return False
    before_blank = not buf[i:p].strip()
    if not (m.at_start and before_blank):
        m.emit_content(i, p)
        m.at_start = False
    return _content_marker(m, marker, p, q)


def _read_start(m: Machine, final: bool) -> bool | None:
    """The start of the answer: a repeated role header, or the bracket of a call written
    with no marker; ``None`` when it is neither (the answer's text is read)."""
    buf, i = m.buf, m.pos
    n = len(buf)
    plan = m.plan
    j = skip_whitespace(buf, i)
    if j == n:
        if final:
            m.emit_content(i, n)
            m.pos = n
        return False
    if m.absolute(j) == m.prefix_length and plan.repeated_headers and not m.muted:
        hit = match_at(buf, j, [(s, None) for s in plan.repeated_headers], final)
        if hit is False:
            return False
        if hit is not None:
            assert isinstance(hit, tuple)
            m.warn(W_STRAY, f"dropped {hit[0]!r}, a repeat of the role header", j)
            m.pos = j + len(hit[0])
            return True
    if plan.bare_calls and buf[j] in "{[":
        m.pos = j
        m.state = State.PROBE
        return True
    return None


def _content_marker(m: Machine, marker: Marker, p: int, q: int) -> bool:
    """A marker found in the answer at ``buf[p:q]``, the text before it emitted."""
    action = marker.action
    if action is MarkerAction.REASONING_START:
        if m.at_start:
            m.emit_reasoning_marker(p, q)
            m.pos = q
            m.state = State.REASONING
        elif m.reasoning_starts_are_text:
            m.emit_content(p, q)
            m.pos = q
        else:
            m.pos = p
            m.held_from = m.absolute(p)
            m.held_marker_end = m.absolute(q)
            m.scan_from = m.absolute(q)
            m.state = State.HELD_CONTENT
        return True
    if action is MarkerAction.REASONING_END:
        if m.extract_reasoning:
            m.warn(W_STRAY, f"dropped {marker.text!r}: it ends reasoning that never began", p)
        else:
            m.emit_content(p, q)
        m.pos = q
        return True
    if action is MarkerAction.CONTENT_START or action is MarkerAction.CONTENT_END:
        m.pos = q
        return True
    if action is MarkerAction.END_OF_TURN:
        m.pos = q
        m.turn_end = m.absolute(q)
        m.state = State.DONE
        return True
    if action in _CALL_OPENERS:
        _open_calls(m, action, p, q)
        return True
    if action is MarkerAction.REPEAT:
        m.warn(
            W_STRAY,
            f"dropped {marker.text[: marker.drop]!r}, repeated before {marker.text[marker.drop :]!r}",
            p,
        )
        m.pos = p + marker.drop
        return True
    if action is MarkerAction.FENCE:  # a code fence around a JSON answer
        if m.at_start and not m.fence_open:
            m.fence_open = True
        elif m.fence_open:
            m.fence_open = False
        else:
            m.emit_content(p, q)
            m.at_start = False
        m.pos = q
        return True
    m.emit_content(p, q)  # pragma: no cover - every action is handled above
    m.pos = q
    return True


def _open_calls(m: Machine, action: MarkerAction, p: int, q: int) -> None:
    """A tool-call opener found in the answer at ``buf[p:q]``."""
    m.at_start = False
    if action is MarkerAction.SECTION_START:
        m.pos = q
        m.section_open = True
        m.expect_call = True
        m.list_depth = 0
        m.state = State.SECTION
    elif action is MarkerAction.CALL_START:
        m.pos = q
        m.section_open = False
        m.list_depth = 0
        if m.plan.syntax is ToolSyntax.JSON:
            m.state = State.SECTION
        else:
            start_header(m)
    else:  # a name prefix: the name begins with it
        m.pos = p
        m.section_open = False
        start_header(m)


def read_reasoning(m: Machine, final: bool) -> bool:
    """REASONING: reasoning, up to its end (or a tool-call opener, or the turn's end)."""
    buf, i = m.buf, m.pos
    if i >= len(buf):
        return False
    p, q, marker = m.plan.reasoning_scanner.find(buf, i, final)
    m.emit_reasoning(i, p)
    m.pos = p
    if marker is None:
        return False
    action = marker.action
    if action is MarkerAction.REASONING_END:
        m.emit_reasoning_marker(p, q)
        m.pos = q
        m.state = State.CONTENT
        m.at_start = True
        return True
    if action is MarkerAction.END_OF_TURN:
        m.pos = q
        m.turn_end = m.absolute(q)
        m.state = State.DONE
        return True
    # a tool-call opener inside the reasoning: hold until we know which it was
    m.held_from = m.absolute(p)
    m.scan_from = m.absolute(p)
    m.state = State.HELD_REASONING
    return True


def read_held_reasoning(m: Machine, final: bool) -> bool:
    """HELD_REASONING: nothing goes out until the reasoning's end marker shows up."""
    p, q, marker = m.plan.reasoning_end_scanner.find(m.buf, m.scan_from - m.base, final)
    if marker is None:
        m.scan_from = m.absolute(p)
        return False
    m.emit_reasoning(m.pos, p)
    m.emit_reasoning_marker(p, q)
    m.pos = q
    m.state = State.CONTENT
    m.at_start = True
    return True


def read_held_content(m: Machine, final: bool) -> bool:
    """HELD_CONTENT: a reasoning start in the answer is reasoning once its end shows up."""
    p, q, marker = m.plan.reasoning_end_scanner.find(m.buf, m.scan_from - m.base, final)
    if marker is None:
        m.scan_from = m.absolute(p)
        return False
    mark = m.held_marker_end - m.base
    m.emit_reasoning_marker(m.pos, mark)
    m.emit_reasoning(mark, p)
    m.emit_reasoning_marker(p, q)
    m.pos = q
    m.state = State.CONTENT
    return True


def read_probe(m: Machine, final: bool) -> bool:
    """PROBE: whether a bracket opening the answer begins a call written with no marker."""
    buf, i = m.buf, m.pos
    text = buf[i:]
    plan = m.plan
    call = False
    undecided = False
    if plan.bare_calls == "json":
        match = _PROBE_JSON.match(text)
        if match is not None:
            key = match.group(2)
            call = key in plan.call_keys or (
                plan.fmt.tools.name_is_key and (not m.schemas or key in m.schemas)
            )
        else:
            undecided = len(text) < 96 and _PROBE_JSON_PARTIAL.fullmatch(text) is not None
    else:
        match = _PROBE_PY.match(text)
        if match is not None:
            call = not m.schemas or match.group(1) in m.schemas
        else:
            undecided = len(text) < 96 and _PROBE_PY_PARTIAL.fullmatch(text) is not None
    if undecided:
        if not final:
            return False
        if m.options.partial:  # uncertain: left out
            m.pos = len(buf)
            m.at_start = False
            m.state = State.CONTENT
            return False
    m.at_start = False
    if call:
        m.section_open = False
        m.list_depth = 0
        m.state = State.SECTION
    else:
        m.state = State.CONTENT
    return True


def read_done(m: Machine, final: bool) -> bool:
    """DONE: after an end-of-turn marker, the rest is dropped."""
    buf, i = m.buf, m.pos
    if i < len(buf):
        if buf[i:].strip():
            m.warn(W_STRAY, "dropped text after the end of the turn", m.turn_end - m.base)
        m.pos = len(buf)
    return False
