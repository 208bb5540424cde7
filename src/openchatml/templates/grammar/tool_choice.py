"""The tools a grammar offers and the calls ``tool_choice`` allows: function tools in the
shapes of Chat Completions and Responses, each with its parameters schema (closed when the
tool is strict, any JSON object when it is not); freeform tools (:class:`FreeformTool`,
the Responses API's ``custom`` tools) whose input is raw text, a Lark grammar's or a
regular expression's; built-in tools (:class:`BuiltinTool`, gpt-oss's ``python``) whose
input is free text; the ``tool_choice`` values of both APIs, ``none`` and
``allowed_tools`` included.

A tool of a namespace (the Responses API's ``namespace`` tools) is named
``NAMESPACE.NAME``: a ``{"type": "namespace", "name": N, "tools": [...]}`` entry offers
its functions so, and a choice names one by ``name`` and ``namespace`` (or by the dotted
name itself).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from .json_schema import close_schema

ToolChoice: TypeAlias = "str | Mapping[str, Any]"
"""``"none"``, ``"auto"``, ``"required"``, ``{"type": "function" | "custom" | "builtin", "name": N}``
(Responses; with ``"namespace": S`` for a tool of a namespace) or ``{"type": "function",
"function": {"name": N}}`` (Chat Completions), or ``{"type": "allowed_tools", "mode":
"auto" | "required", "tools": [...]}``."""

ANY_OBJECT: Final[Mapping[str, Any]] = {"type": "object"}
"""The arguments of a function tool that is not strict: any JSON object."""


@dataclass(frozen=True, slots=True)
class FreeformTool:
    """A tool whose input is raw text (the Responses API's ``custom`` tool): free text
    (``syntax == "text"``), or text in the language of a Lark grammar (``"lark"``,
    llguidance's dialect) or of a regular expression (``"regex"``), ``definition``."""

    name: str
    syntax: Literal["text", "lark", "regex"] = "text"
    definition: str = ""


@dataclass(frozen=True, slots=True)
class BuiltinTool:
    """A tool built into the model (gpt-oss's ``python``, ``browser.search``): its calls go
    ``to=NAME`` with free text as input (python's code), or JSON arguments conforming to
    ``schema`` (the JSON text of a JSON Schema, given for the browser's actions); a choice
    names it as ``{"type": "builtin", "name": NAME}``."""

    name: str
    schema: str | None = None


Offered: TypeAlias = "Mapping[str, Any]"
"""Name → what a call of the tool carries: a JSON Schema of its arguments (a function
tool), a :class:`FreeformTool` or a :class:`BuiltinTool`."""


@dataclass(frozen=True, slots=True)
class ToolSelection:
    """What a ``tool_choice`` allows: content only (``none``), content or calls (``auto``)
    or calls only (``required``), of the tools ``names``, in the order offered."""

    mode: Literal["none", "auto", "required"]
    names: tuple[str, ...]


def function_tools(tools: Sequence[Mapping[str, Any]], namespace: str | None = None) -> dict[str, Any]:
    """Name → parameters schema of each function tool: closed by
    :func:`~.json_schema.close_schema` (no parameters: an empty object), or any JSON object
    where the tool says ``"strict": false``; the functions of a ``namespace`` entry as
    ``NAMESPACE.NAME`` (those of ``tools`` so where ``namespace`` is given); other tool
    types are left out. Raises ``ValueError`` for a function tool without a name."""
    out: dict[str, Any] = {}
    for tool in tools:
        if (
            isinstance(tool, Mapping)
            and tool.get("type") == "namespace"
            and isinstance(tool.get("name"), str)
        ):
            for qualified, schema in function_tools(tool.get("tools") or (), str(tool["name"])).items():
                out.setdefault(qualified, schema)
            continue
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            continue
        function = tool.get("function")
        spec = function if isinstance(function, Mapping) else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"a function tool without a name: {dict(tool)!r}")
        if namespace:
            name = f"{namespace}.{name}"
        if spec.get("strict") is False:
            out.setdefault(name, dict(ANY_OBJECT))
            continue
        parameters = spec.get("parameters")
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        out.setdefault(name, close_schema(parameters))
    return out


def offered_tools(
    tools: Sequence[Mapping[str, Any]],
    freeform: Sequence[FreeformTool] = (),
    builtin: Sequence[BuiltinTool] = (),
) -> dict[str, Any]:
    """The function tools (:func:`function_tools`), the ``freeform`` ones, then the
    ``builtin`` ones, by name. Raises ``ValueError`` for a name given twice across kinds."""
    offered = function_tools(tools)
    named: tuple[FreeformTool | BuiltinTool, ...] = (*freeform, *builtin)
    for tool in named:
        if tool.name in offered:
            raise ValueError(f"two tools are named {tool.name!r}")
        offered[tool.name] = tool
    return offered


def select_tools(choice: ToolChoice, offered: Offered) -> ToolSelection:
    """What ``choice`` allows of the ``offered`` tools (name → schema or
    :class:`FreeformTool`). ``"none"`` allows no call. Raises ``ValueError`` for an unknown
    choice or mode, a named tool that is not offered, or, unless the choice is ``none``, no
    tool left to call."""
    names = list(offered)
    mode: Literal["none", "auto", "required"]
    if isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise ValueError(f"unknown tool_choice {choice!r}")
        if choice == "none":
            return ToolSelection("none", ())
        mode = "auto" if choice == "auto" else "required"
    elif isinstance(choice, Mapping):
        kind = choice.get("type")
        if kind in ("function", "custom", "builtin"):
            name = _tool_name(choice)
            if name not in offered:
                raise ValueError(f"tool_choice names {name!r}, which is not an offered tool")
            if kind != _kind(offered[name]):
                raise ValueError(f"tool_choice names {name!r} as a {kind} tool, which it is not")
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
        raise ValueError("no tool to call")
    return ToolSelection(mode, tuple(names))


def _kind(tool: Any) -> str:
    """``custom``, ``builtin`` or ``function``: the kind of an offered tool."""
    if isinstance(tool, FreeformTool):
        return "custom"
    return "builtin" if isinstance(tool, BuiltinTool) else "function"


def _tool_name(tool: Mapping[str, Any]) -> Any:
    """The name in a Chat Completions (``{"function": {"name"}}``) or Responses
    (``{"name"}``, ``NAMESPACE.NAME`` with a ``namespace``) tool or tool choice."""
    function = tool.get("function")
    if isinstance(function, Mapping):
        return function.get("name")
    name, namespace = tool.get("name"), tool.get("namespace")
    return (
        f"{namespace}.{name}" if isinstance(name, str) and isinstance(namespace, str) and namespace else name
    )


def _allowed_names(tools: Any, offered: Offered) -> list[str]:
    """The offered names among ``allowed_tools``' tools, once each, in their order (a
    ``namespace`` entry: every offered tool of that namespace)."""
    allowed: list[str] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        name = _tool_name(tool)
        if not isinstance(name, str):
            continue
        if tool.get("type") == "namespace":
            names = [n for n in offered if n.startswith(name + ".")]
        else:
            names = [name] if name in offered else []
        allowed += [n for n in names if n not in allowed]
    return allowed
