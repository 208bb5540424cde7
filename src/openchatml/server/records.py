"""The store kept in step with the responses: what a new one continues, what a running
one writes, and stored ones read back.

With ``store`` a response, its input items and its output are written when it starts
(:meth:`ResponseRecords.create`), as items finish (background), and when it ends
(:meth:`ResponseRecords.save`); the events of a stored background response are written
as they come (:meth:`ResponseRecords.publish`, gathered for ``publish_seconds``), so that
another server on the store streams them from any cursor while the response runs and
after (:meth:`ResponseRecords.replay`). Without a store nothing is written and nothing
stored is found.

What a new response continues is the ``previous_response_id`` chain's items, or its
``conversation``'s (:meth:`ResponseRecords.items`, counted in the store before any is
loaded); what it adds to the conversation is :mod:`.conversations`' to write.

The store holds JSON in the Open Responses spelling: snapshots, items and events are
written with ``to_json()`` and read back typed (:func:`~..responses.wire.load_resource`,
:func:`~..responses.wire.load_item`), stored events as :class:`~.wire.StoredEvent`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final

from pydantic import ValidationError

from ..responses.errors import APIError, NotFoundError, RequestError
from ..responses.replay import replay
from ..responses.request import ResponseRequest
from ..responses.resource import TERMINAL, ResponseState
from ..responses.wire import InputItem, ResponseResource, load_item, load_resource
from ..responses.wire.items import ItemReference
from ..responses.wire.validation import request_error
from .notices import Notices
from .runs import Run
from .settings import ServiceSettings
from .store.base import HistoryTooLong, ItemPage, Store, StoredResponse
from .wire import ServedEvent, StoredEvent

log = logging.getLogger("openchatml.server")

FINAL_EVENT_OF: Final = {
    "completed": "response.completed",
    "failed": "response.failed",
    "incomplete": "response.incomplete",
    "cancelled": "response.incomplete",
}
"""The last event of a stream, by the response's final status."""
FINAL_EVENTS: Final = frozenset(FINAL_EVENT_OF.values())


def response_not_found(response_id: str) -> APIError:
    """The 404 for a response that is not the caller's (or not at all)."""
    return NotFoundError(f"Response with id {response_id!r} not found.", param="response_id")


def stored_item(data: Mapping[str, Any], param: str) -> InputItem:
    """The item whose stored JSON is ``data``; a :class:`RequestError` naming ``param``
    when it is not one."""
    try:
        return load_item(data)
    except ValidationError as exc:
        raise request_error(exc, param) from None


async def resolve_references(
    store: Store | None, items: Sequence[InputItem], owner: str, root: str = "input"
) -> list[InputItem]:
    """``items`` with each ``item_reference`` replaced by the item of ``owner``'s it names
    (from a stored response, or a conversation). Raises :class:`NotFoundError`
    (``item_not_found``, ``param`` ``ROOT[i].id``) for one not found."""
    wanted = [i.id for i in items if isinstance(i, ItemReference)]
    if not wanted:
        return list(items)
    found = await store.find_items(wanted, owner) if store is not None else {}
    out: list[InputItem] = []
    for index, item in enumerate(items):
        if not isinstance(item, ItemReference):
            out.append(item)
            continue
        target = found.get(item.id)
        if target is None:
            raise NotFoundError(
                f"Item with id {item.id!r} not found.",
                param=f"{root}[{index}].id",
                code="item_not_found",
            )
        out.append(stored_item(target, f"{root}[{index}]"))
    return out


def conversation_not_found(conversation_id: str, param: str = "conversation_id") -> APIError:
    """The 404 for a conversation that is not the caller's (or not at all)."""
    return NotFoundError(
        f"Conversation with id {conversation_id!r} not found.", param=param, code="conversation_not_found"
    )


