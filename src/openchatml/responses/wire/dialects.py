"""One typed wire, two spellings: the Open Responses schema's and OpenAI's.

The typed models of this package are spelled, inside the project, as the Open Responses
schema names things. A :class:`WireDialect` says how they go out:

* ``openresponses``: the schema's names (``response.reasoning.delta``); item, tool and
  event types outside the schema carry a provider prefix (``openai:custom_tool_call``,
  ``openai:response.custom_tool_call_input.delta``), ours ``openchatml:``;
* ``openai``: OpenAI's names (``response.reasoning_text.delta``, bare
  ``web_search_call``, ``code_interpreter_call``, ``mcp_call``, ``custom_tool_call``);
  ``openchatml:`` types keep their prefix.

:func:`dump` gives an object's JSON (a ``dict``) in a dialect, :func:`encode` its bytes;
:func:`wire_type` and :func:`canonical_type` turn type names into and out of a dialect.
:func:`choose_dialect` picks the dialect of a request from its headers: the
``OpenChatML-Wire`` header if it names one, else the server's default, where ``auto``
means ``openai`` for clients that identify as an OpenAI SDK (``x-stainless-*`` headers)
or Codex (``originator``), ``openresponses`` for anyone else.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final, Protocol

import orjson


class WireDialect(StrEnum):
    """How the typed wire is spelled on the way out."""

    OPENRESPONSES = "openresponses"
    OPENAI = "openai"


DEFAULT_DIALECT: Final = WireDialect.OPENRESPONSES
"""The dialect of stored responses and of callers that name none."""

WIRE_HEADER: Final = "openchatml-wire"
"""The request header naming the dialect of the answer (``OpenChatML-Wire: openai``)."""

AUTO: Final = "auto"
"""The server default that picks the dialect by the client (see :func:`choose_dialect`)."""

OPENAI_PREFIX: Final = "openai:"
OWN_PREFIX: Final = "openchatml:"

OPENAI_EXTENSIONS: Final = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "computer_call",
        "computer_call_output",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search",
        "file_search",
        "code_interpreter",
        "image_generation",
        "local_shell",
        "mcp",
        "custom",
        "namespace",
        "shell",
        "shell_call",
        "shell_call_output",
        "apply_patch",
        "apply_patch_call",
        "apply_patch_call_output",
        "web_search_2025_08_26",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "computer",
        "computer_use_preview",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.shell_call_command.added",
        "response.shell_call_command.delta",
        "response.shell_call_command.done",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
    }
)
"""OpenAI's item, tool and event types outside the Open Responses schema: ``openai:NAME``
there."""

_OPENAI_EVENTS: Final = {
    "response.reasoning.delta": "response.reasoning_text.delta",
    "response.reasoning.done": "response.reasoning_text.done",
}
"""Event types OpenAI spells differently (Open Responses name → OpenAI name)."""
_OPENRESPONSES_EVENTS: Final = {openai: ours for ours, openai in _OPENAI_EVENTS.items()}


def wire_type(name: str, dialect: WireDialect) -> str:
    """The ``type`` of an item, tool or event named ``name`` (its Open Responses
    spelling) in ``dialect``: ``openai:mcp_call`` → ``mcp_call`` in ``openai``."""
    if dialect is WireDialect.OPENRESPONSES:
        return name
    if name.startswith(OPENAI_PREFIX):
        return name[len(OPENAI_PREFIX) :]
    return _OPENAI_EVENTS.get(name, name)


def canonical_type(name: str) -> str:
    """The Open Responses spelling of a ``type`` read in either dialect:
    ``mcp_call`` → ``openai:mcp_call``, ``response.reasoning_text.delta`` →
    ``response.reasoning.delta``; anything else as it is."""
    if name in OPENAI_EXTENSIONS:
        return OPENAI_PREFIX + name
    return _OPENRESPONSES_EVENTS.get(name, name)


class WireObject(Protocol):
    """Anything of the typed wire: it knows its JSON in each dialect."""

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]: ...


def dump(obj: WireObject, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
    """The JSON object of ``obj`` (an item, event, part, tool or response) in ``dialect``."""
    return obj.to_json(dialect)


def encode(obj: WireObject, dialect: WireDialect = DEFAULT_DIALECT) -> bytes:
    """The JSON text of ``obj`` in ``dialect``, as UTF-8 bytes (one line)."""
    return orjson.dumps(obj.to_json(dialect))


def parse_dialect(value: str) -> WireDialect | None:
    """The dialect ``value`` names (any case, surrounding spaces ignored), or ``None``."""
    try:
        return WireDialect(value.strip().lower())
    except ValueError:
        return None


def choose_dialect(headers: Mapping[str, str], default: str = AUTO) -> WireDialect:
    """The dialect to answer a request with ``headers`` (names in lower case, as ASGI
    and Starlette give them): the ``OpenChatML-Wire`` header when it names a dialect,
    else ``default`` (``auto``, ``openai`` or ``openresponses``); ``auto`` is ``openai``
    for an OpenAI SDK (any ``x-stainless-*`` header) or Codex (an ``originator``
    header), ``openresponses`` otherwise. Raises ``ValueError`` for a ``default`` that
    names no dialect."""
    asked = headers.get(WIRE_HEADER)
    chosen = parse_dialect(asked) if asked is not None else None
    if chosen is not None:
        return chosen
    if default != AUTO:
        fixed = parse_dialect(default)
        if fixed is None:
            raise ValueError(f"unknown wire dialect {default!r}: expected auto, openai or openresponses")
        return fixed
    if "originator" in headers or any(name.lower().startswith("x-stainless-") for name in headers):
        return WireDialect.OPENAI
    return WireDialect.OPENRESPONSES
