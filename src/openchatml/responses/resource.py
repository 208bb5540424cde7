"""A response while it runs: its status, output items, usage and error.

:class:`ResponseState` holds what changes while a response runs; :meth:`~ResponseState.resource`
gives the typed :class:`~.wire.resource.ResponseResource` the API returns, every required
field present, settings echoed with their effective values; :meth:`~ResponseState.to_json`
its JSON in a wire dialect.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

from .request import ResponseRequest
from .wire.dialects import DEFAULT_DIALECT, WireDialect
from .wire.items import OutputItem
from .wire.resource import (
    ConversationField,
    IncompleteDetails,
    InputTokensDetails,
    OutputTokensDetails,
    ReasoningField,
    ResponseError,
    ResponseResource,
    ResponseStatus,
    TextField,
    TokenUsage,
)
from .wire.tools import JsonSchemaFormat

TERMINAL: Final = frozenset({"completed", "failed", "incomplete", "cancelled"})
"""Statuses a response never leaves."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts, from real token ids."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    def wire(self) -> TokenUsage:
        """The ``usage`` object of the API."""
        return TokenUsage(
            input_tokens=self.input_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=self.cached_tokens),
            output_tokens=self.output_tokens,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=self.reasoning_tokens),
            total_tokens=self.input_tokens + self.output_tokens,
        )

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The ``usage`` object's JSON."""
        return self.wire().to_json(dialect)


@dataclass(slots=True)
class ResponseState:
    """A response while it runs and after: the request it answers plus what happened."""

    id: str
    request: ResponseRequest
    model: str
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: ResponseStatus = "in_progress"
    output: list[OutputItem] = field(default_factory=list)
    usage: Usage | None = None
    error: ResponseError | None = None
    incomplete_reason: str | None = None
    completed_at: int | None = None
    default_effort: str = "medium"

    def finish(
        self, status: ResponseStatus, *, reason: str | None = None, error: ResponseError | None = None
    ) -> None:
        """Move to a terminal ``status`` (``completed``, ``incomplete``, ``failed``, ``cancelled``)."""
        if status not in TERMINAL:
            raise ValueError(f"not a terminal status: {status}")
        self.status = status
        self.incomplete_reason = reason if status == "incomplete" else None
        self.error = error if status == "failed" else None
        self.completed_at = int(time.time()) if status == "completed" else None

    def resource(self) -> ResponseResource:
        """The complete ``ResponseResource`` as it stands."""
        req = self.request
        fmt = req.text_format
        return ResponseResource(
            id=self.id,
            created_at=self.created_at,
            completed_at=self.completed_at,
            status=self.status,
            incomplete_details=IncompleteDetails(reason=self.incomplete_reason)
            if self.incomplete_reason
            else None,
            model=self.model,
            previous_response_id=req.previous_response_id,
            conversation=ConversationField(id=req.conversation) if req.conversation else None,
            instructions=req.instructions,
            output=tuple(self.output),
            error=self.error,
            tools=req.all_tools,
            tool_choice=req.tool_choice,
            truncation=req.truncation,
            parallel_tool_calls=req.parallel_tool_calls,
            text=TextField(
                format=fmt.echoed() if isinstance(fmt, JsonSchemaFormat) else fmt,
                verbosity=req.verbosity or "medium",
            ),
            top_p=1.0 if req.top_p is None else req.top_p,
            presence_penalty=req.presence_penalty or 0.0,
            frequency_penalty=req.frequency_penalty or 0.0,
            top_logprobs=req.top_logprobs or 0,
            temperature=1.0 if req.temperature is None else req.temperature,
            reasoning=ReasoningField(
                effort=req.reasoning_effort or self.default_effort, summary=req.reasoning_summary
            ),
            usage=self.usage.wire() if self.usage is not None else None,
            max_output_tokens=req.max_output_tokens,
            max_tool_calls=req.max_tool_calls,
            store=req.store,
            background=req.background,
            service_tier=req.service_tier or "default",
            metadata=dict(req.metadata),
            safety_identifier=req.safety_identifier,
            prompt_cache_key=req.prompt_cache_key,
            user=req.user,
        )

    def to_json(self, dialect: WireDialect = DEFAULT_DIALECT) -> dict[str, Any]:
        """The ``ResponseResource``'s JSON in ``dialect``."""
        return self.resource().to_json(dialect)
