"""The handlers of the machine's call states (see :mod:`.machine`): the region between
calls, a call's header, its arguments as one JSON-like value or as a whole JSON object,
and what ends it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from ..format import CallIdPosition, ToolSyntax
from .call_header import clean_name, split_header
from .json_calls import JsonCallReader
from .json_writer import JsonWriter
from .lexer import Lexer
from .markers import consume_trail, match_at, skip_whitespace
from .plan import JSON_OPENERS
from .schemas import property_names
from .states import State
from .warning_codes import W_MARKER, W_TOOL_ARGS, W_TOOL_CALL

if TYPE_CHECKING:
    from .machine import CallRecord, Machine

_PYTHON_CALL: Final = re.compile(r"[A-Za-z_][\w.\-]*\s*\(")
_PYTHON_NAME: Final = re.compile(r"[A-Za-z_][\w.\-]*\s*")
_NAME_LIMIT: Final = 1024
"""How long a call's name may run before the call is taken for text."""


def start_header(m: Machine) -> None:
    """A call's header begins at the read position."""
    m.expect_call = False
    m.state = State.HEADER


def _exit_tools(m: Machine, j: int, why: str = "") -> bool:
    """Leave the calls at ``buf[j]``: the answer goes on (``why`` a section left open)."""
    if m.section_open and m.plan.section_end and why:
        m.warn(W_TOOL_CALL, why, j)
    m.pos = j
    m.section_open = False
    m.list_depth = 0
    m.call = None
    m.state = State.CONTENT
    return True


def read_section(m: Machine, final: bool) -> bool:
    """SECTION: between calls, the markers around them or the next call."""
    buf = m.buf
    j = skip_whitespace(buf, m.pos)
    m.pos = j
    if j >= len(buf):
        return False
    hit = match_at(buf, j, m.plan.section_markers, final)
    if hit is False:
        return False
    if hit is None:
        return _section_text(m, j, final)
    assert isinstance(hit, tuple)
    text, tag = hit
    q = j + len(text)
    m.pos = q
    if tag == "section_end" or tag == "end":
        m.section_open = False
        m.list_depth = 0
        m.state = State.CONTENT if tag == "section_end" else State.DONE
        m.turn_end = m.absolute(q)
        m.call = None
    elif tag == "call_start" and m.plan.syntax is not ToolSyntax.JSON:
        start_header(m)
    elif tag in ("section_start", "separator"):
        m.expect_call = True
    return True


def _section_text(m: Machine, j: int, final: bool) -> bool:
    """Between calls, at ``buf[j]`` no marker: a call, list punctuation, or the end of
    the calls."""
    buf = m.buf
    plan = m.plan
    c = buf[j]
    syntax = plan.syntax
    if syntax is ToolSyntax.JSON:
        if c == "{":
            m.new_call(j)
            m.json_call = JsonCallReader(plan.fmt.tools)
            m.lexer = Lexer(stops=plan.value_stops)
            m.state = State.JSON_CALL
            return True
        if c in "[,;" or (c == "]" and m.list_depth > 0):
            m.list_depth += 1 if c == "[" else -1 if c == "]" else 0
            m.pos = j + 1
            return True
        return _exit_tools(m, j, "the tool-call section was not closed")
    if syntax is ToolSyntax.PYTHONIC:
        if c == "[" or c == ",":
            m.list_depth += 1 if c == "[" else 0
            m.pos = j + 1
            return True
        if c == "]" and m.list_depth > 0:
            m.list_depth -= 1
            m.pos = j + 1
            return True
        if _PYTHON_CALL.match(buf, j) is not None:
            start_header(m)
            return True
        if not final and _PYTHON_NAME.fullmatch(buf, j):
            return False
        return _exit_tools(m, j, "the tool-call section was not closed")
    # tag syntaxes: a call may begin without a call start marker
    if not plan.call_start:
        name_prefix = plan.name_prefix
        if name_prefix:
            if buf.startswith(name_prefix, j):
                start_header(m)
                return True
            if not final and name_prefix.startswith(buf[j:]):
                return False
        elif m.expect_call:
            start_header(m)
            return True
    return _exit_tools(m, j, "the tool-call section was not closed")


