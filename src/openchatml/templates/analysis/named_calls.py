"""Tool calls written as a name, then arguments: ``TAG_JSON`` (``<function=f>{…}``),
``TAG_TAGGED`` (``<invoke name="f"><parameter …>``), ``PYTHONIC`` (``f(a='x')``) and
``OBJECT_NOTATION`` (``call:f{a:<|"|>x<|"|>}``).

A call reads in three parts around its name and arguments: before the name (the call's
start, an id written first, the name's prefix), between the name and the arguments (the
name's suffix, an id, the arguments' start) and after them (the arguments' end, an id,
the call's end)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnsupportedTemplateError
from ..format import CallIdPosition, ReasoningFormat, ToolCallFormat, ToolSyntax
from .arguments import TaggedArgumentMarkers, arguments_kind, arguments_span, string_quote, tagged_arguments
from .call_layout import CallLayout, DerivedToolCalls, ToolCallBodies, layout_calls, split_sections
from .closers import find_closer
from .diff import common_prefix, common_suffix, has_marker, last_marker_match, markers
from .edges import split_after_first_marker, split_name_prefix, split_name_suffix
from .probes import ID1, NAME1, NAME2, VAL1, VAL2

_SYNTAX = {
    "json": ToolSyntax.TAG_JSON,
    "python": ToolSyntax.PYTHONIC,
    "object": ToolSyntax.OBJECT_NOTATION,
    "tagged": ToolSyntax.TAG_TAGGED,
}


@dataclass(slots=True)
class NamedCallPieces:
    """The texts around a call's name and arguments, filled in part by part."""

    call_start: str = ""
    name_prefix: str = ""
    name_suffix: str = ""
    arguments_start: str = ""
    arguments_end: str = ""
    call_end: str = ""
    id_position: CallIdPosition = CallIdPosition.NONE
    id_prefix: str = ""
    id_suffix: str = ""
    id_pattern: str = ""


def named_calls(bodies: ToolCallBodies, reasoning: ReasoningFormat, template_name: str) -> DerivedToolCalls:
    """The format of calls written as a name, then arguments; raises
    :class:`UnsupportedTemplateError` when the arguments cannot be located."""
    one = bodies.one
    kind = arguments_kind(one)
    span = arguments_span(kind, one, NAME1, VAL1)
    if span is None:
        raise UnsupportedTemplateError(f"{template_name}: the arguments of a tool call cannot be located")
    name_at = one.find(NAME1)
    arg = tagged_arguments(bodies) if kind == "tagged" else TaggedArgumentMarkers()
    body, cores, parallel = one, [(name_at, span[1])], False
    two = bodies.two
    if two is not None:
        s1, s2 = arguments_span(kind, two, NAME1, VAL1), arguments_span(kind, two, NAME2, VAL2)
        if s1 is not None and s2 is not None and s1[1] <= two.find(NAME2):
            body, cores, parallel = two, [(two.find(NAME1), s1[1]), (two.find(NAME2), s2[1])], True
    layout = layout_calls(body, cores)
    array = _python_array(kind, layout)
    section, head = split_sections(layout, not parallel, reasoning)
    pieces = _before_name(head)
    mid = one[name_at + len(NAME1) : span[0]]
    if arg.name_prefix and mid.endswith(arg.name_prefix):
        mid = mid[: len(mid) - len(arg.name_prefix)]
    _between_name_and_arguments(pieces, mid)
    if parallel and pieces.id_position is CallIdPosition.NONE and ID1 not in mid:
        _numbered_id(pieces, body, cores, kind)
    if parallel:
        tail, rest = layout.tail, layout.rest
    else:
        tail, rest = "", one[span[1] :]
        closer = find_closer(markers(pieces.call_start) + markers(pieces.name_prefix), rest)
        if closer is not None:
            tail, rest = rest[: closer.end()], rest[closer.end() :]
    if arg.value_suffix and tail.startswith(arg.value_suffix):
        tail = tail[len(arg.value_suffix) :]
    _after_arguments(pieces, tail)
    quote = string_quote(one, span) if kind == "object" else ""
    fmt = _named_call_format(_SYNTAX[kind], section, layout.separator, parallel, array, quote, pieces, arg)
    return DerivedToolCalls(fmt, section, rest)


def _python_array(kind: str, layout: CallLayout) -> bool:
    """Whether Python calls are written as a list (``[f(a=1), g(b=2)]``); the brackets are
    taken out of ``layout``'s section and rest."""
    if kind == "python" and layout.section.rstrip().endswith("[") and layout.rest.lstrip().startswith("]"):
        layout.section = layout.section.rstrip()[:-1]
        layout.rest = layout.rest.lstrip()[1:]
        return True
    return False


def _before_name(head: str) -> NamedCallPieces:
    """The call's start, an id written before the name and the name's prefix, from what
    precedes each call's name (``head``)."""
    pieces = NamedCallPieces()
    if ID1 in head:
        pieces.call_start, after_id = head.split(ID1, 1)
        pieces.id_suffix, pieces.name_prefix = split_name_prefix(after_id)
        pieces.id_position = CallIdPosition.BEFORE_NAME
    else:
        pieces.call_start, pieces.name_prefix = split_name_prefix(head)
    return pieces


