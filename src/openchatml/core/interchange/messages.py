"""One message to its JSON object and back; a §10 turn object read as its messages."""

from __future__ import annotations

from typing import Any, Final

from ..content import Content, TextContent
from ..messages import Author, Message, Role
from ._content_parts import content_from_json, part_to_json
from ._json_object import JSONObject
from .errors import check_depth, path_error

_MESSAGE_KEYS: Final = frozenset(
    {
        "role",
        "name",
        "channel",
        "recipient",
        "content_type",
        "constrained",
        "call_id",
        "intent",
        "content",
        "thinking",
        "tool_call",
    }
)
_TOOL_CALL_KEYS: Final = frozenset({"id", "recipient", "content_type", "constrained", "arguments"})
_ROLES: Final = ", ".join(r.value for r in Role)


def _single_text(message: Message) -> str | None:
    content = message.content
    if len(content) == 1 and isinstance(content[0], TextContent):
        return content[0].text
    return None


def message_to_json(message: Message) -> dict[str, Any]:
    """The JSON object of ``message`` (plain dicts, lists and strings; ready for ``json.dumps``).

    An assistant message with a recipient and one text part is written with
    ``tool_call``; an assistant ``analysis`` message with one text part with
    ``thinking``; any other with ``content``.
    """
    out: dict[str, Any] = {"role": message.author.role.value}
    if message.author.name is not None:
        out["name"] = message.author.name
    text = _single_text(message)
    if message.is_tool_call and text is not None:
        if message.channel is not None:
            out["channel"] = message.channel
        if message.intent is not None:
            out["intent"] = message.intent
        call: dict[str, Any] = {}
        if message.call_id is not None:
            call["id"] = message.call_id
        call["recipient"] = message.recipient
        if message.content_type is not None:
            call["content_type"] = message.content_type
        if message.constrained:
            call["constrained"] = True
        call["arguments"] = text
        out["tool_call"] = call
        return out
    for key in ("channel", "recipient", "content_type"):
        value = getattr(message, key)
        if value is not None:
            out[key] = value
    if message.constrained:
        out["constrained"] = True
    if message.call_id is not None:
        out["call_id"] = message.call_id
    if message.intent is not None:
        out["intent"] = message.intent
    if message.author.role is Role.ASSISTANT and message.channel == "analysis" and text is not None:
        out["thinking"] = text
    elif text is not None:
        out["content"] = text
    elif message.content:
        out["content"] = [part_to_json(p) for p in message.content]
    return out


def _role_from_json(obj: JSONObject) -> Role:
    word = obj.string("role")
    try:
        return Role(word)
    except ValueError:
        raise path_error(obj.at("role"), f"expected one of {_ROLES}, not {word!r}") from None


def _tool_call_from_json(obj: JSONObject, author: Author, channel: str | None, intent: str | None) -> Message:
    call = JSONObject(obj.data["tool_call"], obj.at("tool_call"))
    call.only(_TOOL_CALL_KEYS)
    return Message(
        author,
        (TextContent(call.string("arguments")),),
        channel,
        call.string("recipient"),
        call.opt_string("content_type"),
        call.flag("constrained"),
        call.opt_string("id"),
        intent,
    )


def messages_from_json(value: Any, path: str = "") -> list[Message]:
    """The messages one JSON object holds: one, or up to three for a §10 turn.

    A turn (an assistant object with more than one of ``thinking``, ``content`` and
    ``tool_call``) gives its ``analysis`` message, then its ``content`` message (which
    takes the object's ``channel``, ``intent``, ``content_type`` and ``constrained``),
    then its call on ``commentary``. ``path`` prefixes the paths in error messages.
    Raises :class:`InterchangeError`.
    """
    check_depth(value, path)
    return read_messages(value, path)


def read_messages(value: Any, path: str) -> list[Message]:
    """:func:`messages_from_json` for a ``value`` whose depth the caller has checked."""
    obj = JSONObject(value, path)
    obj.only(_MESSAGE_KEYS)
    role = _role_from_json(obj)
    author = Author(role, obj.opt_string("name"))
    if role is Role.TOOL and author.name is None:
        raise path_error(obj.at("name"), "a tool message needs the tool's name (functions.get_weather)")
    channel = obj.opt_string("channel")
    recipient = obj.opt_string("recipient")
    content_type = obj.opt_string("content_type")
    constrained = obj.flag("constrained")
    call_id = obj.opt_string("call_id")
    intent = obj.opt_string("intent")
    bodies = [key for key in ("thinking", "content", "tool_call") if obj.data.get(key) is not None]
    if ("thinking" in bodies or "tool_call" in bodies) and role is not Role.ASSISTANT:
        key = "thinking" if "thinking" in bodies else "tool_call"
        raise path_error(obj.at(key), f"only an assistant message has {key}, not {role.value}")
    thinking: str | None = None
    if "thinking" in bodies:
        thinking = obj.string("thinking")

    if len(bodies) <= 1:
        if "tool_call" in bodies:
            for key in ("recipient", "content_type", "constrained", "call_id"):
                if obj.data.get(key) not in (None, False):
                    inner = "id" if key == "call_id" else key
                    raise path_error(obj.at(key), f"give it as tool_call.{inner}, not beside tool_call")
            return [_tool_call_from_json(obj, author, channel, intent)]
        if thinking is not None:
            if channel not in (None, "analysis"):
                raise path_error(obj.at("channel"), f"thinking is on the analysis channel, not {channel!r}")
            channel = "analysis"
            content: tuple[Content, ...] = (TextContent(thinking),)
        else:
            content = content_from_json(obj, role)
        return [Message(author, content, channel, recipient, content_type, constrained, call_id, intent)]

    # a §10 turn
    for key in ("recipient", "call_id"):
        if obj.data.get(key) is not None:
            raise path_error(
                obj.at(key), "not allowed in an object with more than one of thinking, content, tool_call"
            )
    out: list[Message] = []
    if thinking is not None:
        out.append(Message(author, (TextContent(thinking),), "analysis"))
    if "content" in bodies:
        body = content_from_json(obj, role)
        out.append(Message(author, body, channel, None, content_type, constrained, None, intent))
    else:
        for key in ("channel", "intent", "content_type", "constrained"):
            if obj.data.get(key) not in (None, False):
                raise path_error(
                    obj.at(key), "in an object with thinking and tool_call, this belongs to content"
                )
    if "tool_call" in bodies:
        out.append(_tool_call_from_json(obj, author, "commentary", None))
    return out


def message_from_json(value: Any, path: str = "") -> Message:
    """The :class:`Message` a JSON object spells (the inverse of :func:`message_to_json`).

    Raises :class:`InterchangeError` for anything that is not one message in the
    interchange format, including a §10 turn that holds several (read those with
    :func:`messages_from_json`).
    """
    found = messages_from_json(value, path)
    if len(found) != 1:
        raise path_error(
            path,
            f"holds {len(found)} messages (a turn with more than one of thinking, content, "
            "tool_call); read it with messages_from_json",
        )
    return found[0]
