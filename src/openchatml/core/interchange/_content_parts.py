"""The content parts of a message (text, system and developer content) to JSON and back."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from .._json import plain
from ..content import (
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
from ..messages import Role
from ._json_object import JSONObject, index_path, kind_of
from .errors import path_error

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


def part_to_json(part: Content) -> dict[str, Any]:
    """The JSON object of one content part, with its ``type``."""
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
    obj = JSONObject(value, path)
    obj.only(_TOOL_KEYS)
    return ToolDescription(
        name=obj.string("name"),
        description=obj.opt_string("description") or "",
        parameters=obj.mapping("parameters"),
    )


def _namespaces_from_json(obj: JSONObject, key: str) -> Mapping[str, ToolNamespaceConfig] | None:
    value = obj.data.get(key)
    if value is None:
        return None
    spaces = JSONObject(value, obj.at(key))
    out: dict[str, ToolNamespaceConfig] = {}
    for ns_key, ns_value in spaces.data.items():
        ns = JSONObject(ns_value, spaces.at(str(ns_key)))
        ns.only(_NAMESPACE_KEYS)
        name = ns.opt_string("name")
        tools = tuple(
            _tool_from_json(item, index_path(ns.at("tools"), i)) for i, item in enumerate(ns.array("tools"))
        )
        out[str(ns_key)] = ToolNamespaceConfig(
            name=str(ns_key) if name is None else name,
            description=ns.opt_string("description"),
            tools=tools,
        )
    return MappingProxyType(out)


def _strings(obj: JSONObject, key: str) -> tuple[str, ...]:
    items = obj.array(key)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise path_error(index_path(obj.at(key), i), f"expected a string, not {kind_of(item)}")
    return tuple(items)


def _system_from_json(obj: JSONObject) -> SystemContent:
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
                raise path_error(
                    obj.at("reasoning_effort"), f"expected one of {_EFFORTS}, not {effort!r}"
                ) from None
    if obj.has("channel_config"):
        value = obj.data["channel_config"]
        if value is None:
            kwargs["channel_config"] = None
        else:
            config = JSONObject(value, obj.at("channel_config"))
            config.only(_CHANNEL_CONFIG_KEYS)
            ckw: dict[str, Any] = {}
            if config.has("valid_channels"):
                ckw["valid_channels"] = _strings(config, "valid_channels")
            if config.has("channel_required"):
                ckw["channel_required"] = config.flag("channel_required")
            kwargs["channel_config"] = ChannelConfig(**ckw)
    kwargs["tools"] = _namespaces_from_json(obj, "tools")
    return SystemContent(**kwargs)


def _developer_from_json(obj: JSONObject) -> DeveloperContent:
    obj.only(_DEVELOPER_KEYS)
    formats: list[ResponseFormat] = []
    for i, item in enumerate(obj.array("response_formats")):
        fmt = JSONObject(item, index_path(obj.at("response_formats"), i))
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
    obj = JSONObject(value, path)
    kind = obj.string("type")
    if kind == "text":
        obj.only(frozenset({"type", "text"}))
        return TextContent(obj.string("text"))
    if kind == "system_content":
        if role is not Role.SYSTEM:
            raise path_error(path, f"system_content belongs in a system message, not {role.value}")
        return _system_from_json(obj)
    if kind == "developer_content":
        if role is not Role.DEVELOPER:
            raise path_error(path, f"developer_content belongs in a developer message, not {role.value}")
        return _developer_from_json(obj)
    raise path_error(obj.at("type"), f"expected text, system_content or developer_content, not {kind!r}")


def content_from_json(obj: JSONObject, role: Role) -> tuple[Content, ...]:
    """The parts of ``obj``'s ``content`` (a string or an array of parts) in a ``role`` message."""
    value = obj.data.get("content")
    if value is None:
        return ()
    if isinstance(value, str):
        return (TextContent(value),)
    if not isinstance(value, list | tuple):
        raise path_error(obj.at("content"), f"expected a string or an array of parts, not {kind_of(value)}")
    return tuple(
        _part_from_json(item, index_path(obj.at("content"), i), role) for i, item in enumerate(value)
    )
