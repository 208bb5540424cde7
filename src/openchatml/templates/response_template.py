"""A derived :class:`~.format.TemplateFormat` as Hugging Face's declarative
``response_template`` (``tokenizer_config.json``; read by ``transformers.utils.chat_parsing``
and ``tokenizer.parse_response``), and a model's own ``response_template`` checked against
the format analysis derived.

The standard (version 1) reads an assistant message as a flat run of *regions*: each field
opens at a literal or a regex and closes at another; one field without an opener takes
what no other region does. Its content parsers are ``text``, ``json`` (with bare keys and
custom string quotes), ``xml-inline`` (``key``/``value`` pairs matched by one regex) and
``kv-lines``; a ``transform`` shapes the parsed value, with the opener's named groups.
:func:`response_template` maps a format onto that:

* ``start_anchor``: the assistant's role header (the parser keeps what follows its last
  occurrence in the prompt: a ``<think>`` the generation prompt opened);
* ``reasoning_content``: between the reasoning markers (with a delimiter and no start
  marker, the implicit field, and the answer opens at the delimiter);
* ``tool_calls``: one region per call, its opener a regex over the call's markers and its
  name; the arguments as ``json`` (``tag_json``, ``json``, ``object_notation``) or
  ``xml-inline`` (``tag_tagged``), typed by the tools' schemas as transformers does;
* ``content``: the implicit field, its pieces joined; the markers a model may write around
  or inside the answer (end of turn, content markers, a stray reasoning end) close it, so
  they are dropped.

What the standard cannot say (:func:`inexpressible`): calls written as Python calls
(``[f(a=1)]``: no content parser reads them), a call whose name is a JSON key
(``{"f": {...}}``: a transform takes values, not keys), and Harmony (the core codec's).
Ids are left out: an id a template derives (``functions.f:0``) cannot be built by a
transform, and a JSON key that may be missing makes the transform fail.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .errors import UnsupportedTemplateError
from .format import CallIdPosition, ContentMode, ReasoningMode, TemplateFormat, ToolSyntax

__all__ = ["check_response_template", "inexpressible", "response_template"]

_NAME: Final = r"(?P<name>[^\s<>\[\]{}()\"',:=|]+)"
"""A tool's name as a call writes it: up to the first character that cannot be in one."""
_ID: Final = r"[^\s<>\[\]{}]*?"
_TEXT_JOINED: Final = {"content": "text", "content_args": {"strip": False}, "repeats": True, "join": ""}


def inexpressible(fmt: TemplateFormat) -> str:
    """Why ``fmt`` cannot be written as a ``response_template`` (``""``: it can)."""
    if fmt.harmony:
        return "Harmony: channels and recipients in message headers are the core codec's to parse"
    syntax = fmt.tools.syntax
    if syntax is ToolSyntax.PYTHONIC:
        return "calls written as Python calls ([f(a=1)]): no content parser of the standard reads them"
    if syntax is ToolSyntax.JSON and fmt.tools.name_is_key:
        return 'the call\'s name is a JSON key ({"f": {...}}): a transform takes values, not keys'
    return ""


def response_template(fmt: TemplateFormat) -> dict[str, Any]:
    """``fmt`` as a ``response_template`` dict (see the module docstring); raises
    :class:`~.errors.UnsupportedTemplateError` where the standard cannot express it."""
    reason = inexpressible(fmt)
    if reason:
        raise UnsupportedTemplateError(f"{fmt.name or 'this template'}: {reason}")
    fields: dict[str, Any] = {}
    reasoning = fmt.reasoning
    calls = _tool_calls(fmt)
    if reasoning.mode is ReasoningMode.TAGS:
        # a call opened inside reasoning that never closes is the message's (as our parser reads it)
        ends = [_literal(reasoning.end), *([f"(?={_pattern_of(calls['open_pattern'])})"] if calls else [])]
        fields["reasoning_content"] = {"open": reasoning.start.strip(), "close_pattern": "|".join(ends)}
    if calls:
        fields["tool_calls"] = calls
    if reasoning.mode is ReasoningMode.DELIMITER:
        stops = [_pattern_of(calls.get("open_pattern", "")), *map(_literal, fmt.end_markers)]
        fields["content"] = {
            "open": reasoning.end.strip(),
            "close_pattern": "|".join(f"(?={s})" for s in stops if s) or r"\Z",
        }
        fields["reasoning_content"] = dict(_TEXT_JOINED)
    else:
        fields["content"] = {**_TEXT_JOINED, "close_pattern": _alternatives(_dropped_markers(fmt))}
        if not fields["content"]["close_pattern"]:
            del fields["content"]["close_pattern"]
    header = fmt.generation_prompt.header
    anchor: dict[str, Any] = {"start_anchor": header} if header else {"start_anchor_pattern": r"\Z"}
    return {"version": 1, "defaults": {"role": "assistant"}, **anchor, "fields": fields}