class ResponseRecords:
    """The stored side of responses over ``store`` (``None``: no store)."""

    def __init__(self, store: Store | None, notices: Notices, settings: ServiceSettings) -> None:
        self.store = store
        self.notices = notices
        self.settings = settings

    # --- what a new response continues ----------------------------------------------

    async def items(
        self,
        request: ResponseRequest,
        owner: str,
        local_history: Mapping[str, list[InputItem]] | None = None,
    ) -> tuple[list[InputItem], list[InputItem]]:
        """The history (the previous response's, from ``local_history`` when it holds it;
        or the conversation's) and the new input with references resolved (the request's
        own items as they are).

        Raises :class:`NotFoundError` for an unknown previous response, conversation or
        item, :class:`RequestError` (``conversation_too_long``) past the bound.
        """
        history = await self._history(request, owner, local_history)
        return history, await resolve_references(self.store, request.items, owner)

    async def _history(
        self, request: ResponseRequest, owner: str, local: Mapping[str, list[InputItem]] | None
    ) -> list[InputItem]:
        if request.conversation is not None:
            return await self._conversation(request.conversation, owner, len(request.items))
        previous = request.previous_response_id
        if previous is None:
            return []
        limits = self.settings.limits
        room = max(0, limits.max_conversation_items - len(request.items))
        if local is not None and previous in local:
            limits.check_conversation(len(local[previous]), len(request.items))
            return list(local[previous])
        try:
            history = (
                await self.store.history(previous, owner, max_items=room) if self.store is not None else None
            )
        except HistoryTooLong as exc:
            limits.check_conversation(exc.count, len(request.items))
            raise
        if history is None:
            raise NotFoundError(
                f"Previous response with id {previous!r} not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        return [stored_item(item, "previous_response_id") for item in history]

    async def _conversation(self, conversation_id: str, owner: str, new: int) -> list[InputItem]:
        """The items of ``owner``'s conversation, counted in the store before any is loaded:
        with the ``new`` input items at most ``max_conversation_items``."""
        limit = self.settings.limits.max_conversation_items
        try:
            history = (
                await self.store.conversations.history(conversation_id, owner, max_items=max(0, limit - new))
                if self.store is not None
                else None
            )
        except HistoryTooLong as exc:
            raise RequestError(
                f"The conversation has {exc.count + new} items ({exc.count} from 'conversation'); this "
                f"server accepts at most {limit}. Start a new conversation or compact this one.",
                param="conversation",
                code="conversation_too_long",
            ) from None
        if history is None:
            raise conversation_not_found(conversation_id, "conversation")
        return [stored_item(item, "conversation") for item in history]

    # --- what a running response writes ---------------------------------------------

    def create(
        self, state: ResponseState, owner: str, new_input: Sequence[InputItem]
    ) -> asyncio.Future[None]:
        """Start the first write of a response (its snapshot as it starts, its input items,
        its expiry); the write under way. Needs a store."""
        assert self.store is not None
        ttl = self.settings.ttl_seconds
        expires = int(time.time()) + ttl if ttl else None
        items = [item.to_json() for item in new_input]
        record = StoredResponse(state.id, owner, state.to_json(), items, expires)
        return asyncio.ensure_future(self.store.create(record))

    async def save(self, state: ResponseState) -> None:
        """Write the response's snapshot as it stands."""
        assert self.store is not None
        await self.store.update(state.to_json())

    async def save_after(self, created: asyncio.Future[None], state: ResponseState) -> None:
        """:meth:`save`, once the first write (``created``) has landed."""
        await created
        await self.save(state)

    async def publish(self, run: Run, created: asyncio.Future[None]) -> None:
        """Write ``run``'s events to the store as they come, a batch at most every
        ``publish_seconds``, until the run ends; a failed write is tried again. Nothing
        when the first write (``created``) failed."""
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
                    await store.append_events(run.response_id, [e.to_json() for e in run.events[sent:count]])
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

    # --- stored responses read back -------------------------------------------------

    async def snapshot(self, response_id: str, owner: str) -> ResponseResource:
        """The stored response; 404 when it is not ``owner``'s."""
        record = await self.store.get(response_id, owner) if self.store is not None else None
        if record is None:
            raise response_not_found(response_id)
        return load_resource(record.response)

    async def replay(
        self, response_id: str, owner: str, starting_after: int | None
    ) -> AsyncIterator[ServedEvent]:
        """The events of a stored response numbered above ``starting_after``: as stored
        while it streamed (on whichever server, following them while it runs), else
        rebuilt from its snapshot. 404 when it is not ``owner``'s."""
        record = await self.store.get(response_id, owner) if self.store is not None else None
        if record is None:
            raise response_not_found(response_id)
        after = -1 if starting_after is None else starting_after
        if self.store is not None and record.response.get("background"):
            stored = await self.store.events_after(response_id, owner, -1, limit=1)
            if stored or record.status not in TERMINAL:  # as it streamed, on whichever server
                return self._follow(response_id, owner, after)
        events = replay(load_resource(record.response), starting_after=starting_after)

        async def rebuilt() -> AsyncIterator[ServedEvent]:
            for event in events:
                yield event

        return rebuilt()

    async def _follow(self, response_id: str, owner: str, after: int) -> AsyncIterator[ServedEvent]:
        """The stored events of a response another server runs (or ran), numbered above
        ``after``, as they are written, up to its last event. When the store holds the
        end of the response but not its last event (its server died, or could not write
        them), a last event is made from the stored snapshot."""
        store = self.store
        assert store is not None
        last = after
        with self.notices.watching(response_id) as wake:
            while True:
                wake.clear()  # before reading: a notice from now on is not lost
                events = await store.events_after(response_id, owner, last)
                for event in events:
                    yield StoredEvent(event)
                    last = int(event["sequence_number"])
                    if event["type"] in FINAL_EVENTS:
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
                    if stored is not None and stored["type"] in FINAL_EVENTS:
                        return  # the cursor is at or past the stored end
                    kind = FINAL_EVENT_OF.get(record.status, "response.incomplete")
                    end = max(last, -1 if stored is None else int(stored["sequence_number"])) + 1
                    yield StoredEvent({"type": kind, "sequence_number": end, "response": record.response})
                    return
                await self.notices.wait(wake)

    async def input_items(
        self, response_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ItemPage:
        """A page of the stored response's input items; 404 when it is not ``owner``'s."""
        page = (
            await self.store.input_items(response_id, owner, after=after, limit=limit, order=order)
            if self.store is not None
            else None
        )
        if page is None:
            raise response_not_found(response_id)
        return page

    async def delete(self, response_id: str, owner: str) -> None:
        """Delete the stored response; 404 when there is nothing of ``owner``'s to delete."""
        deleted = await self.store.delete(response_id, owner) if self.store is not None else False
        if not deleted:
            raise response_not_found(response_id)
