"""What ``POST /v1/chat/completions`` answers, as pydantic models: a ``chat.completion``
(:class:`ChatCompletion`) or its ``chat.completion.chunk`` objects (:class:`ChatCompletionChunk`).

They hold exactly the fields :mod:`.completion` writes (and no other: ``extra="forbid"``),
the fields written only sometimes with a ``None`` default; so
``ChatCompletion.model_validate(answer).model_dump(mode="json", exclude_unset=True)`` is
``answer``. Their JSON Schemas are the answer's in the OpenAPI document (:mod:`.openapi`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..responses.wire.request import ServiceTier
from .choice import FinishReason


class ChatObject(BaseModel):
    """A frozen object of a chat completion answer: no field but those named."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class ChatCompletionTopLogprob(ChatObject):
    """One likely token at a position: its text, log probability and UTF-8 bytes."""

    token: str
    logprob: float
    bytes: list[int] | None


class ChatCompletionTokenLogprob(ChatObject):
    """A sampled token, its log probability, bytes and the likeliest alternatives."""

    token: str
    logprob: float
    bytes: list[int] | None
    top_logprobs: list[ChatCompletionTopLogprob]


class ChatCompletionLogprobs(ChatObject):
    """A choice's log probabilities (``logprobs: true``): one per token of its answer text."""

    content: list[ChatCompletionTokenLogprob] | None
    refusal: list[ChatCompletionTokenLogprob] | None


class ChatCompletionCalledFunction(ChatObject):
    """The function a tool call names and its JSON arguments."""

    name: str
    arguments: str


class ChatCompletionMessageToolCall(ChatObject):
    """A tool call of the answer: its ``id`` ties the tool's result to it."""

    id: str
    type: Literal["function"]
    function: ChatCompletionCalledFunction


class ChatCompletionMessage(ChatObject):
    """The message of a choice: the answer text (``null`` when none), the reasoning (twice,
    as ``reasoning_content`` and ``reasoning``, when the model reasoned), the tool calls."""

    role: Literal["assistant"]
    content: str | None
    refusal: str | None
    annotations: list[dict[str, Any]]
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ChatCompletionMessageToolCall] | None = None


class ChatCompletionChoice(ChatObject):
    """One choice of a ``chat.completion``."""

    index: int
    message: ChatCompletionMessage
    logprobs: ChatCompletionLogprobs | None
    finish_reason: FinishReason


class PromptTokensDetails(ChatObject):
    """Of the prompt's tokens, how many were read from the cache."""

    cached_tokens: int


class CompletionTokensDetails(ChatObject):
    """Of the completions' tokens, how many were reasoning."""

    reasoning_tokens: int


class CompletionUsage(ChatObject):
    """The tokens a chat completion used: the prompt once, every choice's completion."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class ChatCompletion(ChatObject):
    """A ``chat.completion``: every choice, answered at once."""

    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatCompletionChoice]
    usage: CompletionUsage
    system_fingerprint: str | None
    service_tier: ServiceTier | None


class ChatCompletionDeltaFunction(ChatObject):
    """The function of a streamed tool call: its name in the first chunk, then more of its
    arguments in each."""

    name: str | None = None
    arguments: str | None = None


class ChatCompletionDeltaToolCall(ChatObject):
    """A piece of tool call ``index`` of a choice (``id`` and ``type`` in its first chunk)."""

    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: ChatCompletionDeltaFunction | None = None


class ChatCompletionDelta(ChatObject):
    """What a chunk adds to a choice's message: the role (first), text, reasoning or a
    tool call's piece; empty in the chunk that ends the choice."""

    role: Literal["assistant"] | None = None
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ChatCompletionDeltaToolCall] | None = None


class ChatCompletionChunkChoice(ChatObject):
    """A choice's piece in a chunk (``finish_reason`` in its last)."""

    index: int
    delta: ChatCompletionDelta
    logprobs: ChatCompletionLogprobs | None
    finish_reason: FinishReason | None


class ChatCompletionChunk(ChatObject):
    """A ``chat.completion.chunk``: a piece of one choice; with ``stream_options.include_usage``
    every chunk has ``usage``, ``null`` but in the last, which has no choices."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    system_fingerprint: str | None
    service_tier: ServiceTier | None
    choices: list[ChatCompletionChunkChoice]
    usage: CompletionUsage | None = None
