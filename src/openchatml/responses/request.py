"""A create-response request body, checked and settled into :class:`ResponseRequest`.

``parse_request(body, limits)`` takes the decoded JSON of ``POST /v1/responses``: it
refuses a body nested deeper, or holding more items, parts, tools or includes, than
``limits`` allow before anything else is read (ignored fields included); validates it as
a :class:`~.wire.request.CreateResponseBody`; checks what depends on several fields; and
returns the frozen :class:`ResponseRequest` a response runs with, naming the parameters
it ignored (unknown ones, and those that change nothing here) in
:attr:`ResponseRequest.ignored`. Every refusal is a :class:`~.errors.RequestError`
naming the offending ``param`` (``input[2].content[0].type``), but for a stored prompt
template, which this server does not keep (404 ``prompt_not_found``).

Input items come out in the form the API returns them (every item has an ``id`` and a
``status``; string content is one ``input_text`` / ``output_text`` part);
``item_reference`` items are kept as they are, for the server to resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError

from .errors import NotFoundError, RequestError
from .limits import DEFAULT_LIMITS, RequestLimits
from .request_tools import settle_tools
from .wire.base import Checks
from .wire.content import InputText
from .wire.items import InputItem, ItemReference, UserMessage
from .wire.request import CreateResponseBody, ignored_parameters
from .wire.tools import (
    ClientTool,
    CodeInterpreterTool,
    CustomTool,
    FunctionTool,
    HostedTool,
    McpServerTool,
    NamespaceTool,
    PlainText,
    TextFormat,
    Tool,
    ToolChoice,
    WebSearchTool,
)
from .wire.validation import request_error, type_name

MAX_INCLUDES: Final = 32
_EFFORTS: Final = {"minimal": "low", "max": "xhigh"}
"""Efforts read as their nearest of Open Responses' (``low`` … ``xhigh``)."""
_PARTS: Final = ("content", "output", "summary")


@dataclass(frozen=True, slots=True)
class ResponseRequest:
    """A checked create-response request: the settings a response runs with
    (``items``: the typed input items; ``tools``: the function tools, ``custom_tools``
    the custom ones, ``namespaces``, ``client_tools`` the tools the client runs and
    ``hosted_tools`` those accepted but not offered, each in the request's order (see
    :mod:`.request_tools`); ``ignored``: the parameters given that
    change nothing, see :func:`~.wire.request.ignored_parameters`)."""

    model: str | None = None
    items: tuple[InputItem, ...] = ()
    instructions: str | None = None
    previous_response_id: str | None = None
    conversation: str | None = None
    """The id of the conversation the response continues and is added to."""
    tools: tuple[FunctionTool, ...] = ()
    custom_tools: tuple[CustomTool, ...] = ()
    namespaces: tuple[NamespaceTool, ...] = ()
    client_tools: tuple[ClientTool, ...] = ()
    hosted_tools: tuple[HostedTool, ...] = ()
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
    generate: bool = True
    """``False`` (WebSocket mode's warm-up, ``generate: false``): the prompt is built and
    checked, and the response completes with no output; the engine never samples."""
    store: bool = True
    include: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)
    truncation: str = "disabled"
    service_tier: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    seed: int | None = None
    user: str | None = None
    ignored: tuple[str, ...] = ()
    browsing: bool = False
    """Whether this server runs the request's web search (its browser is on and the model
    writes Harmony): the model may then call ``browser.*``; else web search is accepted
    and not offered. Set by the server, never read from the request."""
    mcp_namespaces: tuple[NamespaceTool, ...] = ()
    """The tools of the request's MCP servers the model may see, one namespace per server
    label (each tool a function that is not strict): set by the server once it has listed
    them, never read from the request; not echoed."""

    @property
    def custom_names(self) -> frozenset[str]:
        """The names of the top-level custom tools."""
        return frozenset(tool.name for tool in self.custom_tools)

    @property
    def all_tools(self) -> tuple[Tool, ...]:
        """Every tool of the request, by kind (as a response echoes them)."""
        return (*self.tools, *self.custom_tools, *self.namespaces, *self.client_tools, *self.hosted_tools)

    @property
    def code_interpreter(self) -> CodeInterpreterTool | None:
        """The request's code interpreter tool (gpt-oss's ``python``), if it has one."""
        return next((t for t in self.hosted_tools if isinstance(t, CodeInterpreterTool)), None)

    @property
    def mcp_servers(self) -> tuple[McpServerTool, ...]:
        """The request's MCP server tools, in order."""
        return tuple(t for t in self.hosted_tools if isinstance(t, McpServerTool))

    @property
    def web_search(self) -> WebSearchTool | None:
        """The request's web search tool (gpt-oss's ``browser``), if it has one."""
        return next((t for t in self.hosted_tools if isinstance(t, WebSearchTool)), None)

    @property
    def wants_search_sources(self) -> bool:
        """Whether ``include`` asks for ``web_search_call.action.sources``."""
        return "web_search_call.action.sources" in self.include

    @property
    def wants_code_outputs(self) -> bool:
        """Whether ``include`` asks for ``code_interpreter_call.outputs``."""
        return "code_interpreter_call.outputs" in self.include

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


