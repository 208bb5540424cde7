"""The JSON projection of OCM §10: messages and conversations to JSON objects and back.

One JSON object per message. Header attributes are keys (``role``, ``name``,
``channel``, ``recipient``, ``content_type``, ``constrained``, ``call_id``,
``intent``); an absent key means ``None``, ``False`` or the default. The body is one of

* ``content`` — a string when the message holds exactly one text part, else a list
  of parts: ``{"type": "text", "text": …}``, ``{"type": "system_content", …}``,
  ``{"type": "developer_content", …}``;
* ``thinking`` — the text of an assistant ``analysis`` message (§10);
* ``tool_call`` — ``{"id", "recipient", "content_type", "constrained", "arguments"}``
  for an assistant message with a recipient (one that ends in ``<|call|>``).

:func:`message_to_json` writes exactly one of these, so that
``message_from_json(message_to_json(m)) == m``. On reading, an object that holds more
than one of them is a §10 *turn* and expands (:func:`messages_from_json`) into an
``analysis`` message, then the ``content`` message, then the call on ``commentary``.

Every problem in the input raises :class:`InterchangeError`, whose message starts with
the JSON path of the offending value (``messages[3].tool_call.arguments: …``).

The projection is written in parts: :mod:`.messages` (one message, or a §10 turn),
:mod:`.conversations` (the transcript header and whole conversations),
:mod:`.parser_events` (the stream parser's events) and :mod:`.errors`.
"""

from .conversations import (
    conversation_from_json,
    conversation_from_json_text,
    conversation_to_json,
    header_from_json,
    header_to_json,
)
from .errors import MAX_DEPTH, InterchangeError
from .messages import message_from_json, message_to_json, messages_from_json
from .parser_events import event_to_json, position_to_json

__all__ = [
    "MAX_DEPTH",
    "InterchangeError",
    "conversation_from_json",
    "conversation_from_json_text",
    "conversation_to_json",
    "event_to_json",
    "header_from_json",
    "header_to_json",
    "message_from_json",
    "message_to_json",
    "messages_from_json",
    "position_to_json",
]
