"""The agent loop of a chat-template model: sample a turn, run its hosted calls together,
render the conversation again, sample the next turn.

Theory of operation. A chat-template model calls the hosted tools as functions
(:mod:`.hosted_functions`): a turn may hold several calls, each ``to=functions.NAME``
with JSON arguments. A step samples from the prepared prompt until an end of turn, and
the template's parser reads the turn's messages. How the turn ended decides what follows:

* calls, every one of a hosted tool (``python``, ``browser.*``) → the router runs them
  all at once (deadlines and cancellation are its own), each reply becomes a tool message,
  and the conversation so far — the request's, the turns sampled, the replies — is
  rendered again by the template (``render``) for the next step, whose ids its own parser
  reads (``parser_for``: the new prompt may open the answer anew);
* calls of which some are the client's → the hosted ones run (their items complete), and
  the loop ends: the client runs the rest;
* a call that waits for the user's approval (``held``: an MCP tool that requires it) → no
  call of the turn runs, and the loop ends;
* no call, no end of turn, a bound reached → the loop ends with what was sampled.

It yields the events of :mod:`.agent_loop`: :class:`~.agent_loop.Sampled`,
:class:`~.agent_loop.StepEnded`, a :class:`~.agent_loop.HostedCallStarted` for every call
of a turn before the turn's calls run, a :class:`~.agent_loop.HostedCallFinished` for each
once all have finished (in call order), and :class:`~.agent_loop.NextStep`. The output
budget (``max_tokens`` of the first step's settings) spans the whole loop.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from ..core.messages import Message, Role
from ..engines.base import Chunk, Engine, SamplingParams
from ..tools.base import HostedCall, new_call_id
from ..tools.reply import reply_message
from ..tools.router import CallBudget, ToolRouter
from .agent_loop import (
    DEFAULT_MAX_STEPS,
    AgentEvent,
    HostedCallFinished,
    HostedCallStarted,
    NextStep,
    Sampled,
    StepEnd,
    StepEnded,
)
from .custom_tools import FUNCTIONS
from .hosted_functions import CODE
from .request_tools import PYTHON
from .runner import Prepared
from .stream import TokenParser


@dataclass(frozen=True, slots=True)
class TurnCalls:
    """The calls of a sampled turn: ``hosted`` (as the router takes them), whether any
    other (``client``) was made, and the turn's ``messages``, each hosted call among them
    carrying its call's ``call_id``."""

    hosted: tuple[HostedCall, ...]
    client: bool
    messages: tuple[Message, ...]


def turn_calls(messages: Sequence[Message], hosted: Sequence[str]) -> TurnCalls:
    """The calls among a turn's ``messages``, sorted by who runs them: a call of one of the
    call names ``hosted`` (``to=functions.python``) as a hosted call (``python`` with the
    code of its ``code`` argument as the body; ``browser.search`` with the JSON arguments),
    its ``call_id`` the message's or a fresh one."""
    calls: list[HostedCall] = []
    client = False
    kept: list[Message] = []
    for message in messages:
        name = (message.recipient or "").removeprefix(FUNCTIONS)
        if not message.is_tool_call or name not in hosted:
            client = client or message.is_tool_call
            kept.append(message)
            continue
        call_id = message.call_id or new_call_id()
        body = _code(message.text) if name == PYTHON else message.text
        calls.append(HostedCall(recipient=name, call_id=call_id, body=body, channel=None))
        kept.append(replace(message, call_id=call_id))
    return TurnCalls(tuple(calls), client, tuple(kept))


