"""The tools a request offers the model, by the names the model calls them.

Every tool the model may call has one *call name* (:func:`~.request_tools.call_name`):

* a function or custom tool of the request's top level: its name (``get_weather``);
* a tool of a namespace: ``NAMESPACE.NAME`` (``multi_agent_v1.spawn``), an MCP server's
  tool likewise under the server's label (``served``: the server runs it);
* a tool the client runs: ``local_shell``, ``shell`` or ``apply_patch``;
* the tools the server runs (``hosted``), gpt-oss's built-ins (described by the system
  message, never among ``tools``): ``python`` (the code interpreter) and, where the
  server runs the request's web search, ``browser.search``, ``browser.open`` and
  ``browser.find``.

gpt-oss addresses a call to ``functions.NAME`` for a top-level name and to
``NAMESPACE.NAME`` for a namespaced one (Harmony's own namespaces, see
:mod:`.tool_prompt`); a chat template's parser reports every call as
``functions.CALL_NAME``.
:meth:`ToolIndex.lookup` reads either back. No two tools share a call name, and no
namespace is called ``functions`` (:mod:`.request_tools`), so a recipient names one tool.

:meth:`ToolIndex.selection` reads ``tool_choice``: whether the model may, must or may not
call, and which call names it may call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .client_tools import CLIENT_FUNCTIONS, ClientCallKind, function_of
from .custom_tools import FUNCTIONS
from .request import ResponseRequest
from .request_tools import BROWSER_ACTIONS, BROWSER_SEARCH, PYTHON, call_name
from .wire.items import CustomToolCall, FunctionCall, ToolCall
from .wire.tools import (
    CODE_INTERPRETER,
    NAMESPACE,
    WEB_SEARCH,
    AllowedTool,
    AllowedTools,
    CustomChoice,
    CustomTool,
    FunctionChoice,
    FunctionTool,
    McpChoice,
    ToolChoice,
    ToolTypeChoice,
)

CallKind = Literal["function_call", "custom_tool_call"] | ClientCallKind
"""The item a call of a tool becomes."""
Mode = Literal["none", "auto", "required"]
NO_PARAMETERS: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}
"""The parameters of a function tool that gives none."""


@dataclass(frozen=True, slots=True)
class OfferedTool:
    """A tool the model may call: its ``call_name``, the ``kind`` of item a call becomes,
    its own ``name`` and ``namespace``, ``description``, the JSON Schema of its arguments
    (``parameters``: ``None`` for a custom tool, and for a function that gives none) and
    their strictness; ``custom``: the custom tool it is."""

    call_name: str
    kind: CallKind
    name: str
    namespace: str | None = None
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    strict: bool = True
    custom: CustomTool | None = None


def _function(tool: FunctionTool, namespace: str | None = None) -> OfferedTool:
    parameters = dict(tool.parameters) if tool.parameters is not None else None
    return OfferedTool(
        call_name(tool.name, namespace),
        "function_call",
        tool.name,
        namespace,
        tool.description or "",
        parameters,
        tool.strict is not False,
    )


def _custom(tool: CustomTool, namespace: str | None = None) -> OfferedTool:
    name = call_name(tool.name, namespace)
    return OfferedTool(name, "custom_tool_call", tool.name, namespace, tool.description or "", custom=tool)


@dataclass(frozen=True, slots=True)
class ToolIndex:
    """The tools a request offers, in order (top-level functions, custom tools,
    namespaces' tools, the client's tools), by call name; ``namespaces``: name →
    description; ``client_names``: tool ``type`` → call name of the client's tools;
    ``hosted``: the call names of the tools the server runs (``python``, ``browser.*``)."""

    tools: tuple[OfferedTool, ...] = ()
    namespaces: Mapping[str, str] = field(default_factory=dict)
    client_names: Mapping[str, str] = field(default_factory=dict)
    hosted: tuple[str, ...] = ()
    _by_name: Mapping[str, OfferedTool] = field(default_factory=dict, repr=False)
    served: frozenset[str] = frozenset()
    """The call names of the MCP servers' tools (``LABEL.TOOL``, among ``tools``): the
    server runs them."""

    @classmethod
    def of(cls, request: ResponseRequest) -> ToolIndex:
        """The index of ``request``'s tools."""
        tools = [*map(_function, request.tools), *map(_custom, request.custom_tools)]
        for space in (*request.namespaces, *request.mcp_namespaces):
            tools += [
                _function(m, space.name) if isinstance(m, FunctionTool) else _custom(m, space.name)
                for m in space.tools
            ]
        clients: dict[str, str] = {}
        for tool in request.client_tools:
            function = CLIENT_FUNCTIONS[tool.type]
            clients[tool.type] = function.name
            tools.append(
                OfferedTool(
                    function.name,
                    function.kind,
                    function.name,
                    None,
                    function.description,
                    function.parameters,
                )
            )
        offered = tuple(tools)
        spaces = {space.name: space.description for space in (*request.namespaces, *request.mcp_namespaces)}
        hosted: tuple[str, ...] = (PYTHON,) if request.code_interpreter is not None else ()
        if request.browsing and request.web_search is not None:
            hosted += BROWSER_ACTIONS
        served = frozenset(
            call_name(member.name, space.name) for space in request.mcp_namespaces for member in space.tools
        )
        return cls(offered, spaces, clients, hosted, {t.call_name: t for t in offered}, served)

    def __bool__(self) -> bool:
        """Whether any tool is offered (a hosted one included)."""
        return bool(self.tools or self.hosted)

    @property
    def custom_names(self) -> frozenset[str]:
        """The call names of the custom tools."""
        return frozenset(t.call_name for t in self.tools if t.kind == "custom_tool_call")

    def get(self, name: str) -> OfferedTool | None:
        """The tool of call name ``name``, if offered."""
        return self._by_name.get(name)

    def lookup(self, recipient: str) -> OfferedTool | None:
        """The tool a call addressed to ``recipient`` calls (Harmony's ``functions.NAME`` or
        ``NAMESPACE.NAME``, a template's ``functions.CALL_NAME``), if offered."""
        return self._by_name.get(recipient.removeprefix(FUNCTIONS))

    def kind_of(self, recipient: str) -> CallKind:
        """The item a call addressed to ``recipient`` becomes (``function_call`` for a tool
        not offered)."""
        tool = self.lookup(recipient)
        return tool.kind if tool is not None else "function_call"

    def selection(self, choice: ToolChoice) -> tuple[Mode, tuple[str, ...]]:
        """What ``choice`` (checked against the request's tools) allows: ``none`` (no call),
        ``auto`` or ``required``, and the call names the model may call."""
        if isinstance(choice, FunctionChoice | CustomChoice):
            return "required", (call_name(choice.name, choice.namespace),)
        if isinstance(choice, McpChoice):
            names = tuple(
                t.call_name
                for t in self.tools
                if t.call_name in self.served
                and t.namespace == choice.server_label
                and choice.name in (None, t.name)
            )
            return ("required", names) if names else ("none", ())
        if isinstance(choice, ToolTypeChoice):
            if choice.type in WEB_SEARCH:  # a forced search opens the browser's work
                return ("required", (BROWSER_SEARCH,)) if BROWSER_SEARCH in self.hosted else ("none", ())
            name = (
                PYTHON
                if choice.type == CODE_INTERPRETER and PYTHON in self.hosted
                else self.client_names.get(choice.type)
            )
            return ("required", (name,)) if name is not None else ("none", ())
        if isinstance(choice, AllowedTools):
            allowed = tuple(dict.fromkeys(n for entry in choice.tools for n in self._entry_names(entry)))
            if not allowed or choice.mode == "none":
                return "none", ()
            return ("required" if choice.mode == "required" else "auto"), allowed
        if choice == "none":
            return "none", ()
        calls = (*(t.call_name for t in self.tools), *self.hosted)
        return ("required" if choice == "required" else "auto"), calls

    def _entry_names(self, entry: AllowedTool) -> Iterable[str]:
        """The call names an entry of ``allowed_tools`` allows."""
        kind = entry.type or "function"
        if kind == NAMESPACE:
            return [t.call_name for t in self.tools if t.namespace == entry.name]
        if kind == CODE_INTERPRETER:
            return [PYTHON] if PYTHON in self.hosted else []
        if kind in WEB_SEARCH:
            return [name for name in BROWSER_ACTIONS if name in self.hosted]
        if kind in CLIENT_FUNCTIONS:
            name = self.client_names.get(kind)
            return [name] if name is not None else []
        if entry.name is None or kind not in ("function", "openai:custom"):
            return []
        return [call_name(entry.name, entry.namespace)]

    def grouped(self) -> Sequence[tuple[str | None, tuple[OfferedTool, ...]]]:
        """The tools by namespace (``None``: the top level, the client's tools included),
        the top level first, then each namespace in the request's order."""
        order: dict[str | None, list[OfferedTool]] = {None: []}
        order.update({name: [] for name in self.namespaces})
        for tool in self.tools:
            order[tool.namespace].append(tool)
        return [(name, tuple(tools)) for name, tools in order.items()]


def item_call_name(item: ToolCall) -> str:
    """The call name of the tool a call item calls."""
    if isinstance(item, FunctionCall | CustomToolCall):
        return call_name(item.name, item.namespace)
    return function_of(item).name


def split_call_name(name: str, index: ToolIndex) -> tuple[str, str | None]:
    """``(name, namespace)`` of the tool of call name ``name`` (one not offered: the call
    name as its name, no namespace)."""
    tool = index.get(name)
    return (tool.name, tool.namespace) if tool is not None else (name, None)
