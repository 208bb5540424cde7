"""A request's ``tools`` and ``tool_choice``, checked against each other.

:func:`settle_tools` sorts the tools of a validated body by kind (:class:`RequestTools`)
and refuses, with a :class:`~.errors.RequestError` naming the ``param``:

* two tools the model would call by one name (:func:`call_name`): two functions or custom
  tools of one name, a function named like a tool the client runs (``shell``), a namespace
  given twice or holding a name twice; the namespace ``functions`` (Harmony's own for the
  top-level tools: its calls could not be told from theirs);
* a custom tool's grammar that is empty or does not compile (a regular expression in
  Python's ``re`` and in the sampler's dialect, a Lark grammar in the sampler's);
* a ``tool_choice`` naming a tool (or, in ``allowed_tools``, a namespace or a tool type)
  that ``tools`` does not hold, and ``required`` with nothing the model can call.

The code interpreter, MCP server and web search tools are kept as ``hosted``: the server
runs the code interpreter (gpt-oss's ``python``) and the MCP servers' tools (each
server's label is the namespace of its tools: no two servers, nor a server and a
namespace, share one). Only one code interpreter may be given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from ..engines.guidance import check_language
from .client_tools import CLIENT_FUNCTIONS
from .errors import RequestError
from .wire.dialects import WireDialect, wire_type
from .wire.tools import (
    CLIENT_TOOLS,
    CODE_INTERPRETER,
    CUSTOM,
    NAMESPACE,
    WEB_SEARCH,
    AllowedTool,
    AllowedTools,
    ApplyPatchTool,
    ClientTool,
    CodeInterpreterTool,
    CustomChoice,
    CustomTool,
    FunctionChoice,
    FunctionTool,
    HostedTool,
    LocalShellTool,
    McpChoice,
    McpServerTool,
    NamespaceTool,
    ShellTool,
    Tool,
    ToolChoice,
    ToolTypeChoice,
    WebSearchTool,
)

FUNCTIONS_NAMESPACE: Final = "functions"
"""The Harmony namespace of the top-level tools: no namespace of a request may take it."""


@dataclass(frozen=True, slots=True)
class RequestTools:
    """A request's tools by kind, each in the request's order, and its checked ``choice``."""

    functions: tuple[FunctionTool, ...] = ()
    customs: tuple[CustomTool, ...] = ()
    namespaces: tuple[NamespaceTool, ...] = ()
    clients: tuple[ClientTool, ...] = ()
    hosted: tuple[HostedTool, ...] = ()
    choice: ToolChoice = "auto"


PYTHON: Final = "python"
"""The call name of the code interpreter: gpt-oss's built-in tool, its Harmony recipient."""
BROWSER: Final = "browser"
"""The Harmony namespace of gpt-oss's built-in browser (the web search tool)."""
BROWSER_SEARCH: Final = "browser.search"
BROWSER_ACTIONS: Final = (BROWSER_SEARCH, "browser.open", "browser.find")
"""The call names of the browser's actions: search, open a page or link, find in a page."""


def call_name(name: str, namespace: str | None = None) -> str:
    """The name the model calls a tool by: ``NAMESPACE.NAME`` in a namespace, else ``NAME``
    (a choice may also name a namespaced tool so, ``multi_agent_v1.spawn``, without
    ``namespace``)."""
    return f"{namespace}.{name}" if namespace else name


def settle_tools(tools: Sequence[Tool], choice: ToolChoice | None) -> RequestTools:
    """``tools`` sorted by kind and ``choice`` checked against them (see the module
    docstring); raises :class:`RequestError`."""
    _check_names(tools)
    for index, tool in enumerate(tools):
        if isinstance(tool, CustomTool):
            _check_grammar(tool, f"tools[{index}].format.definition")
        elif isinstance(tool, NamespaceTool):
            for position, member in enumerate(tool.tools):
                if isinstance(member, CustomTool):
                    _check_grammar(member, f"tools[{index}].tools[{position}].format.definition")
    settled = RequestTools(
        functions=tuple(t for t in tools if isinstance(t, FunctionTool)),
        customs=tuple(t for t in tools if isinstance(t, CustomTool)),
        namespaces=tuple(t for t in tools if isinstance(t, NamespaceTool)),
        clients=tuple(t for t in tools if isinstance(t, LocalShellTool | ShellTool | ApplyPatchTool)),
        hosted=tuple(t for t in tools if isinstance(t, WebSearchTool | CodeInterpreterTool | McpServerTool)),
    )
    return replace(settled, choice=_checked_choice(choice, settled))


