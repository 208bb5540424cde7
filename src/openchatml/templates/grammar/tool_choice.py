"""The tools a grammar offers and the calls ``tool_choice`` allows: function tools in the
shapes of Chat Completions and Responses, each with its closed parameters schema; the
``tool_choice`` values of both APIs, ``allowed_tools`` included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .json_schema import close_schema

ToolChoice: TypeAlias = "str | Mapping[str, Any]"
"""``"auto"``, ``"required"``, ``{"type": "function", "name": N}`` (Responses) or
``{"type": "function", "function": {"name": N}}`` (Chat Completions), or
``{"type": "allowed_tools", "mode": "auto" | "required", "tools": [...]}``."""


@dataclass(frozen=True, slots=True)
class ToolSelection:
    """What a ``tool_choice`` allows: content or calls (``auto``) or calls only
    (``required``), of the tools ``names``, in the order offered."""

    mode: Literal["auto", "required"]
    names: tuple[str, ...]


def function_tools(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Name → parameters schema of each function tool, closed by
    :func:`~.json_schema.close_schema` (no parameters: an empty object); other tool types
    are left out. Raises ``ValueError`` for a function tool without a name."""
    out: dict[str, Any] = {}
    for tool in tools:
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            continue
        function = tool.get("function")
        spec = function if isinstance(function, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a function tool without a name: {dict(tool)!r}")
        parameters = spec.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        out.setdefault(name, close_schema(parameters))
    return out


def select_tools(choice: ToolChoice, offered: Mapping[str, Any]) -> ToolSelection:
    """What ``choice`` allows of the ``offered`` tools (name → schema). Raises
    ``ValueError`` for ``"none"``, an unknown choice or mode, a named tool that is not
    offered, or no tool left to call."""
    names = list(offered)
    mode: Literal["auto", "required"]
    if isinstance(choice, str):
        if choice == "none":
            raise ValueError("tool_choice 'none' forbids tool calls: no tool-call grammar applies")
        if choice not in ("auto", "required"):
            raise ValueError(f"unknown tool_choice {choice!r}")
        mode = "auto" if choice == "auto" else "required"
    elif isinstance(choice, Mapping):
        kind = choice.get("type")
        if kind == "function":
            name = _tool_name(choice)
            if name not in offered:
                raise ValueError(f"tool_choice names {name!r}, which is not an offered function tool")
            mode, names = "required", [str(name)]
        elif kind == "allowed_tools":
            allowed_mode = str(choice.get("mode", "auto"))
            if allowed_mode not in ("auto", "required"):
                raise ValueError(f"unknown allowed_tools mode {allowed_mode!r}")
            mode = "auto" if allowed_mode == "auto" else "required"
            names = _allowed_names(choice.get("tools") or (), offered)
        else:
            raise ValueError(f"unknown tool_choice {dict(choice)!r}")
    else:
        raise ValueError(f"unknown tool_choice {choice!r}")
    if not names:
        raise ValueError("no function tool to call")
    return ToolSelection(mode, tuple(names))


def _tool_name(tool: Mapping[str, Any]) -> Any:
    """The name in a Chat Completions (``{"function": {"name"}}``) or Responses
    (``{"name"}``) tool or tool choice."""
    function = tool.get("function")
    return function.get("name") if isinstance(function, Mapping) else tool.get("name")


def _allowed_names(tools: Any, offered: Mapping[str, Any]) -> list[str]:
    """The offered names among ``allowed_tools``' tools, once each, in their order."""
    allowed: list[str] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        name = _tool_name(tool)
        if isinstance(name, str) and name in offered and name not in allowed:
            allowed.append(name)
    return allowed
