"""The JSON projection of OCM §10: messages and conversations to JSON objects and back.

One JSON object per message. Header attributes are keys (``role``, ``name``,
``channel``, ``recipient``, ``content_type``, ``constrained``, ``call_id``,
``intent``); an absent key means ``None``, ``False`` or the default. The body is one of

* ``content`` — a string when the message holds exactly one text part, else a list
  of parts: ``{"type": "text", "text": …}``, ``{"type": "system_content", …}``,
  ``{"type": "developer_content", …}``;
* ``thinking`` — the text of an assistant ``analysis`` message (§10);
* ``tool_call`` — ``{"id", "recipient", "content_type", "constrained", "arguments"}``
  for an assistant message with a recipient (one that ends in ``<|call|>``).

:func:`message_to_json` writes exactly one of these, so that
``message_from_json(message_to_json(m)) == m``. On reading, an object that holds more
than one of them is a §10 *turn* and expands (:func:`messages_from_json`) into an
``analysis`` message, then the ``content`` message, then the call on ``commentary``.

Every problem in the input raises :class:`InterchangeError`, whose message starts with
the JSON path of the offending value (``messages[3].tool_call.arguments: …``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, assert_never

from ._json import deeper_than, frozen, plain
from .content import (
    ChannelConfig,
    Content,
    DeveloperContent,
    ReasoningEffort,
    ResponseFormat,
    SystemContent,
    TextContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from .errors import OCMError, Position
from .events import (
    ContentDelta,
    DocumentHeader,
    Event,
    Header,
    MessageDone,
    MessageStarted,
    Repaired,
)
from .messages import Author, Conversation, Message, Role, TranscriptHeader

__all__ = [
    "MAX_DEPTH",
    "InterchangeError",
    "conversation_from_json",
    "conversation_from_json_text",
    "conversation_to_json",
    "event_to_json",
    "header_from_json",
    "header_to_json",
    "message_from_json",
    "message_to_json",
    "messages_from_json",
    "position_to_json",
]


class InterchangeError(OCMError):
    """A JSON conversation or message that does not follow the interchange format.

    ``path`` is the JSON path of the offending value (``messages[3].tool_call``); the
    message starts with it. ``position`` is set for JSON that does not parse at all.
    """

    code = "E-INTERCHANGE"
    fault = "input"

    def __init__(self, message: str, *, position: Position | None = None, path: str = "$") -> None:
        super().__init__(message, position=position)
        self.path = path


# --- paths and readers ------------------------------------------------------------------


def _key_path(path: str, key: str) -> str:
    if not key.isidentifier():
        return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{path}.{key}" if path else key


def _index_path(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _fail(path: str, problem: str) -> InterchangeError:
    shown = path or "$"
    return InterchangeError(f"{shown}: {problem}", path=shown)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


_MISSING: Final = object()

MAX_DEPTH: Final = 128
"""How deeply JSON input may nest (objects and arrays); deeper input is refused."""


def _check_depth(value: Any, path: str) -> None:
    """Raise when ``value`` nests more than :data:`MAX_DEPTH` levels (checked without recursion)."""
    if deeper_than(value, MAX_DEPTH):
        raise _fail(path, f"nested more than {MAX_DEPTH} levels deep")


class _Object:
    """A JSON object being read at ``path``: typed getters and a check for unknown keys."""

    __slots__ = ("data", "path")

    def __init__(self, value: Any, path: str) -> None:
        if not isinstance(value, Mapping):
            raise _fail(path, f"expected an object, not {_kind(value)}")
        self.data: Mapping[Any, Any] = value
        self.path = path

    def at(self, key: str) -> str:
        return _key_path(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.data

    def only(self, allowed: frozenset[str]) -> None:
        """Raise for a key not in ``allowed``."""
        for key in self.data:
            if key not in allowed:
                expected = ", ".join(sorted(allowed))
                raise _fail(self.at(str(key)), f"unknown key (expected one of: {expected})")

    def string(self, key: str) -> str:
        """A required string."""
        value = self.data.get(key, _MISSING)
        if value is _MISSING:
            raise _fail(self.at(key), "missing (expected a string)")
        if not isinstance(value, str):
            raise _fail(self.at(key), f"expected a string, not {_kind(value)}")
        return value

    def opt_string(self, key: str) -> str | None:
        """A string, or ``None`` when absent or null."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise _fail(self.at(key), f"expected a string, not {_kind(value)}")
        return value

    def flag(self, key: str) -> bool:
        """A boolean, ``False`` when absent or null."""
        value = self.data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise _fail(self.at(key), f"expected true or false, not {_kind(value)}")
        return value

    def array(self, key: str) -> list[Any]:
        """A list, empty when absent or null."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise _fail(self.at(key), f"expected an array, not {_kind(value)}")
        return list(value)

    def mapping(self, key: str, *, required: bool = False) -> Mapping[str, Any] | None:
        """A JSON object (frozen), ``None`` when absent or null and not ``required``."""
        value = self.data.get(key)
        if value is None:
            if required:
                raise _fail(self.at(key), "missing (expected an object)")
            return None
        if not isinstance(value, Mapping):
            raise _fail(self.at(key), f"expected an object, not {_kind(value)}")
        result: Mapping[str, Any] = frozen(value)
        return result


# --- content parts: to JSON -------------------------------------------------------------


def _tool_to_json(tool: ToolDescription) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    if tool.parameters is not None:
        out["parameters"] = plain(tool.parameters)
    return out


def _namespaces_to_json(tools: Mapping[str, ToolNamespaceConfig]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, ns in tools.items():
        item: dict[str, Any] = {"name": ns.name}
        if ns.description is not None:
            item["description"] = ns.description
        if ns.tools:
            item["tools"] = [_tool_to_json(t) for t in ns.tools]
        out[str(key)] = item
    return out


def _channel_config_to_json(config: ChannelConfig) -> dict[str, Any]:
    return {"valid_channels": list(config.valid_channels), "channel_required": config.channel_required}


def _system_to_json(part: SystemContent) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "system_content"}
    out["model_identity"] = part.model_identity
    out["reasoning_effort"] = None if part.reasoning_effort is None else str(part.reasoning_effort)
    if part.conversation_start_date is not None:
        out["conversation_start_date"] = part.conversation_start_date
    out["knowledge_cutoff"] = part.knowledge_cutoff
    config = part.channel_config
    out["channel_config"] = None if config is None else _channel_config_to_json(config)
    if part.tools is not None:
        out["tools"] = _namespaces_to_json(part.tools)
    return out


def _developer_to_json(part: DeveloperContent) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "developer_content"}
    if part.instructions is not None:
        out["instructions"] = part.instructions
    if part.tools is not None:
        out["tools"] = _namespaces_to_json(part.tools)
    if part.response_formats:
        formats: list[dict[str, Any]] = []
        for fmt in part.response_formats:
            item: dict[str, Any] = {"name": fmt.name, "schema": plain(fmt.schema)}
            if fmt.description is not None:
                item["description"] = fmt.description
            formats.append(item)
        out["response_formats"] = formats
    return out


def _part_to_json(part: Content) -> dict[str, Any]:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text}
    if isinstance(part, SystemContent):
        return _system_to_json(part)
    return _developer_to_json(part)


# --- content parts: from JSON -----------------------------------------------------------

_TOOL_KEYS: Final = frozenset({"name", "description", "parameters"})
_NAMESPACE_KEYS: Final = frozenset({"name", "description", "tools"})
_CHANNEL_CONFIG_KEYS: Final = frozenset({"valid_channels", "channel_required"})
_FORMAT_KEYS: Final = frozenset({"name", "schema", "description"})
_SYSTEM_KEYS: Final = frozenset(
    {
        "type",
        "model_identity",
        "reasoning_effort",
        "conversation_start_date",
        "knowledge_cutoff",
        "channel_config",
        "tools",
    }
)
_DEVELOPER_KEYS: Final = frozenset({"type", "instructions", "tools", "response_formats"})
_EFFORTS: Final = ", ".join(e.value for e in ReasoningEffort)


def _tool_from_json(value: Any, path: str) -> ToolDescription:
    obj = _Object(value, path)
    obj.only(_TOOL_KEYS)
    return ToolDescription(
        name=obj.string("name"),
        description=obj.opt_string("description") or "",
        parameters=obj.mapping("parameters"),
    )


def _namespaces_from_json(obj: _Object, key: str) -> Mapping[str, ToolNamespaceConfig] | None:
    value = obj.data.get(key)
    if value is None:
        return None
    spaces = _Object(value, obj.at(key))
    out: dict[str, ToolNamespaceConfig] = {}
    for ns_key, ns_value in spaces.data.items():
        ns = _Object(ns_value, spaces.at(str(ns_key)))
        ns.only(_NAMESPACE_KEYS)
        name = ns.opt_string("name")
        tools = tuple(
            _tool_from_json(item, _index_path(ns.at("tools"), i)) for i, item in enumerate(ns.array("tools"))
        )
        out[str(ns_key)] = ToolNamespaceConfig(
            name=str(ns_key) if name is None else name,
            description=ns.opt_string("description"),
            tools=tools,
        )
    return MappingProxyType(out)


def _strings(obj: _Object, key: str) -> tuple[str, ...]:
    items = obj.array(key)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise _fail(_index_path(obj.at(key), i), f"expected a string, not {_kind(item)}")
    return tuple(items)


def _system_from_json(obj: _Object) -> SystemContent:
    obj.only(_SYSTEM_KEYS)
    kwargs: dict[str, Any] = {}
    for key in ("model_identity", "conversation_start_date", "knowledge_cutoff"):
        if obj.has(key):
            kwargs[key] = obj.opt_string(key)
    if obj.has("reasoning_effort"):
        effort = obj.opt_string("reasoning_effort")
        if effort is None:
            kwargs["reasoning_effort"] = None
        else:
            try:
                kwargs["reasoning_effort"] = ReasoningEffort(effort)
            except ValueError:
                raise _fail(
                    obj.at("reasoning_effort"), f"expected one of {_EFFORTS}, not {effort!r}"
                ) from None
    if obj.has("channel_config"):
        value = obj.data["channel_config"]
        if value is None:
            kwargs["channel_config"] = None
        else:
            config = _Object(value, obj.at("channel_config"))
            config.only(_CHANNEL_CONFIG_KEYS)
            ckw: dict[str, Any] = {}
            if config.has("valid_channels"):
                ckw["valid_channels"] = _strings(config, "valid_channels")
            if config.has("channel_required"):
                ckw["channel_required"] = config.flag("channel_required")
            kwargs["channel_config"] = ChannelConfig(**ckw)
    kwargs["tools"] = _namespaces_from_json(obj, "tools")
    return SystemContent(**kwargs)


def _developer_from_json(obj: _Object) -> DeveloperContent:
    obj.only(_DEVELOPER_KEYS)
    formats: list[ResponseFormat] = []
    for i, item in enumerate(obj.array("response_formats")):
        fmt = _Object(item, _index_path(obj.at("response_formats"), i))
        fmt.only(_FORMAT_KEYS)
        schema = fmt.mapping("schema", required=True)
        assert schema is not None
        formats.append(ResponseFormat(fmt.string("name"), schema, fmt.opt_string("description")))
    return DeveloperContent(
        instructions=obj.opt_string("instructions"),
        tools=_namespaces_from_json(obj, "tools"),
        response_formats=tuple(formats),
    )


def _part_from_json(value: Any, path: str, role: Role) -> Content:
    obj = _Object(value, path)
    kind = obj.string("type")
    if kind == "text":
        obj.only(frozenset({"type", "text"}))
        return TextContent(obj.string("text"))
    if kind == "system_content":
        if role is not Role.SYSTEM:
            raise _fail(path, f"system_content belongs in a system message, not {role.value}")
        return _system_from_json(obj)
    if kind == "developer_content":
        if role is not Role.DEVELOPER:
            raise _fail(path, f"developer_content belongs in a developer message, not {role.value}")
        return _developer_from_json(obj)
    raise _fail(obj.at("type"), f"expected text, system_content or developer_content, not {kind!r}")


def _content_from_json(obj: _Object, role: Role) -> tuple[Content, ...]:
    value = obj.data.get("content")
    if value is None:
        return ()
    if isinstance(value, str):
        return (TextContent(value),)
    if not isinstance(value, list | tuple):
        raise _fail(obj.at("content"), f"expected a string or an array of parts, not {_kind(value)}")
    return tuple(
        _part_from_json(item, _index_path(obj.at("content"), i), role) for i, item in enumerate(value)
    )


# --- messages ---------------------------------------------------------------------------

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
        out["content"] = [_part_to_json(p) for p in message.content]
    return out


def _role_from_json(obj: _Object) -> Role:
    word = obj.string("role")
    try:
        return Role(word)
    except ValueError:
        raise _fail(obj.at("role"), f"expected one of {_ROLES}, not {word!r}") from None


def _tool_call_from_json(obj: _Object, author: Author, channel: str | None, intent: str | None) -> Message:
    call = _Object(obj.data["tool_call"], obj.at("tool_call"))
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
    _check_depth(value, path)
    return _messages_from_json(value, path)


def _messages_from_json(value: Any, path: str) -> list[Message]:
    obj = _Object(value, path)
    obj.only(_MESSAGE_KEYS)
    role = _role_from_json(obj)
    author = Author(role, obj.opt_string("name"))
    if role is Role.TOOL and author.name is None:
        raise _fail(obj.at("name"), "a tool message needs the tool's name (functions.get_weather)")
    channel = obj.opt_string("channel")
    recipient = obj.opt_string("recipient")
    content_type = obj.opt_string("content_type")
    constrained = obj.flag("constrained")
    call_id = obj.opt_string("call_id")
    intent = obj.opt_string("intent")
    bodies = [key for key in ("thinking", "content", "tool_call") if obj.data.get(key) is not None]
    if ("thinking" in bodies or "tool_call" in bodies) and role is not Role.ASSISTANT:
        key = "thinking" if "thinking" in bodies else "tool_call"
        raise _fail(obj.at(key), f"only an assistant message has {key}, not {role.value}")
    thinking: str | None = None
    if "thinking" in bodies:
        thinking = obj.string("thinking")

    if len(bodies) <= 1:
        if "tool_call" in bodies:
            for key in ("recipient", "content_type", "constrained", "call_id"):
                if obj.data.get(key) not in (None, False):
                    inner = "id" if key == "call_id" else key
                    raise _fail(obj.at(key), f"give it as tool_call.{inner}, not beside tool_call")
            return [_tool_call_from_json(obj, author, channel, intent)]
        if thinking is not None:
            if channel not in (None, "analysis"):
                raise _fail(obj.at("channel"), f"thinking is on the analysis channel, not {channel!r}")
            channel = "analysis"
            content: tuple[Content, ...] = (TextContent(thinking),)
        else:
            content = _content_from_json(obj, role)
        return [Message(author, content, channel, recipient, content_type, constrained, call_id, intent)]

    # a §10 turn
    for key in ("recipient", "call_id"):
        if obj.data.get(key) is not None:
            raise _fail(
                obj.at(key), "not allowed in an object with more than one of thinking, content, tool_call"
            )
    out: list[Message] = []
    if thinking is not None:
        out.append(Message(author, (TextContent(thinking),), "analysis"))
    if "content" in bodies:
        body = _content_from_json(obj, role)
        out.append(Message(author, body, channel, None, content_type, constrained, None, intent))
    else:
        for key in ("channel", "intent", "content_type", "constrained"):
            if obj.data.get(key) not in (None, False):
                raise _fail(obj.at(key), "in an object with thinking and tool_call, this belongs to content")
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
        raise _fail(
            path,
            f"holds {len(found)} messages (a turn with more than one of thinking, content, "
            "tool_call); read it with messages_from_json",
        )
    return found[0]


# --- transcript header and conversation --------------------------------------------------

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
    _check_depth(value, path)
    obj = _Object(value, path)
    version = obj.data.get("version", _MISSING)
    if version is _MISSING:
        raise _fail(obj.at("version"), 'missing (expected a version such as "2.2")')
    if not isinstance(version, str | int | float) or isinstance(version, bool):
        raise _fail(obj.at("version"), f'expected a string such as "2.2", not {_kind(version)}')
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
    _check_depth(value, "")
    header: TranscriptHeader | None = None
    if isinstance(value, list | tuple):
        items, base = list(value), ""
    else:
        obj = _Object(value, "")
        obj.only(frozenset({"header", "messages"}))
        if obj.data.get("header") is not None:
            header = header_from_json(obj.data["header"], obj.at("header"))
        if "messages" not in obj.data:
            raise _fail("messages", "missing (expected an array of messages)")
        raw = obj.data["messages"]
        if not isinstance(raw, list | tuple):
            raise _fail("messages", f"expected an array of messages, not {_kind(raw)}")
        items, base = list(raw), "messages"
    messages: list[Message] = []
    for i, item in enumerate(items):
        messages.extend(_messages_from_json(item, _index_path(base, i)))
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


# --- parser events ----------------------------------------------------------------------


def position_to_json(position: Position) -> dict[str, Any]:
    """``{"offset", "unit", "line"?, "column"?}``."""
    out: dict[str, Any] = {"offset": position.offset, "unit": position.unit}
    if position.line is not None:
        out["line"] = position.line
        out["column"] = position.column
    return out


def _header_to_json(header: Header) -> dict[str, Any]:
    shell = Message(
        header.author,
        (),
        header.channel,
        header.recipient,
        header.content_type,
        header.constrained,
        header.call_id,
        header.intent,
    )
    return message_to_json(shell)


def event_to_json(event: Event) -> dict[str, Any]:
    """One parser event as a JSON object with a ``type``: ``document_header``,
    ``message_started``, ``content_delta``, ``message_done`` or ``repaired``."""
    if isinstance(event, ContentDelta):
        return {"type": "content_delta", "index": event.index, "channel": event.channel, "text": event.text}
    if isinstance(event, MessageStarted):
        return {"type": "message_started", "index": event.index, "header": _header_to_json(event.header)}
    if isinstance(event, MessageDone):
        terminator = None if event.terminator is None else event.terminator.value
        return {
            "type": "message_done",
            "index": event.index,
            "message": message_to_json(event.message),
            "terminator": terminator,
        }
    if isinstance(event, DocumentHeader):
        return {"type": "document_header", "header": header_to_json(event.header)}
    if not isinstance(event, Repaired):
        assert_never(event)
    out: dict[str, Any] = {
        "type": "repaired",
        "kind": event.kind.value,
        "code": event.code,
        "detail": event.detail,
    }
    if event.position is not None:
        out["position"] = position_to_json(event.position)
    return out
