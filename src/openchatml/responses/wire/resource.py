"""The response object (the schema's ``ResponseResource``) and what it holds.

:class:`ResponseResource` has every field the schema requires, settings echoed with
their effective values; :class:`TokenUsage` is its ``usage``, :class:`ResponseError`
its ``error``. :class:`ErrorPayload` is the body of an ``error`` streaming event (and of
the error envelope). :func:`load_resource` reads a snapshot this server wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, TypeAdapter, model_serializer

from .base import WireModel, is_none
from .dialects import WireDialect
from .items import CompactionItem, OutputItem
from .tools import TextFormat, Tool, ToolChoice

ResponseStatus = Literal["queued", "in_progress", "completed", "failed", "incomplete", "cancelled"]


class InputTokensDetails(WireModel):
    """How many prompt tokens came from the prefix cache (and, in ``openai``, how many
    were written to it: ``cache_write_tokens``, none here)."""

    cached_tokens: int = 0

    @model_serializer(mode="wrap")
    def _dialect(self, write: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        out: dict[str, Any] = write(self)
        if info.context is WireDialect.OPENAI:
            out["cache_write_tokens"] = 0
        return out


class OutputTokensDetails(WireModel):
    """How many sampled tokens were reasoning."""

    reasoning_tokens: int = 0


class TokenUsage(WireModel):
    """The ``usage`` of a response: prompt and sampled tokens."""

    input_tokens: int = 0
    input_tokens_details: InputTokensDetails = Field(default_factory=InputTokensDetails)
    output_tokens: int = 0
    output_tokens_details: OutputTokensDetails = Field(default_factory=OutputTokensDetails)
    total_tokens: int = 0


class ResponseError(WireModel):
    """Why a response failed: ``{code, message}``."""

    code: str
    message: str


class ErrorPayload(WireModel):
    """An error as an ``error`` event carries it: ``{type, code, message, param}``."""

    type: str = "server_error"
    code: str | None = "server_error"
    message: str
    param: str | None = None


class IncompleteDetails(WireModel):
    """Why a response is incomplete (``max_output_tokens`` …)."""

    reason: str


class TextField(WireModel):
    """``text``: the answer's format (echoed without a schema) and verbosity."""

    format: TextFormat
    verbosity: str | None = None


class ReasoningField(WireModel):
    """``reasoning``: the effective effort, and the summary mode asked for."""

    effort: str | None = None
    summary: str | None = None


class ConversationField(WireModel):
    """``conversation``: the conversation a response continued and was added to."""

    id: str


class ResponseResource(WireModel):
    """A response as the API returns it (see the module docstring); ``conversation``
    and ``user`` only when it has them."""

    id: str
    object: Literal["response"] = "response"
    created_at: int
    completed_at: int | None = None
    status: ResponseStatus
    incomplete_details: IncompleteDetails | None = None
    model: str
    previous_response_id: str | None = None
    conversation: ConversationField | None = Field(default=None, exclude_if=is_none)
    instructions: str | None = None
    output: tuple[OutputItem, ...] = ()
    error: ResponseError | None = None
    tools: tuple[Tool, ...] = ()
    tool_choice: ToolChoice = "auto"
    truncation: str = "disabled"
    parallel_tool_calls: bool = True
    text: TextField
    top_p: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    top_logprobs: int = 0
    temperature: float = 1.0
    reasoning: ReasoningField | None = None
    usage: TokenUsage | None = None
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    store: bool = True
    background: bool = False
    service_tier: str = "default"
    metadata: dict[str, str] = Field(default_factory=dict)
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    user: str | None = Field(default=None, exclude_if=is_none)


class CompactResource(WireModel):
    """The answer of ``/responses/compact``: one compaction item and the usage."""

    id: str
    object: Literal["response.compaction"] = "response.compaction"
    created_at: int
    output: tuple[CompactionItem, ...]
    usage: TokenUsage


_RESOURCE: Final = TypeAdapter(ResponseResource)


def load_resource(data: Mapping[str, Any]) -> ResponseResource:
    """The response whose snapshot this server wrote; raises ``pydantic.ValidationError``
    for anything else."""
    return _RESOURCE.validate_python(data)
