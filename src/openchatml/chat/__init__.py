"""Chat completions (``POST /v1/chat/completions``) over the Responses core.

A chat request is checked and settled into the :class:`~..responses.request.ResponseRequest`
each of its choices runs (:func:`parse_chat_request`: messages as input items, tools, tool
choice and response format as a create-response request has them, so that the same
admission, limits and enforcement apply); each choice's response events are read into its
pieces (:class:`ChoiceReader`), written as chunks (:class:`ChunkWriter`) or gathered into a
``chat.completion`` (:class:`ChoiceMessage`, :func:`completion_json`), objects whose schemas
are :class:`ChatCompletion` and :class:`ChatCompletionChunk` (in the OpenAPI document by
:func:`add_chat_schemas`). Sans-IO: the server runs the responses and writes the answer.
"""

from .choice import (
    CallPiece,
    CallStart,
    ChoiceEnd,
    ChoiceFailure,
    ChoiceReader,
    ContentPiece,
    Piece,
    ReasoningPiece,
)
from .completion import ChoiceMessage, ChunkWriter, completion_id, completion_json, usage_json
from .objects import ChatCompletion, ChatCompletionChunk
from .openapi import add_chat_schemas
from .request import ChatRequest, parse_chat_request
from .stop import StopCutter
from .wire import ChatCompletionBody

__all__ = [
    "CallPiece",
    "CallStart",
    "ChatCompletion",
    "ChatCompletionBody",
    "ChatCompletionChunk",
    "ChatRequest",
    "ChoiceEnd",
    "ChoiceFailure",
    "ChoiceMessage",
    "ChoiceReader",
    "ChunkWriter",
    "ContentPiece",
    "Piece",
    "ReasoningPiece",
    "StopCutter",
    "add_chat_schemas",
    "completion_id",
    "completion_json",
    "parse_chat_request",
    "usage_json",
]
