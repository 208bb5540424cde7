"""One JSON record of a training file → which format it is in, and the errors a record
can have.

A record is one line of a JSONL file: a conversation in the JSON format of OCM §10
(:mod:`openchatml.core.interchange`: ``{"header"?, "messages": [...]}`` with ``channel``,
``recipient``, ``thinking``, ``tool_call`` …, or a bare array of such messages), Open
Responses items (an array of items with a ``type``, or ``{"input": [...], "output"?: [...],
"instructions"?, "tools"?}``), or OpenAI chat messages (``{"messages": [...], "tools"?}``
with ``reasoning_content``/``reasoning``, ``tool_calls`` and ``tool`` messages).

:func:`record_format` tells them apart by their keys; a ``messages`` list whose messages
use neither format's own keys (plain ``role``/``content``) is read as chat messages. The
conversation format is read here (:func:`interchange_conversation`); the two API formats
are read by the Responses and chat layers, above this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from ..core.interchange import InterchangeError, conversation_from_json
from ..core.messages import Conversation

_OCM_KEYS: Final = frozenset(
    ("channel", "recipient", "thinking", "tool_call", "call_id", "content_type", "intent")
)
_CHAT_KEYS: Final = frozenset(("tool_calls", "tool_call_id", "reasoning_content", "reasoning", "refusal"))
_RECORD_KEYS: Final = frozenset(("input", "output", "instructions", "tools", "id", "metadata"))
"""What an Open Responses record may hold (``id`` and ``metadata`` are the dataset's own,
and ignored); any other key is a mistake worth naming."""


class RecordFormat(StrEnum):
    """How a record spells its conversation (``auto``: find out from each record)."""

    AUTO = "auto"
    CONVERSATION = "conversation"
    RESPONSES = "responses"
    CHAT = "chat"


class RecordError(ValueError):
    """A record that cannot become a conversation: ``line`` (1-based, ``None`` when not
    known) and ``field`` (the JSON path of the offending value, ``None`` for the record
    as a whole) say where."""

    def __init__(self, problem: str, *, field: str | None = None, line: int | None = None) -> None:
        self.problem = problem
        self.field = field
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line is not None else []
        if self.field:
            where.append(self.field)
        return ": ".join([*where, self.problem])

    def at(self, line: int) -> RecordError:
        """The same error, on ``line``."""
        return RecordError(self.problem, field=self.field, line=line)


def _message_keys(messages: Any) -> set[str]:
    keys: set[str] = set()
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, Mapping):
            keys.update(str(key) for key in message)
    return keys


def record_format(record: Any) -> RecordFormat:
    """The format of ``record`` (never ``AUTO``): see the module docstring. Raises
    :class:`RecordError` for a record that is in none of them."""
    if isinstance(record, list):
        typed = any(isinstance(item, Mapping) and "type" in item for item in record)
        return RecordFormat.RESPONSES if typed else RecordFormat.CONVERSATION
    if not isinstance(record, Mapping):
        raise RecordError(f"a record is a JSON object or array, not {type(record).__name__}")
    if "input" in record or "output" in record:
        return RecordFormat.RESPONSES
    if "messages" not in record:
        raise RecordError("a record has 'messages' (a conversation or chat) or 'input' (Open Responses)")
    keys = _message_keys(record["messages"])
    if "header" in record or (keys & _OCM_KEYS and not keys & _CHAT_KEYS):
        return RecordFormat.CONVERSATION
    return RecordFormat.CHAT


def interchange_conversation(record: Any) -> Conversation:
    """The conversation of a record in the JSON conversation format. Raises
    :class:`RecordError` naming the offending field."""
    try:
        return conversation_from_json(record)
    except InterchangeError as exc:
        problem = exc.message
        prefix = f"{exc.path}: "
        if problem.startswith(prefix):
            problem = problem[len(prefix) :]
        raise RecordError(problem, field=None if exc.path == "$" else exc.path) from None


def record_object(record: Any) -> Mapping[str, Any]:
    """``record`` as a mapping of the Open Responses record form (an array of items is its
    ``input``). Raises :class:`RecordError` for other keys."""
    if isinstance(record, list):
        return {"input": record}
    if not isinstance(record, Mapping):
        raise RecordError(f"a record is a JSON object or array, not {type(record).__name__}")
    unknown = sorted(str(key) for key in record if key not in _RECORD_KEYS)
    if unknown:
        raise RecordError("unknown key in an Open Responses record", field=unknown[0])
    return record
