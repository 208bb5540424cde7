"""The responses service: requests in, runs of the engine out, the store kept in step.

Every response runs as an asyncio task writing its events into a :class:`Run`; callers
follow the run (an SSE stream, a WebSocket, a JSON answer waiting for the end, a
``GET ?stream=true`` from a cursor). A foreground response whose caller goes away is
cancelled; a background one runs on until it ends or ``cancel`` is called. With
``store`` the response, its input items and its output are written to the store when
it starts, as items finish (background), and when it ends.

Several servers on one store: the events of a stored background response are written
to the store as they come (gathered for ``publish_seconds``), so another server streams
them from any cursor while the response runs and after; ``cancel`` (or ``delete``) of a
response another server runs is asked through the store, and that server cancels it.
Servers learn of these at once where the store sends notices (PostgreSQL), else by
polling every ``poll_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..engines.base import Engine
from ..responses import ids
from ..responses.crypto import Sealer
from ..responses.dialect import Dialect, HarmonyDialect
from ..responses.errors import APIError, ConflictError, NotFoundError, RequestError
from ..responses.input import PromptSettings, build_conversation
from ..responses.limits import RequestLimits
from ..responses.replay import replay_events
from ..responses.request import ResponseRequest
from ..responses.resource import TERMINAL, ResponseState
from ..responses.runner import Prepared, run_events
from ..responses.stream import ResponseStream
from ..responses.summary import summary_deltas
from .admission import Admission, Ticket
from .metrics import Metrics
from .store.base import HistoryTooLong, Store, StoredResponse

log = logging.getLogger("openchatml.server")


def owner_of(api_key: str | None) -> str:
    """The owner a key's responses are stored under ("" when the server has no keys)."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:32] if api_key else ""


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """What the service needs beyond its engine and store."""

    model_aliases: tuple[str, ...] = ()
    prompt: PromptSettings = field(default_factory=PromptSettings)
    limits: RequestLimits = field(default_factory=RequestLimits)
    """The bounds on one request (conversation length and input tokens are checked here)."""
    ttl_seconds: int | None = 30 * 24 * 3600
    background_linger_seconds: float = 60.0
    maintenance_seconds: float = 10.0
    """How often the store hears this server is alive, and fails what dead ones left and
    evicts what expired (keep it well under the store's lease)."""
    publish_seconds: float = 0.05
    """How long the events of a stored background response gather before they are written."""
    poll_seconds: float = 0.25
    """How often, without store notices, a server looks for events and cancel requests of
    other servers (with notices: every ``4 * poll_seconds``, in case one was lost)."""
    cancel_wait_seconds: float = 10.0
    """How long ``cancel`` waits for another server to end the response it runs."""


