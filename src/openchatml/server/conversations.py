"""Conversations: what ``/v1/conversations`` and the ``conversation`` of a response do.

:class:`ConversationService` answers the conversation routes over the store, for one
owner at a time (another key's conversation is a 404, as an unknown one is). Items given
to a conversation are read as a response's input is (every one with an ``id`` and a
``status``; an ``item_reference`` replaced by the item it names) and stored in the Open
Responses spelling.

A response with ``conversation`` holds it from its start to its end (:meth:`claim`;
another response asking meanwhile is refused with ``conversation_locked``, as OpenAI's
API does). Its prompt is built from the conversation's items (see
:meth:`~.records.ResponseRecords.items`). When it ends ``completed`` or ``incomplete``,
its input items then its output items are appended to the conversation and the hold let
go in one write, before its last event is sent (:meth:`finish`): a client that saw the
end sees them in the conversation. A ``failed`` or ``cancelled`` response adds nothing.
Whether the response itself is stored (``store``) does not matter: the conversation is
kept either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, TypeVar

from ..responses import ids
from ..responses.errors import APIError, NotFoundError, RequestError
from ..responses.request import ResponseRequest
from ..responses.resource import ResponseState
from ..responses.wire import InputItem, Item
from ..responses.wire.conversations import (
    AddItemsBody,
    ConversationDeleted,
    ConversationItemList,
    ConversationResource,
    CreateConversationBody,
    UpdateConversationBody,
)
from ..responses.wire.event_base import StreamEvent
from ..responses.wire.events import ErrorEvent, ResponseFailed
from ..responses.wire.resource import ErrorPayload, ResponseError
from .records import conversation_not_found, resolve_references
from .settings import ServiceSettings
from .store.base import FoundItem, HistoryTooLong, Store, StoredConversation

log = logging.getLogger("openchatml.server")

T = TypeVar("T")

ADDED_STATUSES: Final = frozenset({"completed", "incomplete"})
"""The final statuses of a response whose items are added to its conversation."""
LOCKED_MESSAGE: Final = (
    "Another process is currently operating on this conversation. Please retry in a few seconds."
)


@dataclass(slots=True)
class ConversationTurn:
    """A response's hold on its conversation: the conversation, the owner, the hold's
    token, the response's input items (set once they are read), and whether the hold
    has ended."""

    conversation_id: str
    owner: str
    token: str
    input: list[InputItem] = field(default_factory=list)
    ended: bool = False


def _resource(conversation: StoredConversation) -> ConversationResource:
    return ConversationResource(
        id=conversation.id, created_at=conversation.created_at, metadata=conversation.metadata
    )


def item_not_found(item_id: str) -> APIError:
    """The 404 for an item the conversation does not hold."""
    return NotFoundError(f"Item with id {item_id!r} not found.", param="item_id", code="item_not_found")


async def _settled(write: asyncio.Future[T]) -> T:
    """The result of ``write``, waited for through cancellation of the caller (a cancel
    then is dropped: what it would stop has already ended)."""
    while not write.done():
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and not write.done():
                task.uncancel()
    return write.result()


class ConversationService:
    """The conversations of ``store`` (``None``: none can exist)."""

    def __init__(self, store: Store | None, settings: ServiceSettings) -> None:
        self.store = store
        self.settings = settings
        self.live: set[str] = set()
        """The tokens of the holds this server's responses have."""

    # --- the routes --------------------------------------------------------------------

    def _store(self, conversation_id: str) -> Store:
        if self.store is None:
            raise conversation_not_found(conversation_id)
        return self.store

    async def _items(self, items: Sequence[InputItem], owner: str) -> list[dict[str, object]]:
        """The JSON to store of items given in ``items`` (references resolved)."""
        resolved = await resolve_references(self.store, items, owner, root="items")
        return [item.to_json() for item in resolved]

    async def create(self, body: CreateConversationBody, owner: str) -> ConversationResource:
        """A new conversation of ``owner``'s with ``body``'s items and metadata."""
        if self.store is None:
            raise RequestError(
                "Conversations need a store; this server runs without one.", code="store_disabled"
            )
        items = await self._items(body.items or (), owner)
        self._check_bound(0, len(items))
        conversation = StoredConversation(
            ids.conversation_id(), owner, int(time.time()), dict(body.metadata or {})
        )
        await self.store.conversations.create(conversation, items)
        return _resource(conversation)

    def _check_bound(self, held: int, new: int) -> None:
        """Refuse (400 ``conversation_too_long``, ``param`` ``items``) ``new`` items for a
        conversation holding ``held`` when together they are more than
        ``max_conversation_items``."""
        limit = self.settings.limits.max_conversation_items
        if held + new > limit:
            raise RequestError(
                f"The conversation holds {held} items; with {new} more it would hold more than "
                f"{limit}, the most this server accepts.",
                param="items",
                code="conversation_too_long",
            )

    async def retrieve(self, conversation_id: str, owner: str) -> ConversationResource:
        """The conversation; 404 when it is not ``owner``'s."""
        found = await self._store(conversation_id).conversations.get(conversation_id, owner)
        if found is None:
            raise conversation_not_found(conversation_id)
        return _resource(found)

    async def update(
        self, conversation_id: str, owner: str, body: UpdateConversationBody
    ) -> ConversationResource:
        """The conversation with ``body``'s metadata in place of its own."""
        store = self._store(conversation_id)
        found = await store.conversations.update(conversation_id, owner, dict(body.metadata or {}))
        if found is None:
            raise conversation_not_found(conversation_id)
        return _resource(found)

    async def delete(self, conversation_id: str, owner: str) -> ConversationDeleted:
        """Delete the conversation and its items; the deletion object."""
        if not await self._store(conversation_id).conversations.delete(conversation_id, owner):
            raise conversation_not_found(conversation_id)
        return ConversationDeleted(id=conversation_id)

    async def add_items(self, conversation_id: str, owner: str, body: AddItemsBody) -> ConversationItemList:
        """Append ``body``'s items; the list of them as stored. 400 ``conversation_too_long``
        when the conversation would hold more than ``max_conversation_items``."""
        store = self._store(conversation_id)
        items = await self._items(body.items, owner)
        limit = self.settings.limits.max_conversation_items
        try:
            added = await store.conversations.add_items(conversation_id, owner, items, max_items=limit)
        except HistoryTooLong as exc:
            self._check_bound(exc.count, len(items))
            raise
        if not added:
            raise conversation_not_found(conversation_id)
        return ConversationItemList.of(items)

    async def list_items(
        self, conversation_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ConversationItemList:
        """A page of the conversation's items."""
        store = self._store(conversation_id)
        page = await store.conversations.list_items(
            conversation_id, owner, after=after, limit=limit, order=order
        )
        if page is None:
            raise conversation_not_found(conversation_id)
        return ConversationItemList.of(page.data, page.has_more)

    async def item(self, conversation_id: str, owner: str, item_id: str) -> Item:
        """One item of the conversation; 404 when either is not found."""
        found = await self._store(conversation_id).conversations.get_item(conversation_id, owner, item_id)
        return self._found(conversation_id, item_id, found)[0]

    async def delete_item(self, conversation_id: str, owner: str, item_id: str) -> ConversationResource:
        """Delete one item of the conversation; the conversation after."""
        store = self._store(conversation_id)
        found = await store.conversations.delete_item(conversation_id, owner, item_id)
        return self._found(conversation_id, item_id, found)[1]

    @staticmethod
    def _found(
        conversation_id: str, item_id: str, found: FoundItem | None
    ) -> tuple[Item, ConversationResource]:
        if found is None:
            raise conversation_not_found(conversation_id)
        if found.item is None:
            raise item_not_found(item_id)
        return ConversationItemList.of([found.item]).data[0], _resource(found.conversation)

    # --- the responses that continue a conversation ------------------------------------

    async def claim(self, request: ResponseRequest, owner: str) -> ConversationTurn | None:
        """Hold the request's conversation for the new response (``None`` without one);
        404 ``conversation_not_found``, or 400 ``conversation_locked`` while another
        response holds it."""
        conversation_id = request.conversation
        if conversation_id is None:
            return None
        if self.store is None:
            raise conversation_not_found(conversation_id, "conversation")
        turn = ConversationTurn(conversation_id, owner, uuid.uuid4().hex)
        self.live.add(turn.token)
        try:
            claim = await self.store.conversations.claim(
                conversation_id, owner, turn.token, frozenset(self.live)
            )
        except BaseException:
            self.live.discard(turn.token)
            raise
        if claim == "claimed":
            return turn
        self.live.discard(turn.token)
        if claim == "missing":
            raise conversation_not_found(conversation_id, "conversation")
        raise RequestError(LOCKED_MESSAGE, param="conversation", code="conversation_locked")

    async def finish(
        self, turn: ConversationTurn, state: ResponseState, last: StreamEvent
    ) -> list[StreamEvent]:
        """End ``turn`` as its response ends (``last``: its last event, not yet sent): its
        input and output items appended when it ended ``completed`` or ``incomplete``, the
        hold let go. The events to send in place of ``last``: ``last``; or, when the
        items could not be written, an ``error`` and ``response.failed`` (the response
        then failed, and its conversation is as it was)."""
        items = [*turn.input, *state.output] if state.status in ADDED_STATUSES else []
        try:
            await _settled(asyncio.ensure_future(self._end(turn, [item.to_json() for item in items])))
        except Exception as exc:
            log.exception("conversation %s: response %s not added", turn.conversation_id, state.id)
            if not items:
                return [last]
            message = f"The response could not be added to its conversation ({exc})."
            state.finish("failed", error=ResponseError(code="server_error", message=message))
            sequence = last.sequence_number
            return [
                ErrorEvent(sequence, ErrorPayload(message=message)),
                ResponseFailed(sequence + 1, state.resource()),
            ]
        return [last]

    async def release(self, turn: ConversationTurn | None) -> None:
        """Let go of ``turn``'s hold, adding nothing (a no-op once it ended); never raises."""
        if turn is None or turn.ended:
            return
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await _settled(asyncio.ensure_future(self._end(turn, [])))

    async def _end(self, turn: ConversationTurn, items: list[dict[str, object]]) -> None:
        if turn.ended:
            return
        turn.ended = True
        try:
            assert self.store is not None
            held = await self.store.conversations.end_turn(turn.conversation_id, turn.token, items)
        finally:
            self.live.discard(turn.token)
        if not held and items:
            log.warning(
                "conversation %s: deleted or taken over while a response ran; its items were not added",
                turn.conversation_id,
            )
