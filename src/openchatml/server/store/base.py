"""The response store: what a server keeps of each stored response.

A :class:`StoredResponse` is the response snapshot, the input items it was given and the
key that owns it; output items live in the snapshot. ``owner`` scopes every read: a
response is visible only to the key that created it. ``history`` walks a
``previous_response_id`` chain oldest first and gives ``input + output`` of each link,
so a new request sees ``previous.input + previous.output + input``.

Several servers may share a store. The events of a background response are stored as
they stream (``append_events``) so that any server can stream them from a cursor
(``events_after``), and a cancel asked of one server reaches the one running the
response (``request_cancel`` → its ``stop_requests``; a deletion stops it too). A
store that can push notices (``listen``) wakes those waiting at once; otherwise they
poll.

Conversations (:class:`ConversationStore`, a store's ``conversations``) live in the same
database: items kept in order under a ``conv_…`` id, copied in from the API and from the
responses that continue them, which hold a conversation one at a time (``claim``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


class HistoryTooLong(Exception):
    """A ``previous_response_id`` chain holds more items than were asked for."""

    def __init__(self, count: int) -> None:
        super().__init__(f"the conversation holds {count} items")
        self.count = count


@dataclass(slots=True)
class StoredResponse:
    """One stored response: snapshot, input items, owner and expiry."""

    id: str
    owner: str
    response: dict[str, Any]
    input_items: list[dict[str, Any]] = field(default_factory=list)
    expires_at: int | None = None

    @property
    def status(self) -> str:
        """The response's status."""
        return str(self.response.get("status", ""))

    @property
    def previous_response_id(self) -> str | None:
        """The response this one continued, if any."""
        value = self.response.get("previous_response_id")
        return str(value) if value else None


@dataclass(frozen=True, slots=True)
class ItemPage:
    """One page of stored items (their JSON), and whether more follow."""

    data: list[dict[str, Any]]
    has_more: bool


@dataclass(frozen=True, slots=True)
class StoredConversation:
    """One stored conversation: its id, owner, creation time and metadata (its items are
    read a page at a time)."""

    id: str
    owner: str
    created_at: int
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class FoundItem:
    """A conversation and, if it holds it, one of its items (its JSON)."""

    conversation: StoredConversation
    item: dict[str, Any] | None


Claim = Literal["claimed", "locked", "missing"]
"""What claiming a conversation for a response came to: it is the response's until it
ends; another response holds it; or there is no such conversation of the owner's."""