class Run:
    """The events of one running response; any number of followers read them."""

    def __init__(self, response_id: str, owner: str, background: bool, *, stored: bool = False) -> None:
        self.response_id = response_id
        self.owner = owner
        self.background = background
        self.stored = stored
        self.events: list[dict[str, Any]] = []
        self.done = False
        self.task: asyncio.Task[None] | None = None
        self.publisher: asyncio.Task[None] | None = None
        self.stream: ResponseStream | None = None
        self.ticket: Ticket | None = None
        self._wake = asyncio.Event()

    def append(self, event: dict[str, Any]) -> None:
        """Add an event and wake the followers."""
        self.events.append(event)
        self._wake.set()

    def close(self) -> None:
        """No more events."""
        self.done = True
        self._wake.set()

    async def follow(self, starting_after: int | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every event with a sequence number above ``starting_after``, as they come."""
        index = 0 if starting_after is None else starting_after + 1
        while True:
            while index < len(self.events):
                yield self.events[index]
                index += 1
            if self.done:
                return
            await self.wait_beyond(index)

    async def wait_beyond(self, count: int) -> None:
        """Return once there are more than ``count`` events, or no more will come."""
        while len(self.events) <= count and not self.done:
            self._wake.clear()
            if len(self.events) > count or self.done:
                return
            await self._wake.wait()

    @property
    def snapshot(self) -> dict[str, Any] | None:
        """The response as it stands."""
        return self.stream.state.to_json() if self.stream is not None else None


class ResponseService:
    """Creates, runs, stores, retrieves and cancels responses over one engine."""

    def __init__(
        self,
        engine: Engine,
        store: Store | None,
        *,
        sealer: Sealer | None = None,
        settings: ServiceSettings | None = None,
        metrics: Metrics | None = None,
        dialect: Dialect | None = None,
        admission: Admission | None = None,
    ) -> None:
        self.engine = engine
        self.admission = admission or Admission()
        self.dialect: Dialect = dialect or HarmonyDialect()
        self.store = store
        self.sealer = sealer
        self.settings = settings or ServiceSettings()
        self.metrics = metrics or Metrics()
        self.metrics.queued.set_function(lambda: self.admission.queued)
        self.runs: dict[str, Run] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._waiters: dict[str, set[asyncio.Event]] = {}

    @property
    def model_id(self) -> str:
        """The id of the model served."""
        return self.engine.info.id

    def check_model(self, model: str | None) -> str:
        """The served model's id if ``model`` names it (or is absent); else 404 ``model_not_found``."""
        served = self.model_id
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

    # --- creating ---------------------------------------------------------------------

    async def _history(
        self, request: ResponseRequest, owner: str, local: Mapping[str, list[dict[str, Any]]] | None
    ) -> list[dict[str, Any]]:
        previous = request.previous_response_id
        if previous is None:
            return []
        limits = self.settings.limits
        room = max(0, limits.max_conversation_items - len(request.input))
        if local is not None and previous in local:
            limits.check_conversation(len(local[previous]), len(request.input))
            return list(local[previous])
        try:
            history = (
                await self.store.history(previous, owner, max_items=room) if self.store is not None else None
            )
        except HistoryTooLong as exc:
            limits.check_conversation(exc.count, len(request.input))
            raise
        if history is None:
            raise NotFoundError(
                f"Previous response with id {previous!r} not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        return history

    async def _resolve_references(self, items: Sequence[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
        wanted = [i["id"] for i in items if i["type"] == "item_reference"]
        if not wanted:
            return list(items)
        found = await self.store.find_items(wanted, owner) if self.store is not None else {}
        out = []
        for index, item in enumerate(items):
            if item["type"] != "item_reference":
                out.append(item)
                continue
            target = found.get(item["id"])
            if target is None:
                raise NotFoundError(
                    f"Item with id {item['id']!r} not found.",
                    param=f"input[{index}].id",
                    code="item_not_found",
                )
            out.append(target)
        return out

    async def items(
        self,
        request: ResponseRequest,
        owner: str,
        local_history: Mapping[str, list[dict[str, Any]]] | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The previous response's history and the new input with references resolved.

        Raises :class:`NotFoundError` for an unknown previous response or item.
        """
        history = await self._history(request, owner, local_history)
        return history, await self._resolve_references(request.input, owner)

    async def start(
        self,
        request: ResponseRequest,
        owner: str,
        *,
        local_history: Mapping[str, list[dict[str, Any]]] | None = None,
    ) -> Run:
        """Check, admit and start a response; returns its :class:`Run` (events begin
        arriving once the engine takes it: it waits its turn, FIFO, behind the responses
        :attr:`admission` lets run).

        Raises :class:`APIError` for a bad request (nothing is stored then), a 429 when
        ``owner`` holds as many responses as one key may, a 503 when the queue is full.
        """
        self.check_model(request.model)  # a wrong model is a 404 however busy the server
        ticket = self.admission.reserve(owner or None)
        try:
            return await self._start(request, owner, ticket, local_history)
        except BaseException:
            ticket.release()
            raise

    async def _start(
        self,
        request: ResponseRequest,
        owner: str,
        ticket: Ticket,
        local_history: Mapping[str, list[dict[str, Any]]] | None,
    ) -> Run:
        """:meth:`start` with the response's place reserved (``ticket``), which its run
        gives back when it ends."""
        model = self.check_model(request.model)
        history, new_input = await self.items(request, owner, local_history)
        items = history + new_input
        prepared = await asyncio.to_thread(self._prepare, request, items)
        state = ResponseState(
            ids.response_id(),
            request,
            model,
            status="queued" if request.background else "in_progress",
            default_effort=self.settings.prompt.reasoning_effort.value,
        )
        stream = ResponseStream(
            state,
            prompt_tokens=len(prepared.prompt),
            sealer=self.sealer,
            parser=self.dialect.parser(request, prepared),
            vocabulary=self.dialect.vocabulary,
            summaries=request.reasoning_summary is not None,
        )
        stored = request.store and self.store is not None
        run = Run(state.id, owner, request.background, stored=stored)
        run.stream = stream
        run.ticket = ticket
        created: asyncio.Future[None] | None = None
        if stored:
            assert self.store is not None
            expires = int(time.time()) + self.settings.ttl_seconds if self.settings.ttl_seconds else None
            record = StoredResponse(state.id, owner, state.to_json(), new_input, expires)
            created = asyncio.ensure_future(self.store.create(record))
        # the engine starts while the store writes: no prefill waits on the database
        run.task = asyncio.create_task(
            self._drive(run, stream, prepared, created), name=f"response {state.id}"
        )
        run.task.add_done_callback(lambda _: ticket.release())  # even if it never ran
        if created is not None and request.background:
            run.publisher = asyncio.create_task(self._publish(run, created), name=f"events of {state.id}")
        if created is not None:
            try:
                await asyncio.shield(created)
            except BaseException:  # not stored (or the caller left): nothing runs on
                run.task.cancel()
                with contextlib.suppress(BaseException):
                    await run.task
                raise
        self.runs[state.id] = run
        return run

    def _prepare(self, request: ResponseRequest, items: list[dict[str, Any]]) -> Prepared:
        """The prompt and sampling settings of ``request`` over ``items`` (one worker-thread
        hop for both steps: under many concurrent requests, each hop costs more than the
        work of a usual prompt)."""
        conversation = build_conversation(request, items, settings=self.settings.prompt, sealer=self.sealer)
        return self.dialect.prepare(
            request,
            conversation,
            context_length=self.engine.info.context_length,
            max_input_tokens=self.settings.limits.max_input_tokens,
        )

    def prompt_length(self, request: ResponseRequest, items: list[dict[str, Any]]) -> int:
        """How many tokens the prompt of ``request`` over ``items`` is (no context window
        applies; CPU work: call it from a worker thread)."""
        conversation = build_conversation(request, items, settings=self.settings.prompt, sealer=self.sealer)
        return len(self.dialect.prepare(request, conversation, context_length=None).prompt)

    async def _drive(
        self, run: Run, stream: ResponseStream, prepared: Prepared, created: asyncio.Future[None] | None
    ) -> None:
        """Run the engine into ``run``'s events once its ticket holds a running slot (given
        back when the engine is done, whatever the end); with ``created`` (the store's first
        write, still under way) every later write waits for it, and is skipped if it failed."""
        started = time.perf_counter()
        first_token: float | None = None
        running = False
        try:
            if run.ticket is not None:
                await run.ticket.acquire()
            self.metrics.started()
            running = True
            summarize = self._summarizer(stream.state.request.reasoning_summary)
            async for event in run_events(self.engine, prepared, stream, summarize=summarize):
                kind = event["type"]
                if first_token is None and kind.endswith(".delta"):
                    first_token = time.perf_counter() - started
                run.append(event)
                if created is not None and run.background and kind == "response.output_item.done":
                    await created
                    await self._save(stream)
        except asyncio.CancelledError:
            if not run.events:  # cancelled while queued: the stream still opens as every stream does
                for event in stream.begin():
                    run.append(event)
            for event in stream.finish("cancelled"):
                run.append(event)
        except Exception as exc:  # the engine or the store failed: the response fails, the server stays up
            log.exception("response %s failed", run.response_id)
            payload = {"type": "server_error", "code": "server_error", "message": str(exc), "param": None}
            for event in stream.finish("error", error=payload):
                run.append(event)
        finally:
            if run.ticket is not None:
                run.ticket.release()
            run.close()
            state = stream.state
            self.metrics.finished(
                state.status, stream.usage(), first_token, time.perf_counter() - started, running=running
            )
            if run.publisher is not None:  # every event stored before the final snapshot
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(run.publisher)
            if created is not None:  # the run has ended: a late cancel leaves the save to finish
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.shield(self._save_after(created, stream))
            self._forget_later(run)

    def _summarizer(self, summary: str | None) -> Callable[[str], AsyncGenerator[str, None]] | None:
        """What writes a reasoning summary (``reasoning.summary``), if one is asked for."""
        if summary is None:
            return None

        def summarize(reasoning: str) -> AsyncGenerator[str, None]:
            return summary_deltas(
                self.engine, self.dialect, reasoning, summary, settings=self.settings.prompt
            )

        return summarize

    async def _publish(self, run: Run, created: asyncio.Future[None]) -> None:
        """Write ``run``'s events to the store as they come, a batch at most every
        ``publish_seconds``, until the run ends; a failed write is tried again."""
        store = self.store
        assert store is not None
        try:
            await created
        except BaseException:  # not stored: nothing to publish
            return
        sent = 0
        failed = False
        while True:
            count = len(run.events)
            if sent < count:
                try:
                    await store.append_events(run.response_id, run.events[sent:count])
                    sent = count
                except Exception as exc:
                    if not failed:
                        log.warning("response %s: events not stored (%s); trying again", run.response_id, exc)
                    failed = True
                    if run.done:
                        return
                if not run.done:
                    await asyncio.sleep(self.settings.publish_seconds)
                continue
            if run.done:
                return
            await run.wait_beyond(sent)

    async def _save(self, stream: ResponseStream) -> None:
        assert self.store is not None
        await self.store.update(stream.state.to_json())

    async def _save_after(self, created: asyncio.Future[None], stream: ResponseStream) -> None:
        await created
        await self._save(stream)

    def _forget_later(self, run: Run) -> None:
        linger = self.settings.background_linger_seconds if run.background else 0.0

        async def forget() -> None:
            await asyncio.sleep(linger)
            if self.runs.get(run.response_id) is run:
                del self.runs[run.response_id]

        if linger <= 0:
            self.runs.pop(run.response_id, None)
            return
        task = asyncio.get_running_loop().create_task(forget())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- reading ----------------------------------------------------------------------

    def _live(self, response_id: str, owner: str) -> Run | None:
        """``owner``'s run of the response, if this server holds it and is the one to ask:
        once a stored run has ended and saved, the store is (another server may delete it)."""
        run = self.runs.get(response_id)
        if run is None or run.owner != owner:
            return None
        if run.stored and run.task is not None and run.task.done():
            return None
        return run

    async def retrieve(self, response_id: str, owner: str) -> dict[str, Any]:
        """The response snapshot; 404 when it is not ``owner``'s."""
        run = self._live(response_id, owner)
        if run is not None and run.snapshot is not None:
            return run.snapshot
        record = await self.store.get(response_id, owner) if self.store is not None else None
        if record is None:
            raise _not_found(response_id)
        return record.response

    async def replay(
        self, response_id: str, owner: str, starting_after: int | None
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of a response, live if it is running, rebuilt from the store if not."""
        run = self._live(response_id, owner)
        if run is not None:
            return run.follow(starting_after)
        record = await self.store.get(response_id, owner) if self.store is not None else None
        if record is None:
            raise _not_found(response_id)
        after = -1 if starting_after is None else starting_after
        if self.store is not None and record.response.get("background"):
            stored = await self.store.events_after(response_id, owner, -1, limit=1)
            if stored or record.status not in TERMINAL:  # as it streamed, on whichever server
                return self._follow_stored(response_id, owner, after)
        snapshot = record.response

        async def rebuilt() -> AsyncIterator[dict[str, Any]]:
            for event in replay_events(snapshot, starting_after=starting_after):
                yield event

        return rebuilt()

    async def _follow_stored(self, response_id: str, owner: str, after: int) -> AsyncIterator[dict[str, Any]]:
        """The stored events of a response another server runs (or ran), numbered above
        ``after``, as they are written, up to its last event. When the store holds the
        end of the response but not its last event (its server died, or could not write
        them), a last event is made from the stored snapshot."""
        store = self.store
        assert store is not None
        last = after
        with self._watching(response_id) as wake:
            while True:
                wake.clear()  # before reading: a notice from now on is not lost
                events = await store.events_after(response_id, owner, last)
                for event in events:
                    yield event
                    last = int(event["sequence_number"])
                    if event["type"] in _FINAL_EVENTS:
                        return
                if events:
                    continue
                record = await store.get(response_id, owner)
                if record is None:  # deleted meanwhile
                    return
                if record.status in TERMINAL:
                    if await store.events_after(response_id, owner, last, limit=1):
                        continue
                    stored = await store.last_event(response_id, owner)
                    if stored is not None and stored["type"] in _FINAL_EVENTS:
                        return  # the cursor is at or past the stored end
                    kind = _FINAL_EVENT_OF.get(record.status, "response.incomplete")
                    end = max(last, -1 if stored is None else int(stored["sequence_number"])) + 1
                    yield {"type": kind, "sequence_number": end, "response": record.response}
                    return
                await self._wait(wake)

    def _poll_seconds(self) -> float:
        """How long to wait for a notice before looking again."""
        listening = self.store is not None and self.store.listening
        return self.settings.poll_seconds * (4 if listening else 1)

    @contextlib.contextmanager
    def _watching(self, response_id: str) -> Iterator[asyncio.Event]:
        """An event set by each notice that ``response_id`` changed in the store."""
        wake = asyncio.Event()
        self._waiters.setdefault(response_id, set()).add(wake)
        try:
            yield wake
        finally:
            waiting = self._waiters.get(response_id)
            if waiting is not None:
                waiting.discard(wake)
                if not waiting:
                    del self._waiters[response_id]

    async def _wait(self, wake: asyncio.Event) -> None:
        """Wait for ``wake``, or the poll interval."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), self._poll_seconds())

    def _on_notice(self, kind: str, response_id: str) -> None:
        """A notice from the store: wake who waits on the response; stop a run of ours
        that another server was asked to cancel, or deleted."""
        if kind == "*":
            for waiting in self._waiters.values():
                for wake in waiting:
                    wake.set()
            self._spawn(self._check_stops())
            return
        if kind in ("c", "d"):
            self._stop_run(response_id, deleted=kind == "d")
        for wake in self._waiters.get(response_id, ()):
            wake.set()

    def _stop_run(self, response_id: str, *, deleted: bool) -> None:
        run = self.runs.get(response_id)
        if run is None or not run.stored:
            return
        if deleted:  # gone from the store: gone here too
            del self.runs[response_id]
        if run.task is not None and not run.done:
            log.info("response %s: %s on another server", response_id, "deleted" if deleted else "cancelled")
            run.task.cancel()

    async def _check_stops(self) -> None:
        """Stop the stored runs of ours that another server asked to cancel, or deleted."""
        if self.store is None:
            return
        running = [rid for rid, run in self.runs.items() if run.stored and not run.done]
        if not running:
            return
        try:
            stop = await self.store.stop_requests(running)
        except Exception as exc:  # a database hiccup: the next look will do
            log.warning("store: cannot read stop requests (%s)", exc)
            return
        for response_id, why in stop.items():
            self._stop_run(response_id, deleted=why == "delete")

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def delete(self, response_id: str, owner: str) -> dict[str, Any]:
        """Delete a stored response (cancelling it if it runs); the deletion object."""
        run = self.runs.get(response_id)
        if run is not None and run.owner == owner and run.task is not None and not run.done:
            run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run.task
        deleted = await self.store.delete(response_id, owner) if self.store is not None else False
        if not deleted:
            raise _not_found(response_id)
        if run is not None and run.owner == owner:
            self.runs.pop(response_id, None)
        return {"id": response_id, "object": "response", "deleted": True}

    async def cancel(self, response_id: str, owner: str) -> dict[str, Any]:
        """Cancel a running response; the snapshot after. 409 when it already ended."""
        run = self.runs.get(response_id)
        if run is None or run.owner != owner or run.done:
            snapshot = await self.retrieve(response_id, owner)
            if snapshot.get("status") in TERMINAL:
                status = snapshot["status"]
                raise ConflictError(
                    f"Response {response_id!r} has already ended ({status}) and cannot be cancelled.",
                    param="response_id",
                    code="response_not_cancellable",
                )
            if self.store is not None and await self.store.request_cancel(response_id, owner):
                return await self._ended(response_id, owner)
            raise ConflictError(
                f"Response {response_id!r} is not running and cannot be cancelled.",
                param="response_id",
                code="response_not_cancellable",
            )
        if run.task is not None and not run.done:
            run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run.task
        final = run.snapshot
        assert final is not None
        return final

    async def _ended(self, response_id: str, owner: str) -> dict[str, Any]:
        """The stored snapshot once the server running the response has ended it (or as
        it stands after ``cancel_wait_seconds``)."""
        assert self.store is not None
        deadline = time.monotonic() + self.settings.cancel_wait_seconds
        with self._watching(response_id) as wake:
            while True:
                wake.clear()
                record = await self.store.get(response_id, owner)
                if record is None:
                    raise _not_found(response_id)
                if record.status in TERMINAL or time.monotonic() >= deadline:
                    return record.response
                await self._wait(wake)

    async def wait(self, run: Run) -> dict[str, Any]:
        """The final snapshot of ``run``."""
        if run.task is not None:
            await asyncio.shield(run.task)
        snapshot = run.snapshot
        assert snapshot is not None
        return snapshot

    async def maintain_once(self, now: int | None = None) -> None:
        """One round of store upkeep: heartbeat, fail what dead runners left, evict what
        expired."""
        if self.store is None:
            return
        at = int(time.time()) if now is None else now
        await self.store.heartbeat(at)
        interrupted = await self.store.interrupt_unfinished(at)
        evicted = await self.store.evict(at)
        if interrupted or evicted:
            log.info(
                "store: %d response(s) of stopped servers marked failed, %d expired", interrupted, evicted
            )

    def start_maintenance(self) -> None:
        """Until :meth:`aclose`: run :meth:`maintain_once` every ``maintenance_seconds``,
        and hear from other servers on the store (notices, or polls for cancel requests)."""
        if self.store is None:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(self.settings.maintenance_seconds)
                try:
                    await self.maintain_once()
                except Exception:  # a database hiccup: try again next round
                    log.exception("store upkeep failed")

        async def watch() -> None:
            assert self.store is not None
            await self.store.listen(self._on_notice)
            while True:
                await asyncio.sleep(self._poll_seconds())
                await self._check_stops()

        self._spawn(loop())
        self._spawn(watch())

    async def aclose(self) -> None:
        """Cancel what still runs."""
        for run in list(self.runs.values()):
            if run.task is not None and not run.done:
                run.task.cancel()
        for run in list(self.runs.values()):
            if run.task is not None:
                with contextlib.suppress(BaseException):
                    await run.task
        for task in list(self._tasks):
            task.cancel()


_FINAL_EVENT_OF: Final = {
    "completed": "response.completed",
    "failed": "response.failed",
    "incomplete": "response.incomplete",
    "cancelled": "response.incomplete",
}
"""The last event of a stream, by the response's final status."""
_FINAL_EVENTS: Final = frozenset(_FINAL_EVENT_OF.values())


def _not_found(response_id: str) -> APIError:
    return NotFoundError(f"Response with id {response_id!r} not found.", param="response_id")
