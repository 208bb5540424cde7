"""The agent loop of a Harmony model: sample, run the hosted call it ends on, sample again.

Theory of operation. A step samples from the prompt until a stop token. Its ids are
parsed into messages (the prompt ends in ``<|start|>assistant``). How the step ended
decides what follows:

* the last message is a call (``<|call|>``) of a recipient the :class:`ToolRouter` hosts
  (``python``, ``browser.*``, an MCP namespace) → the router runs it (deadline and
  cancellation are the router's), the tool's reply message is rendered by the core
  renderer, and the step's ids, the reply's ids and ``<|start|>assistant`` extend the
  prompt for the next step;
* a call of the client's (``functions.*``) or of a recipient nobody hosts, a hosted call
  that waits for the user's approval (``held``: an MCP tool that requires it), a final
  answer (``<|return|>``), no stop token, a hosted call with no budget left to sample its
  answer, or a bound reached → the loop ends with what was sampled; nothing more runs.

Calls the user approved in an earlier response (``first_calls``) run before the first
step: each reply goes into the prompt, after the call it answers (the prompt's last
message) and before its ``<|start|>assistant``.

The loop yields typed events: :class:`Sampled` for every engine chunk of every step,
:class:`StepEnded` when a step's sampling ends, :class:`HostedCallStarted` /
:class:`HostedCallFinished` around each hosted call, and :class:`NextStep` before a step
that samples after the tools' replies. The output budget
(``params.max_tokens``) spans the whole loop: every step's sampled ids count against it;
a tool's reply counts against the context window only. Cancelling the task iterating the
loop (or closing the iterator) stops the engine's stream and the call running.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final

from ..core.encoding import Encoding
from ..core.messages import Message, Role
from ..core.parse import StreamParser
from ..core.render import Profile, RenderConfig, Renderer
from ..core.tokens import CALL_ID
from ..engines.base import Chunk, Engine, SamplingParams
from ..tools.base import HostedCall, ToolResult
from ..tools.reply import reply_message
from ..tools.router import CallBudget, Route, ToolRouter
from .stream import TokenParser

DEFAULT_MAX_STEPS: Final = 16
"""How many times the loop samples at most, unless told otherwise."""


class StepEnd(StrEnum):
    """Why a step's sampling ended; every reason but ``HOSTED_CALL`` ends the loop."""

    HOSTED_CALL = "hosted_call"
    """A call of a hosted tool: the loop runs it and samples again."""
    FINAL = "final"
    """A stop token that is not ``<|call|>``: the answer is done (``<|return|>``)."""
    CLIENT_CALL = "client_call"
    """A call of a tool the client runs (``functions.*``)."""
    UNKNOWN_CALL = "unknown_call"
    """A call of a recipient neither the router nor the client answers."""
    LENGTH = "length"
    """No stop token: the output budget or the context window is spent."""
    MAX_STEPS = "max_steps"
    """A hosted call in the last step the loop may take: left unrun."""
    MAX_TOOL_CALLS = "max_tool_calls"
    """A hosted call past the response's ``max_tool_calls``: left unrun."""
    APPROVAL = "approval"
    """A hosted call that waits for the user's approval: left unrun."""


@dataclass(frozen=True, slots=True)
class Sampled:
    """The engine sampled ``chunk`` in step ``step`` (steps count from 0)."""

    step: int
    chunk: Chunk


@dataclass(frozen=True, slots=True)
class StepEnded:
    """Step ``step`` stopped sampling for ``reason``; ``messages``: what its ids spell."""

    step: int
    reason: StepEnd
    messages: tuple[Message, ...] = ()


@dataclass(frozen=True, slots=True)
class HostedCallStarted:
    """The loop hands ``call`` (made in step ``step``) to the router."""

    step: int
    call: HostedCall


@dataclass(frozen=True, slots=True)
class HostedCallFinished:
    """``call`` ended with ``result`` (failed ones included); ``reply``: the tool message the
    model reads next."""

    step: int
    call: HostedCall
    result: ToolResult
    reply: Message


@dataclass(frozen=True, slots=True)
class NextStep:
    """Step ``step`` samples next, after the replies of the calls before it; ``parser``:
    what reads its ids, where the model's prompt changed how (a chat template's prompt may
    open the answer anew), else ``None``."""

    step: int
    parser: TokenParser | None = None


AgentEvent = Sampled | StepEnded | HostedCallStarted | HostedCallFinished | NextStep
"""Anything :class:`AgentLoop` yields."""


@dataclass(slots=True)
class _Step:
    """What one step sampled so far, and whether it ended on a stop token."""

    ids: list[int] = field(default_factory=list)
    stopped: bool = False