def read_header(m: Machine, final: bool) -> bool:
    """HEADER: a call's name and id, up to what opens its arguments (or ends it)."""
    buf, i = m.buf, m.pos
    plan = m.plan
    n = len(buf)
    found = plan.arguments_opener.search(buf, i) if plan.arguments_opener is not None else None
    if (
        found is not None
        and not final
        and any(
            len(o) > len(found.group()) and n - found.start() < len(o) and o.startswith(buf[found.start() :])
            for o in plan.header_openers
        )
    ):  # the opener found may be the start of a longer one
        found = None
    if found is None:
        if n - i > _NAME_LIMIT:
            m.warn(W_MARKER, "a tool call whose name never ended; kept as content", i)
            m.emit_content(i, n)
            m.pos = n
            m.state = State.CONTENT
        return False
    name, id_ = split_header(buf[i : found.start()], plan, m.schemas)
    call = m.new_call(i)
    m.announce(call, name, id_)
    m.begin_arguments()
    opener = found.group()
    if plan.syntax is ToolSyntax.TAG_TAGGED:
        m.pos = found.end() if opener == plan.arguments_start else found.start()
        m.add_arguments("{")
        m.state = State.TAGGED
        return True
    if opener in ("{", "("):
        m.pos = found.start()
    elif opener == plan.arguments_start:
        m.pos = found.end()
        if opener[-1] in JSON_OPENERS:
            m.pos -= 1
    else:  # the call ends before any arguments
        m.pos = found.start()
        m.add_arguments("{}")
        m.state = State.CALL_END
        return True
    positional = property_names(call.schema) if plan.syntax is ToolSyntax.PYTHONIC else ()
    m.lexer = Lexer(custom_quote=plan.string_quote, stops=plan.value_stops)
    m.writer = JsonWriter(positional)
    m.state = State.VALUE
    return True


def read_value(m: Machine, final: bool) -> bool:
    """VALUE: arguments written as one JSON-like value, as JSON text as they come."""
    lexer, writer = m.lexer, m.writer
    assert lexer is not None and writer is not None
    j = lexer.run(m.buf, m.pos, final)
    m.pos = j
    text = writer.write(lexer.tokens)
    lexer.tokens.clear()
    m.add_arguments(text)
    if writer.done or lexer.ended or lexer.stopped:
        if lexer.stopped:
            m.warn(W_TOOL_ARGS, "the arguments were not closed before the call ended", j)
        m.add_arguments(writer.close() if writer.started else "{}")
        m.state = State.CALL_END
        return True
    return False


def read_json_call(m: Machine, final: bool) -> bool:
    """JSON_CALL: a whole call written as a JSON object."""
    lexer, reader, call = m.lexer, m.json_call, m.call
    assert lexer is not None and reader is not None and call is not None
    j = lexer.run(m.buf, m.pos, final)
    m.pos = j
    if not reader.done:
        reader.feed(lexer.tokens)
        _json_call_progress(m, reader, call)
    lexer.tokens.clear()
    if lexer.ended or lexer.stopped:  # the lexer says where the object ends
        if lexer.stopped:
            m.warn(W_TOOL_ARGS, "the tool call was not closed before its end marker", j)
        if reader.done:
            _json_call_done(m, reader, call)
        else:
            close_json_call(m, reader, call)
        m.state = State.SECTION
        return True
    return False


