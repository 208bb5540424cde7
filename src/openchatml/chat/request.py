"""A create-chat-completion body, checked and settled into :class:`ChatRequest`.

``parse_chat_request(body, limits)`` takes the decoded JSON of ``POST /v1/chat/completions``:
it refuses a body nested deeper, or holding more messages, parts or tools, than ``limits``
allow before anything else is read; sets aside the top-level keys it does not know (they
are ignored, and named in :attr:`ChatRequest.ignored`); validates the rest as a
:class:`~.wire.ChatCompletionBody`; and settles it into the Responses layer's
:class:`~..responses.request.ResponseRequest` (``store: false``, the messages as input
items), checked as a create-response request is (a tool choice naming a tool, duplicate
names). Every refusal is a :class:`~..responses.errors.RequestError` naming the chat
request's ``param`` (``messages[2].content[0].type``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from ..responses.errors import RequestError
from ..responses.limits import DEFAULT_LIMITS, RequestLimits
from ..responses.request import ResponseRequest, body_object, settle
from ..responses.wire.base import MAX_NAME, Checks
from ..responses.wire.request import MAX_REPORTED, CreateResponseBody, ReasoningParam, TextParam
from ..responses.wire.tools import (
    AllowedTool,
    AllowedTools,
    FunctionChoice,
    FunctionTool,
    JsonObjectFormat,
    JsonSchemaFormat,
    PlainText,
    TextFormat,
    ToolChoice,
)
from ..responses.wire.validation import param_of, render, type_name
from .messages import chat_error, message_items
from .wire import (
    BODY_KEYS,
    CHOICE_ERROR,
    PART_ERROR,
    REFUSED_KEYS,
    ROLE_ERROR,
    ROLES,
    UNUSED_KEYS,
    AllowedToolsChoice,
    ChatCompletionBody,
    JsonObjectResponseFormat,
    JsonSchemaResponseFormat,
    NamedToolChoice,
    ResponseFormatParam,
    ToolChoiceParam,
)

LOGPROBS: Final = "message.output_text.logprobs"


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A checked chat completion request: the response each choice runs (``request``;
    :meth:`choice` gives choice ``index``'s) and what the chat API adds around it."""

    request: ResponseRequest
    n: int = 1
    stop: tuple[str, ...] = ()
    stream: bool = False
    include_usage: bool = False
    logprobs: bool = False
    origins: tuple[str, ...] = ()
    """The ``param`` of the message each input item came from (see :mod:`.messages`)."""

    @property
    def ignored(self) -> tuple[str, ...]:
        """The top-level keys this server did not act on: unknown ones, and the known ones
        it accepts without using (``logit_bias`` …), in the body's order: at most 16, each
        cut to 64 characters (as a create-response request names its own)."""
        return self.request.ignored

    def choice(self, index: int) -> ResponseRequest:
        """The request of choice ``index``: its ``seed`` (when one is given) is the
        request's plus ``index``, so that the choices differ and each is repeatable."""
        seed = self.request.seed
        if index == 0 or seed is None:
            return self.request
        return dataclasses.replace(self.request, seed=seed + index)

    def error(self, error: RequestError) -> RequestError:
        """``error`` (raised while the Responses layer ran the request) in this request's terms."""
        return chat_error(error, self.origins)


def _check_counts(body: Mapping[str, Any], limits: RequestLimits) -> None:
    """Refuse more tools, messages or parts than ``limits`` allow, before any is read."""
    tools = body.get("tools")
    if isinstance(tools, list):
        limits.check_count(len(tools), limits.max_tools, "tools", "tools", "too_many_tools")
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    limits.check_count(len(messages), limits.max_input_items, "messages", "messages", "too_many_input_items")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        for key, what in (("content", "parts"), ("tool_calls", "tool calls")):
            parts = message.get(key)
            if isinstance(parts, list):
                limits.check_count(
                    len(parts),
                    limits.max_content_parts,
                    f"messages[{index}].{key}",
                    what,
                    "too_many_content_parts",
                )


def _validation_error(exc: ValidationError) -> RequestError:
    """The :class:`RequestError` of the first error of a chat body's validation."""
    error: ErrorDetails = exc.errors(include_url=False)[0]
    param = param_of(error["loc"])
    value = error.get("input")
    kind = error["type"]
    if kind in (ROLE_ERROR, PART_ERROR, CHOICE_ERROR) and isinstance(value, dict):
        field_name = "role" if kind == ROLE_ERROR else "type"
        given = value.get(field_name)
        if kind == ROLE_ERROR:
            expected = ", ".join(repr(role) for role in ROLES)
        elif kind == PART_ERROR:
            expected = error["msg"]  # the part types of the message's role
        else:
            expected = "'function', 'allowed_tools'"
        message = f"Invalid value for '{param}.{field_name}': {given!r}. Supported values are: {expected}."
        return RequestError(message, param=f"{param}.{field_name}", code="invalid_value")
    if kind in (ROLE_ERROR, PART_ERROR, CHOICE_ERROR):
        message = f"Invalid type for '{param}': expected an object, but got {type_name(value)}."
        return RequestError(message, param=param, code="invalid_type")
    param, code, message = render(error)
    return RequestError(message, param=param, code=code)