class ConversationStore(Protocol):
    """Where conversations live (in the same database as the responses). A conversation
    is ``owner``'s alone: every read and write names the owner. Items keep the order they
    were added in."""

    async def create(self, conversation: StoredConversation, items: Sequence[dict[str, Any]]) -> None:
        """Store a new conversation with its first items."""
        ...

    async def get(self, conversation_id: str, owner: str) -> StoredConversation | None:
        """The conversation, if it exists and is ``owner``'s."""
        ...

    async def update(
        self, conversation_id: str, owner: str, metadata: dict[str, str]
    ) -> StoredConversation | None:
        """Replace the metadata; the conversation after, or ``None``."""
        ...

    async def delete(self, conversation_id: str, owner: str) -> bool:
        """Delete it with its items; ``False`` if there was nothing of ``owner``'s."""
        ...

    async def add_items(
        self, conversation_id: str, owner: str, items: Sequence[dict[str, Any]], *, max_items: int
    ) -> bool:
        """Append ``items``; ``False`` if the conversation is not ``owner``'s. Raises
        :class:`HistoryTooLong` (adding none) when it would hold more than ``max_items``."""
        ...

    async def list_items(
        self, conversation_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ItemPage | None:
        """A page of items after the item ``after`` (``order`` ``asc`` or ``desc``), or ``None``."""
        ...

    async def get_item(self, conversation_id: str, owner: str, item_id: str) -> FoundItem | None:
        """The conversation and its item ``item_id`` (``None`` in it if absent), or ``None``."""
        ...

    async def delete_item(self, conversation_id: str, owner: str, item_id: str) -> FoundItem | None:
        """Delete the item ``item_id``; the conversation and the deleted item, or ``None``."""
        ...

    async def history(
        self, conversation_id: str, owner: str, *, max_items: int | None = None
    ) -> list[dict[str, Any]] | None:
        """Every item, oldest first; ``None`` if the conversation is not ``owner``'s. Raises
        :class:`HistoryTooLong` (before loading any) when there are more than ``max_items``."""
        ...

    async def claim(self, conversation_id: str, owner: str, turn: str, live: frozenset[str]) -> Claim:
        """Hold the conversation for the response ``turn`` (until :meth:`end_turn`). A
        hold of a server gone (closed, or silent past the lease), or of this server but
        not in ``live`` (the turns it still runs), has lapsed."""
        ...

    async def end_turn(self, conversation_id: str, turn: str, items: Sequence[dict[str, Any]]) -> bool:
        """Append ``items`` and let go of the hold of ``turn``, in one transaction, if it
        still holds the conversation (else nothing: deleted meanwhile, or the hold
        lapsed); whether it did."""
        ...


class Store(Protocol):
    """Where responses live. Every method is safe to call from the event loop."""

    @property
    def conversations(self) -> ConversationStore:
        """The conversations, in the same database."""
        ...

    async def open(self) -> None:
        """Create tables if needed; register as a live runner."""
        ...

    async def heartbeat(self, now: int) -> None:
        """Say this store's runner is still alive at ``now`` (call it well within the lease)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...

    async def create(self, record: StoredResponse) -> None:
        """Store a new response with its input items."""
        ...

    async def update(self, response: dict[str, Any]) -> None:
        """Replace the snapshot (status, output, usage) of a stored response."""
        ...

    async def get(self, response_id: str, owner: str) -> StoredResponse | None:
        """The response, if it exists and belongs to ``owner``."""
        ...

    async def delete(self, response_id: str, owner: str) -> bool:
        """Delete it with its items; ``False`` if there was nothing of ``owner``'s to delete."""
        ...

    async def input_items(
        self, response_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ItemPage | None:
        """A page of the response's input items (``order`` ``asc`` or ``desc``), or ``None``."""
        ...

    async def history(
        self, response_id: str, owner: str, *, max_items: int | None = None
    ) -> list[dict[str, Any]] | None:
        """``input + output`` of every response of the chain ending at ``response_id``,
        oldest first; ``None`` if that response is not ``owner``'s. Raises
        :class:`HistoryTooLong` (before loading any) when there are more than ``max_items``."""
        ...

    async def find_items(self, item_ids: Sequence[str], owner: str) -> dict[str, dict[str, Any]]:
        """Input or output items of ``owner``'s responses by id (for ``item_reference``)."""
        ...

    async def interrupt_unfinished(self, now: int | None = None) -> int:
        """Mark responses left ``queued`` / ``in_progress`` by a dead runner (closed, or its
        lease expired by ``now``) as failed; how many."""
        ...

    async def evict(self, now: int) -> int:
        """Delete responses whose expiry passed (how many), and the stored events of
        responses that ended a while ago."""
        ...

    async def append_events(self, response_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Add streamed events of a stored response (each with its ``sequence_number``)."""
        ...

    async def events_after(
        self, response_id: str, owner: str, after: int, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """Up to ``limit`` stored events of ``owner``'s response numbered above ``after``."""
        ...

    async def last_event(self, response_id: str, owner: str) -> dict[str, Any] | None:
        """The stored event of ``owner``'s response with the highest sequence number."""
        ...

    async def request_cancel(self, response_id: str, owner: str) -> bool:
        """Ask the server running ``owner``'s unfinished response to cancel it; ``False``
        when no such response is unfinished."""
        ...

    async def stop_requests(self, response_ids: Sequence[str]) -> dict[str, str]:
        """Of ``response_ids`` (responses this server runs), those another server asked to
        stop: ``"cancel"`` or ``"delete"``."""
        ...

    @property
    def listening(self) -> bool:
        """Notices from other servers arrive now (else waiting means polling)."""
        ...

    async def listen(self, on_notice: Callable[[str, str], None]) -> None:
        """Call ``on_notice(kind, response_id)`` for each notice of another server
        (``u``: new events or snapshot, ``c``: cancel asked, ``d``: deleted, ``*``:
        anything may have changed); a no-op for stores without notices."""
        ...
