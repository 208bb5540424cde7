"""One choice of a chat completion, read from its response's events (sans-IO).

Theory of operation. Each choice of a chat completion is one response; a
:class:`ChoiceReader` is fed that response's streaming events (:mod:`~..responses.wire.events`)
and gives back the :data:`Piece` s of the choice, the same whether they are sent as chunks
or gathered into one message:

================================================  ===============================================
event                                             pieces
================================================  ===============================================
``output_text.delta``                             :class:`ContentPiece` (with its tokens' log
                                                  probabilities), through the stop sequences
a second message (a preamble, then more) after    its text begins with ``"\\n\\n"`` (messages
some text                                         of one turn read as paragraphs of one answer)
``reasoning.delta``                               :class:`ReasoningPiece` (the chain of thought:
                                                  never ``content``)
``output_item.added`` of a function call          :class:`CallStart` (its index among the
                                                  choice's calls, ``call_id``, name)
``function_call_arguments.delta``                 :class:`CallPiece`
``response.completed``                            :class:`ChoiceEnd` ``tool_calls`` (if it made
                                                  any) or ``stop``
``response.incomplete`` (``max_output_tokens``)   :class:`ChoiceEnd` ``length``
``response.failed``                               :class:`ChoiceFailure` (the ``error`` event's)
================================================  ===============================================

A stop sequence in the answer's text ends the choice there (``stop``; :attr:`ChoiceReader.stopped`
says the response may be cancelled); text that may begin one is held back until it cannot
(:class:`~.stop.StopCutter`). Nothing is read after the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ..responses.wire.content import LogProb
from ..responses.wire.event_base import StreamEvent
from ..responses.wire.events import (
    ErrorEvent,
    FunctionCallArgumentsDelta,
    OutputItemAdded,
    OutputTextDelta,
    ReasoningDelta,
    ResponseCompleted,
    ResponseFailed,
    ResponseIncomplete,
)
from ..responses.wire.items import AssistantMessage, FunctionCall
from ..responses.wire.resource import ErrorPayload
from .stop import StopCutter

FinishReason = Literal["stop", "length", "tool_calls"]
PARAGRAPH: Final = "\n\n"
"""What separates the texts of two messages of one turn in ``content``."""


@dataclass(frozen=True, slots=True)
class ContentPiece:
    """More of the answer's text, with the log probabilities of the tokens that wrote it
    (when asked for)."""

    text: str
    logprobs: tuple[LogProb, ...] = ()


@dataclass(frozen=True, slots=True)
class ReasoningPiece:
    """More of the chain of thought."""

    text: str


@dataclass(frozen=True, slots=True)
class CallStart:
    """A tool call begins: its index among the choice's calls, id and function name."""

    index: int
    call_id: str
    name: str


@dataclass(frozen=True, slots=True)
class CallPiece:
    """More of the JSON arguments of call ``index``."""

    index: int
    arguments: str


@dataclass(frozen=True, slots=True)
class ChoiceEnd:
    """The choice is finished, for ``reason``."""

    reason: FinishReason


@dataclass(frozen=True, slots=True)
class ChoiceFailure:
    """The choice's response failed (the engine failed, or the model broke the request's
    rules): ``error`` says how."""

    error: ErrorPayload


Piece = ContentPiece | ReasoningPiece | CallStart | CallPiece | ChoiceEnd | ChoiceFailure
"""What one choice says, in order."""


class ChoiceReader:
    """The pieces of one choice, from its response's events (see the module docstring)."""

    def __init__(self, stops: Sequence[str] = ()) -> None:
        self._cutter: StopCutter[LogProb] = StopCutter(stops)
        self._calls: dict[str, int] = {}
        self._wrote_text = False
        self._paragraph = False  # a new message began after some text: its text starts one
        self._error: ErrorPayload | None = None
        self.finished = False
        """Whether the choice has ended (nothing more is read)."""

    @property
    def stopped(self) -> bool:
        """Whether a stop sequence ended the choice (its response may be cancelled)."""
        return self._cutter.stopped

    def feed(self, event: StreamEvent) -> list[Piece]:
        """The pieces ``event`` adds to the choice."""
        if self.finished:
            return []
        if isinstance(event, OutputTextDelta):
            return self._content(event.delta, event.logprobs)
        if isinstance(event, ReasoningDelta):
            return [ReasoningPiece(event.delta)] if event.delta else []
        if isinstance(event, FunctionCallArgumentsDelta):
            index = self._calls.get(event.item_id)
            return [CallPiece(index, event.delta)] if index is not None and event.delta else []
        if isinstance(event, OutputItemAdded):
            return self._item(event)
        if isinstance(event, ErrorEvent):
            self._error = event.error
            return []
        if isinstance(event, ResponseCompleted):
            return self._end("tool_calls" if self._calls else "stop")
        if isinstance(event, ResponseIncomplete) and event.response.status != "cancelled":
            return self._end("length")
        if isinstance(event, ResponseIncomplete):  # cancelled: the server is shutting down
            self.finished = True
            cancelled = ErrorPayload(
                type="server_error", code="cancelled", message="The response was cancelled before it ended."
            )
            return [ChoiceFailure(cancelled)]
        if isinstance(event, ResponseFailed):
            self.finished = True
            error = event.response.error
            payload = self._error or ErrorPayload(
                type="model_error",
                code=error.code if error is not None else "model_error",
                message=error.message if error is not None else "The response failed.",
            )
            return [ChoiceFailure(payload)]
        return []

    def _content(self, text: str, logprobs: tuple[LogProb, ...] = ()) -> list[Piece]:
        if not text:
            return []
        if self._paragraph:
            self._paragraph = False
            paragraph = self._content(PARAGRAPH)
            return paragraph if self.finished else paragraph + self._content(text, logprobs)
        self._wrote_text = True
        out: list[Piece] = [
            ContentPiece(given, extras) for given, extras in self._cutter.feed(text, logprobs)
        ]
        if self._cutter.stopped:
            self.finished = True
            out.append(ChoiceEnd("stop"))
        return out

    def _item(self, event: OutputItemAdded) -> list[Piece]:
        item = event.item
        if isinstance(item, FunctionCall):
            index = len(self._calls)
            self._calls[item.id] = index
            return [CallStart(index, item.call_id, item.name)]
        if isinstance(item, AssistantMessage) and self._wrote_text:
            self._paragraph = True
        return []

    def _end(self, reason: FinishReason) -> list[Piece]:
        """The held-back text, then the end."""
        self.finished = True
        out: list[Piece] = [ContentPiece(text, extras) for text, extras in self._cutter.flush()]
        out.append(ChoiceEnd(reason))
        return out
