"""Chat completions (``POST /v1/chat/completions``) over the Responses core.

A chat request is checked and settled into the :class:`~..responses.request.ResponseRequest`
each of its choices runs (:func:`parse_chat_request`: messages as input items, tools, tool
choice and response format as a create-response request has them, so that the same
admission, limits and enforcement apply); each choice's response events are read into its
pieces (:class:`ChoiceReader`), written as chunks (:class:`ChunkWriter`) or gathered into a
``chat.completion`` (:class:`ChoiceMessage`, :func:`completion_json`). Sans-IO: the server
runs the responses and writes the answer.
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
from .request import ChatRequest, parse_chat_request
from .stop import StopCutter
from .wire import ChatCompletionBody

__all__ = [
    "CallPiece",
    "CallStart",
    "ChatCompletionBody",
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
    "completion_id",
    "completion_json",
    "parse_chat_request",
    "usage_json",
]
