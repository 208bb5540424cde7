"""What an end user may see: the renderer policy of OCM 2.2 §4, §5 and §11.

A message is *visible* when it is

* a ``user`` message (the end user's own input), or
* an ``assistant`` message on ``final`` — or with no channel at all, which 1.x
  transcripts mean as ``final`` (§5 rule 2, §13) — that is addressed to no tool, or
* an ``assistant`` message on ``commentary`` flagged ``intent=preamble`` and
  addressed to no tool (§5 rule 4).

Everything else is hidden: ``system`` and ``developer`` messages, ``analysis``,
``commentary`` that is not a preamble, any other channel, tool calls (an assistant
message with a recipient), tool replies, and assistant messages flagged
``intent=debug`` (§6: non-display). The policy fails closed: an unknown channel is
hidden. ``to=all`` is Harmony's "no particular recipient" and counts as none.

A debug view (``debug=True``) may show everything (§4: explicit opt-in).
:class:`VisibleDeltaFilter` applies the same policy to the parser's events, so a server
can stream ``final`` text and preambles as they arrive without leaking ``analysis``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .errors import VisibilityError
from .events import ContentDelta, Event, Header, MessageDone, MessageStarted
from .messages import Author, Channel, Conversation, Intent, Message, Role

__all__ = [
    "VisibleDeltaFilter",
    "effective_channel",
    "ensure_visible",
    "header_is_visible",
    "hidden_reason",
    "is_visible",
    "user_view",
    "visible_text",
]

_NO_RECIPIENT = frozenset({None, "all"})


def _effective(author: Author, channel: str | None) -> str | None:
    if channel is None and author.role is Role.ASSISTANT:
        return Channel.FINAL.value
    return channel


def _reason(author: Author, channel: str | None, recipient: str | None, intent: str | None) -> str | None:
    """Why a message with these header attributes is hidden; ``None`` when visible."""
    role = author.role
    if role is Role.USER:
        return None
    if role is not Role.ASSISTANT:
        return f"{role.value} messages are hidden from end users"
    if recipient not in _NO_RECIPIENT:
        return f"a tool call (to={recipient}) is hidden from end users"
    if intent == Intent.DEBUG:
        return "intent=debug is not for display"
    effective = _effective(author, channel)
    if effective == Channel.FINAL:
        return None
    if effective == Channel.COMMENTARY and intent == Intent.PREAMBLE:
        return None
    if effective == Channel.COMMENTARY:
        return "commentary is hidden unless flagged intent=preamble"
    return f"the {effective} channel is hidden from end users"


def effective_channel(message: Message) -> str | None:
    """The channel ``message`` is read on: an assistant message without a channel is
    ``final`` (1.x back-compat); any other message keeps its own channel, ``None`` when it
    has none (a channel means nothing for user, system, developer or tool messages)."""
    return _effective(message.author, message.channel)


def hidden_reason(message: Message) -> str | None:
    """Why ``message`` is hidden from an end user, or ``None`` when it is visible."""
    return _reason(message.author, message.channel, message.recipient, message.intent)


def is_visible(message: Message) -> bool:
    """Whether an end user may see ``message`` (see the module docstring for the rules)."""
    return hidden_reason(message) is None


def header_is_visible(header: Header) -> bool:
    """:func:`is_visible` for a message known only by its header (a message in flight)."""
    return _reason(header.author, header.channel, header.recipient, header.intent) is None


def user_view(messages: Conversation | Iterable[Message], *, debug: bool = False) -> list[Message]:
    """The messages of ``messages`` an end user may see, in order; every one with ``debug``."""
    if debug:
        return list(messages)
    return [m for m in messages if is_visible(m)]


def ensure_visible(message: Message, *, debug: bool = False) -> Message:
    """``message`` itself, when an end user may see it (or ``debug`` is set).

    Raises :class:`~openchatml.core.errors.VisibilityError` (``E-PERM-VISIBILITY``) for hidden
    content asked for outside a debug view.
    """
    if debug:
        return message
    reason = hidden_reason(message)
    if reason is not None:
        raise VisibilityError(reason)
    return message


class VisibleDeltaFilter:
    """Filters the events of a :class:`~openchatml.core.parse.StreamParser` down to the body
    text an end user may see.

    Feed it every event, in order: a ``MessageStarted`` decides whether the message's
    ``ContentDelta`` s pass, its ``MessageDone`` forgets it. A delta whose message was
    never seen starting is dropped (fail closed). With ``debug`` every delta passes.
    """

    __slots__ = ("_open", "debug")

    def __init__(self, *, debug: bool = False) -> None:
        self.debug = debug
        self._open: dict[int, bool] = {}

    def feed(self, event: Event) -> ContentDelta | None:
        """``event`` when it is body text an end user may see; ``None`` otherwise."""
        if isinstance(event, ContentDelta):
            if self.debug or self._open.get(event.index, False):
                return event
            return None
        if isinstance(event, MessageStarted):
            self._open[event.index] = header_is_visible(event.header)
        elif isinstance(event, MessageDone):
            self._open.pop(event.index, None)
        return None

    def filter(self, events: Iterable[Event]) -> Iterator[ContentDelta]:
        """The visible deltas among ``events``."""
        feed = self.feed
        for event in events:
            delta = feed(event)
            if delta is not None:
                yield delta

    def text(self, events: Iterable[Event]) -> str:
        """The visible text of ``events``, concatenated."""
        return "".join(delta.text for delta in self.filter(events))


def visible_text(
    items: Conversation | Iterable[Message] | Iterable[Event], *, separator: str = "\n\n", debug: bool = False
) -> str:
    """The text an end user may see of ``items``.

    Messages (or a conversation): the text of each visible message, joined with
    ``separator``. Parser events: the visible deltas concatenated (message boundaries
    are not marked), as :class:`VisibleDeltaFilter` passes them. Raises ``TypeError``
    for a mix of messages and events.
    """
    collected: list[Message | Event] = list(items)
    if all(isinstance(item, Message) for item in collected):
        return separator.join(
            m.text for m in collected if isinstance(m, Message) and (debug or is_visible(m))
        )
    events: list[Event] = []
    for item in collected:
        if isinstance(item, Message):
            raise TypeError("visible_text takes messages or events, not a mix of both")
        events.append(item)
    return VisibleDeltaFilter(debug=debug).text(events)
