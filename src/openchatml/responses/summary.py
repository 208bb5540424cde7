"""Reasoning summaries: the served model, asked to summarise its own reasoning for the user.

With ``reasoning.summary`` (``concise``, ``detailed``, or ``auto`` = ``detailed``), each
reasoning item of a response gets a ``summary_text`` part written by the same engine and
model in a second, short generation: the reasoning goes in as the user's message, under
instructions to summarise it for an end user, reasoning effort "none" (Harmony's low;
thinking off where a template can switch it), greedy, at most
:data:`MAX_TOKENS` tokens. Only the answer of that generation (Harmony ``final``, or a
template model's content) becomes the summary; its own reasoning and anything else is
dropped. A summary that cannot be made (an engine error, a reasoning too long for the
context window) is left empty; the response goes on.

:func:`summary_deltas` gives the summary's text as it is sampled.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any, Final

from ..core.events import ContentDelta, MessageStarted
from ..core.messages import Role
from ..core.parse import StreamParser
from ..engines.base import Engine, EngineError
from .dialect import Dialect
from .errors import RequestError
from .input import PromptSettings, build_conversation
from .output_items import item_kind
from .request import ResponseRequest
from .stream import TokenParser
from .wire.content import InputText
from .wire.items import UserMessage

log = logging.getLogger("openchatml.server")

INSTRUCTIONS: Final = {
    "concise": (
        "Summarize the reasoning in the user's message for an end user, in one or two short "
        "sentences: what was worked out and how. Do not quote it. Write only the summary."
    ),
    "detailed": (
        "Summarize the reasoning in the user's message for an end user, in a short paragraph: "
        "the key steps and considerations, in order. Do not quote it. Write only the summary."
    ),
}
MAX_TOKENS: Final = {"concise": 96, "detailed": 256}
MAX_REASONING_CHARS: Final = 32_000
"""The most of a reasoning text given to the summariser (its end, where it is longer)."""


def detail_of(summary: str) -> str:
    """``concise`` or ``detailed`` for a request's ``reasoning.summary``."""
    return "concise" if summary == "concise" else "detailed"


async def summary_deltas(
    engine: Engine,
    dialect: Dialect,
    reasoning: str,
    summary: str,
    *,
    settings: PromptSettings | None = None,
) -> AsyncGenerator[str, None]:
    """The pieces of a summary of ``reasoning`` (``summary``: the request's
    ``reasoning.summary``), sampled from ``engine``; nothing where none can be made."""
    detail = detail_of(summary)
    text = reasoning.strip()[-MAX_REASONING_CHARS:]
    if not text:
        return
    request = ResponseRequest(
        items=(UserMessage(content=(InputText(text=text),)),),
        instructions=INSTRUCTIONS[detail],
        reasoning_effort="none",
        max_output_tokens=MAX_TOKENS[detail],
        temperature=0.0,
        store=False,
    )
    try:
        conversation = build_conversation(request, request.items, settings=settings)
        prepared = dialect.prepare(request, conversation, context_length=engine.info.context_length)
    except RequestError as exc:
        log.info("no reasoning summary: %s", exc)
        return
    parser: TokenParser = dialect.parser(request, prepared) or StreamParser(
        Role.ASSISTANT, strict=False, check_constraints=False, allow_truncated=True
    )
    answering = False
    stop = set(prepared.params.stop_token_ids)
    generation = engine.generate(prepared.prompt, prepared.params)
    try:
        async for chunk in generation:
            for token in chunk.ids:
                parser.process(token)
            for event in parser.events():
                answering, piece = _read(event, answering)
                if piece:
                    yield piece
            if chunk.ids and chunk.ids[-1] in stop:
                break
        for event in parser.close():
            answering, piece = _read(event, answering)
            if piece:
                yield piece
    except EngineError as exc:
        log.warning("reasoning summary cut short: %s", exc)
    finally:
        aclose: Any = getattr(generation, "aclose", None)
        if aclose is not None:
            await aclose()


def _read(event: object, answering: bool) -> tuple[bool, str]:
    """Whether the parser is now inside an answer, and the answer text ``event`` adds."""
    if isinstance(event, MessageStarted):
        header = event.header
        return item_kind(header) == "message" and header.channel != "commentary", ""
    if isinstance(event, ContentDelta) and answering:
        return True, event.text
    return answering, ""
