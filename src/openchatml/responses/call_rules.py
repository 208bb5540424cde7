"""The calls a response may make, and the format of its answer, checked on what the model
wrote: the guarantee that holds after parsing, whether or not the engine enforced the
request's grammar.

:meth:`CallRules.of` reads a request: which tools its ``tool_choice`` lets the model call,
by call name (``multi_agent_v1.spawn`` for a tool of a namespace, ``shell`` for the
client's shell; see :meth:`~.tool_index.ToolIndex.selection`), whether a call must come,
the JSON Schema of the arguments of each strict function tool and of each tool the client
runs (closed, as the grammar holds them) and the grammar of each custom tool's input. A
call of a tool the server runs (``python``, the code interpreter) takes any text as input.
:meth:`CallRules.refusal` says why one finished call breaks them (``""``: it does not);
:meth:`CallRules.unmet` why a finished answer does (a forced call that never came).

A response whose model broke the rules never hands the client the offending call as a valid
one: the event builder shows nothing of a call of a tool it may not call; over an engine
that does not enforce the request's grammar it holds every call until the call is complete
and checked, and drops a refused one; a call streamed by an enforcing engine that still
turns out wrong ends ``incomplete``. The response then ends ``failed`` with the error
``invalid_tool_call`` saying what the model wrote.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import jsonschema

from ..engines.guidance import in_language
from ..templates.grammar.json_schema import close_schema
from .request import ResponseRequest
from .tool_index import NO_PARAMETERS, Mode, ToolIndex
from .wire.tools import AllowedTools, JsonObjectFormat, JsonSchemaFormat


@dataclass(frozen=True, slots=True)
class CallRules:
    """What calls a response may make (see the module docstring)."""

    mode: Mode = "auto"
    allowed: frozenset[str] = frozenset()
    """The call names (:mod:`.tool_index`) of the tools the model may call."""
    schemas: Mapping[str, Any] = field(default_factory=dict)
    """Strict function tools and the client's tools: call name → the closed schema of
    their arguments."""
    grammars: Mapping[str, tuple[Literal["lark", "regex"], str]] = field(default_factory=dict)
    """Custom tools with a grammar: call name → (syntax, definition)."""
    custom: frozenset[str] = frozenset()
    hosted: frozenset[str] = frozenset()
    """The call names of the tools the server runs (``python``, an MCP server's tools): any
    input (a tool that cannot read it answers so)."""
    answer_schema: Mapping[str, Any] | None = None
    """The JSON Schema the answer conforms to (``text.format``); ``None``: free text."""

    @classmethod
    def of(cls, request: ResponseRequest) -> CallRules | None:
        """The rules of ``request``'s tools and ``tool_choice``; ``None`` for a request that
        offers no tools (nothing to hold a call to: a call the model makes up is read as it
        always is)."""
        answer = answer_schema(request)
        index = ToolIndex.of(request)
        if not index and answer is None:
            return None
        mode, allowed = index.selection(request.tool_choice)
        schemas = {
            tool.call_name: close_schema(dict(tool.parameters or NO_PARAMETERS))
            for tool in index.tools
            if tool.custom is None and tool.strict
        }
        grammars = {
            tool.call_name: (grammar.syntax, grammar.definition)
            for tool in index.tools
            if tool.custom is not None and (grammar := tool.custom.grammar) is not None
        }
        hosted = frozenset(index.hosted) | index.served
        return cls(mode, frozenset(allowed), schemas, grammars, index.custom_names, hosted, answer)

    def after_first_step(self, request: ResponseRequest) -> CallRules:
        """The rules of the steps after the first in gpt-oss's agent loop (after a hosted
        call): those of :func:`later_steps` ``(request)``."""
        later = later_steps(request)
        return self if later is request else CallRules.of(later) or self

    def name_refusal(self, name: str) -> str:
        """Why any call of ``name`` breaks the rules (``""``: a call of it may be valid)."""
        if self.mode == "none":
            return f"the model called {name!r} although tool_choice is 'none'"
        if name not in self.allowed:
            allowed = ", ".join(sorted(self.allowed)) or "none"
            return f"the model called {name!r}, which tool_choice does not allow (allowed: {allowed})"
        return ""

    def refusal(self, name: str, payload: str) -> str:
        """Why a finished call of ``name`` with ``payload`` (JSON arguments, or a custom
        tool's raw input) breaks the rules; ``""`` when it does not."""
        refusal = self.name_refusal(name)
        if refusal or name in self.hosted:
            return refusal
        if name in self.custom:
            grammar = self.grammars.get(name)
            if grammar is not None and not in_language(*grammar, payload):
                return f"the input of {name!r} is not in the language of its {grammar[0]} grammar"
            return ""
        try:
            arguments = json.loads(payload)
        except ValueError:
            return f"the arguments of {name!r} are not JSON"
        if not isinstance(arguments, dict):
            return f"the arguments of {name!r} are not a JSON object"
        schema = self.schemas.get(name)
        if schema is not None:
            try:
                jsonschema.validate(arguments, schema)
            except jsonschema.ValidationError as exc:
                return f"the arguments of {name!r} do not match its schema: {exc.message}"
            except jsonschema.SchemaError:
                return ""  # a schema jsonschema cannot read: the grammar was the check
        return ""

    def answer_refusal(self, text: str) -> str:
        """Why a finished answer's ``text`` breaks ``text.format`` (``""``: it does not)."""
        if self.answer_schema is None:
            return ""
        try:
            value = json.loads(text)
        except ValueError:
            return "the answer is not the JSON that text.format asks for"
        try:
            jsonschema.validate(value, self.answer_schema)
        except jsonschema.ValidationError as exc:
            return f"the answer does not match the schema of text.format: {exc.message}"
        except jsonschema.SchemaError:
            return ""  # a schema jsonschema cannot read: the grammar was the check
        return ""

    def unmet(self, calls: int) -> str:
        """Why an answer that made ``calls`` calls breaks the rules (``""``: it does not)."""
        if self.mode == "required" and calls == 0:
            return "tool_choice requires a call, and the model answered without one"
        return ""


def later_steps(request: ResponseRequest) -> ResponseRequest:
    """``request`` as the steps after the first of gpt-oss's agent loop take it: a call that
    ``tool_choice`` forces is forced once, so ``required`` and a named tool become ``auto``
    and ``allowed_tools`` keeps its tools in ``auto``; ``none`` and ``auto`` stay (the very
    ``request`` is returned)."""
    choice = request.tool_choice
    if choice in ("none", "auto") or (isinstance(choice, AllowedTools) and choice.mode != "required"):
        return request
    if isinstance(choice, AllowedTools):
        return replace(request, tool_choice=choice.model_copy(update={"mode": "auto"}))
    return replace(request, tool_choice="auto")


def answer_schema(request: ResponseRequest) -> Mapping[str, Any] | None:
    """The JSON Schema ``request``'s answer must match: a strict ``json_schema`` format's
    (closed), any JSON object for ``json_object``; ``None`` otherwise (a loose schema is
    best effort: the grammar holds what it can, nothing is refused after)."""
    fmt = request.text_format
    if isinstance(fmt, JsonSchemaFormat) and fmt.json_schema is not None and fmt.strict:
        closed: Mapping[str, Any] = close_schema(dict(fmt.json_schema))
        return closed
    if isinstance(fmt, JsonObjectFormat):
        return {"type": "object"}
    return None