def _dropped_markers(fmt: TemplateFormat) -> list[str]:
    """Markers that end a piece of the answer and are no part of it."""
    markers = list(fmt.end_markers)
    if fmt.content.mode is not ContentMode.PLAIN:
        markers += [fmt.content.start, fmt.content.end]
    if fmt.reasoning.mode is ReasoningMode.TAGS:
        markers.append(fmt.reasoning.end)
    return [m for m in markers if m.strip()]


def _alternatives(markers: Sequence[str]) -> str:
    texts = sorted({m.strip() for m in markers if m.strip()}, key=len, reverse=True)
    return "|".join(_literal(t) for t in texts)


def _literal(marker: str) -> str:
    """A regex for ``marker`` as the parser reads one: surrounding whitespace optional,
    each run of whitespace inside it any run."""
    words = marker.strip().split()
    return r"\s*".join(re.escape(w) for w in words)


def _optional(marker: str) -> str:
    return f"(?:{_literal(marker)}\\s*)?" if marker.strip() else ""


def _pattern_of(pattern: str) -> str:
    """An opener as a lookahead's body: its leading whitespace and named groups left out
    (a field's named groups must all reach its transform)."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern.removeprefix(r"\s*"))


def _join(*parts: str) -> str:
    """Regex pieces, any whitespace between them."""
    return r"\s*".join(p for p in parts if p)


def _tool_calls(fmt: TemplateFormat) -> dict[str, Any]:
    """The ``tool_calls`` field (``{}`` when the template has no tools)."""
    tools = fmt.tools
    syntax = tools.syntax
    if syntax is ToolSyntax.NONE:
        return {}
    if syntax is ToolSyntax.JSON:
        return _json_calls(fmt)
    opener = _join(
        r"\s*" + _optional(tools.section_start) + _literal(tools.call_start),
        _id_before(tools),
        _literal(tools.name_prefix) + _not_content(fmt) + _NAME + _literal(tools.name_suffix),
        _id_between(tools),
        _literal(tools.arguments_start),
    )
    if syntax is ToolSyntax.TAG_TAGGED:
        content: dict[str, Any] = {"content": "xml-inline", "content_args": _tagged_arguments(fmt)}
    else:
        content = {"content": "json"}
        if syntax is ToolSyntax.OBJECT_NOTATION:
            quote = tools.string_quote
            content["content_args"] = {
                "unquoted_keys": True,
                "string_delims": [[quote, quote]] if quote else [],
            }
    closer = _join(_literal(tools.arguments_end), _literal(tools.call_end))
    if closer:
        closer += f"(?:\\s*{_literal(tools.section_end)})?" if tools.section_end.strip() else ""
    else:
        closer = _lookahead_end(fmt, _pattern_of(opener))
    function = {"name": "{name}", "arguments": "{content}"}
    return {
        "open_pattern": opener,
        "close_pattern": closer,
        "repeats": True,
        **content,
        "transform": {"type": "function", "function": function},
    }


def _not_content(fmt: TemplateFormat) -> str:
    """Where the answer's own start marker begins like a call's name prefix (functionary's
    ``>>>all`` and ``>>>NAME``), a lookahead that keeps it from opening a call."""
    start, prefix = fmt.content.start.strip(), fmt.tools.name_prefix.strip()
    if prefix and start.startswith(prefix) and len(start) > len(prefix):
        return f"(?!{_literal(start[len(prefix) :])})"
    return ""


def _id_before(tools: Any) -> str:
    if tools.id_position is not CallIdPosition.BEFORE_NAME:
        return ""
    return _literal(tools.id_prefix) + _ID + _literal(tools.id_suffix)


def _id_between(tools: Any) -> str:
    if tools.id_position is not CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS:
        return ""
    return _literal(tools.id_prefix) + _ID + _literal(tools.id_suffix)


def _lookahead_end(fmt: TemplateFormat, opener: str) -> str:
    """Where a call with no end marker ends: before the next call, an end of turn, or
    at the end of the output."""
    ends = [f"(?=\\s*(?:{opener}))"] if opener else []
    ends += [f"(?=\\s*{_literal(m)})" for m in fmt.end_markers if m.strip()]
    return "|".join([*ends, r"\Z"])


def _tagged_arguments(fmt: TemplateFormat) -> dict[str, Any]:
    """The ``xml-inline`` arguments of a ``tag_tagged`` call: a value is the raw text
    between its markers, less the whitespace the format itself puts around it."""
    tools = fmt.tools
    prefixes = [p for p in (tools.arg_value_prefix, tools.arg_value_prefix_json) if p.strip()]
    value_prefix = ""
    if prefixes:
        value_prefix = r"\s*(?:" + "|".join(_literal(p) + _trail(p) for p in prefixes) + ")"
    wrap_start = f"(?:{_literal(tools.arg_value_wrap_start)})?" if tools.arg_value_wrap_start.strip() else ""
    wrap_end = f"(?:{_literal(tools.arg_value_wrap_end)})?" if tools.arg_value_wrap_end.strip() else ""
    suffix = tools.arg_value_suffix
    lead = suffix[: len(suffix) - len(suffix.lstrip())]
    pattern = (
        _literal(tools.arg_name_prefix)
        + r"\s*(?P<key>.+?)\s*"
        + _literal(tools.arg_name_suffix)
        + _trail(tools.arg_name_suffix)
        + value_prefix
        + wrap_start
        + "(?P<value>.*?)"
        + wrap_end
        + (f"(?:{_spaces(lead)})?" if lead else "")
        + _literal(suffix)
    )
    return {"tag_pattern": pattern}


def _trail(marker: str) -> str:
    """The whitespace a marker ends with, read when present."""
    trail = marker[len(marker.rstrip()) :]
    return f"(?:{_spaces(trail)})?" if trail and marker.strip() else ""


def _spaces(whitespace: str) -> str:
    """A run of whitespace as a regex that reads exactly it (``\\n`` for a newline)."""
    return whitespace.encode("unicode_escape").decode("ascii").replace(" ", "\\x20")


def _json_calls(fmt: TemplateFormat) -> dict[str, Any]:
    """The ``tool_calls`` field of calls written as JSON objects."""
    tools = fmt.tools
    path = f"{tools.wrapper_key}." if tools.wrapper_key else ""
    function = {"name": f"{{{path}{tools.name_key}}}", "arguments": f"{{{path}{tools.arguments_key}}}"}
    if tools.array:
        start = tools.section_start or tools.call_start
        end = tools.section_end or tools.call_end
        return {
            "open_pattern": r"\s*" + _literal(start) if start.strip() else r"\A\s*(?=\[)",
            "close_pattern": _literal(end) if end.strip() else _lookahead_end(fmt, ""),
            "content": "json",
            "transform": {"type": "function", "function": function},
            "transform_each": True,
        }
    scoped = {k: "{content." + v[1:] for k, v in function.items()}
    start = tools.call_start
    if start.strip():
        opener = r"\s*" + _optional(tools.section_start) + _literal(start)
    else:
        opener = r"\A\s*(?=\{\s*\"" + re.escape(tools.wrapper_key or tools.name_key) + '")'
    end = _literal(tools.call_end)
    if end and tools.section_end.strip():
        end += f"(?:\\s*{_literal(tools.section_end)})?"
    return {
        "open_pattern": opener,
        "close_pattern": end or _lookahead_end(fmt, _pattern_of(opener) if start.strip() else ""),
        "repeats": True,
        "content": "json",
        "transform": {"type": "function", "function": scoped},
    }


def check_response_template(spec: Mapping[str, Any], fmt: TemplateFormat) -> list[str]:
    """Where a model's own ``response_template`` disagrees with the format analysis
    derived from its chat template: each a line naming the field and both readings."""
    problems: list[str] = []
    fields: Mapping[str, Any] = spec.get("fields") or {}
    header = fmt.generation_prompt.header
    anchors = spec.get("start_anchor")
    anchor_list = [anchors] if isinstance(anchors, str) else list(anchors or [])
    if header and anchor_list and header not in anchor_list and header.strip() not in anchor_list:
        problems.append(f"start_anchor {anchor_list!r}: the template's assistant header is {header!r}")
    problems += _check_reasoning(fields, fmt)
    problems += _check_calls(fields, fmt)
    ends = [m.strip() for m in fmt.end_markers if m.strip()]
    content = fields.get("content") or {}
    closes = _delimiters(content, "close")
    missing = [m for m in ends if closes and not any(m in c or re.escape(m) in c for c in closes)]
    if missing:
        problems.append(f"content: does not end at the end-of-turn marker(s) {missing!r}")
    return problems


def _delimiters(field: Mapping[str, Any], side: str) -> list[str]:
    """A field's ``open``/``close`` literals or pattern, as strings."""
    value = field.get(side, field.get(f"{side}_pattern"))
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _reasoning_field(fields: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for name in ("reasoning_content", "thinking", "reasoning"):
        if name in fields:
            found: Mapping[str, Any] = fields[name]
            return found
    return None


def _check_reasoning(fields: Mapping[str, Any], fmt: TemplateFormat) -> list[str]:
    reasoning = fmt.reasoning
    field = _reasoning_field(fields)
    if reasoning.mode is ReasoningMode.NONE:
        return (
            [] if field is None else ["reasoning: the response_template reads reasoning; analysis found none"]
        )
    if field is None:
        markers = f"{reasoning.start!r} … {reasoning.end!r}"
        return [f"reasoning: analysis found {markers}; the response_template has none"]
    problems = []
    for side, marker in (("open", reasoning.start), ("close", reasoning.end)):
        found = _delimiters(field, side)
        if marker.strip() and found and not any(_matches(d, marker.strip()) for d in found):
            problems.append(f"reasoning {side}: {found!r} does not match the template's {marker.strip()!r}")
    return problems


def _check_calls(fields: Mapping[str, Any], fmt: TemplateFormat) -> list[str]:
    tools = fmt.tools
    field = fields.get("tool_calls")
    if tools.syntax is ToolSyntax.NONE:
        return [] if field is None else ["tool_calls: the response_template reads calls; analysis found none"]
    if field is None:
        return [f"tool_calls: analysis found {tools.syntax.value} calls; the response_template reads none"]
    opener = next(
        (m.strip() for m in (tools.section_start, tools.call_start, tools.name_prefix) if m.strip()), ""
    )
    found = _delimiters(field, "open")
    if opener and found and not any(_matches(d, opener) for d in found):
        return [f"tool_calls open: {found!r} does not match the template's {opener!r}"]
    return []


_REGEX_PIECE: Final = re.compile(
    r"\\([sSdDwWbBAZ])[*+?]?|\\(.)|\(\?(?::|=|!|P<\w+>)|\[\^?(?:\\.|[^\]])*\][*+?]*|[()|^$*+?]"
)
"""A piece of a regex: a class escape, an escaped character (group 2), a group's
opening, a character class, an operator."""


def _matches(delimiter: str, marker: str) -> bool:
    """Whether a literal or regex delimiter names ``marker``: its text, once the regex
    syntax is taken out of it, holds the marker."""
    if delimiter.strip() == marker or marker in delimiter:
        return True
    plain = "".join(_REGEX_PIECE.sub(lambda m: m.group(2) or "", delimiter).split())
    return "".join(marker.split()) in plain
