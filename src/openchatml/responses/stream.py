"""Sampled token ids → Open Responses streaming events (sans-IO).

Theory of operation. An :class:`EventBuilder` owns a lenient
:class:`~openchatml.StreamParser` started inside ``<|start|>assistant`` and a
:class:`~.resource.ResponseState`. ``begin()`` gives ``response.created`` and
``response.in_progress``; ``feed(ids)`` gives the events the ids caused; ``finish(...)``
closes whatever is open and gives the terminal event. Events are the typed
:mod:`~.wire.events`; every one has a ``sequence_number``, from 0, strictly increasing.

Each message the model writes becomes one output item, by its header
(:mod:`.output_items`):

============================================  =========================================
header                                        item
============================================  =========================================
``to=functions.NAME``, NAME a custom tool     ``custom_tool_call`` (fresh ``call_id``)
``to=functions.NAME``, a client's tool        ``shell_call`` … (:mod:`.client_calls`)
``to=functions.NAME`` (any other recipient)   ``function_call`` (fresh ``call_id``)
``to=NAMESPACE.NAME``                         as above, with ``namespace`` (:mod:`.tool_index`)
a hosted tool's call (``to=python`` …)       its item (:mod:`.hosted_calls`)
``final`` channel, or none                    ``message``, ``phase: final_answer``
``commentary`` channel                        ``message``, ``phase: commentary``
``analysis`` or any other channel             ``reasoning`` (content ``reasoning_text``)
another role than assistant                   nothing (the model should not write it)
============================================  =========================================

An item moves through ``_Open.ADDED → _Open.STREAMING → closed``: ``output_item.added``,
``content_part.added`` (not for tool calls), deltas, ``…done``,
``content_part.done``, ``output_item.done``. A message cut short (``max_output_tokens``,
cancellation) ends ``incomplete``; so does the response.

A custom tool's call (the request's ``custom_tools``) streams its input as
``custom_tool_call_input.delta`` events: the raw body of the call as gpt-oss writes it
(``custom_input="raw"``), or the text of the ``input`` argument decoded from the JSON
arguments a chat-template model writes (``"argument"``, see
:class:`~.custom_tools.InputArgument`).

Log probabilities (``include: ["message.output_text.logprobs"]``): ``feed`` then takes
the engine's :class:`~openchatml.engines.TokenLogprob` per id and drains the parser after
every id, so each ``output_text.delta`` carries the ``LogProb`` of exactly the tokens
whose text it holds (a token cut inside a UTF-8 character goes with the first delta that
holds any of its text); ``output_text.done``, the content part and the snapshot carry all
of the message's. Only ordinary ids of a message body count: header and control tokens, and
reasoning or function-call text, have none. ``token`` is the token's text (its bytes
decoded with replacement), ``bytes`` its exact bytes, ``top_logprobs`` the
``top_logprobs`` most likely tokens; a log probability below -9999 (or not finite) is
reported as -9999, as vLLM does (:mod:`.logprobs`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

from ..core.encoding import Encoding, load_encoding
from ..core.events import ContentDelta, Header, MessageDone, MessageStarted
from ..core.messages import Message, Role
from ..core.parse import StreamParser
from ..core.tokens import FIRST_SPECIAL_ID
from ..engines.base import TokenLogprob
from ..tools.base import ToolResult
from ..tools.browser import BrowserState, CitationStream, CitedText
from .call_rules import CallRules
from .client_calls import ClientCallWriter
from .crypto import Sealer
from .custom_tools import InputArgument
from .hosted_calls import HostedCalls, HostedWriter
from .input import REASONING_KIND
from .logprobs import table_bytes, wire_logprobs
from .output_items import ItemKind, item_kind, new_item
from .resource import ResponseState, Usage
from .tool_index import ToolIndex, item_call_name
from .wire.content import LogProb, OutputText, ReasoningText, SummaryText
from .wire.event_base import StreamEvent
from .wire.events import (
    ContentPartAdded,
    ContentPartDone,
    CustomToolCallInputDelta,
    CustomToolCallInputDone,
    ErrorEvent,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    OutputItemAdded,
    OutputItemDone,
    OutputTextAnnotationAdded,
    OutputTextDelta,
    OutputTextDone,
    ReasoningDelta,
    ReasoningDone,
    ReasoningSummaryPartAdded,
    ReasoningSummaryPartDone,
    ReasoningSummaryTextDelta,
    ReasoningSummaryTextDone,
    ResponseCompleted,
    ResponseCreated,
    ResponseEvent,
    ResponseFailed,
    ResponseIncomplete,
    ResponseInProgress,
    ResponseQueued,
)
from .wire.items import (
    AssistantMessage,
    ClientCall,
    CustomToolCall,
    FunctionCall,
    ItemStatus,
    OutputItem,
)
from .wire.resource import ErrorPayload, ResponseError

_FAILURE: Final = ErrorPayload(type="server_error", code="server_error", message="generation failed")

CustomInput = Literal["raw", "argument"]
"""How a custom tool's call carries its input: the call's raw body (Harmony), or the
``input`` argument of JSON arguments (a chat-template model)."""


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

    def is_marker(self, token: int) -> bool: ...


@dataclass(slots=True)
class _Open:
    """The item being written: its index in ``output``, kind, id and text so far (and
    the reader of a custom call's ``input`` argument)."""

    index: int
    kind: ItemKind
    item_id: str
    parts: list[str] = field(default_factory=list)
    logprobs: list[LogProb] = field(default_factory=list)
    reader: InputArgument | None = None
    client: ClientCallWriter | None = None
    hosted: HostedWriter | None = None
    hosted_calls: HostedCalls | None = None
    """The hosted tool whose call this is, and its writer."""
    cited: CitationStream | None = None
    """A message's citations of the browser's pages, resolved as its text comes."""
    annotations: list[dict[str, Any]] = field(default_factory=list)
    held: bool = False
    """A call whose events wait until it is complete and checked (see ``rules``)."""


@dataclass(slots=True)
class _ScoredText:
    """Body text of message ``index`` with the scores of the tokens that produced it."""

    index: int
    parts: list[str]
    scores: list[TokenLogprob]


class EventBuilder:
    """Builds the event stream and the snapshot of one response from sampled ids.

    ``sealer`` seals reasoning into ``encrypted_content`` when the request includes
    ``reasoning.encrypted_content``; ``prompt_tokens`` is the prompt length, for usage;
    ``encoding`` turns ids into the text and bytes of log probabilities (default: the
    shared o200k_harmony); ``summaries``: each reasoning item waits for its summary.
    ``custom_input``: how the calls of the request's custom tools carry their input
    (:data:`CustomInput`; default: ``raw`` for the builder's own Harmony parser,
    ``argument`` for a given ``parser``).

    ``rules``: the calls the request allows (:class:`~.call_rules.CallRules`). A call of a
    tool it may not call shows nothing; ``hold_calls`` (an engine that does not enforce the
    request's grammar) holds every call until it is complete and checked, then shows it at
    once or not at all; a streamed call whose arguments or input turn out wrong ends
    ``incomplete``. Either way the response then ends ``failed`` (``invalid_tool_call``), as
    does a finished answer without the call a forced ``tool_choice`` asks for; an answer
    that is not the JSON of a strict ``text.format`` ends it ``failed`` (``invalid_output``).
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
        custom_input: CustomInput | None = None,
        rules: CallRules | None = None,
        hold_calls: bool = False,
        hosted: Sequence[HostedCalls] = (),
        citations: BrowserState | None = None,
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
        request = state.request
        self._top: int | None = (request.top_logprobs or 0) if request.wants_logprobs else None
        self._pending: list[TokenLogprob] = []  # scores of body tokens whose text is not out yet
        self._summaries = summaries
        self._due: _Open | None = None  # a reasoning item waiting for its summary
        self._summary: list[str] | None = None  # its summary so far, once a part began
        self._held: list[object] = []  # parser events after it, not yet translated
        self._tools = ToolIndex.of(request)
        self._custom_input: CustomInput = custom_input or ("raw" if parser is None else "argument")
        self._rules = rules
        self._hold_calls = hold_calls and rules is not None
        self._calls = 0  # calls that reached the output
        self._violation = ""  # why the model broke the rules, once it did
        self.hosted = tuple(hosted)
        self._turn_closed = False  # the parser of this turn was closed
        self._waiting: deque[HostedCalls] = deque()  # whose calls were written, not yet run
        self._started: deque[HostedCalls] = deque()  # whose calls run
        self._citations = citations
        self.finished = False

    # --- events -----------------------------------------------------------------------

    @property
    def sequence_number(self) -> int:
        """The number the next event will carry."""
        return self._seq

    def _next(self) -> int:
        seq = self._seq
        self._seq = seq + 1
        return seq

    def _snapshot(self, kind: type[ResponseEvent]) -> ResponseEvent:
        return kind(self._next(), self.state.resource())

    def begin(self) -> list[StreamEvent]:
        """``response.created`` then ``response.in_progress`` (``response.queued`` first when
        queued), then the items hosted tools add before sampling."""
        out: list[StreamEvent] = [self._snapshot(ResponseCreated)]
        if self.state.status == "queued":
            out.append(self._snapshot(ResponseQueued))
            self.state.status = "in_progress"
        out.append(self._snapshot(ResponseInProgress))
        for calls in self.hosted:
            out += calls.opening(self._next)
            self._waiting.extend([calls] * calls.ready)
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
    ) -> list[StreamEvent]:
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
            return not self._vocabulary.is_marker(token)
        return 0 <= token < FIRST_SPECIAL_ID

    def _count_finished(self, parser: TokenParser) -> None:
        message = parser.messages[-1]
        self._done_messages = len(parser.messages)
        if item_kind(message) == "reasoning":
            self._reasoning_tokens += self._in_message
        self._in_message = 0

    def _translate(self, events: Iterable[object]) -> list[StreamEvent]:
        out: list[StreamEvent] = []
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

    def _start(self, header: Header) -> list[StreamEvent]:
        out = self._close("incomplete") if self._open is not None else []
        for calls in self.hosted:
            name = calls.claims(header)
            if name is None:
                continue
            refusal = self._rules.name_refusal(name) if self._rules is not None else ""
            self._violation = self._violation or refusal
            if refusal:  # a call the request does not allow: nothing of it is shown
                return out
            writer, events = calls.open(header, self._next)
            self._open = _Open(writer.index, "hosted", writer.item_id, hosted=writer, hosted_calls=calls)
            return out + events
        kind = item_kind(header, self._tools)
        if kind is None:
            return out
        index = len(self.state.output)
        item = new_item(kind, header, self._tools)
        self.state.output.append(item)
        self._open = _Open(index, kind, item.id)
        if kind == "custom_tool_call" and self._custom_input == "argument":
            self._open.reader = InputArgument()
        if isinstance(item, ClientCall):
            client = ClientCallWriter(item, index, held=self._refuses(item) or self._hold_calls)
            self._open.client = client
            return out + client.opened(self._next)
        if self._refuses(item) or (self._hold_calls and isinstance(item, FunctionCall | CustomToolCall)):
            self._open.held = True  # shown once complete and checked, if at all
            return out
        out.append(OutputItemAdded(self._next(), index, item))
        if kind == "message":
            if self._citations is not None:
                self._open.cited = CitationStream(self._citations)
            out.append(ContentPartAdded(self._next(), item.id, index, 0, OutputText(text="", logprobs=())))
        elif kind == "reasoning":
            out.append(ContentPartAdded(self._next(), item.id, index, 0, ReasoningText(text="")))
        return out

    def _broken_answer(self) -> str:
        """Why the response's answer is not ``text.format``'s JSON (``""``: it is)."""
        if self._rules is None:
            return ""
        answers = [
            "".join(part.text for part in item.content if isinstance(part, OutputText))
            for item in self.state.output
            if isinstance(item, AssistantMessage) and item.phase != "commentary"
        ]
        refusals = [self._rules.answer_refusal(text) for text in answers]
        return next((refusal for refusal in refusals if refusal), "")

    def _refuses(self, item: OutputItem) -> bool:
        """Whether ``item`` is a call of a tool the rules do not let the model call."""
        if self._rules is None or not isinstance(item, FunctionCall | CustomToolCall | ClientCall):
            return False
        return bool(self._rules.name_refusal(item_call_name(item)))

    def _delta(self, text: str, scores: Sequence[TokenLogprob] = ()) -> list[StreamEvent]:
        current = self._open
        if current is None or not text:
            return []
        if current.cited is not None:
            return self._cited_delta(current, current.cited.feed(text), scores)
        current.parts.append(text)
        kind = current.kind
        if current.hosted is not None:
            return current.hosted.delta(text, self._next)
        if current.client is not None:
            return current.client.delta(text, self._next)
        if kind == "message":
            logprobs = self._logprobs(scores) if scores else ()
            if logprobs:
                current.logprobs += logprobs
            return [OutputTextDelta(self._next(), current.item_id, current.index, 0, text, logprobs)]
        if kind == "function_call":
            if current.held:
                return []
            return [FunctionCallArgumentsDelta(self._next(), current.item_id, current.index, text)]
        if kind == "custom_tool_call":
            if current.reader is not None:
                text = current.reader.feed(text)
            if not text or current.held:
                return []
            return [CustomToolCallInputDelta(self._next(), current.item_id, current.index, text)]
        return [ReasoningDelta(self._next(), current.item_id, current.index, 0, text)]

    def _cited_delta(
        self, current: _Open, cited: CitedText, scores: Sequence[TokenLogprob] = ()
    ) -> list[StreamEvent]:
        """The events of a message's text with its citations resolved: the text, then an
        ``annotation.added`` per citation in it (its offsets count from the message's start)."""
        logprobs = self._logprobs(scores) if scores else ()
        current.logprobs += logprobs
        if not cited.text:
            return []
        current.parts.append(cited.text)
        out: list[StreamEvent] = [
            OutputTextDelta(self._next(), current.item_id, current.index, 0, cited.text, logprobs)
        ]
        for citation in cited.annotations:
            annotation = citation.to_json()
            place = len(current.annotations)
            current.annotations.append(annotation)
            out.append(
                OutputTextAnnotationAdded(self._next(), current.item_id, current.index, 0, place, annotation)
            )
        return out

    def _close(self, status: ItemStatus) -> list[StreamEvent]:
        current = self._open
        if current is None:
            return []
        out: list[StreamEvent] = []
        if current.cited is not None:  # a citation held back comes out as written
            out += self._cited_delta(current, current.cited.finish())
        self._open = None
        text = "".join(current.parts)
        if current.client is not None:
            return self._close_client(current.client, text, status)
        if current.hosted is not None and current.hosted_calls is not None:
            self._calls += status == "completed"
            if status == "completed":
                self._waiting.append(current.hosted_calls)
            return current.hosted_calls.close(current.hosted, text, status == "completed", self._next)
        index, item_id = current.index, current.item_id
        item = self.state.output[index]
        if isinstance(item, FunctionCall | CustomToolCall):
            return self._close_call(current, item, text, status)
        elif isinstance(item, AssistantMessage):
            logprobs = tuple(current.logprobs)
            part = OutputText(text=text, annotations=tuple(current.annotations), logprobs=logprobs)
            out.append(OutputTextDone(self._next(), item_id, index, 0, text, logprobs))
            out.append(ContentPartDone(self._next(), item_id, index, 0, part))
            item = item.model_copy(update={"content": (part,), "status": status})
        else:
            thought = ReasoningText(text=text)
            out.append(ReasoningDone(self._next(), item_id, index, 0, text))
            out.append(ContentPartDone(self._next(), item_id, index, 0, thought))
            sealed = self._sealer.seal(REASONING_KIND, {"text": text}) if self._sealer is not None else None
            item = item.model_copy(
                update={"content": (thought,), "status": status, "encrypted_content": sealed}
            )
        self.state.output[index] = item
        if current.kind == "reasoning" and self._summaries and text.strip():
            self._due = current  # output_item.done once its summary is written
            return out
        out.append(OutputItemDone(self._next(), index, item))
        return out

    def _close_call(
        self, current: _Open, item: FunctionCall | CustomToolCall, text: str, status: ItemStatus
    ) -> list[StreamEvent]:
        """The end of a call: checked against the rules, then its last events (a held call:
        all of them, its text in one delta). A refused call that was held is dropped from
        the output; one already streamed ends ``incomplete``."""
        index, item_id = current.index, current.item_id
        payload, streamed = text, "" if current.held else text
        if isinstance(item, CustomToolCall) and current.reader is not None:
            streamed = "" if current.held else "".join(current.reader.text)
            payload = current.reader.close()
        refusal = self._refusal(item_call_name(item), payload, complete=status == "completed")
        if refusal:
            self._violation = self._violation or refusal
            if current.held:
                del self.state.output[index]  # the call being written is the last item
                return []
            status = "incomplete"
        tail = payload[len(streamed) :] if payload.startswith(streamed) else ""
        out: list[StreamEvent] = []
        if current.held:
            out.append(OutputItemAdded(self._next(), index, item))
        if isinstance(item, FunctionCall):
            item = item.model_copy(update={"arguments": payload, "status": status})
            if tail:
                out.append(FunctionCallArgumentsDelta(self._next(), item_id, index, tail))
            out.append(FunctionCallArgumentsDone(self._next(), item_id, index, item.name, payload))
        else:
            item = item.model_copy(update={"input": payload, "status": status})
            if tail:
                out.append(CustomToolCallInputDelta(self._next(), item_id, index, tail))
            out.append(CustomToolCallInputDone(self._next(), item_id, index, payload))
        if not refusal:
            self._calls += 1
        self.state.output[index] = item
        out.append(OutputItemDone(self._next(), index, item))
        return out

    def _close_client(self, client: ClientCallWriter, text: str, status: ItemStatus) -> list[StreamEvent]:
        """The end of a call of a tool the client runs: checked against the rules, then
        its last events (see :class:`~.client_calls.ClientCallWriter`); a dropped call
        leaves the output."""
        refusal = self._refusal(client.name, text, complete=status == "completed")
        item, out, problem = client.close(text, status, self._next, refused=bool(refusal))
        refusal = refusal or problem
        self._violation = self._violation or refusal
        if item is None:
            del self.state.output[client.index]  # the call being written is the last item
            return out
        if not refusal and item.status == "completed":
            self._calls += 1
        self.state.output[client.index] = item
        return out

    def _refusal(self, name: str, payload: str, *, complete: bool) -> str:
        """Why a call breaks the rules (a call cut short: only its name is judged)."""
        if self._rules is None:
            return ""
        if complete:
            return self._rules.refusal(name, payload)
        return self._rules.name_refusal(name)

    # --- hosted calls ----------------------------------------------------------------

    def hosted_running(self) -> list[StreamEvent]:
        """The first hosted call written and not yet running starts (calls start, and
        finish, in the order the model wrote them; see :mod:`.hosted_calls`)."""
        if not self._waiting:
            return []
        calls = self._waiting.popleft()
        self._started.append(calls)
        return calls.running(self._next)

    def hosted_finished(self, result: ToolResult) -> list[StreamEvent]:
        """The first hosted call running gave ``result``: its last events."""
        if not self._started:
            return []
        return self._started.popleft().finished(result, self._next)

    def _close_parser(self) -> list[StreamEvent]:
        """The events of the end of the ids: what the parser held (once per turn)."""
        if self._turn_closed:
            return []
        self._turn_closed = True
        events: list[object] = list(self._parser.close())
        if len(self._parser.messages) != self._done_messages:
            self._count_finished(self._parser)
        if self._top is not None:
            events, closing = [], events
            self._pair(closing, events)
        return self._translate(events)

    def end_turn(self) -> list[StreamEvent]:
        """The model's turn ended at an end-of-turn token and its calls are about to run:
        the message it left open (a chat template's last call, which only the end of the
        output closes) ends, complete."""
        return self._close_parser() + self._close("completed")

    def next_step(self, parser: TokenParser | None = None) -> None:
        """The model writes again after the tools' replies: the ids fed next begin a new
        assistant turn, read by ``parser`` (default: Harmony's, after
        ``<|start|>assistant``), under the rules of the steps after the first (a forced
        call is forced once)."""
        if self._rules is not None:
            self._rules = self._rules.after_first_step(self.state.request)
        self._parser = parser or StreamParser(
            Role.ASSISTANT,
            strict=False,
            check_constraints=False,
            allow_truncated=True,
            encoding=self._encoding,
        )
        self._done_messages = 0
        self._in_message = 0
        self._turn_closed = False

    # --- reasoning summaries ----------------------------------------------------------

    @property
    def summary_due(self) -> str | None:
        """The text of the reasoning item that waits for its summary (nothing else is
        translated meanwhile), or ``None``."""
        return "".join(self._due.parts) if self._due is not None else None

    def summary_delta(self, text: str) -> list[StreamEvent]:
        """The events of the next piece of the due summary (the part's ``added`` first)."""
        current = self._due
        if current is None or not text:
            return []
        out: list[StreamEvent] = []
        if self._summary is None:
            self._summary = []
            empty = SummaryText(text="")
            out.append(ReasoningSummaryPartAdded(self._next(), current.item_id, current.index, 0, empty))
        self._summary.append(text)
        out.append(ReasoningSummaryTextDelta(self._next(), current.item_id, current.index, 0, text))
        return out

    def summary_done(self) -> list[StreamEvent]:
        """End the due summary: its ``done`` events, the reasoning item's
        ``output_item.done``, then the events held back meanwhile."""
        current = self._due
        if current is None:
            return []
        self._due = None
        out: list[StreamEvent] = []
        index, item_id = current.index, current.item_id
        item = self.state.output[index]
        if self._summary is not None:
            text = "".join(self._summary).strip()
            part = SummaryText(text=text)
            out.append(ReasoningSummaryTextDone(self._next(), item_id, index, 0, text))
            out.append(ReasoningSummaryPartDone(self._next(), item_id, index, 0, part))
            item = item.model_copy(update={"summary": (part,)})
            self.state.output[index] = item
        self._summary = None
        out.append(OutputItemDone(self._next(), index, item))
        held, self._held = self._held, []
        return out + self._translate(held)

    # --- the end ----------------------------------------------------------------------

    def finish(self, reason: str, *, error: ErrorPayload | None = None) -> list[StreamEvent]:
        """Close the stream: ``reason`` is ``stop`` (a stop token), ``length``
        (``max_output_tokens``), ``cancelled`` or ``error`` (with its ``error``). Gives the
        last events, ending in ``response.completed`` / ``.incomplete`` / ``.failed``;
        cancellation ends in ``response.incomplete`` with the status ``cancelled`` in the
        snapshot.
        """
        if self.finished:
            return []
        self.finished = True
        self._summaries = False  # no summary is waited for any more
        early = self.summary_done() if self._due is not None else []
        out = early + self._close_parser()
        out += self._close("completed" if reason == "stop" else "incomplete")
        for calls in self.hosted:  # a hosted call the loop did not run
            out += calls.abandoned(self._next)
        code, broken = "invalid_tool_call", self._violation
        if not broken and reason == "stop" and self._rules is not None:
            broken = self._rules.unmet(self._calls)
            if not broken:
                code, broken = "invalid_output", self._broken_answer()
        if broken and reason in ("stop", "length"):
            reason, error = "error", ErrorPayload(type="model_error", code=code, message=broken)
        state = self.state
        state.usage = self.usage()
        if reason == "stop":
            state.finish("completed")
            out.append(self._snapshot(ResponseCompleted))
        elif reason in ("length", "cancelled"):
            if reason == "length":
                state.finish("incomplete", reason="max_output_tokens")
            else:
                state.finish("cancelled")
            out.append(self._snapshot(ResponseIncomplete))
        else:
            payload = error or _FAILURE
            out.append(ErrorEvent(self._next(), payload))
            state.finish(
                "failed", error=ResponseError(code=payload.code or "server_error", message=payload.message)
            )
            out.append(self._snapshot(ResponseFailed))
        return out

    # --- log probabilities ------------------------------------------------------------

    def _logprobs(self, scores: Iterable[TokenLogprob]) -> tuple[LogProb, ...]:
        """``LogProb`` s for ``scores``, each with ``top_logprobs`` alternatives."""
        if self._vocabulary is not None:
            return wire_logprobs(self._vocabulary.token_bytes, scores, self._top or 0)
        if self._encoding is None:
            self._encoding = load_encoding()
        return wire_logprobs(table_bytes(self._encoding.token_bytes), scores, self._top or 0)


__all__ = ["EventBuilder"]
