"""Tool calls checked against the tools a conversation declares (``E-CALL-SCHEMA``).

:func:`check_tool_call` takes an assistant message addressed to a tool and the tool
namespaces in force (from the system and developer messages), and returns the parsed
arguments — or raises :class:`~openchatml.core.errors.CallSchemaError` naming what is wrong:
an undeclared tool, arguments that are not JSON, or arguments the tool's JSON Schema
rejects (with the path of the first offending value).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ._json import plain
from .content import DeveloperContent, SystemContent, ToolDescription, ToolNamespaceConfig
from .errors import CallSchemaError
from .messages import Conversation, Message, Role


def declared_namespaces(conversation: Conversation | Iterable[Message]) -> dict[str, ToolNamespaceConfig]:
    """Every tool namespace declared by the system and developer messages (last one wins)."""
    out: dict[str, ToolNamespaceConfig] = {}
    for message in conversation:
        for part in message.content:
            if isinstance(part, SystemContent | DeveloperContent) and part.tools:
                out.update(part.tools)
    return out


def find_tool(recipient: str, namespaces: Mapping[str, ToolNamespaceConfig]) -> ToolDescription | None:
    """The tool ``recipient`` (``functions.get_weather``, ``browser.search``) names, if declared.

    A namespace without tools (``python``) is itself the tool: its description is returned
    as a :class:`ToolDescription` without parameters.
    """
    ns_name, _, tool_name = recipient.partition(".")
    ns = namespaces.get(ns_name)
    if ns is None:
        return None
    if not tool_name:
        return ToolDescription(ns.name, ns.description or "") if not ns.tools else None
    return next((t for t in ns.tools if t.name == tool_name), None)


def check_tool_call(
    message: Message,
    namespaces: Mapping[str, ToolNamespaceConfig] | Conversation | Iterable[Message],
) -> Any:
    """The arguments of tool call ``message``, checked against its tool's schema.

    ``namespaces`` is a mapping of declared namespaces, or the conversation that declares
    them. Returns the decoded JSON arguments (or the raw text for a tool that takes free
    text, such as ``python``). Raises :class:`CallSchemaError`.
    """
    if message.author.role is not Role.ASSISTANT or message.recipient is None:
        raise CallSchemaError("not a tool call: an assistant message with a recipient is needed")
    if not isinstance(namespaces, Mapping):
        namespaces = declared_namespaces(namespaces)
    recipient = message.recipient
    tool = find_tool(recipient, namespaces)
    if tool is None:
        raise CallSchemaError(f"call to undeclared tool {recipient!r}")
    text = message.text
    if tool.parameters is None and (message.content_type or "").lower() != "json":
        return text
    try:
        arguments = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise CallSchemaError(f"arguments to {recipient} are not JSON: {exc}") from None
    if tool.parameters is None:
        if arguments not in ({}, None):
            raise CallSchemaError(f"{recipient} takes no arguments")
        return arguments
    import jsonschema  # imported here: only tool-call checking needs it
    import jsonschema.exceptions

    schema = plain(tool.parameters)
    try:
        validator_cls = jsonschema.validators.validator_for(schema)
        validator_cls.check_schema(schema)
        error = jsonschema.exceptions.best_match(validator_cls(schema).iter_errors(arguments))
    except jsonschema.exceptions.SchemaError as exc:
        raise CallSchemaError(f"the schema of {recipient} is not valid JSON Schema: {exc.message}") from None
    if error is not None:
        where = "".join(f"[{p!r}]" for p in error.absolute_path) or "(top level)"
        raise CallSchemaError(f"arguments to {recipient} at {where}: {error.message}")
    return arguments