def _tool_choice(choice: ToolChoiceParam | None) -> ToolChoice | None:
    if isinstance(choice, NamedToolChoice):
        return FunctionChoice(name=choice.function.name)
    if isinstance(choice, AllowedToolsChoice):
        spec = choice.allowed_tools
        tools = tuple(AllowedTool(type="function", name=tool.function.name) for tool in spec.tools)
        return AllowedTools(tools=tools, mode=spec.mode)
    return choice


def _text_format(given: ResponseFormatParam | None) -> TextFormat:
    if isinstance(given, JsonObjectResponseFormat):
        return JsonObjectFormat()
    if isinstance(given, JsonSchemaResponseFormat):
        spec = given.json_schema
        if spec.json_schema is None:
            raise RequestError(
                "Missing required parameter: 'response_format.json_schema.schema'.",
                param="response_format.json_schema.schema",
                code="missing_required_parameter",
            )
        return JsonSchemaFormat.model_validate(
            {
                "name": spec.name,
                "description": spec.description,
                "schema": spec.json_schema,
                "strict": spec.strict,
            }
        )
    return PlainText()


def _refuse_unsupported(body: ChatCompletionBody) -> None:
    for key in REFUSED_KEYS:
        if getattr(body, key) is not None:
            what = "audio output" if key == "audio" else "the deprecated 'functions' API (use 'tools')"
            raise RequestError(
                f"This server does not support {what}: remove '{key}'.",
                param=key,
                code="unsupported_parameter",
            )
    if body.top_logprobs is not None and not body.logprobs:
        raise RequestError(
            "'top_logprobs' needs 'logprobs': true.", param="top_logprobs", code="invalid_value"
        )
    if not body.messages:
        raise RequestError(
            "'messages' must hold at least one message.", param="messages", code="invalid_value"
        )


def settle_chat(body: ChatCompletionBody, limits: RequestLimits, ignored: tuple[str, ...]) -> ChatRequest:
    """The request a validated chat ``body`` asks for (``ignored``: the keys set aside)."""
    _refuse_unsupported(body)
    items, origins = message_items(body.messages)
    tools = tuple(
        FunctionTool(
            name=tool.function.name,
            description=tool.function.description,
            parameters=tool.function.parameters,
            strict=bool(tool.function.strict),
        )
        for tool in body.tools or ()
    )
    logprobs = bool(body.logprobs)
    responses_body = CreateResponseBody.model_validate(
        {
            "model": body.model,
            "input": items,
            "tools": tools or None,
            "tool_choice": _tool_choice(body.tool_choice),
            "parallel_tool_calls": body.parallel_tool_calls,
            "text": TextParam(format=_text_format(body.response_format), verbosity=body.verbosity),
            "reasoning": ReasoningParam(effort=body.reasoning_effort) if body.reasoning_effort else None,
            "include": (LOGPROBS,) if logprobs else None,
            "temperature": body.temperature,
            "top_p": body.top_p,
            "presence_penalty": body.presence_penalty,
            "frequency_penalty": body.frequency_penalty,
            "max_output_tokens": body.max_completion_tokens or body.max_tokens,
            "top_logprobs": body.top_logprobs if logprobs else None,
            "seed": body.seed,
            "store": False,
            "metadata": body.metadata,
            "service_tier": body.service_tier,
            "user": body.user,
            "safety_identifier": body.safety_identifier,
            "prompt_cache_key": body.prompt_cache_key,
        }
    )
    unused = tuple(key for key in UNUSED_KEYS if getattr(body, key) is not None)
    if body.store:
        unused += ("store",)  # chat completions are never stored here
    ignored = (*ignored, *unused)[:MAX_REPORTED]
    try:
        request = settle(responses_body, limits, ignored)
    except RequestError as exc:
        raise chat_error(exc, origins) from None
    stop = body.stop
    options = body.stream_options
    return ChatRequest(
        request=request,
        n=body.n or 1,
        stop=(stop,) if isinstance(stop, str) else tuple(stop or ()),
        stream=bool(body.stream),
        include_usage=bool(body.stream and options is not None and options.include_usage),
        logprobs=logprobs,
        origins=origins,
    )


def parse_chat_request(body: Any, limits: RequestLimits = DEFAULT_LIMITS) -> ChatRequest:
    """Check a decoded create-chat-completion body within ``limits``; raises
    :class:`RequestError` naming the bad ``param``."""
    body = body_object(body, limits)
    if "messages" not in body:
        raise RequestError(
            "Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter"
        )
    ignored = tuple(key[:MAX_NAME] for key in body if key not in BODY_KEYS)
    if ignored:
        body = {key: value for key, value in body.items() if key in BODY_KEYS}
    _check_counts(body, limits)
    try:
        try:
            parsed = ChatCompletionBody.model_validate(body, context=Checks(limits))
        except ValidationError as exc:
            raise _validation_error(exc) from None
        return settle_chat(parsed, limits, ignored)
    except UnicodeEncodeError:  # a lone surrogate (no JSON text decodes to one) cannot be written
        raise RequestError(
            "The body is not valid Unicode text (it holds a lone surrogate).",
            param="body",
            code="invalid_value",
        ) from None
