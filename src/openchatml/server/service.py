"""The responses service: requests in, runs of the engine out, the store kept in step.

Every response runs as an asyncio task writing its events into a :class:`Run`; callers
follow the run (an SSE stream, a WebSocket, a JSON answer waiting for the end, a
``GET ?stream=true`` from a cursor). A foreground response whose caller goes away is
cancelled; a background one runs on until it ends or ``cancel`` is called. With
``store`` the response, its input items and its output are written to the store when
it starts, as items finish (background), and when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..engines.base import Engine
from ..responses import ids
from ..responses.crypto import Sealer
from ..responses.dialect import Dialect, HarmonyDialect
from ..responses.errors import APIError, ConflictError, NotFoundError, RequestError
from ..responses.input import PromptSettings, build_conversation
from ..responses.replay import replay_events
from ..responses.request import ResponseRequest
from ..responses.resource import TERMINAL, ResponseState
from ..responses.runner import Prepared, run_events
from ..responses.stream import ResponseStream
from .metrics import Metrics
from .store.base import Store, StoredResponse

log = logging.getLogger("openchatml.server")


def owner_of(api_key: str | None) -> str:
    """The owner a key's responses are stored under ("" when the server has no keys)."""
    return hashlib.sha256(api_key.encode()).hexdigest()[:32] if api_key else ""


@dataclass(frozen=True, slots=True)
class ServiceSettings:
    """What the service needs beyond its engine and store."""

    model_aliases: tuple[str, ...] = ()
    prompt: PromptSettings = field(default_factory=PromptSettings)
    ttl_seconds: int | None = 30 * 24 * 3600
    background_linger_seconds: float = 60.0
    maintenance_seconds: float = 10.0
    """How often the store hears this server is alive, and fails what dead ones left and
    evicts what expired (keep it well under the store's lease)."""


class Run:
    """The events of one running response; any number of followers read them."""

    def __init__(self, response_id: str, owner: str, background: bool) -> None:
        self.response_id = response_id
        self.owner = owner
        self.background = background
        self.events: list[dict[str, Any]] = []
        self.done = False
        self.task: asyncio.Task[None] | None = None
        self.stream: ResponseStream | None = None
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
            self._wake.clear()
            if index < len(self.events) or self.done:
                continue
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
    ) -> None:
        self.engine = engine
        self.dialect: Dialect = dialect or HarmonyDialect()
        self.store = store
        self.sealer = sealer
        self.settings = settings or ServiceSettings()
        self.metrics = metrics or Metrics()
        self.runs: dict[str, Run] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

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
        if local is not None and previous in local:
            return list(local[previous])
        history = await self.store.history(previous, owner) if self.store is not None else None
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
        """Check and start a response; returns its :class:`Run` (events begin arriving).

        Raises :class:`APIError` for a bad request (nothing is stored then).
        """
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
        )
        run = Run(state.id, owner, request.background)
        run.stream = stream
        created: asyncio.Future[None] | None = None
        if request.store and self.store is not None:
            expires = int(time.time()) + self.settings.ttl_seconds if self.settings.ttl_seconds else None
            record = StoredResponse(state.id, owner, state.to_json(), new_input, expires)
            created = asyncio.ensure_future(self.store.create(record))
        # the engine starts while the store writes: no prefill waits on the database
        self.metrics.started()
        run.task = asyncio.create_task(
            self._drive(run, stream, prepared, created), name=f"response {state.id}"
        )
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
        return self.dialect.prepare(request, conversation, context_length=self.engine.info.context_length)

    async def _drive(
        self, run: Run, stream: ResponseStream, prepared: Prepared, created: asyncio.Future[None] | None
    ) -> None:
        """Run the engine into ``run``'s events; with ``created`` (the store's first write,
        still under way) every later write waits for it, and is skipped if it failed."""
        started = time.perf_counter()
        first_token: float | None = None
        try:
            async for event in run_events(self.engine, prepared, stream):
                kind = event["type"]
                if first_token is None and kind.endswith(".delta"):
                    first_token = time.perf_counter() - started
                run.append(event)
                if created is not None and run.background and kind == "response.output_item.done":
                    await created
                    await self._save(stream)
        except asyncio.CancelledError:
            for event in stream.finish("cancelled"):
                run.append(event)
        except Exception as exc:  # the engine or the store failed: the response fails, the server stays up
            log.exception("response %s failed", run.response_id)
            payload = {"type": "server_error", "code": "server_error", "message": str(exc), "param": None}
            for event in stream.finish("error", error=payload):
                run.append(event)
        finally:
            run.close()
            state = stream.state
            self.metrics.finished(state.status, stream.usage(), first_token, time.perf_counter() - started)
            if created is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._save_after(created, stream))
            self._forget_later(run)

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

    async def retrieve(self, response_id: str, owner: str) -> dict[str, Any]:
        """The response snapshot; 404 when it is not ``owner``'s."""
        run = self.runs.get(response_id)
        if run is not None and run.owner == owner and run.snapshot is not None:
            return run.snapshot
        record = await self.store.get(response_id, owner) if self.store is not None else None
        if record is None:
            raise _not_found(response_id)
        return record.response

    async def replay(
        self, response_id: str, owner: str, starting_after: int | None
    ) -> AsyncIterator[dict[str, Any]]:
        """The events of a response, live if it is running, rebuilt from the store if not."""
        run = self.runs.get(response_id)
        if run is not None and run.owner == owner:
            return run.follow(starting_after)
        snapshot = await self.retrieve(response_id, owner)

        async def rebuilt() -> AsyncIterator[dict[str, Any]]:
            for event in replay_events(snapshot, starting_after=starting_after):
                yield event

        return rebuilt()

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
            raise ConflictError(
                f"Response {response_id!r} is not running on this server.", code="response_not_cancellable"
            )
        if run.task is not None and not run.done:
            run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run.task
        final = run.snapshot
        assert final is not None
        return final

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
        """Run :meth:`maintain_once` every ``maintenance_seconds`` until :meth:`aclose`."""
        if self.store is None:
            return

        async def loop() -> None:
            while True:
                await asyncio.sleep(self.settings.maintenance_seconds)
                try:
                    await self.maintain_once()
                except Exception:  # a database hiccup: try again next round
                    log.exception("store upkeep failed")

        task = asyncio.get_running_loop().create_task(loop())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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


def _not_found(response_id: str) -> APIError:
    return NotFoundError(f"Response with id {response_id!r} not found.", param="response_id")