def _code(arguments: str) -> str:
    """The ``code`` argument of a python call's JSON ``arguments`` (the arguments as they
    are where they hold none)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    code = value.get(CODE) if isinstance(value, dict) else None
    return code if isinstance(code, str) else arguments


def _least(first: int | None, second: int | None) -> int | None:
    """The smaller of two bounds (``None``: no bound)."""
    if first is None or second is None:
        return second if first is None else first
    return min(first, second)


class TemplateLoop:
    """Drives a chat-template model and the hosted tools of one response (see the module
    docstring): ``hosted`` are the call names the router runs; ``render(messages)`` gives
    the prepared prompt of the request's conversation followed by ``messages`` (``None``:
    it no longer fits the context window, and the loop ends);
    ``parser_for(prepared)`` a parser of the ids sampled from it."""

    def __init__(
        self,
        engine: Engine,
        router: ToolRouter,
        *,
        hosted: Sequence[str],
        render: Callable[[Sequence[Message]], Awaitable[Prepared | None]],
        parser_for: Callable[[Prepared], TokenParser],
        max_steps: int = DEFAULT_MAX_STEPS,
        budget: CallBudget | None = None,
        held: Callable[[str], bool] | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, not {max_steps}")
        self.engine = engine
        self.router = router
        self.hosted = tuple(hosted)
        self.render = render
        self.parser_for = parser_for
        self.max_steps = max_steps
        self.budget = budget
        self.held = held

    async def run(
        self, prepared: Prepared, *, first_calls: Sequence[HostedCall] = ()
    ) -> AsyncGenerator[AgentEvent, None]:
        """The events of the loop from the first step's ``prepared`` prompt (see the module
        docstring); ``first_calls`` (calls the user approved in an earlier response, which
        the conversation ends with) run before the first step, their events at step ``-1``.
        Raises :class:`~openchatml.engines.base.EngineError` when the engine fails."""
        added: list[Message] = []
        budget = prepared.params.max_tokens
        spent = 0
        current = prepared
        if first_calls:
            async for event in self._run_calls(-1, first_calls, added):
                yield event
            rendered = await self.render(added)
            if rendered is None:
                yield StepEnded(0, StepEnd.LENGTH)
                return
            current = rendered
            yield NextStep(0, self.parser_for(current))
        for step in range(self.max_steps):
            limit = _least(None if budget is None else budget - spent, current.params.max_tokens)
            if limit is not None and limit < 1:
                yield StepEnded(step, StepEnd.LENGTH)
                return
            params = replace(current.params, max_tokens=limit)
            ids: list[int] = []
            async with contextlib.aclosing(self._sample(step, current.prompt, params, ids)) as chunks:
                async for event in chunks:
                    yield event
            spent += len(ids)
            stopped = bool(ids) and ids[-1] in params.stop_token_ids
            calls = turn_calls(self._messages(current, ids), self.hosted)
            reason = self._reason(stopped, calls, step, None if budget is None else budget - spent)
            yield StepEnded(step, reason, calls.messages)
            if reason not in (StepEnd.HOSTED_CALL, StepEnd.CLIENT_CALL) or not calls.hosted:
                return
            added += calls.messages
            async for event in self._run_calls(step, calls.hosted, added):
                yield event
            if reason is StepEnd.CLIENT_CALL:
                return
            rendered = await self.render(added)
            if rendered is None:  # the conversation no longer fits the context window
                yield StepEnded(step + 1, StepEnd.LENGTH)
                return
            current = rendered
            yield NextStep(step + 1, self.parser_for(current))

    async def _run_calls(
        self, step: int, calls: Sequence[HostedCall], added: list[Message]
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run ``calls`` at once: every start, then every end in call order; each reply
        joins ``added``."""
        for call in calls:
            yield HostedCallStarted(step, call)
        results = await self.router.run(calls, budget=self.budget)
        for call, result in zip(calls, results, strict=True):
            reply = reply_message(call, result)
            added.append(reply)
            yield HostedCallFinished(step, call, result, reply)

    async def _sample(
        self, step: int, prompt: Sequence[int], params: SamplingParams, ids: list[int]
    ) -> AsyncGenerator[Sampled, None]:
        """One :class:`Sampled` per engine chunk, up to and including an end of turn; the
        ids gather in ``ids``. The engine's stream is closed however this ends."""
        stops = frozenset(params.stop_token_ids)
        generation = self.engine.generate(list(prompt), params)
        try:
            async for chunk in generation:
                at = next((n for n, token in enumerate(chunk.ids) if token in stops), None)
                if at is not None and at + 1 < len(chunk.ids):
                    logprobs = None if chunk.logprobs is None else chunk.logprobs[: at + 1]
                    chunk = Chunk(chunk.ids[: at + 1], logprobs)
                ids += chunk.ids
                yield Sampled(step, chunk)
                if at is not None:
                    break
        finally:
            aclose = getattr(generation, "aclose", None)
            if aclose is not None:
                await aclose()

    def _messages(self, prepared: Prepared, ids: Sequence[int]) -> list[Message]:
        """The assistant messages a turn's ``ids`` spell, read from ``prepared``'s prompt on."""
        parser = self.parser_for(prepared)
        for token in ids:
            parser.process(token)
        parser.close()
        return [message for message in parser.messages if message.role is Role.ASSISTANT]

    def _reason(self, stopped: bool, calls: TurnCalls, step: int, left: int | None) -> StepEnd:
        """Why a turn that ended so (``stopped``: at an end of turn) and called ``calls`` ends
        its step; ``left``: the output budget left."""
        if not stopped:
            return StepEnd.LENGTH
        if self.held is not None and any(self.held(call.recipient) for call in calls.hosted):
            return StepEnd.APPROVAL
        if calls.client:
            return StepEnd.CLIENT_CALL
        if not calls.hosted:
            return StepEnd.FINAL
        if left is not None and left < 1:
            return StepEnd.LENGTH
        if step + 1 >= self.max_steps:
            return StepEnd.MAX_STEPS
        if self.budget is not None and self.budget.remaining == 0:
            return StepEnd.MAX_TOOL_CALLS
        return StepEnd.HOSTED_CALL
