"""The server's hosted tools as functions, for chat-template models.

gpt-oss was trained with ``python`` and ``browser`` as built-in tools of its system
message; a chat-template model knows only the functions its template lists. To such a
model each hosted tool is offered as a function (:func:`hosted_functions`):

* ``python``, one argument ``code`` (the cell to run), described by the text gpt-oss reads;
* ``browser.search``, ``browser.open``, ``browser.find``, the browser's actions with the
  parameters and descriptions gpt-oss reads (the browser's citation rule added to each);

Its calls are ordinary function calls, ``to=functions.NAME`` with JSON arguments;
:func:`as_template_messages` writes a conversation's hosted calls (Harmony's
``to=python`` with the raw code) and their replies as such, so the template renders them
as any call and tool output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..core.content import BROWSER_NAMESPACE, ToolNamespaceConfig
from ..core.messages import Message, Role
from ..tools.python import DEFAULT_TIMEOUT, python_namespace
from .custom_tools import FUNCTIONS
from .request_tools import BROWSER, PYTHON
from .tool_index import OfferedTool

CODE: Final = "code"
"""The one argument of the ``python`` function: the code of the cell."""


def _thawed(value: Any) -> Any:
    """``value`` with every mapping a ``dict`` and every sequence a ``list`` (JSON-ready)."""
    if isinstance(value, Mapping):
        return {str(key): _thawed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_thawed(item) for item in value]
    return value


def _python(timeout: float) -> OfferedTool:
    description = python_namespace(timeout).description or ""
    parameters = {
        "type": "object",
        "properties": {CODE: {"type": "string", "description": "The Python code of the cell to run."}},
        "required": [CODE],
        "additionalProperties": False,
    }
    return OfferedTool(PYTHON, "function_call", PYTHON, None, description, parameters, strict=False)


def _browser(namespace: ToolNamespaceConfig) -> list[OfferedTool]:
    rule = (namespace.description or "").split("\nsources=", 1)[0]
    return [
        OfferedTool(
            f"{BROWSER}.{tool.name}",
            "function_call",
            f"{BROWSER}.{tool.name}",
            None,
            f"{tool.description}\n\n{rule}",
            _thawed(tool.parameters) if tool.parameters is not None else None,
            strict=False,
        )
        for tool in namespace.tools
    ]


def hosted_functions(names: Iterable[str], *, python_timeout: float = DEFAULT_TIMEOUT) -> list[OfferedTool]:
    """The functions that offer the hosted tools of call names ``names`` (``python``,
    ``browser.*``; others are not functions of this module) to a chat-template model."""
    wanted = set(names)
    offered = [_python(python_timeout)] if PYTHON in wanted else []
    offered += [tool for tool in _browser(BROWSER_NAMESPACE) if tool.call_name in wanted]
    return offered


def as_template_call(message: Message) -> Message:
    """A hosted call as gpt-oss writes it (``to=python`` with the raw code, ``to=browser.X``
    with JSON arguments) as a function call a template renders: ``to=functions.NAME``, JSON
    arguments (``{"code": …}`` for python)."""
    recipient = str(message.recipient)
    body = message.text
    arguments = json.dumps({CODE: body}, ensure_ascii=False) if recipient == PYTHON else body
    return Message.tool_call(FUNCTIONS + recipient, arguments, call_id=message.call_id)


def as_template_reply(message: Message) -> Message:
    """A hosted tool's reply (from ``python``, ``browser.X``) as the output of a function
    call: from ``functions.NAME``."""
    return Message.tool_result(FUNCTIONS + str(message.name), message.text, call_id=message.call_id)


def as_template_messages(messages: Iterable[Message], hosted: Sequence[str]) -> list[Message]:
    """``messages`` with the hosted calls (to one of the call names ``hosted``) and their
    replies written as function calls and outputs (see :func:`as_template_call`)."""
    out: list[Message] = []
    for message in messages:
        if message.role is Role.ASSISTANT and message.recipient in hosted:
            out.append(as_template_call(message))
        elif message.role is Role.TOOL and message.name in hosted:
            out.append(as_template_reply(message))
        else:
            out.append(message)
    return out


MAX_ARGUMENT_CHARS: Final = 512
"""The longest string argument of a browser action the grammar lets gpt-oss write."""
MAX_NUMBER: Final = 1_000_000
"""The largest number argument (a cursor, a line, a result count) of a browser action."""


def _bounded(schema: Any) -> Any:
    """A browser action's trained parameter schema as its grammar holds it: no other
    properties, strings at most :data:`MAX_ARGUMENT_CHARS`, numbers whole and bounded (a
    random or wandering model cannot write past the budget inside one argument)."""
    if not isinstance(schema, dict):
        return schema
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    variants: list[dict[str, Any]] = []
    for kind in kinds:
        if kind == "string":
            variants.append({"type": "string", "maxLength": MAX_ARGUMENT_CHARS})
        elif kind in ("number", "integer"):
            variants.append({"type": "integer", "minimum": -1, "maximum": MAX_NUMBER})
        elif kind == "boolean":
            variants.append({"type": "boolean"})
        elif kind == "object":
            properties = {name: _bounded(value) for name, value in schema.get("properties", {}).items()}
            bounded: dict[str, Any] = {
                "type": "object",
                "properties": properties,
                "additionalProperties": False,
            }
            if schema.get("required"):
                bounded["required"] = list(schema["required"])
            variants.append(bounded)
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def builtin_schema(name: str) -> str | None:
    """The JSON text of the schema the grammar holds gpt-oss's call of the built-in ``name``
    to: a browser action's bounded parameters; ``None`` for python (free text, its code)."""
    for tool in _browser(BROWSER_NAMESPACE):
        if tool.call_name == name and tool.parameters is not None:
            return json.dumps(_bounded(tool.parameters))  # the trained order of the arguments
    return None
