"""Conversations on the wire: the bodies of ``/v1/conversations`` and what it answers.

A conversation is a list of items kept by the server under a ``conv_…`` id, with up to 16
metadata keys. Bodies: :class:`CreateConversationBody` (``items``, ``metadata``),
:class:`UpdateConversationBody` (``metadata``), :class:`AddItemsBody` (``items``); each
holds at most :data:`MAX_ITEMS_PER_CALL` items, read as a response's ``input`` items are
(every item gets an ``id`` and a ``status``). Answers: :class:`ConversationResource`,
:class:`ConversationDeleted`, :class:`ConversationItemList`. The ``read_*`` functions
check a decoded body within a request's limits and raise
:class:`~..errors.RequestError` naming the bad ``param``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, TypeVar

from pydantic import ConfigDict, Field, ValidationError

from ..errors import RequestError
from ..limits import RequestLimits
from .base import Checks, WireModel
from .items import InputItem, Item
from .request import Metadata
from .validation import request_error, type_name

MAX_ITEMS_PER_CALL: Final = 20
"""The most items one create or add call may hold (as OpenAI's API)."""
INCLUDABLE: Final = (
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
)
"""The values ``include`` may hold; items are given back as they were stored."""
_PARTS: Final = ("content", "output", "summary")


class CreateConversationBody(WireModel):
    """``POST /conversations``: the first items and the metadata, both optional."""

    model_config = ConfigDict(extra="forbid", title="CreateConversationBody")

    items: tuple[InputItem, ...] | None = None
    metadata: Metadata = None


class UpdateConversationBody(WireModel):
    """``POST /conversations/{id}``: the new metadata (``null``: none)."""

    model_config = ConfigDict(extra="forbid", title="UpdateConversationBody")

    metadata: Metadata = None


class AddItemsBody(WireModel):
    """``POST /conversations/{id}/items``: the items to add."""

    model_config = ConfigDict(extra="forbid", title="AddConversationItemsBody")

    items: tuple[InputItem, ...] = ()


class ConversationResource(WireModel):
    """A conversation as the API returns it."""

    id: str
    object: Literal["conversation"] = "conversation"
    created_at: int
    metadata: dict[str, str] = Field(default_factory=dict)


class ConversationDeleted(WireModel):
    """The answer of ``DELETE /conversations/{id}``."""

    id: str
    object: Literal["conversation.deleted"] = "conversation.deleted"
    deleted: bool = True


class ConversationItemList(WireModel):
    """A page of a conversation's items (``first_id`` / ``last_id``: ``null`` when empty)."""

    object: Literal["list"] = "list"
    data: tuple[Item, ...] = ()
    first_id: str | None = None
    last_id: str | None = None
    has_more: bool = False

    @classmethod
    def of(cls, items: Sequence[Mapping[str, Any]], has_more: bool = False) -> ConversationItemList:
        """The list of stored items (their JSON, as this server wrote it)."""
        data = [dict(item) for item in items]
        return cls.model_validate(
            {
                "data": data,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
                "has_more": has_more,
            }
        )


Body = TypeVar("Body", CreateConversationBody, UpdateConversationBody, AddItemsBody)


def _check_items(body: Mapping[str, Any], limits: RequestLimits, *, required: bool) -> None:
    """Refuse an ``items`` array missing (when ``required``), empty, longer than
    :data:`MAX_ITEMS_PER_CALL`, or with an item of more parts than ``limits`` allow,
    before any item is read."""
    items = body.get("items")
    if items is None:
        if required:
            raise RequestError(
                "Missing required parameter: 'items'.", param="items", code="missing_required_parameter"
            )
        return
    if not isinstance(items, list):
        raise RequestError(
            f"Invalid type for 'items': expected an array, but got {type_name(items)}.",
            param="items",
            code="invalid_type",
        )
    if required and not items:
        raise RequestError(
            "Invalid 'items': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            param="items",
            code="empty_array",
        )
    if len(items) > MAX_ITEMS_PER_CALL:
        raise RequestError(
            f"Invalid 'items': array too long. Expected an array with maximum length "
            f"{MAX_ITEMS_PER_CALL}, but got an array with length {len(items)} instead.",
            param="items",
            code="array_above_max_length",
        )
    for index, item in enumerate(items):
        for key in _PARTS:
            parts = item.get(key) if isinstance(item, dict) else None
            if isinstance(parts, list):
                limits.check_count(
                    len(parts),
                    limits.max_content_parts,
                    f"items[{index}].{key}",
                    "parts",
                    "too_many_content_parts",
                )


def _read(kind: type[Body], body: Any, limits: RequestLimits) -> Body:
    """``body`` validated as ``kind`` within ``limits``."""
    if not isinstance(body, dict):
        raise RequestError(
            f"Invalid type for 'body': expected an object, but got {type_name(body)}.",
            param="body",
            code="invalid_type",
        )
    limits.check_depth(body)
    try:
        return kind.model_validate(body, context=Checks(limits))
    except ValidationError as exc:
        raise request_error(exc) from None
    except UnicodeEncodeError:  # a lone surrogate cannot be stored
        raise RequestError("The body holds a string that is not valid Unicode text.", param="body") from None


def read_create_body(body: Any, limits: RequestLimits) -> CreateConversationBody:
    """The checked body of ``POST /conversations``."""
    if isinstance(body, dict):
        _check_items(body, limits, required=False)
    return _read(CreateConversationBody, body, limits)


def read_update_body(body: Any, limits: RequestLimits) -> UpdateConversationBody:
    """The checked body of ``POST /conversations/{id}`` (``metadata`` is required, may be ``null``)."""
    if isinstance(body, dict) and "metadata" not in body:
        raise RequestError(
            "Missing required parameter: 'metadata'.", param="metadata", code="missing_required_parameter"
        )
    return _read(UpdateConversationBody, body, limits)


def read_items_body(body: Any, limits: RequestLimits) -> AddItemsBody:
    """The checked body of ``POST /conversations/{id}/items``."""
    if isinstance(body, dict):
        _check_items(body, limits, required=True)
    return _read(AddItemsBody, body, limits)


def check_include(values: Sequence[str]) -> tuple[str, ...]:
    """The ``include`` query values, each one of :data:`INCLUDABLE`; a
    :class:`RequestError` naming ``include`` otherwise."""
    for value in values:
        if value not in INCLUDABLE:
            listed = ", ".join(repr(v) for v in INCLUDABLE)
            raise RequestError(
                f"Invalid value for 'include': {value[:80]!r}. Supported values are: {listed}.",
                param="include",
            )
    return tuple(dict.fromkeys(values))