def _json_call_progress(m: Machine, reader: JsonCallReader, call: CallRecord) -> None:
    """What the reader found so far goes out: the arguments, the name, a late id."""
    if reader.out:
        text = "".join(reader.out)
        reader.out.clear()
        m.add_arguments(text)
    if not call.announced and reader.name is not None:
        m.announce(call, clean_name(reader.name, m.schemas) or reader.name, reader.id or "")
    if call.announced and reader.id is not None and reader.id != call.id:
        m.identify(call, reader.id)


def _json_call_done(m: Machine, reader: JsonCallReader, call: CallRecord) -> None:
    if reader.writer is None or not reader.writer.started:  # no arguments, or nothing of them
        if reader.args_started:
            m.warn(
                W_TOOL_ARGS,
                "the tool call's arguments held no value; {} was used",
                call.start - m.base,
            )
        m.add_arguments("{}")
    if not call.announced:
        m.announce(call, "", reader.id or "")
    call.closed = True
    m.json_call = None


def close_json_call(m: Machine, reader: JsonCallReader, call: CallRecord) -> None:
    """A call's JSON object ended early: close its arguments into JSON."""
    text = reader.close()
    _json_call_progress(m, reader, call)
    if text:
        m.add_arguments(text)
    _json_call_done(m, reader, call)


def read_call_end(m: Machine, final: bool) -> bool:
    """CALL_END: after the arguments, their end marker, an id, and the call's end."""
    if m.call_end_step == 0:
        if m.plan.syntax is ToolSyntax.TAG_TAGGED:
            m.add_arguments("}")
        m.call_end_step = 1
    buf = m.buf
    while True:
        j = skip_whitespace(buf, m.pos)
        if j >= len(buf) and not final:
            return False
        step = m.call_end_step
        if step == 1:
            if not _read_arguments_end(m, j, final):
                return False
        elif step == 2:
            if not _read_late_id(m, j, final):
                return False
        else:
            return _read_call_end_marker(m, j, final)
        m.call_end_step = step + 1


def _read_arguments_end(m: Machine, j: int, final: bool) -> bool:
    """The arguments' end marker at ``buf[j]``, if there; ``False`` when too short to tell."""
    plan = m.plan
    end = plan.arguments_end
    if plan.arguments_end_closes:  # its first character was the value's closing bracket
        end = end[1:].strip()
    if end and not m.arguments_end_seen:
        hit = match_at(m.buf, j, [(end, None)], final)
        if hit is False:
            return False
        if hit is not None:
            m.pos = j + len(end)
            m.arguments_end_seen = True
    return True


def _read_late_id(m: Machine, j: int, final: bool) -> bool:
    """An id written after the arguments at ``buf[j]``, if there; ``False`` when too
    short to tell."""
    plan = m.plan
    buf = m.buf
    id_prefix, id_suffix = plan.id_prefix, plan.id_suffix
    if plan.id_position is not CallIdPosition.AFTER_ARGUMENTS or not id_prefix:
        return True
    hit = match_at(buf, j, [(id_prefix, None)], final)
    if hit is False:
        return False
    if hit is None:
        return True
    start = j + len(id_prefix)
    found = [k for k in (buf.find(e, start) for e in (id_suffix, plan.call_end) if e) if k >= 0]
    if not found and not final:
        return False
    stop = min(found) if found else len(buf)
    if m.call is not None:
        m.identify(m.call, buf[start:stop].strip())
    if id_suffix and buf.startswith(id_suffix, stop):
        stop += len(id_suffix)
    m.pos = stop
    return True


def _read_call_end_marker(m: Machine, j: int, final: bool) -> bool:
    """The call's end marker at ``buf[j]``, if there: the call is over either way."""
    plan = m.plan
    if plan.call_end:
        hit = match_at(m.buf, j, [(plan.call_end, None)], final)
        if hit is False:
            return False
        if hit is not None:
            m.pos = consume_trail(m.buf, j + len(plan.call_end), plan.call_end_trail)
    if m.call is not None:
        m.call.closed = True
    m.call = None
    m.state = State.SECTION
    return True
