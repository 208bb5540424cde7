"""One response, end to end without HTTP: conversation → prompt ids → engine → events.

``prepare(...)`` renders the prompt and settles the sampling settings (raising
:class:`~.errors.RequestError` when the prompt does not fit the context window); it
returns them as a :class:`Prepared`, the prompt's ids and, where the renderer wrote one,
its text. The engine is asked for log probabilities only when ``include`` holds
``message.output_text.logprobs`` (as OpenAI and vLLM do), with ``top_logprobs``
alternatives per token. ``run_events(...)`` drives the engine and yields every
streaming event, the terminal one included; ``run_loop_events(...)`` does so through the
agent loop, which runs the hosted calls (gpt-oss's ``python``) between steps. Leaving
the iteration early (client gone, cancel) closes the engine's stream, which stops
generation.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Final

from ..core.encoding import Encoding
from ..core.messages import Conversation, Role
from ..core.render import CoTPolicy, Profile, RenderConfig, Renderer
from ..core.tokens import CALL_ID, RETURN_ID
from ..engines.base import Chunk, Engine, EngineError, SamplingParams
from .agent_loop import AgentEvent, HostedCallStarted, NextStep, Sampled, StepEnd, StepEnded
from .errors import RequestError
from .request import ResponseRequest
from .stream import EventBuilder
from .wire.event_base import StreamEvent
from .wire.resource import ErrorPayload

ENDOFTEXT_ID: Final = 199999
STOP_IDS: Final = (RETURN_ID, CALL_ID, ENDOFTEXT_ID)
"""Sampling ends at ``<|return|>``, ``<|call|>`` or ``<|endoftext|>``."""

_RENDER: Final = RenderConfig(profile=Profile.HARMONY, cot=CoTPolicy.DROP_FINISHED)


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A conversation rendered for completion: its ids and, where the renderer wrote one
    (a chat template), its text; Harmony renders straight to ids (``text`` ``None``)."""

    ids: list[int]
    text: str | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A prompt ready to sample: its ids, the sampling settings, and its text (see
    :class:`RenderedPrompt`)."""

    prompt: list[int]
    params: SamplingParams
    prefix: str = ""
    """What the prompt already wrote of the answer (an opened reasoning block …), for
    parsers of chat-template models; ``""`` for Harmony."""
    text: str | None = None
    """The prompt's text, where the renderer wrote one."""


def prepare(
    request: ResponseRequest,
    conversation: Conversation,
    *,
    context_length: int | None,
    max_input_tokens: int | None = None,
    encoding: Encoding | None = None,
    prompt_of: Callable[[Conversation], RenderedPrompt] | None = None,
    stop_ids: Sequence[int] = STOP_IDS,
) -> Prepared:
    """Prompt ids and sampling settings for ``request``; raises :class:`RequestError`
    (``context_length_exceeded``) when the prompt leaves no room to answer, or
    (``input_tokens_exceeded``) when it is longer than ``max_input_tokens``.

    With ``truncation: "auto"`` a prompt that does not fit loses its oldest messages after
    the system and developer ones (as few as leave room for ``max_output_tokens``, or for
    one token, and bring it within ``max_input_tokens``) before it is refused.

    ``prompt_of`` renders a conversation (default: Harmony ids through ``encoding``);
    ``stop_ids`` end sampling (default: Harmony's).
    """
    if prompt_of is None:
        prompt_of = _harmony(Renderer(_RENDER, encoding))
    rendered = prompt_of(conversation)
    if request.truncation == "auto":
        budget = max_input_tokens
        if context_length is not None:
            wanted = request.max_output_tokens or 1
            wanted = wanted if wanted < context_length else 1
            budget = min(context_length - wanted, budget or context_length)
        if budget is not None:
            rendered = _truncated(prompt_of, conversation, rendered, budget)
    prompt = rendered.ids
    if max_input_tokens is not None and len(prompt) > max_input_tokens:
        raise RequestError(
            f"The input is {len(prompt)} tokens; this server accepts at most {max_input_tokens} "
            "input tokens per response.",
            param="input",
            code="input_tokens_exceeded",
        )
    room = None if context_length is None else context_length - len(prompt)
    if room is not None and room < 1:
        raise RequestError(
            f"The input is {len(prompt)} tokens, which does not fit this model's context window of "
            f"{context_length} tokens.",
            param="input",
            code="context_length_exceeded",
        )
    limit = request.max_output_tokens
    if limit is not None and room is not None:
        limit = min(limit, room)
    elif limit is None:
        limit = room
    params = SamplingParams(
        max_tokens=limit,
        temperature=1.0 if request.temperature is None else request.temperature,
        top_p=1.0 if request.top_p is None else request.top_p,
        presence_penalty=request.presence_penalty or 0.0,
        frequency_penalty=request.frequency_penalty or 0.0,
        stop_token_ids=tuple(stop_ids),
        seed=request.seed,
        logprobs=(request.top_logprobs or 0) if request.wants_logprobs else None,
    )
    return Prepared(prompt, params, text=rendered.text)


def _harmony(renderer: Renderer) -> Callable[[Conversation], RenderedPrompt]:
    """Conversations rendered to Harmony ids by ``renderer``."""

    def render(conversation: Conversation) -> RenderedPrompt:
        return RenderedPrompt(renderer.completion_tokens(conversation))

    return render


