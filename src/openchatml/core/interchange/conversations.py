"""The transcript header (OCM §2) and whole conversations to JSON and back."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from .._json import frozen, plain
from ..errors import Position
from ..messages import Conversation, Message, TranscriptHeader
from ._json_object import MISSING, JSONObject, index_path, kind_of
from .errors import InterchangeError, check_depth, path_error
from .messages import message_to_json, read_messages

_HEADER_MAPPINGS: Final = ("generation_settings", "capabilities", "profiles")


def header_to_json(header: TranscriptHeader) -> dict[str, Any]:
    """The OCM §2 header as a JSON object: its YAML keys, unknown ones included."""
    out: dict[str, Any] = {"version": header.version}
    if header.model is not None:
        out["model"] = header.model
    for key in _HEADER_MAPPINGS:
        value = getattr(header, key)
        if value:
            out[key] = plain(value)
    for key, value in header.extra.items():
        out.setdefault(str(key), plain(value))
    return out


def header_from_json(value: Any, path: str = "header") -> TranscriptHeader:
    """The :class:`TranscriptHeader` a JSON object spells; unknown keys go to ``extra``."""
    check_depth(value, path)
    obj = JSONObject(value, path)
    version = obj.data.get("version", MISSING)
    if version is MISSING:
        raise path_error(obj.at("version"), 'missing (expected a version such as "2.2")')
    if not isinstance(version, str | int | float) or isinstance(version, bool):
        raise path_error(obj.at("version"), f'expected a string such as "2.2", not {kind_of(version)}')
    mappings: dict[str, Mapping[str, Any]] = {}
    for key in _HEADER_MAPPINGS:
        found = obj.mapping(key)
        mappings[key] = MappingProxyType({}) if found is None else found
    known = {"version", "model", *_HEADER_MAPPINGS}
    extra = {str(k): frozen(v) for k, v in obj.data.items() if k not in known}
    return TranscriptHeader(
        version=str(version),
        model=obj.opt_string("model"),
        extra=MappingProxyType(extra),
        **mappings,
    )


def conversation_to_json(conversation: Conversation | Sequence[Message]) -> dict[str, Any]:
    """``{"header": {…}, "messages": […]}``; ``header`` only when the conversation has one."""
    out: dict[str, Any] = {}
    if isinstance(conversation, Conversation):
        if conversation.header is not None:
            out["header"] = header_to_json(conversation.header)
        messages: Sequence[Message] = conversation.messages
    else:
        messages = conversation
    out["messages"] = [message_to_json(m) for m in messages]
    return out


def conversation_from_json(value: Any) -> Conversation:
    """The :class:`Conversation` of a ``{"header"?, "messages"}`` object or a bare list of messages.

    §10 turn objects in the list expand into their messages. Raises
    :class:`InterchangeError`.
    """
    check_depth(value, "")
    header: TranscriptHeader | None = None
    if isinstance(value, list | tuple):
        items, base = list(value), ""
    else:
        obj = JSONObject(value, "")
        obj.only(frozenset({"header", "messages"}))
        if obj.data.get("header") is not None:
            header = header_from_json(obj.data["header"], obj.at("header"))
        if "messages" not in obj.data:
            raise path_error("messages", "missing (expected an array of messages)")
        raw = obj.data["messages"]
        if not isinstance(raw, list | tuple):
            raise path_error("messages", f"expected an array of messages, not {kind_of(raw)}")
        items, base = list(raw), "messages"
    messages: list[Message] = []
    for i, item in enumerate(items):
        messages.extend(read_messages(item, index_path(base, i)))
    return Conversation(tuple(messages), header)


def conversation_from_json_text(text: str) -> Conversation:
    """The :class:`Conversation` of JSON ``text``; syntax errors carry their line and column."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        position = Position(exc.pos, exc.lineno, exc.colno)
        raise InterchangeError(f"$: not valid JSON: {exc.msg}", position=position) from None
    except (ValueError, RecursionError) as exc:
        raise InterchangeError(f"$: not valid JSON: {exc}") from None
    return conversation_from_json(value)