def _duplicate(name: str, param: str) -> RequestError:
    return RequestError(f"Duplicate tool name {name!r} at '{param.rsplit('.', 1)[0]}'.", param=param)


def _check_names(tools: Sequence[Tool]) -> None:
    """Refuse two tools of one call name, a namespace given twice, and ``functions``."""
    seen: set[str] = set()
    spaces: set[str] = set()
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if isinstance(tool, FunctionTool | CustomTool):
            entries = [(tool.name, f"{where}.name")]
        elif isinstance(tool, NamespaceTool):
            if tool.name == FUNCTIONS_NAMESPACE:
                raise RequestError(
                    f"The namespace name 'functions' at '{where}' is reserved for the tools of the "
                    "top level of 'tools': give these tools there, or name the namespace otherwise.",
                    param=f"{where}.name",
                )
            if tool.name in spaces:
                raise RequestError(f"Duplicate namespace {tool.name!r} at '{where}'.", param=f"{where}.name")
            spaces.add(tool.name)
            entries = [
                (call_name(member.name, tool.name), f"{where}.tools[{position}].name")
                for position, member in enumerate(tool.tools)
            ]
        elif isinstance(tool, LocalShellTool | ShellTool | ApplyPatchTool):
            entries = [(CLIENT_FUNCTIONS[tool.type].name, f"{where}.type")]
        elif isinstance(tool, CodeInterpreterTool):
            entries = [(PYTHON, f"{where}.type")]
        elif isinstance(tool, McpServerTool):  # its label is the namespace of its tools
            if tool.server_label in spaces:
                raise RequestError(
                    f"Duplicate namespace {tool.server_label!r} at '{where}'.", param=f"{where}.server_label"
                )
            spaces.add(tool.server_label)
            continue
        else:
            continue
        for name, param in entries:
            if name in seen:
                raise _duplicate(name, param)
            seen.add(name)


def _check_grammar(tool: CustomTool, param: str) -> None:
    """Refuse a custom tool's grammar that is empty or does not compile."""
    grammar = tool.grammar
    if grammar is None:
        return
    if not grammar.definition.strip():
        raise RequestError(f"'{param}' is empty: give the grammar the input follows.", param=param)
    if grammar.syntax == "regex":
        try:
            re.compile(grammar.definition)
        except (re.error, OverflowError, RecursionError) as exc:
            raise RequestError(
                f"Invalid regular expression at '{param}': {exc}.", param=param, code="invalid_grammar"
            ) from None
    problem = check_language(grammar.syntax, grammar.definition)
    if problem:
        noun = "Lark grammar" if grammar.syntax == "lark" else "regular expression"
        reason = problem.strip().splitlines()[0] if problem.strip() else problem
        raise RequestError(f"Invalid {noun} at '{param}': {reason}", param=param, code="invalid_grammar")


def _functions(tools: RequestTools) -> set[str]:
    names = {t.name for t in tools.functions}
    for space in tools.namespaces:
        names |= {call_name(m.name, space.name) for m in space.tools if isinstance(m, FunctionTool)}
    return names


def _customs(tools: RequestTools) -> set[str]:
    names = {t.name for t in tools.customs}
    for space in tools.namespaces:
        names |= {call_name(m.name, space.name) for m in space.tools if isinstance(m, CustomTool)}
    return names


def _types(tools: Iterable[ClientTool | HostedTool]) -> set[str]:
    return {tool.type for tool in tools}


def _spelled(kind: str) -> str:
    return wire_type(kind, WireDialect.OPENAI)