def _truncated(
    prompt_of: Callable[[Conversation], RenderedPrompt],
    conversation: Conversation,
    prompt: RenderedPrompt,
    budget: int,
) -> RenderedPrompt:
    """``prompt`` if it has at most ``budget`` ids; else the prompt of ``conversation``
    without the fewest oldest non-system messages that brings it within budget (at least
    the last message stays; the result may still be too long)."""
    if len(prompt.ids) <= budget:
        return prompt
    messages = conversation.messages
    lead = 0
    while lead < len(messages) and messages[lead].author.role in (Role.SYSTEM, Role.DEVELOPER):
        lead += 1

    def without(dropped: int) -> RenderedPrompt:
        kept = messages[:lead] + messages[lead + dropped :]
        return prompt_of(Conversation(kept, conversation.header))

    most = len(messages) - lead - 1  # at least the last message stays
    if most < 1 or len(without(most).ids) > budget:
        return prompt if most < 1 else without(most)
    low, high = 1, most
    while low < high:  # the fewest dropped that fits (the prompt shrinks as more are dropped)
        middle = (low + high) // 2
        if len(without(middle).ids) <= budget:
            high = middle
        else:
            low = middle + 1
    return without(low)


async def run_events(
    engine: Engine,
    prepared: Prepared,
    stream: EventBuilder,
    *,
    summarize: Callable[[str], AsyncGenerator[str, None]] | None = None,
) -> AsyncIterator[StreamEvent]:
    """Every event of the response: ``stream.begin()``, the ones the sampled ids cause,
    then the terminal one. An :class:`EngineError` ends the response ``failed``.

    ``summarize``: the pieces of a summary of a reasoning text, for a stream made with
    ``summaries``: each reasoning item waits for its summary (the answer's ids wait
    unread meanwhile) before the stream goes on."""
    for event in stream.begin():
        yield event
    reason = "length"
    stop = set(prepared.params.stop_token_ids)
    error: ErrorPayload | None = None
    generation = engine.generate(prepared.prompt, prepared.params)
    try:
        async for chunk in generation:
            for event in stream.feed(chunk.ids, chunk.logprobs):
                yield event
            async for event in _summaries(stream, summarize):
                yield event
            if chunk.ids and chunk.ids[-1] in stop:
                reason = "stop"
                break
    except EngineError as exc:
        reason = "error"
        error = ErrorPayload(type="model_error", code="model_error", message=str(exc))
    finally:
        await _close(generation)
    for event in stream.finish(reason, error=error):
        yield event


async def _summaries(
    stream: EventBuilder, summarize: Callable[[str], AsyncGenerator[str, None]] | None
) -> AsyncIterator[StreamEvent]:
    """The events of the summaries due (each reasoning item that waits for one, in turn)."""
    while summarize is not None and (reasoning := stream.summary_due) is not None:
        async with contextlib.aclosing(summarize(reasoning)) as pieces:
            async for piece in pieces:
                for event in stream.summary_delta(piece):
                    yield event
        for event in stream.summary_done():
            yield event


async def run_loop_events(
    loop: AsyncGenerator[AgentEvent, None],
    stream: EventBuilder,
    *,
    summarize: Callable[[str], AsyncGenerator[str, None]] | None = None,
) -> AsyncIterator[StreamEvent]:
    """Every event of a response whose hosted calls an agent loop runs (``loop``: the
    events of :meth:`~.agent_loop.AgentLoop.run` or :meth:`~.template_loop.TemplateLoop.run`):
    ``stream.begin()``, each step's sampled ids, each hosted call's run (its item running,
    then done with its outputs), the next step's ids in the same response, then the
    terminal one. Usage counts the ids of every step as output; the input tokens are the
    first prompt's; ``summarize`` writes reasoning summaries as in :func:`run_events`. An
    :class:`EngineError` ends the response ``failed``; cancelling the iterating task stops
    the engine and the running calls."""
    for event in stream.begin():
        yield event
    reason = "length"
    error: ErrorPayload | None = None
    try:
        async with contextlib.aclosing(loop) as steps:
            async for step in steps:
                if isinstance(step, Sampled):
                    for event in stream.feed(step.chunk.ids, step.chunk.logprobs):
                        yield event
                    async for event in _summaries(stream, summarize):
                        yield event
                elif isinstance(step, StepEnded):
                    reason = "length" if step.reason is StepEnd.LENGTH else "stop"
                    if step.reason in (StepEnd.HOSTED_CALL, StepEnd.CLIENT_CALL):
                        for event in stream.end_turn():  # its calls run now
                            yield event
                        async for event in _summaries(stream, summarize):
                            yield event
                elif isinstance(step, HostedCallStarted):
                    for event in stream.hosted_running():
                        yield event
                elif isinstance(step, NextStep):
                    stream.next_step(step.parser)
                else:
                    for event in stream.hosted_finished(step.result):
                        yield event
    except EngineError as exc:
        reason = "error"
        error = ErrorPayload(type="model_error", code="model_error", message=str(exc))
    for event in stream.finish(reason, error=error):
        yield event


async def _close(generation: AsyncIterator[Chunk]) -> None:
    aclose = getattr(generation, "aclose", None)
    if aclose is not None:
        await aclose()
