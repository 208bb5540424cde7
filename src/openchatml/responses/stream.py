"""Sampled token ids → Open Responses streaming events (sans-IO).

Theory of operation. A :class:`ResponseStream` owns a lenient
:class:`~openchatml.StreamParser` started inside ``<|start|>assistant`` and a
:class:`~.resource.ResponseState`. ``begin()`` gives ``response.created`` and
``response.in_progress``; ``feed(ids)`` gives the events the ids caused; ``finish(...)``
closes whatever is open and gives the terminal event. Every event has a
``sequence_number``, from 0, strictly increasing.

Each message the model writes becomes one output item, by its header:

============================================  =========================================
header                                        item
============================================  =========================================
``to=functions.NAME`` (any recipient)         ``function_call`` (fresh ``call_id``)
``final`` channel, or none                    ``message``, ``phase: final_answer``
``commentary`` channel                        ``message``, ``phase: commentary``
``analysis`` or any other channel             ``reasoning`` (content ``reasoning_text``)
another role than assistant                   nothing (the model should not write it)
============================================  =========================================

An item moves through ``_Open.ADDED → _Open.STREAMING → closed``: ``output_item.added``,
``content_part.added`` (not for function calls), deltas, ``…done``,
``content_part.done``, ``output_item.done``. A message cut short (``max_output_tokens``,
cancellation) ends ``incomplete``; so does the response.

Log probabilities (``include: ["message.output_text.logprobs"]``): ``feed`` then takes
the engine's :class:`~openchatml.engines.TokenLogprob` per id and drains the parser after
every id, so each ``output_text.delta`` carries the ``LogProb`` of exactly the tokens
whose text it holds (a token cut inside a UTF-8 character goes with the first delta that
holds any of its text); ``output_text.done``, the content part and the snapshot carry all
of the message's. Only ordinary ids of a message body count: header and control tokens, and
reasoning or function-call text, have none. ``token`` is the token's text (its bytes
decoded with replacement), ``bytes`` its exact bytes, ``top_logprobs`` the
``top_logprobs`` most likely tokens; a log probability below -9999 (or not finite) is
reported as -9999, as vLLM does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from ..core.encoding import Encoding, load_encoding
from ..core.events import ContentDelta, Header, MessageDone, MessageStarted
from ..core.messages import Message, Role
from ..core.parse import StreamParser
from ..core.tokens import FIRST_SPECIAL_ID
from ..engines.base import TokenLogprob
from . import ids
from .crypto import Sealer
from .input import REASONING_KIND
from .resource import ResponseState, Usage

_FUNCTIONS: Final = "functions."
_LOWEST_LOGPROB: Final = -9999.0


class TokenParser(Protocol):
    """Sampled ids → the core's parser events: the Harmony
    :class:`~openchatml.StreamParser`, or a chat-template model's
    :class:`~openchatml.templates.decoding.TemplateTokenParser`. A parser whose
    ``headers_are_text`` is false (default true) says that the text tokens read before a
    message's start event are that message's body, for log probabilities."""

    messages: list[Message]

    def process(self, token: int) -> None: ...

    def events(self) -> list[Any]: ...

    def close(self) -> list[Any]: ...


class Vocabulary(Protocol):
    """A model's tokens, for log probabilities (default: o200k_harmony)."""

    def token_bytes(self, token: int) -> bytes: ...

    def is_text(self, token: int) -> bool: ...


@dataclass(slots=True)
class _Open:
    """The item being written: its index in ``output``, kind and text so far."""

    index: int
    kind: str  # "message" | "reasoning" | "function_call"
    item: dict[str, Any]
    parts: list[str] = field(default_factory=list)
    logprobs: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True)
class _ScoredText:
    """Body text of message ``index`` with the scores of the tokens that produced it."""

    index: int
    parts: list[str]
    scores: list[TokenLogprob]