class AgentLoop:
    """Drives a Harmony engine and the hosted tools of one response.

    ``router`` runs the hosted calls; ``max_steps`` bounds how many times the loop
    samples; ``budget`` is the response's ``max_tool_calls`` counter (``None``: no
    limit); ``context_length`` caps prompt plus sample (default: the engine's);
    ``encoding`` renders the tools' replies (default: o200k_harmony); ``held(recipient)``
    says whether a call of ``recipient`` waits for the user's approval (default: none does).
    """

    def __init__(
        self,
        engine: Engine,
        router: ToolRouter,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        budget: CallBudget | None = None,
        context_length: int | None = None,
        encoding: Encoding | None = None,
        held: Callable[[str], bool] | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, not {max_steps}")
        self.engine = engine
        self.router = router
        self.max_steps = max_steps
        self.budget = budget
        self.context_length = engine.info.context_length if context_length is None else context_length
        self._renderer = Renderer(RenderConfig(profile=Profile.HARMONY), encoding)
        self.held = held

    async def run(
        self,
        prompt: Sequence[int],
        params: SamplingParams,
        *,
        params_for: Callable[[int], SamplingParams] | None = None,
        first_calls: Sequence[HostedCall] = (),
    ) -> AsyncGenerator[AgentEvent, None]:
        """The events of the loop from ``prompt`` (ids ending in ``<|start|>assistant``).

        ``params.max_tokens`` is the output budget of the whole loop (``None``: the context
        window only); ``params_for(step)`` gives a step's settings (a forced tool choice's
        grammar for step 0, ``auto`` after), ``params`` otherwise; its ``max_tokens`` is
        replaced by what is left. Both must stop at ``<|call|>`` and ``<|return|>``.
        ``first_calls`` run before the first step (their events carry step ``-1``).
        Raises :class:`~openchatml.engines.base.EngineError` when the engine fails.
        """
        context = list(prompt)
        opening = len(self._renderer.completion_tokens([]))  # <|start|>assistant
        for call in first_calls:
            yield HostedCallStarted(-1, call)
            result = await self.router.run_one(call, budget=self.budget)
            reply = reply_message(call, result, Profile.HARMONY)
            yield HostedCallFinished(-1, call, result, reply)
            context = context[: len(context) - opening] + self._renderer.completion_tokens([reply])
        spent = 0
        for step in range(self.max_steps):
            limit = self._limit(params.max_tokens, spent, len(context))
            if limit is not None and limit < 1:
                yield StepEnded(step, StepEnd.LENGTH)
                return
            step_params = replace(params if params_for is None else params_for(step), max_tokens=limit)
            sampled = _Step()
            async with contextlib.aclosing(self._sample(step, context, step_params, sampled)) as chunks:
                async for event in chunks:
                    yield event
            spent += len(sampled.ids)
            messages = _messages(sampled.ids)
            room = self._limit(params.max_tokens, spent, len(context) + len(sampled.ids))
            reason = self._reason(sampled, messages, step, room is None or room > 0)
            yield StepEnded(step, reason, messages)
            if reason is not StepEnd.HOSTED_CALL:
                return
            call = HostedCall.from_message(messages[-1])
            yield HostedCallStarted(step, call)
            result = await self.router.run_one(call, budget=self.budget)
            reply = reply_message(call, result, Profile.HARMONY)
            yield HostedCallFinished(step, call, result, reply)
            context += sampled.ids
            context += self._renderer.completion_tokens([reply])
            yield NextStep(step + 1)

    def _limit(self, budget: int | None, spent: int, prompt_length: int) -> int | None:
        """How many ids the next step may sample: what is left of the output ``budget``,
        within the context window (``None``: no bound)."""
        room = None if self.context_length is None else self.context_length - prompt_length
        left = None if budget is None else budget - spent
        if room is None or left is None:
            return left if room is None else room
        return min(room, left)

    async def _sample(
        self, step: int, prompt: list[int], params: SamplingParams, sampled: _Step
    ) -> AsyncGenerator[Sampled, None]:
        """One :class:`Sampled` per chunk of the engine, up to and including a stop token;
        the ids gather in ``sampled``. The engine's stream is closed however this ends."""
        stops = frozenset(params.stop_token_ids)
        generation = self.engine.generate(prompt, params)
        try:
            async for chunk in generation:
                at = next((index for index, token in enumerate(chunk.ids) if token in stops), None)
                if at is not None and at + 1 < len(chunk.ids):
                    chunk = _head(chunk, at + 1)
                sampled.ids += chunk.ids
                yield Sampled(step, chunk)
                if at is not None:
                    sampled.stopped = True
                    break
        finally:
            aclose = getattr(generation, "aclose", None)
            if aclose is not None:
                await aclose()

    def _reason(self, sampled: _Step, messages: tuple[Message, ...], step: int, room: bool) -> StepEnd:
        """Why the step that sampled ``sampled`` (spelling ``messages``) ended; ``room``:
        whether another step could sample anything."""
        if not sampled.stopped:
            return StepEnd.LENGTH
        last = messages[-1] if messages else None
        if sampled.ids[-1] != CALL_ID or last is None or not last.is_tool_call or last.recipient is None:
            return StepEnd.FINAL
        route = self.router.route(last.recipient)
        if route is Route.CLIENT:
            return StepEnd.CLIENT_CALL
        if route is Route.UNKNOWN:
            return StepEnd.UNKNOWN_CALL
        if self.held is not None and self.held(last.recipient):
            return StepEnd.APPROVAL
        if not room:
            return StepEnd.LENGTH
        if step + 1 >= self.max_steps:
            return StepEnd.MAX_STEPS
        if self.budget is not None and self.budget.remaining == 0:
            return StepEnd.MAX_TOOL_CALLS
        return StepEnd.HOSTED_CALL


def _head(chunk: Chunk, size: int) -> Chunk:
    """The first ``size`` ids of ``chunk``, with their log probabilities."""
    logprobs = None if chunk.logprobs is None else chunk.logprobs[:size]
    return Chunk(chunk.ids[:size], logprobs)


def _messages(ids: Sequence[int]) -> tuple[Message, ...]:
    """The messages a step's ``ids`` spell after ``<|start|>assistant``, repaired where
    malformed; a message cut short is kept as it stands."""
    parser = StreamParser(Role.ASSISTANT, strict=False, check_constraints=False, allow_truncated=True)
    parser.feed_tokens(ids)
    parser.close()
    return tuple(parser.messages)
