"""Training records in any of the formats :mod:`openchatml.training.records` names → the
conversation a sample renders.

Open Responses and chat records are read as the server reads a request
(:func:`~openchatml.responses.request.parse_request`,
:func:`~openchatml.chat.request.parse_chat_request`), so that the sample shows the model
what it sees when it serves: a system message (Harmony's identity, knowledge cutoff, the
``date`` given, the reasoning effort the record asks for), a developer message with the
record's instructions and its tools (``# Tools`` for Harmony; the template's ``tools``),
then the items. An Open Responses record's ``output`` items follow its ``input`` items.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from .chat.request import parse_chat_request
from .core.messages import Conversation
from .responses.errors import RequestError
from .responses.input import PromptSettings, build_conversation
from .responses.request import parse_request
from .training.records import (
    RecordError,
    RecordFormat,
    interchange_conversation,
    record_format,
    record_object,
)

_MODEL: Final = "training"
"""The ``model`` a record's request is read with (records name none)."""
_INPUT_INDEX: Final = re.compile(r"^input\[(\d+)\]")


def record_conversation(
    record: Any, fmt: RecordFormat = RecordFormat.AUTO, *, settings: PromptSettings | None = None
) -> Conversation:
    """The conversation of ``record`` read as ``fmt`` (``AUTO``: by its keys).
    ``settings`` fill the system message of API records (fix ``current_date`` for
    repeatable samples). Raises :class:`RecordError` naming the offending field."""
    if fmt is RecordFormat.AUTO:
        fmt = record_format(record)
    settings = settings or PromptSettings()
    if fmt is RecordFormat.CONVERSATION:
        return interchange_conversation(record)
    if fmt is RecordFormat.RESPONSES:
        return _responses_conversation(record, settings)
    return _chat_conversation(record, settings)


def _responses_conversation(record: Any, settings: PromptSettings) -> Conversation:
    fields = record_object(record)
    given, output = fields.get("input", []), fields.get("output", [])
    if isinstance(given, str):
        given = [{"type": "message", "role": "user", "content": given}]
    for name, value in (("input", given), ("output", output)):
        if not isinstance(value, list):
            raise RecordError("an array of items is expected", field=name)
    body = {"model": _MODEL, "input": [*given, *output], "store": False}
    body.update({key: fields[key] for key in ("instructions", "tools") if key in fields})
    try:
        request = parse_request(body)
        return build_conversation(request, request.items, settings=settings)
    except RequestError as exc:
        raise RecordError(exc.message, field=_record_field(exc.param, len(given))) from None


def _record_field(param: str | None, inputs: int) -> str | None:
    """A request's ``param`` in the record's terms: ``input[i]`` past the input items is
    ``output[i - inputs]``."""
    if param is None:
        return None
    match = _INPUT_INDEX.match(param)
    if match is None or int(match.group(1)) < inputs:
        return param
    return f"output[{int(match.group(1)) - inputs}]{param[match.end() :]}"


def _chat_conversation(record: Any, settings: PromptSettings) -> Conversation:
    if not isinstance(record, Mapping):
        raise RecordError(f"a chat record is a JSON object, not {type(record).__name__}")
    known = ("messages", "tools", "reasoning_effort", "id", "metadata")  # id, metadata: the dataset's own
    unknown = sorted(str(key) for key in record if key not in known)
    if unknown:
        raise RecordError("unknown key in a chat record", field=unknown[0])
    try:
        body = {key: value for key, value in record.items() if key not in ("id", "metadata")}
        chat = parse_chat_request({**body, "model": _MODEL})
    except RequestError as exc:
        raise RecordError(exc.message, field=exc.param) from None
    try:
        return build_conversation(chat.request, chat.request.items, settings=settings)
    except RequestError as exc:
        mapped = chat.error(exc)
        raise RecordError(mapped.message, field=mapped.param) from None