def item_kind(header: Header | Message) -> str | None:
    """``message``, ``reasoning``, ``function_call`` or ``None`` (not an output item)."""
    if header.author.role is not Role.ASSISTANT:
        return None
    if header.recipient not in (None, "all"):
        return "function_call"
    if header.channel in (None, "final", "commentary"):
        return "message"
    return "reasoning"


def function_name(recipient: str) -> str:
    """The function a recipient names: ``functions.get_weather`` → ``get_weather``."""
    return recipient[len(_FUNCTIONS) :] if recipient.startswith(_FUNCTIONS) else recipient


class ResponseStream:
    """Builds the event stream and the snapshot of one response from sampled ids.

    ``sealer`` seals reasoning into ``encrypted_content`` when the request includes
    ``reasoning.encrypted_content``; ``prompt_tokens`` is the prompt length, for usage;
    ``encoding`` turns ids into the text and bytes of log probabilities (default: the
    shared o200k_harmony).
    """

    def __init__(
        self,
        state: ResponseState,
        *,
        prompt_tokens: int = 0,
        cached_tokens: int = 0,
        sealer: Sealer | None = None,
        encoding: Encoding | None = None,
        parser: TokenParser | None = None,
        vocabulary: Vocabulary | None = None,
        summaries: bool = False,
    ) -> None:
        self.state = state
        self._parser: TokenParser = parser or StreamParser(
            Role.ASSISTANT, strict=False, check_constraints=False, allow_truncated=True, encoding=encoding
        )
        self._encoding = encoding
        self._vocabulary = vocabulary
        self._headers_are_text: bool = getattr(self._parser, "headers_are_text", True)
        self._seq = 0
        self._open: _Open | None = None
        self._sealer = sealer if state.request.wants_encrypted_reasoning else None
        self._prompt_tokens = prompt_tokens
        self._cached_tokens = cached_tokens
        self._output_tokens = 0
        self._reasoning_tokens = 0
        self._in_message = 0  # tokens of the message being read
        self._done_messages = 0
        self._channels: list[str | None] = []
        request = state.request
        self._top: int | None = (request.top_logprobs or 0) if request.wants_logprobs else None
        self._pending: list[TokenLogprob] = []  # scores of body tokens whose text is not out yet
        self._summaries = summaries
        self._due: _Open | None = None  # a reasoning item waiting for its summary
        self._summary: list[str] | None = None  # its summary so far, once a part began
        self._held: list[object] = []  # parser events after it, not yet translated
        self.finished = False

    # --- events -----------------------------------------------------------------------

    @property
    def sequence_number(self) -> int:
        """The number the next event will carry."""
        return self._seq

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return event

    def _snapshot_event(self, kind: str) -> dict[str, Any]:
        return self._event(kind, response=self.state.to_json())

    def begin(self) -> list[dict[str, Any]]:
        """``response.created`` then ``response.in_progress`` (``response.queued`` first when queued)."""
        out = []
        if self.state.status == "queued":
            out.append(self._snapshot_event("response.created"))
            out.append(self._snapshot_event("response.queued"))
            self.state.status = "in_progress"
            out.append(self._snapshot_event("response.in_progress"))
            return out
        out.append(self._snapshot_event("response.created"))
        out.append(self._snapshot_event("response.in_progress"))
        return out

    def usage(self) -> Usage:
        """Token usage so far."""
        return Usage(
            input_tokens=self._prompt_tokens,
            output_tokens=self._output_tokens,
            reasoning_tokens=self._reasoning_tokens,
            cached_tokens=self._cached_tokens,
        )

    # --- tokens in --------------------------------------------------------------------

    def feed(
        self, token_ids: Iterable[int], logprobs: Sequence[TokenLogprob] | None = None
    ) -> list[dict[str, Any]]:
        """The events caused by more sampled ids. ``logprobs``: one record per id (an
        engine chunk's), used when the request includes ``message.output_text.logprobs``;
        raises ``ValueError`` when their count differs from the ids'."""
        if self._top is not None:
            return self._translate(self._feed_scored(list(token_ids), logprobs))
        parser = self._parser
        for token in token_ids:
            self._output_tokens += 1
            self._in_message += 1
            parser.process(token)
            if len(parser.messages) != self._done_messages:
                self._count_finished(parser)
        return self._translate(parser.events())

    def _feed_scored(self, ids: list[int], logprobs: Sequence[TokenLogprob] | None) -> list[object]:
        """Feed ``ids`` one at a time, draining the parser after each, so that body text
        comes out paired with the scores of the tokens that produced it."""
        if logprobs is not None and len(logprobs) != len(ids):
            raise ValueError(f"{len(logprobs)} logprob records for {len(ids)} ids")
        parser = self._parser
        out: list[object] = []
        for n, token in enumerate(ids):
            self._output_tokens += 1
            self._in_message += 1
            parser.process(token)
            if len(parser.messages) != self._done_messages:
                self._count_finished(parser)
            if logprobs is not None and self._is_text(token):
                self._pending.append(logprobs[n])
            self._pair(parser.events(), out)
        return out

    def _pair(self, events: Iterable[object], out: list[object]) -> None:
        """Append ``events`` to ``out``, each ``ContentDelta`` as a :class:`_ScoredText`
        holding the pending scores (merged into the previous one of the same message)."""
        for event in events:
            if isinstance(event, ContentDelta):
                scores, self._pending = self._pending, []
                last = out[-1] if out else None
                if isinstance(last, _ScoredText) and last.index == event.index:
                    last.parts.append(event.text)
                    last.scores += scores
                else:
                    out.append(_ScoredText(event.index, [event.text], scores))
                continue
            if isinstance(event, MessageDone) or (
                isinstance(event, MessageStarted) and self._headers_are_text
            ):
                self._pending = []  # header tokens, or body tokens that never made text
            out.append(event)

    def _is_text(self, token: int) -> bool:
        if self._vocabulary is not None:
            return self._vocabulary.is_text(token)
        return 0 <= token < FIRST_SPECIAL_ID

    def _count_finished(self, parser: TokenParser) -> None:
        message = parser.messages[-1]
        self._done_messages = len(parser.messages)
        if item_kind(message) == "reasoning":
            self._reasoning_tokens += self._in_message
        self._in_message = 0

    def _translate(self, events: Iterable[object]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        pending = events if isinstance(events, list) else list(events)
        if self._due is not None:  # nothing moves on until the summary is written
            self._held += pending
            return out
        for n, event in enumerate(pending):
            if self._due is not None:
                self._held += pending[n:]
                break
            if isinstance(event, MessageStarted):
                if self._open is not None:  # the model began anew without ending the last
                    out += self._close("incomplete")
                    if self._due is not None:
                        self._held += pending[n:]
                        break
                out += self._start(event.header)
            elif isinstance(event, ContentDelta):
                out += self._delta(event.text)
            elif isinstance(event, _ScoredText):
                out += self._delta("".join(event.parts), event.scores)
            elif isinstance(event, MessageDone):
                out += self._close("completed" if event.terminator is not None else "incomplete")
        return out

    # --- items ------------------------------------------------------------------------

    def _start(self, header: Header) -> list[dict[str, Any]]:
        out = self._close("incomplete") if self._open is not None else []
        kind = item_kind(header)
        if kind is None:
            return out
        index = len(self.state.output)
        item: dict[str, Any]
        if kind == "function_call":
            item = {
                "id": ids.function_call_id(),
                "type": "function_call",
                "status": "in_progress",
                "call_id": ids.call_id(),
                "name": function_name(str(header.recipient)),
                "arguments": "",
            }
        elif kind == "message":
            phase = "commentary" if header.channel == "commentary" else "final_answer"
            item = {
                "id": ids.message_id(),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
                "phase": phase,
            }
        else:
            item = {
                "id": ids.reasoning_id(),
                "type": "reasoning",
                "status": "in_progress",
                "summary": [],
                "content": [],
            }
        self.state.output.append(item)
        self._open = _Open(index, kind, item)
        out.append(self._event("response.output_item.added", output_index=index, item=_copy(item)))
        if kind == "message" or kind == "reasoning":
            out.append(self._part_event("response.content_part.added", _text_part(kind, "")))
        return out

    def _part_event(self, kind: str, part: dict[str, Any]) -> dict[str, Any]:
        current = self._open
        assert current is not None
        return self._event(
            kind, item_id=current.item["id"], output_index=current.index, content_index=0, part=part
        )

    def _delta(self, text: str, scores: Sequence[TokenLogprob] = ()) -> list[dict[str, Any]]:
        current = self._open
        if current is None or not text:
            return []
        current.parts.append(text)
        common = {"item_id": current.item["id"], "output_index": current.index}
        if current.kind == "function_call":
            return [self._event("response.function_call_arguments.delta", **common, delta=text)]
        if current.kind == "message":
            logprobs = self._logprobs_json(scores) if scores else []
            current.logprobs += logprobs
            return [
                self._event(
                    "response.output_text.delta", **common, content_index=0, delta=text, logprobs=logprobs
                )
            ]
        return [self._event("response.reasoning.delta", **common, content_index=0, delta=text)]

    def _close(self, status: str) -> list[dict[str, Any]]:
        current = self._open
        if current is None:
            return []
        self._open = None
        text = "".join(current.parts)
        item = current.item
        common = {"item_id": item["id"], "output_index": current.index}
        out: list[dict[str, Any]] = []
        if current.kind == "function_call":
            item["arguments"] = text
            out.append(
                self._event(
                    "response.function_call_arguments.done", **common, name=item["name"], arguments=text
                )
            )
        else:
            part = _text_part(current.kind, text, current.logprobs)
            if current.kind == "message":
                out.append(
                    self._event(
                        "response.output_text.done",
                        **common,
                        content_index=0,
                        text=text,
                        logprobs=list(current.logprobs),
                    )
                )
            else:
                out.append(self._event("response.reasoning.done", **common, content_index=0, text=text))
            out.append(self._event("response.content_part.done", **common, content_index=0, part=dict(part)))
            item["content"] = [part]
            if current.kind == "reasoning" and self._sealer is not None:
                item["encrypted_content"] = self._sealer.seal(REASONING_KIND, {"text": text})
        item["status"] = status
        if current.kind == "reasoning" and self._summaries and text.strip():
            self._due = current  # output_item.done once its summary is written
            return out
        out.append(self._event("response.output_item.done", output_index=current.index, item=_copy(item)))
        return out

    # --- reasoning summaries ----------------------------------------------------------

    @property
    def summary_due(self) -> str | None:
        """The text of the reasoning item that waits for its summary (nothing else is
        translated meanwhile), or ``None``."""
        return "".join(self._due.parts) if self._due is not None else None

    def summary_delta(self, text: str) -> list[dict[str, Any]]:
        """The events of the next piece of the due summary (the part's ``added`` first)."""
        current = self._due
        if current is None or not text:
            return []
        out = []
        common = {"item_id": current.item["id"], "output_index": current.index, "summary_index": 0}
        if self._summary is None:
            self._summary = []
            part = {"type": "summary_text", "text": ""}
            out.append(self._event("response.reasoning_summary_part.added", **common, part=part))
        self._summary.append(text)
        out.append(self._event("response.reasoning_summary_text.delta", **common, delta=text))
        return out

    def summary_done(self) -> list[dict[str, Any]]:
        """End the due summary: its ``done`` events, the reasoning item's
        ``output_item.done``, then the events held back meanwhile."""
        current = self._due
        if current is None:
            return []
        self._due = None
        out = []
        item = current.item
        if self._summary is not None:
            text = "".join(self._summary).strip()
            part = {"type": "summary_text", "text": text}
            common = {"item_id": item["id"], "output_index": current.index, "summary_index": 0}
            out.append(self._event("response.reasoning_summary_text.done", **common, text=text))
            out.append(self._event("response.reasoning_summary_part.done", **common, part=dict(part)))
            item["summary"] = [part]
        self._summary = None
        out.append(self._event("response.output_item.done", output_index=current.index, item=_copy(item)))
        held, self._held = self._held, []
        return out + self._translate(held)

    # --- the end ----------------------------------------------------------------------

    def finish(
        self,
        reason: str,
        *,
        error: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Close the stream: ``reason`` is ``stop`` (a stop token), ``length``
        (``max_output_tokens``), ``cancelled`` or ``error`` (with the ``error`` payload
        ``{type, code, message, param}``). Gives the last events, ending in
        ``response.completed`` / ``.incomplete`` / ``.failed``; cancellation ends in
        ``response.incomplete`` with the status ``cancelled`` in the snapshot.
        """
        if self.finished:
            return []
        self.finished = True
        self._summaries = False  # no summary is waited for any more
        early = self.summary_done() if self._due is not None else []
        events: list[object] = list(self._parser.close())
        if len(self._parser.messages) != self._done_messages:
            self._count_finished(self._parser)
        if self._top is not None:
            events, closing = [], events
            self._pair(closing, events)
        out = early + self._translate(events)
        cut = reason != "stop"
        out += self._close("incomplete" if cut else "completed")
        state = self.state
        state.usage = self.usage()
        if reason == "stop":
            state.finish("completed")
            out.append(self._snapshot_event("response.completed"))
        elif reason == "length":
            state.finish("incomplete", reason="max_output_tokens")
            out.append(self._snapshot_event("response.incomplete"))
        elif reason == "cancelled":
            state.finish("cancelled")
            out.append(self._snapshot_event("response.incomplete"))
        else:
            payload = error or {
                "type": "server_error",
                "code": "server_error",
                "message": "generation failed",
                "param": None,
            }
            out.append(self._event("error", error=payload))
            state.finish(
                "failed", error={"code": payload.get("code") or "server_error", "message": payload["message"]}
            )
            out.append(self._snapshot_event("response.failed"))
        return out

    # --- log probabilities ------------------------------------------------------------

    def _logprobs_json(self, scores: Iterable[TokenLogprob]) -> list[dict[str, Any]]:
        """``LogProb`` objects for ``scores``, each with ``top_logprobs`` alternatives."""
        table: Any
        if self._vocabulary is not None:
            table = self._vocabulary
        else:
            if self._encoding is None:
                self._encoding = load_encoding()
            table = self._encoding.token_bytes
        top = self._top or 0
        out = []
        for score in scores:
            record = _token_json(table, score.id, score.logprob)
            record["top_logprobs"] = [_token_json(table, t, lp) for t, lp in score.top[:top]]
            out.append(record)
        return out


def _token_json(table: Sequence[bytes] | Vocabulary, token: int, logprob: float) -> dict[str, Any]:
    """``{token, logprob, bytes}`` of one id (an id outside ``table`` has no bytes)."""
    if isinstance(table, Sequence):
        raw = table[token] if 0 <= token < len(table) else b""
    else:
        raw = table.token_bytes(token)
    return {
        "token": raw.decode("utf-8", "replace"),
        "logprob": logprob if logprob >= _LOWEST_LOGPROB else _LOWEST_LOGPROB,
        "bytes": list(raw),
    }


def _text_part(kind: str, text: str, logprobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    if kind == "message":
        return {"type": "output_text", "text": text, "annotations": [], "logprobs": list(logprobs or ())}
    return {"type": "reasoning_text", "text": text}


def _copy(item: dict[str, Any]) -> dict[str, Any]:
    out = dict(item)
    if "content" in out:
        out["content"] = [dict(p) for p in out["content"]]
    return out


__all__ = ["ResponseStream", "function_name", "item_kind"]
