"""Chat completion objects and chunks: the JSON of a choice's pieces (see :mod:`.choice`).

A streamed choice is its pieces each written as one ``chat.completion.chunk``
(:class:`ChunkWriter`): first the role, then a chunk per piece, the last carrying the
``finish_reason``; with ``stream_options.include_usage`` one more chunk, without choices,
carries the usage of all choices. A choice answered at once is the same pieces gathered
(:class:`ChoiceMessage`) into one message of a ``chat.completion`` (:func:`completion_json`),
so that both ways say the same.

Reasoning is written twice, as ``reasoning_content`` (vLLM before 0.11, DeepSeek, the
clients that follow them) and as ``reasoning`` (vLLM since, Ollama, OpenRouter), in a
message and in a delta alike; ``content`` is ``null`` where the model wrote no answer text.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..responses.resource import Usage
from ..responses.wire.content import LogProb
from .choice import CallPiece, CallStart, ChoiceEnd, ChoiceFailure, ContentPiece, Piece, ReasoningPiece

OBJECT = "chat.completion"
CHUNK_OBJECT = "chat.completion.chunk"


def completion_id() -> str:
    """A fresh chat completion id (``chatcmpl-…``)."""
    return f"chatcmpl-{secrets.token_hex(24)}"


def usage_json(usages: Sequence[Usage]) -> dict[str, Any]:
    """The ``usage`` of choices whose responses used ``usages``: the prompt once (every
    choice reads the same one), the completions' tokens added up."""
    prompt = usages[0].input_tokens if usages else 0
    cached = usages[0].cached_tokens if usages else 0
    completion = sum(usage.output_tokens for usage in usages)
    reasoning = sum(usage.reasoning_tokens for usage in usages)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _logprobs_json(logprobs: Sequence[LogProb]) -> dict[str, Any]:
    return {"content": [logprob.to_json() for logprob in logprobs], "refusal": None}


@dataclass(slots=True)
class _Call:
    call_id: str
    name: str
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ChoiceMessage:
    """One choice's pieces gathered: its message, log probabilities and finish reason."""

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    logprobs: list[LogProb] = field(default_factory=list)
    finish_reason: str | None = None
    failure: ChoiceFailure | None = None

    def add(self, piece: Piece) -> None:
        """Gather one more piece."""
        if isinstance(piece, ContentPiece):
            self.content.append(piece.text)
            self.logprobs += piece.logprobs
        elif isinstance(piece, ReasoningPiece):
            self.reasoning.append(piece.text)
        elif isinstance(piece, CallStart):
            self.calls.append(_Call(piece.call_id, piece.name))
        elif isinstance(piece, CallPiece):
            self.calls[piece.index].arguments.append(piece.arguments)
        elif isinstance(piece, ChoiceEnd):
            self.finish_reason = piece.reason
        else:
            self.failure = piece

    def message_json(self) -> dict[str, Any]:
        """The ``message`` of the choice."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        message["refusal"] = None
        message["annotations"] = []
        if self.reasoning:
            thought = "".join(self.reasoning)
            message["reasoning_content"] = thought
            message["reasoning"] = thought
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": "".join(call.arguments)},
                }
                for call in self.calls
            ]
        return message

    def choice_json(self, index: int, logprobs: bool) -> dict[str, Any]:
        """The choice, ``index`` in the completion's choices (``logprobs``: asked for)."""
        return {
            "index": index,
            "message": self.message_json(),
            "logprobs": _logprobs_json(self.logprobs) if logprobs else None,
            "finish_reason": self.finish_reason or "stop",
        }


def completion_json(
    ident: str,
    created: int,
    model: str,
    choices: Sequence[ChoiceMessage],
    usages: Sequence[Usage],
    logprobs: bool,
) -> dict[str, Any]:
    """The ``chat.completion`` object of ``choices`` (their responses used ``usages``)."""
    return {
        "id": ident,
        "object": OBJECT,
        "created": created,
        "model": model,
        "choices": [choice.choice_json(index, logprobs) for index, choice in enumerate(choices)],
        "usage": usage_json(usages),
        "system_fingerprint": None,
        "service_tier": "default",
    }


def _delta(piece: Piece) -> dict[str, Any]:
    """The ``delta`` of one piece."""
    if isinstance(piece, ContentPiece):
        return {"content": piece.text}
    if isinstance(piece, ReasoningPiece):
        return {"reasoning_content": piece.text, "reasoning": piece.text}
    if isinstance(piece, CallStart):
        call = {"index": piece.index, "id": piece.call_id, "type": "function"}
        return {"tool_calls": [{**call, "function": {"name": piece.name, "arguments": ""}}]}
    if isinstance(piece, CallPiece):
        return {"tool_calls": [{"index": piece.index, "function": {"arguments": piece.arguments}}]}
    return {}


class ChunkWriter:
    """The ``chat.completion.chunk`` objects of one chat completion's choices."""

    def __init__(self, model: str, *, logprobs: bool = False, include_usage: bool = False) -> None:
        self.id = completion_id()
        self.created = int(time.time())
        self.model = model
        self.logprobs = logprobs
        self.include_usage = include_usage

    def _chunk(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self.id,
            "object": CHUNK_OBJECT,
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "service_tier": "default",
            "choices": choices,
        }
        if self.include_usage:
            chunk["usage"] = None
        return chunk

    def role(self, index: int) -> dict[str, Any]:
        """The first chunk of choice ``index``: the role."""
        choice = {"index": index, "delta": {"role": "assistant", "content": None}, "logprobs": None}
        return self._chunk([{**choice, "finish_reason": None}])

    def piece(self, index: int, piece: Piece) -> dict[str, Any] | None:
        """The chunk of ``piece`` of choice ``index`` (``None`` for a failure, which ends the
        stream as an error instead)."""
        if isinstance(piece, ChoiceFailure):
            return None
        logprobs = None
        if self.logprobs and isinstance(piece, ContentPiece):
            logprobs = _logprobs_json(piece.logprobs)
        reason = piece.reason if isinstance(piece, ChoiceEnd) else None
        choice = {"index": index, "delta": _delta(piece), "logprobs": logprobs, "finish_reason": reason}
        return self._chunk([choice])

    def usage(self, usages: Sequence[Usage]) -> dict[str, Any]:
        """The last chunk (``include_usage``): no choices, the usage of all."""
        chunk = self._chunk([])
        chunk["usage"] = usage_json(usages)
        return chunk