def settle(
    body: CreateResponseBody, limits: RequestLimits = DEFAULT_LIMITS, ignored: tuple[str, ...] = ()
) -> ResponseRequest:
    """The request a validated ``body`` asks for (``ignored``: the parameters it gives that
    change nothing); raises :class:`RequestError` for what depends on several fields
    (duplicate tools, a tool choice outside ``tools``, background without store), for a
    custom tool's grammar that is empty or a regular expression that does not compile,
    and for more item references than ``limits`` allow; :class:`NotFoundError` for a
    stored prompt template."""
    if body.prompt is not None:
        raise NotFoundError(
            f"Prompt {body.prompt.id!r} not found: this server keeps no stored prompts. "
            "Send the prompt's text as 'instructions' and 'input' instead.",
            param="prompt.id",
            code="prompt_not_found",
        )
    tools = settle_tools(body.tools or (), body.tool_choice)
    store = body.store if body.store is not None else True
    if body.background and not store:
        raise RequestError("Background responses need 'store': true.", param="background")
    conversation = body.conversation
    if conversation is not None and body.previous_response_id is not None:
        raise RequestError(
            "Mutually exclusive parameters. Ensure you are only providing one of: "
            "'previous_response_id' or 'conversation'.",
            code="mutually_exclusive_parameters",
        )
    reasoning = body.reasoning
    effort = reasoning.effort if reasoning is not None else None
    summary = (reasoning.summary or reasoning.generate_summary) if reasoning is not None else None
    text = body.text
    return ResponseRequest(
        model=body.model,
        items=_items(body.input, limits),
        instructions=body.instructions,
        previous_response_id=body.previous_response_id,
        conversation=conversation if isinstance(conversation, str | None) else conversation.id,
        tools=tools.functions,
        custom_tools=tools.customs,
        namespaces=tools.namespaces,
        client_tools=tools.clients,
        hosted_tools=tools.hosted,
        tool_choice=tools.choice,
        parallel_tool_calls=body.parallel_tool_calls is not False,
        text_format=(text.format if text is not None else None) or PlainText(),
        verbosity=text.verbosity if text is not None else None,
        reasoning_effort=_EFFORTS.get(effort, effort) if effort is not None else None,
        reasoning_summary=summary,
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
        service_tier=None if body.service_tier is None else "default",  # the one tier served here
        safety_identifier=body.safety_identifier,
        prompt_cache_key=body.prompt_cache_key,
        seed=body.seed,
        user=body.user,
        ignored=ignored,
    )


def body_object(body: Any, limits: RequestLimits) -> dict[str, Any]:
    """``body`` if it is a JSON object nested no deeper than ``limits`` allow; else a
    :class:`RequestError` (``body`` is not an object, or too deep)."""
    if not isinstance(body, dict):
        raise RequestError(
            f"Invalid type for 'body': expected an object, but got {type_name(body)}.",
            param="body",
            code="invalid_type",
        )
    limits.check_depth(body)
    return body


def parse_request(body: Any, limits: RequestLimits = DEFAULT_LIMITS) -> ResponseRequest:
    """Check a decoded create-response body within ``limits``; raises
    :class:`RequestError` naming the bad ``param``."""
    body = body_object(body, limits)
    _check_counts(body, limits)
    try:
        try:
            parsed = CreateResponseBody.model_validate(body, context=Checks(limits))
        except ValidationError as exc:
            raise request_error(exc) from None
        return settle(parsed, limits, ignored_parameters(body))
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
