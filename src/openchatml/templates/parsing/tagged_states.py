"""The handlers of the machine's tagged-argument states (see :mod:`.machine`): arguments
written one by one between markers (``<parameter=city>Paris</parameter>``), each value
raw text typed by the tool's schema. A value that may only be a string is streamed as it
comes; any other is written once complete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .json_writer import encode_string
from .markers import MarkerAction, consume_trail, match_at, skip_whitespace
from .schemas import property_schema, typed_json, value_kinds
from .states import State
from .warning_codes import W_TOOL_ARGS

if TYPE_CHECKING:
    from .machine import Machine

_NAME_LIMIT: Final = 512
"""How long an argument's name may run before it is skipped."""
WRAPPER_UNKNOWN: Final = 0
"""Whether the value sits in the format's wrapper (``<![CDATA[``) is not known yet."""
NO_WRAPPER: Final = -1
IN_WRAPPER: Final = 1
AFTER_WRAPPER: Final = 2


class TaggedArgument:
    """A tagged argument being read: its name, how its value is written (``mode``:
    ``"string"`` streamed as JSON string text, ``"json"`` or ``"typed"`` kept whole and
    typed by ``kinds``), and its value so far."""

    __slots__ = ("kinds", "mode", "name", "pieces", "started", "wrapper")

    def __init__(self) -> None:
        self.name = ""
        self.mode = ""
        self.kinds: frozenset[str] = frozenset()
        self.pieces: list[str] = []
        """The raw value so far (not in ``"string"`` mode)."""
        self.started = False
        """Its key has been written (``"string"`` mode: its opening quote too)."""
        self.wrapper = WRAPPER_UNKNOWN


def read_tagged(m: Machine, final: bool) -> bool:
    """TAGGED: between arguments, the next one's name prefix or the call's end."""
    buf = m.buf
    j = skip_whitespace(buf, m.pos)
    m.pos = j
    n = len(buf)
    if j >= n:
        return False
    plan = m.plan
    hit = match_at(buf, j, plan.between_arguments, final)
    if hit is False:
        return False
    if hit is None:  # text that is no argument: skipped
        first = plan.between_arguments_first
        found = first.search(buf, j + 1) if first is not None else None
        k = found.start() if found is not None else n
        m.warn(W_TOOL_ARGS, "skipped text between arguments that is no argument", j)
        m.pos = k
        return k < n or final
    assert isinstance(hit, tuple)
    text, tag = hit
    if tag == "arg":
        m.pos = j + len(text)
        m.argument = TaggedArgument()
        m.state = State.ARG_NAME
        return True
    if tag == "separator":
        m.pos = j + len(text)
        return True
    if tag == "args_end":
        m.pos = j + len(text)
        m.arguments_end_seen = True
    m.state = State.CALL_END
    return True


def read_argument_name(m: Machine, final: bool) -> bool:
    """ARG_NAME: the argument's name, up to its end marker or its value's prefix."""
    buf, i = m.buf, m.pos
    argument = m.argument
    assert argument is not None
    plan = m.plan
    p, q, marker = plan.argument_name_scanner.find(buf, i, final)
    if marker is None:
        if len(buf) - i > _NAME_LIMIT or final:
            m.warn(W_TOOL_ARGS, "an argument name that never ended", i)
            m.pos = len(buf) if final else i + _NAME_LIMIT
            m.state = State.TAGGED
            return not final
        return False
    if marker.action is MarkerAction.VALUE_END:  # the name's own end marker
        trail = plan.argument_name_trail
        if trail and not final and len(buf) - q < len(trail) and trail.startswith(buf[q:]):
            return False  # the name is read again with more text
        argument.name = buf[i:p].strip().strip("\"'").strip()
        m.pos = consume_trail(buf, q, trail) if trail else q
    else:
        argument.name = buf[i:p].strip().strip("\"'").strip()
        m.pos = p
    m.state = State.ARG_PREFIX
    return True


def read_argument_prefix(m: Machine, final: bool) -> bool:
    """ARG_PREFIX: the marker before the value, which may say how it is written."""
    buf, i = m.buf, m.pos
    argument = m.argument
    assert argument is not None
    plan = m.plan
    mode = "raw"
    if plan.value_prefixes:
        j = skip_whitespace(buf, i)
        if j >= len(buf) and not final:
            return False
        hit = match_at(buf, j, plan.value_prefixes, final)
        if hit is False:
            return False
        if hit is not None:
            assert isinstance(hit, tuple)
            text, (mode, trail) = hit
            q = j + len(text)
            if trail:
                if not final and len(buf) - q < len(trail) and trail.startswith(buf[q:]):
                    return False
                q = consume_trail(buf, q, trail)
            i = q
    m.pos = i
    call = m.call
    kinds: frozenset[str] = frozenset()
    if call is not None and call.schema:
        kinds = value_kinds(property_schema(call.schema, argument.name), call.schema)
    if mode == "json":
        argument.mode = "json"
    elif kinds == {"string"}:
        argument.mode = "string"
    else:
        argument.mode = "typed"
    argument.kinds = kinds
    m.state = State.ARG_VALUE
    return True