def _between_name_and_arguments(pieces: NamedCallPieces, mid: str) -> None:
    """The name's suffix, an id and the arguments' start, from the text between the name
    and the arguments (``mid``)."""
    name_prefix = pieces.name_prefix
    pieces.name_suffix, pieces.arguments_start = split_name_suffix(name_prefix, mid)
    if ID1 not in mid:
        return
    # ``[CALL_ID]id[ARGS]``; ``<call name=f id=id>``: the tag the prefix opened closes
    # after the id
    before_id, after_id = mid.split(ID1, 1)
    pieces.name_suffix, pieces.id_prefix = split_name_suffix(name_prefix, before_id)
    if ">" in pieces.name_suffix:
        pieces.id_suffix, pieces.arguments_start = "", after_id
    else:
        pieces.name_suffix, pieces.id_prefix = "", before_id
        pieces.id_suffix, pieces.arguments_start = split_name_suffix(name_prefix, after_id)
    pieces.id_position = CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS


def _numbered_id(pieces: NamedCallPieces, body: str, cores: list[tuple[int, int]], kind: str) -> None:
    """An id the template numbers itself between the name and the arguments, if the two
    calls of ``body`` show one (see :func:`numbered_id`)."""
    numbered = numbered_id(body, cores, kind)
    if numbered is None:
        return
    id_prefix, pieces.arguments_start = numbered
    if id_prefix.startswith(pieces.name_suffix):
        id_prefix = id_prefix[len(pieces.name_suffix) :]
    pieces.id_prefix = id_prefix
    pieces.id_position = CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS
    # an id glued to the name in one run of text is that text (``functions.f:0``)
    name_prefix = pieces.name_prefix
    glued = name_prefix and not pieces.name_suffix and not has_marker(name_prefix + id_prefix)
    pieces.id_pattern = f"{name_prefix}{{name}}{id_prefix}{{index}}" if glued else "{index}"


def numbered_id(body: str, cores: list[tuple[int, int]], kind: str) -> tuple[str, str] | None:
    """An id the template numbers itself (``functions.f:0``): the text between name and
    arguments of the first and second call in ``body`` differs by ``0`` and ``1``;
    ``(before, after)`` the number, or ``None``."""
    texts = []
    for (start, _), name, value in ((cores[0], NAME1, VAL1), (cores[1], NAME2, VAL2)):
        span = arguments_span(kind, body, name, value)
        if span is None:
            return None
        texts.append(body[start + len(name) : span[0]])
    first, second = texts
    before = common_prefix([first, second])
    after = common_suffix([first[before:], second[before:]])
    if first[before : len(first) - after] != "0" or second[before : len(second) - after] != "1":
        return None
    return first[:before], first[len(first) - after :]


def _after_arguments(pieces: NamedCallPieces, tail: str) -> None:
    """The arguments' end, an id written after the arguments and the call's end, from what
    follows the arguments (``tail``, without the last value's suffix)."""
    pieces.arguments_end, pieces.call_end = tail, ""
    if ID1 in tail:
        pieces.id_position = CallIdPosition.AFTER_ARGUMENTS
        before_id, after_id = tail.split(ID1, 1)
        last = last_marker_match(before_id)
        if last is not None and last.end() == len(before_id):
            pieces.arguments_end, pieces.id_prefix = before_id[: last.start()], last.group()
        else:
            pieces.arguments_end, pieces.id_prefix = split_name_prefix(before_id)
        pieces.id_suffix, pieces.call_end = split_after_first_marker(after_id)
        return
    closer = find_closer(markers(pieces.call_start), tail)
    if closer is not None:
        pieces.arguments_end, pieces.call_end = tail[: closer.start()], tail[closer.start() :]


def _named_call_format(
    syntax: ToolSyntax,
    section: str,
    separator: str,
    parallel: bool,
    array: bool,
    quote: str,
    pieces: NamedCallPieces,
    arg: TaggedArgumentMarkers,
) -> ToolCallFormat:
    """The :class:`ToolCallFormat` of named calls from their parts."""
    return ToolCallFormat(
        syntax=syntax,
        section_start=section,
        call_start=pieces.call_start,
        call_end=pieces.call_end,
        separator=separator,
        parallel=parallel,
        name_prefix=pieces.name_prefix,
        name_suffix=pieces.name_suffix,
        arguments_start=pieces.arguments_start,
        arguments_end=pieces.arguments_end,
        id_position=pieces.id_position,
        id_prefix=pieces.id_prefix,
        id_suffix=pieces.id_suffix,
        id_pattern=pieces.id_pattern,
        array=array,
        string_quote=quote,
        arg_name_prefix=arg.name_prefix,
        arg_name_suffix=arg.name_suffix,
        arg_value_prefix=arg.value_prefix,
        arg_value_suffix=arg.value_suffix,
        arg_value_prefix_json=arg.value_prefix_json,
        arg_separator=arg.separator,
        arg_value_wrap_start=arg.wrap_start,
        arg_value_wrap_end=arg.wrap_end,
    )
