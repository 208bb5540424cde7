"""Running responses on the engine: a checked request in, a :class:`~.runs.Run` out.

:meth:`ResponseRunner.start` admits a response (it waits its turn, FIFO, behind the
responses :class:`~.admission.Admission` lets run), builds its prompt, and starts one
asyncio task that drives the engine's events into the run, where followers read them.
A stored response is written to the store while the engine starts (no prefill waits on
the database); the run ends with its final snapshot saved, however it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Final, ParamSpec, TypeVar

from ..core.messages import Conversation, Message
from ..engines.base import Engine
from ..responses import ids
from ..responses.agent_loop import AgentLoop
from ..responses.call_rules import CallRules, later_steps
from ..responses.crypto import Sealer
from ..responses.dialect import Dialect, TemplateDialect, step_params
from ..responses.errors import RequestError
from ..responses.grammar import check_gbnf_custom_tools
from ..responses.input import build_conversation
from ..responses.request import ResponseRequest
from ..responses.resource import ResponseState
from ..responses.runner import Prepared, run_events, run_loop_events
from ..responses.stream import EventBuilder, TokenParser
from ..responses.summary import summary_deltas
from ..responses.template_loop import TemplateLoop
from ..responses.tool_index import ToolIndex
from ..responses.wire import InputItem
from ..responses.wire.event_base import StreamEvent
from ..responses.wire.events import ResponseCompleted
from ..responses.wire.resource import ErrorPayload
from ..tools.router import CallBudget, ToolRouter
from .admission import Admission, Ticket
from .conversations import ConversationService, ConversationTurn
from .envelopes import record_response
from .hosted import HostedSession, HostedTools
from .mcp_sessions import failed_events
from .metrics import Metrics
from .records import FINAL_EVENTS, ResponseRecords
from .runs import Run, RunRegistry
from .settings import ServiceSettings

log = logging.getLogger("openchatml.server")

P = ParamSpec("P")
T = TypeVar("T")
PROMPT_THREADS: Final = ThreadPoolExecutor(max_workers=4, thread_name_prefix="openchatml-prompt")
"""The threads that render prompts: apart from the default executor, where store calls
wait their turn on the store's lock, so that no prompt waits behind the writes of
responses that are ending."""


async def in_prompt_thread(work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)`` in a :data:`PROMPT_THREADS` thread, in this context."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        PROMPT_THREADS, lambda: context.run(work, *args, **kwargs)
    )


class ResponseRunner:
    """Starts responses on ``engine`` and drives each into its :class:`Run` (held in
    ``runs``); ``records`` keeps the store in step."""

    def __init__(
        self,
        engine: Engine,
        *,
        dialect: Dialect,
        sealer: Sealer | None,
        settings: ServiceSettings,
        metrics: Metrics,
        admission: Admission,
        records: ResponseRecords,
        runs: RunRegistry,
        conversations: ConversationService,
        hosted: HostedTools | None = None,
    ) -> None:
        self.engine = engine
        self.hosted = hosted or HostedTools(settings, dialect, kernels=None)
        self.dialect = dialect
        self.sealer = sealer
        self.settings = settings
        self.metrics = metrics
        self.admission = admission
        self.records = records
        self.runs = runs
        self.conversations = conversations

    def check_model(self, model: str | None) -> str:
        """The served model's id if ``model`` names it (or is absent); else 404 ``model_not_found``."""
        served = self.engine.info.id
        names = {served, served.rsplit("/", 1)[-1], *self.settings.model_aliases}
        if model is None or model in names:
            return served
        error = RequestError(
            f"The model {model!r} does not exist on this server; it serves {served!r}.",
            param="model",
            code="model_not_found",
        )
        error.status = 404
        raise error

    async def start(
        self,
        request: ResponseRequest,
        owner: str,
        *,
        local_history: Mapping[str, list[InputItem]] | None = None,
    ) -> Run:
        """Check, admit and start a response; returns its :class:`Run` (events begin
        arriving once the engine takes it).

        Raises :class:`APIError` for a bad request (nothing is stored then), a 429 when
        ``owner`` holds as many responses as one key may, a 503 when the queue is full,
        a 400 ``conversation_locked`` while another response holds its conversation.
        """
        self.check_model(request.model)  # a wrong model is a 404 however busy the server
        ticket = self.admission.reserve(owner or None)
        turn: ConversationTurn | None = None
        try:
            turn = await self.conversations.claim(request, owner)
            return await self._start(request, owner, ticket, local_history, turn)
        except BaseException:
            ticket.release()
            await self.conversations.release(turn)
            raise

    async def _start(
        self,
        request: ResponseRequest,
        owner: str,
        ticket: Ticket,
        local_history: Mapping[str, list[InputItem]] | None,
        turn: ConversationTurn | None,
    ) -> Run:
        """:meth:`start` with the response's place reserved (``ticket``), which its run
        gives back when it ends, and its conversation held (``turn``) until it ends."""
        model = self.check_model(request.model)
        request = self.hosted.settle(request)
        self.hosted.check(request)
        history, new_input = await self.records.items(request, owner, local_history)
        if turn is not None:
            turn.input = list(new_input)
        conversation = history + new_input
        state = ResponseState(
            ids.response_id(),
            request,
            model,
            status="queued" if request.background else "in_progress",
            default_effort=self.settings.prompt.reasoning_effort.value,
        )
        hosted = await self.hosted.session(state, owner, history, new_input)
        request = state.request  # with the namespaces of its MCP servers' tools, once listed
        try:
            prepared = await in_prompt_thread(self._prepare, request, conversation)
        except BaseException:
            await hosted.close()
            raise
        builder = EventBuilder(
            state,
            hosted=hosted.calls,
            citations=hosted.citations,
            prompt_tokens=len(prepared.prompt),
            sealer=self.sealer,
            parser=self.dialect.parser(request, prepared),
            vocabulary=self.dialect.vocabulary,
            summaries=request.reasoning_summary is not None,
            rules=CallRules.of(request),
            hold_calls=not self.engine.enforces_grammar,
        )
        stored = request.store and self.records.store is not None
        run = Run(state.id, owner, request.background, stored=stored)
        run.builder = builder
        run.items = conversation
        run.ticket = ticket
        created = self.records.create(state, owner, new_input) if stored else None
        # the engine starts while the store writes: no prefill waits on the database
        run.task = asyncio.create_task(
            self._drive(run, builder, prepared, created, turn, hosted), name=f"response {state.id}"
        )
        run.task.add_done_callback(lambda _: ticket.release())  # even if it never ran
        if created is not None and request.background:
            run.publisher = asyncio.create_task(
                self.records.publish(run, created), name=f"events of {state.id}"
            )
        if created is not None:
            try:
                await asyncio.shield(created)
            except BaseException:  # not stored (or the caller left): nothing runs on
                run.task.cancel()
                with contextlib.suppress(BaseException):
                    await run.task
                raise
        self.runs.add(run)
        return run

    def _prepare(
        self, request: ResponseRequest, items: Sequence[InputItem], added: Sequence[Message] = ()
    ) -> Prepared:
        """The prompt and sampling settings of ``request`` over ``items`` (one worker-thread
        hop for both steps: under many concurrent requests, each hop costs more than the
        work of a usual prompt), followed by ``added`` (what an agent loop's turns wrote)."""
        conversation = build_conversation(request, items, settings=self.settings.prompt, sealer=self.sealer)
        if added:
            conversation = Conversation((*conversation.messages, *added), conversation.header)
        default = self.settings.default_max_output_tokens
        if request.max_output_tokens is None and default is not None:
            # the bound samples under; the response still echoes what its request said
            request = replace(request, max_output_tokens=default)
        if self.engine.enforces_grammar and self.engine.info.engine == "llamacpp":
            check_gbnf_custom_tools(request)  # llama-server's grammars are GBNF
        return self.dialect.prepare(
            request,
            conversation,
            context_length=self.engine.info.context_length,
            max_input_tokens=self.settings.limits.max_input_tokens,
        )

    def prompt_length(self, request: ResponseRequest, items: Sequence[InputItem]) -> int:
        """How many tokens the prompt of ``request`` over ``items`` is (no context window
        applies; CPU work: call it from a worker thread)."""
        request = self.hosted.settle(request)
        conversation = build_conversation(request, items, settings=self.settings.prompt, sealer=self.sealer)
        return len(self.dialect.prepare(request, conversation, context_length=None).prompt)

    async def _drive(
        self,
        run: Run,
        builder: EventBuilder,
        prepared: Prepared,
        created: asyncio.Future[None] | None,
        turn: ConversationTurn | None = None,
        hosted: HostedSession | None = None,
    ) -> None:
        """Run the engine into ``run``'s events once its ticket holds a running slot (given
        back when the engine is done, whatever the end); with ``created`` (the store's first
        write, still under way) every later write waits for it, and is skipped if it failed;
        with ``turn``, the conversation gets the response's items before its last event."""
        record_response(run.response_id, run.owner)  # the engine's calls from this task are the response's
        started = time.perf_counter()
        first_token: float | None = None
        running = False
        try:
            generate = builder.state.request.generate
            if run.ticket is not None and generate:  # a warm-up leaves the engine to the others
                await run.ticket.acquire()
            self.metrics.started()
            running = True
            session = hosted or HostedSession()
            events = (
                self._events(builder, prepared, session, run.items) if generate else warm_up_events(builder)
            )
            async for event in events:
                kind = event.type
                if first_token is None and kind.endswith(".delta"):
                    first_token = time.perf_counter() - started
                if turn is not None and kind in FINAL_EVENTS:
                    for ending in await self.conversations.finish(turn, builder.state, event):
                        run.append(ending)
                    continue
                run.append(event)
                if created is not None and run.background and kind == "response.output_item.done":
                    await created
                    await self.records.save(builder.state)
        except asyncio.CancelledError:
            if not run.events:  # cancelled while queued: the stream still opens as every stream does
                for event in builder.begin():
                    run.append(event)
            for event in builder.finish("cancelled"):
                run.append(event)
        except Exception as exc:  # the engine or the store failed: the response fails, the server stays up
            log.exception("response %s failed", run.response_id)
            payload = ErrorPayload(type="server_error", code="server_error", message=str(exc))
            for event in builder.finish("error", error=payload):
                run.append(event)
        finally:
            if turn is not None:  # cancelled or failed: let go of the conversation, adding nothing
                await self.conversations.release(turn)
            if hosted is not None:
                with contextlib.suppress(Exception):
                    await hosted.close()
            await self._end(run, builder, created, started, first_token, running)

    async def _end(
        self,
        run: Run,
        builder: EventBuilder,
        created: asyncio.Future[None] | None,
        started: float,
        first_token: float | None,
        running: bool,
    ) -> None:
        """What follows a run's last event, however it ended: its slot given back, the
        followers told, the metrics counted, its events and final snapshot stored (a late
        cancel leaves these writes to finish), and the run forgotten in time."""
        if run.ticket is not None:
            run.ticket.release()
        run.close()
        state = builder.state
        self.metrics.finished(
            state.status, builder.usage(), first_token, time.perf_counter() - started, running=running
        )
        if run.publisher is not None:  # every event stored before the final snapshot
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(run.publisher)
        if created is not None:  # the run has ended: a late cancel leaves the save to finish
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(self.records.save_after(created, state))
        self.runs.forget_later(run)

    def _events(
        self, builder: EventBuilder, prepared: Prepared, hosted: HostedSession, items: Sequence[InputItem]
    ) -> AsyncIterator[StreamEvent]:
        """The events of the response over ``items``: through the agent loop where the
        request offers a hosted tool (a forced hosted call forced on the first step only),
        else straight from the engine."""
        request = builder.state.request
        if hosted.failure is not None:
            return failed_events(builder, hosted.failure)
        if hosted.empty:
            return run_events(
                self.engine, prepared, builder, summarize=self._summarizer(request.reasoning_summary)
            )
        summarize = self._summarizer(request.reasoning_summary)
        router = hosted.router()
        budget = CallBudget(request.max_tool_calls) if request.max_tool_calls is not None else None
        if isinstance(self.dialect, TemplateDialect):
            template_loop = self._template_loop(request, items, router, budget, hosted.held)
            steps = template_loop.run(prepared, first_calls=hosted.first_calls)
            return run_loop_events(steps, builder, summarize=summarize)
        loop = AgentLoop(self.engine, router, budget=budget, held=hosted.held)
        params_for = step_params(prepared, request)
        steps = loop.run(
            prepared.prompt, prepared.params, params_for=params_for, first_calls=hosted.first_calls
        )
        return run_loop_events(steps, builder, summarize=summarize)

    def _template_loop(
        self,
        request: ResponseRequest,
        items: Sequence[InputItem],
        router: ToolRouter,
        budget: CallBudget | None,
        held: Callable[[str], bool] | None,
    ) -> TemplateLoop:
        """The agent loop of a chat-template model: each later step's prompt rendered again,
        in a worker thread, from ``items`` and the turns so far, under the rules of the
        steps after the first (a forced call is forced once)."""
        dialect = self.dialect
        assert isinstance(dialect, TemplateDialect)
        later = later_steps(request)

        async def render(added: Sequence[Message]) -> Prepared | None:
            try:
                return await in_prompt_thread(self._prepare, later, items, added)
            except RequestError:  # the conversation no longer fits: the loop ends there
                return None

        def parser_for(prepared: Prepared) -> TokenParser:
            parser = dialect.parser(later, prepared)
            assert parser is not None  # a template's parser, always
            return parser

        index = ToolIndex.of(request)
        hosted = (*index.hosted, *sorted(index.served))
        return TemplateLoop(
            self.engine, router, hosted=hosted, render=render, parser_for=parser_for, budget=budget, held=held
        )

    def _summarizer(self, summary: str | None) -> Callable[[str], AsyncGenerator[str, None]] | None:
        """What writes a reasoning summary (``reasoning.summary``), if one is asked for."""
        if summary is None:
            return None

        def summarize(reasoning: str) -> AsyncGenerator[str, None]:
            return summary_deltas(
                self.engine, self.dialect, reasoning, summary, settings=self.settings.prompt
            )

        return summarize


async def warm_up_events(builder: EventBuilder) -> AsyncIterator[StreamEvent]:
    """The events of a response that does not sample (``generate: false``): the stream
    opens and completes with no output, its prompt counted as its input tokens."""
    for event in builder.begin():
        yield event
    builder.finished = True
    state = builder.state
    state.usage = builder.usage()
    state.finish("completed")
    yield ResponseCompleted(builder.sequence_number, state.resource())
