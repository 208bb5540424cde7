"""The responses service: what the routes call, over one engine and an optional store.

A response runs on this server (:class:`~.runner.ResponseRunner`, its events in a
:class:`~.runs.Run`), is kept in step with the store (:class:`~.records.ResponseRecords`),
and may be asked for on another server sharing that store
(:class:`~.coordination.Coordinator`). :class:`ResponseService` puts them together: it
answers for a response from the run this server holds while there is one, else from
the store, and cancels or deletes it wherever it runs.

A foreground response whose caller goes away is cancelled; a background one runs on
until it ends or ``cancel`` is called. Everything it answers with is typed (responses,
items, events); the routes spell it in the dialect of the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from ..engines.base import Engine
from ..responses.crypto import Sealer
from ..responses.dialect import Dialect, HarmonyDialect
from ..responses.errors import ConflictError
from ..responses.request import ResponseRequest
from ..responses.resource import TERMINAL
from ..responses.wire import InputItem, ResponseResource, load_resource
from ..tools.python import KernelPool, Sandbox
from .admission import Admission
from .conversations import ConversationService
from .coordination import Coordinator
from .envelopes import EnvelopeLog, RecordingEngine
from .hosted import HostedTools, backend_of
from .metrics import Metrics
from .notices import Notices
from .records import ResponseRecords
from .runner import ResponseRunner
from .runs import Run, RunRegistry
from .settings import PythonSettings, ServiceSettings
from .store.base import ItemPage, Store
from .wire import ServedEvent


def _kernel_pool(settings: PythonSettings | None) -> KernelPool | None:
    """The kernels of the hosted ``python`` tool (``None`` where it is off); raises
    :class:`~..tools.python.SandboxUnavailableError` when bubblewrap cannot confine them."""
    if settings is None:
        return None
    sandbox = Sandbox(unsafe=settings.unsafe)
    return KernelPool(sandbox, max_kernels=settings.max_kernels, idle_timeout=settings.idle_seconds)


def _with_tool_texts(settings: ServiceSettings) -> ServiceSettings:
    """``settings`` whose system messages state the python tool's own time limit and what
    the browser searches."""
    prompt = settings.prompt
    if settings.python is not None:
        prompt = dataclasses.replace(prompt, python_timeout=settings.python.timeout)
    if settings.browser is not None:
        source = backend_of(settings.browser).source
        prompt = dataclasses.replace(prompt, browser_source=source)
    return dataclasses.replace(settings, prompt=prompt)


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
        envelopes: EnvelopeLog | None = None,
    ) -> None:
        self.engine = engine
        self.envelopes = envelopes
        """The token ids of the responses run here, where they are recorded (the playground's envelope)."""
        self.admission = admission or Admission()
        self.dialect: Dialect = dialect or HarmonyDialect()
        self.store = store
        self.sealer = sealer
        self.settings = _with_tool_texts(settings or ServiceSettings())
        self.metrics = metrics or Metrics()
        self.metrics.queued.set_function(lambda: self.admission.queued)
        self.runs = RunRegistry(self.settings.background_linger_seconds)
        notices = Notices(store, self.settings.poll_seconds)
        self.records = ResponseRecords(store, notices, self.settings)
        self.conversations = ConversationService(store, self.settings)
        self.coordinator = Coordinator(store, self.runs, notices, self.settings)
        self.kernels = _kernel_pool(self.settings.python)
        self.hosted = HostedTools(self.settings, self.dialect, kernels=self.kernels)
        self.runner = ResponseRunner(
            engine if envelopes is None else RecordingEngine(engine, envelopes),
            hosted=self.hosted,
            dialect=self.dialect,
            sealer=sealer,
            settings=self.settings,
            metrics=self.metrics,
            admission=self.admission,
            records=self.records,
            runs=self.runs,
            conversations=self.conversations,
        )

    @property
    def model_id(self) -> str:
        """The id of the model served."""
        return self.engine.info.id

    def check_model(self, model: str | None) -> str:
        """The served model's id if ``model`` names it (or is absent); else 404 ``model_not_found``."""
        return self.runner.check_model(model)

    # --- creating ---------------------------------------------------------------------

    async def items(
        self,
        request: ResponseRequest,
        owner: str,
        local_history: Mapping[str, list[InputItem]] | None = None,
    ) -> tuple[list[InputItem], list[InputItem]]:
        """The previous response's history and the new input with references resolved.

        Raises :class:`NotFoundError` for an unknown previous response or item.
        """
        return await self.records.items(request, owner, local_history)

    async def start(
        self,
        request: ResponseRequest,
        owner: str,
        *,
        local_history: Mapping[str, list[InputItem]] | None = None,
    ) -> Run:
        """Check, admit and start a response (see :meth:`ResponseRunner.start`); its run."""
        return await self.runner.start(request, owner, local_history=local_history)

    def prompt_length(self, request: ResponseRequest, items: Sequence[InputItem]) -> int:
        """How many tokens the prompt of ``request`` over ``items`` is (no context window
        applies; CPU work: call it from a worker thread)."""
        return self.runner.prompt_length(request, items)

    async def wait(self, run: Run) -> ResponseResource:
        """The final snapshot of ``run``."""
        return await run.final()

    # --- reading ----------------------------------------------------------------------

    async def retrieve(self, response_id: str, owner: str) -> ResponseResource:
        """The response snapshot; 404 when it is not ``owner``'s."""
        run = self.runs.live(response_id, owner)
        snapshot = run.snapshot if run is not None else None
        if snapshot is not None:
            return snapshot
        return await self.records.snapshot(response_id, owner)

    async def replay(
        self, response_id: str, owner: str, starting_after: int | None
    ) -> AsyncIterator[ServedEvent]:
        """The events of a response, live if it is running, from the store if not."""
        run = self.runs.live(response_id, owner)
        if run is not None:
            return run.follow(starting_after)
        return await self.records.replay(response_id, owner, starting_after)

    async def input_items(
        self, response_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ItemPage:
        """A page of a stored response's input items; 404 when it is not ``owner``'s."""
        return await self.records.input_items(response_id, owner, after=after, limit=limit, order=order)

    # --- ending -----------------------------------------------------------------------

    async def delete(self, response_id: str, owner: str) -> dict[str, Any]:
        """Delete a stored response (cancelling it if it runs); the deletion object."""
        run = self.runs.get(response_id)
        mine = run is not None and run.owner == owner
        if mine and run is not None and run.task is not None and not run.done:
            run.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run.task
        await self.records.delete(response_id, owner)
        if mine:
            self.runs.discard(response_id)
        return {"id": response_id, "object": "response", "deleted": True}

    async def cancel(self, response_id: str, owner: str) -> ResponseResource:
        """Cancel a running response (on whichever server runs it); the snapshot after.
        409 when it already ended."""
        run = self.runs.get(response_id)
        if run is None or run.owner != owner or run.done:
            snapshot = await self.retrieve(response_id, owner)
            if snapshot.status in TERMINAL:
                status = snapshot.status
                raise ConflictError(
                    f"Response {response_id!r} has already ended ({status}) and cannot be cancelled.",
                    param="response_id",
                    code="response_not_cancellable",
                )
            ended = await self.coordinator.cancel_elsewhere(response_id, owner)
            if ended is not None:
                return load_resource(ended)
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

    # --- upkeep -----------------------------------------------------------------------

    async def maintain_once(self, now: int | None = None) -> None:
        """One round of store upkeep (see :meth:`Coordinator.maintain_once`)."""
        await self.coordinator.maintain_once(now)

    def start_maintenance(self) -> None:
        """Until :meth:`aclose`: keep the store's upkeep and hear from the other servers
        on it (see :meth:`Coordinator.start`)."""
        self.coordinator.start()

    async def aclose(self) -> None:
        """Cancel what still runs, wait for it to end, stop the upkeep."""
        await self.runs.aclose()
        self.coordinator.stop()
        if self.kernels is not None:
            await self.kernels.close()
