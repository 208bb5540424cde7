"""The response object (``ResponseResource``): its fields, status and usage.

:class:`ResponseState` holds what changes while a response runs (status, output items,
usage, error); :meth:`ResponseState.to_json` gives the complete snapshot the API returns,
every required field present, settings echoed with their effective values.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Final

from .request import ResponseRequest

TERMINAL: Final = frozenset({"completed", "failed", "incomplete", "cancelled"})
"""Statuses a response never leaves."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts, from real token ids."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        """The ``Usage`` object."""
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass(slots=True)
class ResponseState:
    """A response while it runs and after: the request it answers plus what happened."""

    id: str
    request: ResponseRequest
    model: str
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: str = "in_progress"
    output: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage | None = None
    error: dict[str, Any] | None = None
    incomplete_reason: str | None = None
    completed_at: int | None = None
    default_effort: str = "medium"

    def finish(self, status: str, *, reason: str | None = None, error: dict[str, Any] | None = None) -> None:
        """Move to a terminal ``status`` (``completed``, ``incomplete``, ``failed``, ``cancelled``)."""
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        self.status = status
        self.incomplete_reason = reason if status == "incomplete" else None
        self.error = error if status == "failed" else None
        self.completed_at = int(time.time()) if status == "completed" else None

    def to_json(self) -> dict[str, Any]:
        """The complete ``ResponseResource``."""
        req = self.request
        text: dict[str, Any] = {"format": req.text_format.to_json()}
        text["verbosity"] = req.verbosity or "medium"
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "completed_at": self.completed_at,
            "status": self.status,
            "incomplete_details": {"reason": self.incomplete_reason} if self.incomplete_reason else None,
            "model": self.model,
            "previous_response_id": req.previous_response_id,
            "instructions": req.instructions,
            "output": copy.deepcopy(self.output),
            "error": self.error,
            "tools": [t.to_json() for t in req.tools],
            "tool_choice": req.tool_choice,
            "truncation": req.truncation,
            "parallel_tool_calls": req.parallel_tool_calls,
            "text": text,
            "top_p": 1.0 if req.top_p is None else req.top_p,
            "presence_penalty": req.presence_penalty or 0.0,
            "frequency_penalty": req.frequency_penalty or 0.0,
            "top_logprobs": req.top_logprobs or 0,
            "temperature": 1.0 if req.temperature is None else req.temperature,
            "reasoning": {
                "effort": req.reasoning_effort or self.default_effort,
                "summary": req.reasoning_summary,
            },
            "usage": self.usage.to_json() if self.usage is not None else None,
            "max_output_tokens": req.max_output_tokens,
            "max_tool_calls": req.max_tool_calls,
            "store": req.store,
            "background": req.background,
            "service_tier": req.service_tier or "default",
            "metadata": dict(req.metadata),
            "safety_identifier": req.safety_identifier,
            "prompt_cache_key": req.prompt_cache_key,
        }
