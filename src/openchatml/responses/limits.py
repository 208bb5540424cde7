"""How much work one request may ask for.

Every bound here is checked before the work it bounds is done, and a request beyond one
is refused with a 400 whose message names the limit and whose ``code`` says which
(``too_many_input_items``, ``json_too_deep`` …). The body's size is bounded by the
server (``max_body_bytes``); these bound what a body of that size could still make the
server do: items to convert, tools to render, references and history to load, nesting
for every recursive layer (schemas, TypeScript, the JSON writer), tokens to prefill.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ..core._json import deeper_than
from .errors import RequestError

MAX_JSON_DEPTH: Final = 64
"""How deeply a request body may nest objects and arrays. One limit for every layer:
the body parser, the JSON Schema and TypeScript code, the stored and streamed JSON (which
wrap the request's values a few levels deeper still, far below the JSON writer's 254)."""


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """The bounds on one request (``None``: no bound beyond the model's context)."""

    max_input_items: int = 4096
    """Items in ``input``."""
    max_content_parts: int = 1024
    """Content parts in one item (a message's ``content``, a tool output's parts)."""
    max_tools: int = 128
    """Entries of ``tools`` (and so of ``tool_choice.tools``)."""
    max_item_references: int = 256
    """``item_reference`` items in ``input``, each looked up in the store."""
    max_conversation_items: int = 16384
    """Items of the whole conversation: the ``previous_response_id`` chain's plus the input."""
    max_json_depth: int = MAX_JSON_DEPTH
    """Nesting of the request body."""
    max_input_tokens: int | None = None
    """Prompt tokens, whatever the model's context window (a long prefill holds the engine)."""

    def check_depth(self, body: Any, param: str = "body") -> None:
        """Raise :class:`RequestError` (``json_too_deep``) when ``body`` nests too deep."""
        if deeper_than(body, self.max_json_depth):
            raise RequestError(
                f"'{param}' nests objects and arrays more than {self.max_json_depth} levels deep, "
                "the most this server accepts.",
                param=param,
                code="json_too_deep",
            )

    def check_count(self, count: int, limit: int, param: str, what: str, code: str) -> None:
        """Raise :class:`RequestError` with ``code`` when ``count`` is above ``limit``."""
        if count > limit:
            raise RequestError(
                f"'{param}' has {count} {what}; this server accepts at most {limit}.",
                param=param,
                code=code,
            )

    def check_conversation(self, history: int, new: int) -> None:
        """Raise when ``history`` items of the previous responses plus ``new`` input items
        are more than :attr:`max_conversation_items`."""
        if history + new > self.max_conversation_items:
            raise RequestError(
                f"The conversation has {history + new} items ({history} from 'previous_response_id'); "
                f"this server accepts at most {self.max_conversation_items}. Start a new conversation "
                "or compact this one.",
                param="previous_response_id" if history else "input",
                code="conversation_too_long",
            )


DEFAULT_LIMITS: Final = RequestLimits()

DEFAULT_MAX_OUTPUT_TOKENS: Final = 32768
"""How many tokens a response may sample when its request sets no ``max_output_tokens``
(Codex sets none): the server's default, ``serve --default-max-output-tokens``."""