def read_argument_value(m: Machine, final: bool) -> bool:
    """ARG_VALUE: the value, up to its end marker (or what ends a value left open)."""
    argument = m.argument
    assert argument is not None
    _open_value(m, argument)
    if argument.wrapper in (WRAPPER_UNKNOWN, IN_WRAPPER) and not _read_wrapped(m, argument, final):
        return False
    buf, i = m.buf, m.pos
    p, q, marker = m.plan.value_scanner.find(buf, i, final)
    if argument.wrapper == AFTER_WRAPPER:  # after the wrapper: only the closing marker
        if marker is None:
            m.pos = p
            return False
    else:
        _value_text(m, argument, buf[i:p])
    m.pos = p
    if marker is None:
        return False
    if marker.action is MarkerAction.VALUE_END:
        m.pos = q
    else:
        m.pos = p + marker.drop
        m.warn(W_TOOL_ARGS, f"argument {argument.name!r} was not closed", p)
    close_value(m, argument)
    m.state = State.TAGGED
    return True


def _read_wrapped(m: Machine, argument: TaggedArgument, final: bool) -> bool:
    """The value's wrapper (``<![CDATA[`` … ``]]>``), whether there is one, and what it
    holds: everything up to its end is the value. ``False`` when more text is needed."""
    buf, i = m.buf, m.pos
    n = len(buf)
    plan = m.plan
    if argument.wrapper == WRAPPER_UNKNOWN:
        head = plan.value_wrap_start
        if not head:
            argument.wrapper = NO_WRAPPER
        elif buf.startswith(head, i):
            argument.wrapper = IN_WRAPPER
            i += len(head)
            m.pos = i
        elif not final and n - i < len(head) and head.startswith(buf[i:]):
            return False
        else:
            argument.wrapper = NO_WRAPPER
    if argument.wrapper == IN_WRAPPER:
        tail = plan.value_wrap_end
        k = buf.find(tail, i)
        if k < 0:
            end = n
            if not final:
                for t in range(min(len(tail) - 1, n - i), 0, -1):
                    if tail.startswith(buf[n - t :]):
                        end = n - t
                        break
            _value_text(m, argument, buf[i:end])
            m.pos = end
            return False
        _value_text(m, argument, buf[i:k])
        m.pos = k + len(tail)
        argument.wrapper = AFTER_WRAPPER
    return True


def _key(m: Machine, argument: TaggedArgument) -> str:
    """The argument's key in the arguments' JSON object (after a comma but for the first)."""
    separator = ", " if m.argument_count else ""
    m.argument_count += 1
    return separator + '"' + encode_string(argument.name) + '": '


def _value_text(m: Machine, argument: TaggedArgument, text: str) -> None:
    if not text:
        return
    if argument.mode == "string":
        m.add_arguments(encode_string(text))
    else:
        argument.pieces.append(text)


def _open_value(m: Machine, argument: TaggedArgument) -> None:
    if not argument.started:
        argument.started = True
        if argument.mode == "string":
            m.add_arguments(_key(m, argument) + '"')


def close_value(m: Machine, argument: TaggedArgument) -> None:
    """The value has ended: write it (a string: its closing quote)."""
    _open_value(m, argument)
    if argument.mode == "string":
        m.add_arguments('"')
        return
    raw = "".join(argument.pieces)
    kinds = argument.kinds
    if argument.mode == "json":
        kinds = kinds - {"string"} if kinds and kinds != {"string"} else frozenset()
    m.add_arguments(_key(m, argument) + typed_json(raw, kinds))


def add_partial_value(m: Machine, argument: TaggedArgument) -> None:
    """A partial parse ends inside the value: a value kept whole goes out as written so
    far (its key alone when none of it was)."""
    if argument.mode != "string":
        m.add_arguments(_key(m, argument) + "".join(argument.pieces).strip())


def partial_key(m: Machine, name: str, *, whole: bool) -> str:
    """A partial parse ends at an argument's ``name``: its key, and the colon if the name
    is ``whole`` (``, "name": ``), else the key cut short (``, "na``)."""
    if whole:
        separator = ", " if m.argument_count else ""
        m.argument_count += 1
        return separator + '"' + encode_string(name) + '": '
    return (", " if m.argument_count else "") + '"' + encode_string(name)
