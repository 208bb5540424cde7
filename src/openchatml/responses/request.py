"""A create-response request body, checked and settled into :class:`ResponseRequest`.

``parse_request(body, limits)`` takes the decoded JSON of ``POST /v1/responses``: it
refuses a body nested deeper, or holding more items, parts, tools or includes, than
``limits`` allow before anything else is read; validates it as a
:class:`~.wire.request.CreateResponseBody`; checks what depends on several fields; and
returns the frozen :class:`ResponseRequest` a response runs with. Every refusal is a
:class:`~.errors.RequestError` naming the offending ``param``
(``input[2].content[0].type``).

Input items come out in the form the API returns them (every item has an ``id`` and a
``status``; string content is one ``input_text`` / ``output_text`` part);
``item_reference`` items are kept as they are, for the server to resolve.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from ..engines.guidance import check_language
from .errors import RequestError
from .limits import DEFAULT_LIMITS, RequestLimits
from .wire.base import Checks
from .wire.content import InputText
from .wire.items import InputItem, ItemReference, UserMessage
from .wire.request import REQUEST_KEYS, CreateResponseBody
from .wire.tools import (
    CUSTOM,
    AllowedTool,
    AllowedTools,
    CustomChoice,
    CustomTool,
    FunctionChoice,
    FunctionTool,
    PlainText,
    TextFormat,
    Tool,
    ToolChoice,
)
from .wire.validation import request_error, type_name

MAX_INCLUDES: Final = 32
_PARTS: Final = ("content", "output", "summary")


@dataclass(frozen=True, slots=True)
class ResponseRequest:
    """A checked create-response request: the settings a response runs with
    (``items``: the typed input items; ``tools``: the function tools, ``custom_tools``
    the custom ones, each in the request's order)."""

    model: str | None = None
    items: tuple[InputItem, ...] = ()
    instructions: str | None = None
    previous_response_id: str | None = None
    tools: tuple[FunctionTool, ...] = ()
    custom_tools: tuple[CustomTool, ...] = ()
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    text_format: TextFormat = field(default_factory=PlainText)
    verbosity: str | None = None
    reasoning_effort: str | None = None
    reasoning_summary: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    top_logprobs: int | None = None
    stream: bool = False
    background: bool = False
    store: bool = True
    include: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    truncation: str = "disabled"
    service_tier: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    seed: int | None = None

    @property
    def custom_names(self) -> frozenset[str]:
        """The names of the custom tools."""
        return frozenset(tool.name for tool in self.custom_tools)

    @property
    def wants_encrypted_reasoning(self) -> bool:
        """Whether ``include`` asks for ``reasoning.encrypted_content``."""
        return "reasoning.encrypted_content" in self.include

    @property
    def wants_logprobs(self) -> bool:
        """Whether ``include`` asks for ``message.output_text.logprobs``."""
        return "message.output_text.logprobs" in self.include


def _check_counts(body: Mapping[str, Any], limits: RequestLimits) -> None:
    """Refuse more tools, includes, items or parts than ``limits`` allow, before any of
    them is read."""
    tools = body.get("tools")
    if isinstance(tools, list):
        limits.check_count(len(tools), limits.max_tools, "tools", "tools", "too_many_tools")
    include = body.get("include")
    if isinstance(include, list):
        limits.check_count(len(include), MAX_INCLUDES, "include", "entries", "too_many_includes")
    items = body.get("input")
    if not isinstance(items, list):
        return
    limits.check_count(len(items), limits.max_input_items, "input", "items", "too_many_input_items")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        for key in _PARTS:
            parts = item.get(key)
            if isinstance(parts, list):
                limits.check_count(
                    len(parts),
                    limits.max_content_parts,
                    f"input[{index}].{key}",
                    "parts",
                    "too_many_content_parts",
                )


def _check_tools(tools: Sequence[Tool]) -> None:
    """Refuse a name given twice (across function and custom tools), and a custom tool's
    grammar that is empty or does not compile (a regular expression in Python's ``re`` and
    in the sampler's dialect, a Lark grammar in the sampler's)."""
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if tool.name in seen:
            raise RequestError(
                f"Duplicate tool name {tool.name!r} at 'tools[{index}]'.", param=f"tools[{index}].name"
            )
        seen.add(tool.name)
        grammar = tool.grammar if isinstance(tool, CustomTool) else None
        if grammar is None:
            continue
        param = f"tools[{index}].format.definition"
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


def _allowed(choice: AllowedTools, functions: set[str], customs: set[str]) -> AllowedTools:
    if len(choice.tools) > len(functions) + len(customs):
        raise RequestError(
            "'tool_choice.tools' lists more tools than 'tools' holds.", param="tool_choice.tools"
        )
    offered = {("function", name) for name in functions} | {(CUSTOM, name) for name in customs}
    for index, entry in enumerate(choice.tools):
        if (entry.type, entry.name) not in offered:
            noun = "a custom tool" if entry.type == CUSTOM else "a function"
            raise RequestError(
                f"Allowed tool {entry.name!r} is not {noun} in 'tools'.",
                param=f"tool_choice.tools[{index}]",
            )
    if not choice.tools:
        raise RequestError("'tool_choice.tools' must list at least one tool.", param="tool_choice.tools")
    allowed = tuple(AllowedTool(type=entry.type, name=entry.name) for entry in choice.tools)
    return AllowedTools(tools=allowed, mode=choice.mode)


def _tool_choice(
    choice: ToolChoice | None, tools: tuple[FunctionTool, ...], custom_tools: tuple[CustomTool, ...]
) -> ToolChoice:
    functions = {t.name for t in tools}
    customs = {t.name for t in custom_tools}
    if choice is None:
        return "auto"
    if choice == "required" and not (tools or custom_tools):
        raise RequestError("tool_choice 'required' needs at least one tool in 'tools'.", param="tool_choice")
    if isinstance(choice, FunctionChoice) and choice.name not in functions:
        raise RequestError(
            f"Tool choice {choice.name!r} is not a function in 'tools'.", param="tool_choice.name"
        )
    if isinstance(choice, CustomChoice) and choice.name not in customs:
        raise RequestError(
            f"Tool choice {choice.name!r} is not a custom tool in 'tools'.", param="tool_choice.name"
        )
    if isinstance(choice, AllowedTools):
        return _allowed(choice, functions, customs)
    return choice


def _items(value: str | tuple[InputItem, ...] | None, limits: RequestLimits) -> tuple[InputItem, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (UserMessage(content=(InputText(text=value),)),)
    references = sum(1 for item in value if isinstance(item, ItemReference))
    limits.check_count(
        references, limits.max_item_references, "input", "item references", "too_many_item_references"
    )
    return value


def settle(body: CreateResponseBody, limits: RequestLimits = DEFAULT_LIMITS) -> ResponseRequest:
    """The request a validated ``body`` asks for; raises :class:`RequestError` for what
    depends on several fields (duplicate tools, a tool choice outside ``tools``,
    background without store), for a custom tool's grammar that is empty or a regular
    expression that does not compile, and for more item references than ``limits``
    allow."""
    given = body.tools or ()
    _check_tools(given)
    tools = tuple(t for t in given if isinstance(t, FunctionTool))
    custom_tools = tuple(t for t in given if isinstance(t, CustomTool))
    tool_choice = _tool_choice(body.tool_choice, tools, custom_tools)
    store = body.store if body.store is not None else True
    if body.background and not store:
        raise RequestError("Background responses need 'store': true.", param="background")
    reasoning = body.reasoning
    effort = reasoning.effort if reasoning is not None else None
    text = body.text
    return ResponseRequest(
        model=body.model,
        items=_items(body.input, limits),
        instructions=body.instructions,
        previous_response_id=body.previous_response_id,
        tools=tools,
        custom_tools=custom_tools,
        tool_choice=tool_choice,
        parallel_tool_calls=body.parallel_tool_calls is not False,
        text_format=(text.format if text is not None else None) or PlainText(),
        verbosity=text.verbosity if text is not None else None,
        reasoning_effort="low" if effort == "minimal" else effort,  # Open Responses' lowest is low
        reasoning_summary=reasoning.summary if reasoning is not None else None,
        temperature=body.temperature,
        top_p=body.top_p,
        presence_penalty=body.presence_penalty,
        frequency_penalty=body.frequency_penalty,
        max_output_tokens=body.max_output_tokens,
        max_tool_calls=body.max_tool_calls,
        top_logprobs=body.top_logprobs,
        stream=bool(body.stream),
        background=bool(body.background),
        store=store,
        include=tuple(dict.fromkeys(body.include or ())),
        metadata=dict(body.metadata or {}),
        truncation=body.truncation or "disabled",
        service_tier=body.service_tier,
        safety_identifier=body.safety_identifier,
        prompt_cache_key=body.prompt_cache_key,
        seed=body.seed,
    )


def parse_request(body: Any, limits: RequestLimits = DEFAULT_LIMITS) -> ResponseRequest:
    """Check a decoded create-response body within ``limits``; raises
    :class:`RequestError` naming the bad ``param``."""
    if not isinstance(body, dict):
        raise RequestError(
            f"Invalid type for 'body': expected an object, but got {type_name(body)}.",
            param="body",
            code="invalid_type",
        )
    limits.check_depth(body)
    for key in body:
        if key not in REQUEST_KEYS:
            raise RequestError(f"Unknown parameter: '{key}'.", param=key, code="unknown_parameter")
    _check_counts(body, limits)
    try:
        try:
            parsed = CreateResponseBody.model_validate(body, context=Checks(limits))
        except ValidationError as exc:
            raise request_error(exc) from None
        return settle(parsed, limits)
    except UnicodeEncodeError:  # a lone surrogate (no JSON text decodes to one) cannot be written
        raise _not_text(body) from None


def _not_text(body: Any, param: str = "") -> RequestError:
    """The error of the first string (or key) of ``body`` that is not Unicode text."""
    where = _surrogate(body, param)
    return RequestError(
        f"'{where or 'body'}' is not valid Unicode text (it holds a lone surrogate).",
        param=where or "body",
        code="invalid_value",
    )


def _surrogate(value: Any, param: str) -> str | None:
    """The ``param`` of the first string (or key) under ``value`` with a lone surrogate."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return param
        return None
    if isinstance(value, list):
        for index, entry in enumerate(value):
            found = _surrogate(entry, f"{param}[{index}]")
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, entry in value.items():
            where = f"{param}.{key}" if param else str(key)
            found = _surrogate(key, where) or _surrogate(entry, where)
            if found is not None:
                return found
    return None