def _checked_choice(choice: ToolChoice | None, tools: RequestTools) -> ToolChoice:
    """``choice`` (``auto`` when left out), refused where it names what ``tools`` lacks."""
    functions, customs = _functions(tools), _customs(tools)
    if choice is None:
        return "auto"
    if choice == "required" and not (functions or customs or tools.clients):
        raise RequestError(
            "tool_choice 'required' needs at least one tool the model can call in 'tools'.",
            param="tool_choice",
        )
    if isinstance(choice, FunctionChoice) and call_name(choice.name, choice.namespace) not in functions:
        raise RequestError(
            f"Tool choice {call_name(choice.name, choice.namespace)!r} is not a function in 'tools'.",
            param="tool_choice.name",
        )
    if isinstance(choice, CustomChoice) and call_name(choice.name, choice.namespace) not in customs:
        raise RequestError(
            f"Tool choice {call_name(choice.name, choice.namespace)!r} is not a custom tool in 'tools'.",
            param="tool_choice.name",
        )
    if isinstance(choice, ToolTypeChoice) and choice.type not in _types((*tools.clients, *tools.hosted)):
        raise RequestError(
            f"Tool choice {_spelled(choice.type)!r} is not a tool in 'tools'.", param="tool_choice.type"
        )
    if isinstance(choice, McpChoice) and choice.server_label not in {t.server_label for t in _mcp(tools)}:
        raise RequestError(
            f"Tool choice names the MCP server {choice.server_label!r}, which is not in 'tools'.",
            param="tool_choice.server_label",
        )
    if isinstance(choice, AllowedTools):
        return _allowed(choice, tools, functions, customs)
    return choice


def _mcp(tools: RequestTools) -> list[McpServerTool]:
    return [tool for tool in tools.hosted if isinstance(tool, McpServerTool)]


def _allowed(
    choice: AllowedTools, tools: RequestTools, functions: set[str], customs: set[str]
) -> AllowedTools:
    spaces = {space.name for space in tools.namespaces}
    types = _types((*tools.clients, *tools.hosted))
    if len(choice.tools) > len(functions) + len(customs) + len(spaces) + len(types):
        raise RequestError(
            "'tool_choice.tools' lists more tools than 'tools' holds.", param="tool_choice.tools"
        )
    if not choice.tools:
        raise RequestError("'tool_choice.tools' must list at least one tool.", param="tool_choice.tools")
    for index, entry in enumerate(choice.tools):
        problem = _allowed_problem(entry, functions, customs, spaces, types)
        if problem:
            raise RequestError(problem, param=f"tool_choice.tools[{index}]")
    allowed = tuple(
        AllowedTool(type=entry.type, name=entry.name, namespace=entry.namespace) for entry in choice.tools
    )
    return AllowedTools(tools=allowed, mode=choice.mode)


def _allowed_problem(
    entry: AllowedTool, functions: set[str], customs: set[str], spaces: set[str], types: set[str]
) -> str:
    """Why an entry of ``allowed_tools`` names nothing of ``tools`` (``""``: it names one)."""
    kind = entry.type
    if kind is None:  # an explicit null: no tool type
        return f"Allowed tool {entry.name!r} is not a function in 'tools'."
    if kind in ("function", CUSTOM):
        noun, names = ("a custom tool", customs) if kind == CUSTOM else ("a function", functions)
        if entry.name is None:
            return f"An allowed {noun[2:]} needs a 'name'."
        name = call_name(entry.name, entry.namespace)
        return "" if name in names else f"Allowed tool {name!r} is not {noun} in 'tools'."
    if kind == NAMESPACE:
        return "" if entry.name in spaces else f"Allowed namespace {entry.name!r} is not in 'tools'."
    if kind in (*CLIENT_TOOLS, *WEB_SEARCH, CODE_INTERPRETER):
        return "" if kind in types else f"Allowed tool type {_spelled(kind)!r} is not in 'tools'."
    return f"Allowed tool type {_spelled(kind)!r} is not one this server takes."
