"""The tools a request offers, as a prompt declares them to the model.

* Harmony (gpt-oss, :func:`harmony_namespaces`): the developer message's ``# Tools``
  holds the ``functions`` namespace (the top-level function and custom tools, then the
  tools the client runs) and one namespace per ``namespace`` tool, its description and
  its tools (``## multi_agent_v1`` … ``namespace multi_agent_v1 { … }``), as gpt-oss
  reads its own. A function's JSON Schema becomes TypeScript; a custom tool is a
  function of one string (:func:`~.custom_tools.harmony_tool`).
* A chat template (:func:`template_tools`): one OpenAI-style function per tool, named by
  its call name (``multi_agent_v1.spawn`` for a namespaced one, whose description begins
  with its namespace's); a custom tool is a function of one string ``input``
  (:func:`~.custom_tools.template_tool`).
"""

from __future__ import annotations

from typing import Any

from ..core.content import ToolDescription, ToolNamespaceConfig
from .custom_tools import harmony_tool, template_tool
from .hosted_functions import hosted_functions
from .request_tools import FUNCTIONS_NAMESPACE
from .tool_index import NO_PARAMETERS, OfferedTool, ToolIndex


def harmony_namespaces(index: ToolIndex) -> dict[str, ToolNamespaceConfig]:
    """The Harmony namespaces of the offered tools (none for an empty namespace)."""
    out: dict[str, ToolNamespaceConfig] = {}
    for namespace, tools in index.grouped():
        if not tools:
            continue
        name = namespace or FUNCTIONS_NAMESPACE
        description = index.namespaces.get(namespace) if namespace is not None else None
        out[name] = ToolNamespaceConfig(name, description or None, tuple(map(_harmony_tool, tools)))
    return out


def _harmony_tool(tool: OfferedTool) -> ToolDescription:
    if tool.custom is not None:
        return harmony_tool(tool.custom)
    parameters = dict(tool.parameters) if tool.parameters is not None else None
    return ToolDescription(tool.name, tool.description, parameters)


def template_tools(index: ToolIndex) -> list[dict[str, Any]]:
    """The offered tools as a chat template's ``tools``: OpenAI-style functions, the hosted
    tools among them (:func:`~.hosted_functions.hosted_functions`)."""
    return [_template_tool(tool, index) for tool in (*index.tools, *hosted_functions(index.hosted))]


def _template_tool(tool: OfferedTool, index: ToolIndex) -> dict[str, Any]:
    space = index.namespaces.get(tool.namespace) if tool.namespace is not None else None
    description = "\n\n".join(part for part in (space, tool.description) if part)
    if tool.custom is not None:
        return template_tool(tool.custom, name=tool.call_name, description=description)
    parameters = dict(tool.parameters or NO_PARAMETERS)
    return {
        "type": "function",
        "function": {"name": tool.call_name, "description": description, "parameters": parameters},
    }
