"""The agent loop: hosted calls run between steps, their replies rendered into the next
prompt; client calls, final answers and bounds end it; deadlines and cancellation reach
the tools; the output budget spans the steps.

The fake engine plays a script chosen by step (how many ``<|call|>`` the prompt holds
already); the fake python tool records the calls it got and waits on gates the tests
open, so the tests decide the order things happen in and never assert a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import pytest

from openchatml.core.content import ToolNamespaceConfig
from openchatml.core.messages import Message
from openchatml.core.render import Profile, RenderConfig, Renderer
from openchatml.core.tokens import CALL_ID, RETURN_ID
from openchatml.engines.base import Chunk, ModelInfo, SamplingParams, TokenLogprob
from openchatml.responses.agent_loop import (
    AgentEvent,
    AgentLoop,
    HostedCallFinished,
    HostedCallStarted,
    Sampled,
    StepEnd,
    StepEnded,
)
from openchatml.tools import CallBudget, HostedCall, ToolResult, ToolRouter

BOUND_S = 30.0
"""Every test's overall bound: far above what it needs, there only to fail a hang."""

SLOW_S = 3600.0
"""A sleep no test waits out."""

ENDOFTEXT_ID = 199999
STOPS = (RETURN_ID, CALL_ID, ENDOFTEXT_ID)
PARAMS = SamplingParams(stop_token_ids=STOPS)
RENDERER = Renderer(RenderConfig(profile=Profile.HARMONY))
PROMPT = RENDERER.completion_tokens([Message.user("What is 6 times 7?")])

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine`` run to its end in a fresh event loop, within :data:`BOUND_S`."""
    return asyncio.run(asyncio.wait_for(coroutine, BOUND_S))


def completion(*messages: Message) -> list[int]:
    """The ids a model samples to say ``messages`` after ``<|start|>assistant``."""
    ids: list[int] = []
    for message in messages:
        ids += RENDERER.message_tokens(message)
    if messages and not messages[-1].is_tool_call:
        ids[-1] = RETURN_ID
    return ids[2:]


def thought(text: str) -> Message:
    return Message.assistant(text, channel="analysis")


def python_call(code: str, channel: str = "analysis") -> Message:
    return Message.assistant(code, channel=channel, recipient="python", content_type="code")


FINAL = completion(thought("The tool said 42."), Message.assistant("42"))
STEP_CALL = completion(thought("Let me compute it."), python_call("print(6 * 7)"))


class StepEngine:
    """Plays ``steps[n]`` when the prompt already holds ``n`` calls (the last one again past
    the end), in chunks of ``chunk`` ids, cut at the first stop token and ``max_tokens``."""

    def __init__(self, *steps: list[int], chunk: int = 4) -> None:
        self.steps = steps
        self.chunk = chunk
        self.prompts: list[list[int]] = []
        self.params: list[SamplingParams] = []
        self.closed = 0

    tokenizer = None
    enforces_grammar = False

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(id="steps", context_length=8192)

    async def aclose(self) -> None:
        return None

    async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
        self.prompts.append(list(prompt))
        self.params.append(params)
        ids = self.steps[min(prompt.count(CALL_ID), len(self.steps) - 1)]
        stop = next((i for i, token in enumerate(ids) if token in params.stop_token_ids), len(ids))
        ids = ids[: stop + 1]
        if params.max_tokens is not None:
            ids = ids[: params.max_tokens]
        try:
            for start in range(0, len(ids), self.chunk):
                await asyncio.sleep(0)
                yield Chunk(tuple(ids[start : start + self.chunk]))
        finally:
            self.closed += 1


class PythonTool:
    """The ``python`` namespace: answers ``42``; code ``slow`` sleeps, code ``gate`` waits
    for :attr:`gate`. Records each call, and whether its ``finally`` ran."""

    def __init__(self) -> None:
        self.calls: list[HostedCall] = []
        self.started = asyncio.Event()
        self.gate = asyncio.Event()
        self.unwound = 0
        self.cleaned: list[str] = []

    @property
    def namespace(self) -> ToolNamespaceConfig:
        return ToolNamespaceConfig.python()

    async def call(self, request: HostedCall) -> ToolResult:
        self.calls.append(request)
        self.started.set()
        try:
            if request.body == "slow":
                await asyncio.sleep(SLOW_S)
            elif request.body == "gate":
                await self.gate.wait()
            return ToolResult("42\n")
        finally:
            self.unwound += 1

    async def cancel(self, call_id: str, reason: str) -> None:
        self.cleaned.append(reason)


async def collect(loop: AgentLoop, params: SamplingParams = PARAMS, **options: Any) -> list[AgentEvent]:
    return [event async for event in loop.run(PROMPT, params, **options)]


def shape(events: list[AgentEvent]) -> list[tuple[str, int]]:
    """Each event's kind and step, runs of ``Sampled`` folded into one."""
    kinds: list[tuple[str, int]] = []
    for event in events:
        kind = (type(event).__name__, event.step)
        if not (kinds and kind == kinds[-1] and isinstance(event, Sampled)):
            kinds.append(kind)
    return kinds


def sampled_ids(events: list[AgentEvent], step: int | None = None) -> list[int]:
    return [
        token
        for event in events
        if isinstance(event, Sampled) and step in (None, event.step)
        for token in event.chunk.ids
    ]


def ends(events: list[AgentEvent]) -> list[StepEnd]:
    return [event.reason for event in events if isinstance(event, StepEnded)]


def test_a_python_call_runs_and_its_reply_is_rendered_into_the_next_prompt() -> None:
    engine, tool = StepEngine(STEP_CALL, FINAL), PythonTool()
    events = run(collect(AgentLoop(engine, ToolRouter([tool]))))

    assert shape(events) == [
        ("Sampled", 0),
        ("StepEnded", 0),
        ("HostedCallStarted", 0),
        ("HostedCallFinished", 0),
        ("NextStep", 1),
        ("Sampled", 1),
        ("StepEnded", 1),
    ]
    assert ends(events) == [StepEnd.HOSTED_CALL, StepEnd.FINAL]
    assert sampled_ids(events, 0) == STEP_CALL
    assert sampled_ids(events, 1) == FINAL
    # the tool got the code only, never the reasoning around it
    assert [(call.recipient, call.body, call.channel) for call in tool.calls] == [
        ("python", "print(6 * 7)", "analysis")
    ]
    reply = Message.tool_result("python", "42\n", channel="analysis")
    expected = RENDERER.completion_tokens([Message.user("What is 6 times 7?")])
    expected += STEP_CALL + RENDERER.completion_tokens([reply])
    assert engine.prompts == [PROMPT, expected]
    started = next(event for event in events if isinstance(event, HostedCallStarted))
    finished = next(event for event in events if isinstance(event, HostedCallFinished))
    assert finished.call == started.call == tool.calls[0]
    assert finished.result == ToolResult("42\n")
    assert RENDERER.message_tokens(finished.reply) == RENDERER.message_tokens(reply)
    last = events[-1]
    assert isinstance(last, StepEnded)
    assert [message.channel for message in last.messages] == ["analysis", "final"]
    assert last.messages[-1].text == "42"
    assert engine.closed == 2


def test_the_reply_goes_back_on_the_channel_of_the_call() -> None:
    step = completion(python_call("print(1)", channel="commentary"))
    engine = StepEngine(step, FINAL)
    run(collect(AgentLoop(engine, ToolRouter([PythonTool()]))))

    reply = RENDERER.completion_tokens([Message.tool_result("python", "42\n", channel="commentary")])
    assert engine.prompts[1] == PROMPT + step + reply


def test_a_client_function_call_ends_the_loop_and_runs_nothing() -> None:
    call = Message.assistant('{"city":"Paris"}', channel="commentary", recipient="functions.weather")
    engine, tool = StepEngine(completion(thought("Ask the client."), call), FINAL), PythonTool()
    events = run(collect(AgentLoop(engine, ToolRouter([tool]))))

    assert ends(events) == [StepEnd.CLIENT_CALL]
    assert not any(isinstance(event, HostedCallStarted) for event in events)
    assert tool.calls == [] and len(engine.prompts) == 1
    last = events[-1]
    assert isinstance(last, StepEnded) and last.messages[-1].recipient == "functions.weather"


def test_a_call_nobody_hosts_ends_the_loop_and_runs_nothing() -> None:
    call = Message.assistant('{"q":"x"}', channel="commentary", recipient="browser.search")
    engine, tool = StepEngine(completion(call), FINAL), PythonTool()
    events = run(collect(AgentLoop(engine, ToolRouter([tool]))))

    assert ends(events) == [StepEnd.UNKNOWN_CALL]
    assert tool.calls == [] and len(engine.prompts) == 1


def test_two_hosted_calls_take_two_steps_and_both_replies_reach_the_prompt() -> None:
    second = completion(python_call("print(7)", channel="commentary"))
    engine, tool = StepEngine(STEP_CALL, second, FINAL), PythonTool()
    events = run(collect(AgentLoop(engine, ToolRouter([tool]))))

    assert ends(events) == [StepEnd.HOSTED_CALL, StepEnd.HOSTED_CALL, StepEnd.FINAL]
    assert [call.body for call in tool.calls] == ["print(6 * 7)", "print(7)"]
    assert len({call.call_id for call in tool.calls}) == 2
    first_reply = RENDERER.completion_tokens([Message.tool_result("python", "42\n", channel="analysis")])
    second_reply = RENDERER.completion_tokens([Message.tool_result("python", "42\n", channel="commentary")])
    assert engine.prompts[2] == PROMPT + STEP_CALL + first_reply + second + second_reply
    assert sampled_ids(events) == STEP_CALL + second + FINAL


def test_a_call_past_its_deadline_replies_with_the_timeout_and_the_loop_goes_on() -> None:
    engine, tool = StepEngine(completion(python_call("slow")), FINAL), PythonTool()
    router = ToolRouter([tool], default_deadline_ms=20)
    events = run(collect(AgentLoop(engine, router)))

    assert ends(events) == [StepEnd.HOSTED_CALL, StepEnd.FINAL]
    finished = next(event for event in events if isinstance(event, HostedCallFinished))
    assert finished.result.error is not None and finished.result.error.code == "E-TOOL-TIMEOUT"
    assert finished.reply.text.startswith("E-TOOL-TIMEOUT: ")
    assert engine.prompts[1][-len(RENDERER.completion_tokens([finished.reply])) :] == (
        RENDERER.completion_tokens([finished.reply])
    )
    assert "E-TOOL-TIMEOUT" in RENDERER.encoding.decode(engine.prompts[1])
    assert tool.unwound == 1 and len(tool.cleaned) == 1


def test_cancelling_the_loop_during_a_slow_call_cancels_the_call() -> None:
    async def scenario() -> None:
        engine, tool = StepEngine(completion(python_call("gate")), FINAL), PythonTool()
        router = ToolRouter([tool])
        seen: list[AgentEvent] = []

        async def drive() -> None:
            async for event in AgentLoop(engine, router).run(PROMPT, PARAMS):
                seen.append(event)

        task = asyncio.create_task(drive())
        await tool.started.wait()
        assert router.running != ()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert tool.unwound == 1 and len(tool.cleaned) == 1
        assert router.running == ()
        assert not tool.gate.is_set()
        assert isinstance(seen[-1], HostedCallStarted)
        assert len(engine.prompts) == 1

    run(scenario())


def test_closing_the_iterator_while_sampling_closes_the_engine_stream() -> None:
    async def scenario() -> None:
        engine = StepEngine(FINAL, chunk=1)
        events = AgentLoop(engine, ToolRouter([PythonTool()])).run(PROMPT, PARAMS)
        first = await anext(events)
        assert isinstance(first, Sampled)
        await events.aclose()
        assert engine.closed == 1  # at once, not when the event loop shuts down

    run(scenario())


def test_the_output_budget_spans_the_steps() -> None:
    engine, tool = StepEngine(STEP_CALL, FINAL), PythonTool()
    budget = len(STEP_CALL) + 3
    events = run(collect(AgentLoop(engine, ToolRouter([tool])), replace(PARAMS, max_tokens=budget)))

    assert [params.max_tokens for params in engine.params] == [budget, 3]
    assert ends(events) == [StepEnd.HOSTED_CALL, StepEnd.LENGTH]
    assert sampled_ids(events) == STEP_CALL + FINAL[:3]


def test_a_budget_spent_on_the_call_leaves_it_unrun() -> None:
    engine, tool = StepEngine(STEP_CALL, FINAL), PythonTool()
    events = run(collect(AgentLoop(engine, ToolRouter([tool])), replace(PARAMS, max_tokens=len(STEP_CALL))))

    assert ends(events) == [StepEnd.LENGTH]
    assert sampled_ids(events) == STEP_CALL
    assert tool.calls == [] and len(engine.prompts) == 1


def test_a_budget_cut_inside_the_call_runs_nothing() -> None:
    engine, tool = StepEngine(STEP_CALL, FINAL), PythonTool()
    events = run(
        collect(AgentLoop(engine, ToolRouter([tool])), replace(PARAMS, max_tokens=len(STEP_CALL) - 1))
    )

    assert ends(events) == [StepEnd.LENGTH]
    assert tool.calls == []


def test_tool_replies_count_against_the_context_window_not_the_output_budget() -> None:
    engine, tool = StepEngine(STEP_CALL, FINAL), PythonTool()
    reply = RENDERER.completion_tokens([Message.tool_result("python", "42\n", channel="analysis")])
    window = len(PROMPT) + len(STEP_CALL) + len(reply) + 5
    loop = AgentLoop(engine, ToolRouter([tool]), context_length=window)
    events = run(collect(loop, replace(PARAMS, max_tokens=len(STEP_CALL) + 100)))

    assert [params.max_tokens for params in engine.params] == [len(STEP_CALL) + len(reply) + 5, 5]
    assert ends(events) == [StepEnd.HOSTED_CALL, StepEnd.LENGTH]


def test_the_step_bound_ends_the_loop_with_the_last_call_unrun() -> None:
    engine, tool = StepEngine(STEP_CALL), PythonTool()
    events = run(collect(AgentLoop(engine, ToolRouter([tool]), max_steps=2)))

    assert ends(events) == [StepEnd.HOSTED_CALL, StepEnd.MAX_STEPS]
    assert len(tool.calls) == 1 and len(engine.prompts) == 2
    assert sampled_ids(events) == STEP_CALL + STEP_CALL


def test_max_tool_calls_ends_the_loop_with_the_call_unrun() -> None:
    engine, tool = StepEngine(STEP_CALL), PythonTool()
    budget = CallBudget(1)
    events = run(collect(AgentLoop(engine, ToolRouter([tool]), budget=budget)))

    assert ends(events) == [StepEnd.HOSTED_CALL, StepEnd.MAX_TOOL_CALLS]
    assert len(tool.calls) == 1 and budget.used == 1


def test_params_for_sets_each_steps_settings_under_the_loops_budget() -> None:
    engine = StepEngine(STEP_CALL, FINAL)
    forced = replace(PARAMS, temperature=0.0, max_tokens=7)

    def params_for(step: int) -> SamplingParams:
        return forced if step == 0 else PARAMS

    run(
        collect(
            AgentLoop(engine, ToolRouter([PythonTool()])),
            replace(PARAMS, max_tokens=500),
            params_for=params_for,
        )
    )
    assert [params.temperature for params in engine.params] == [0.0, 1.0]
    assert [params.max_tokens for params in engine.params] == [500, 500 - len(STEP_CALL)]


def test_a_chunk_running_past_the_stop_token_is_cut_there() -> None:
    class Overrun(StepEngine):
        async def generate(self, prompt: Sequence[int], params: SamplingParams) -> AsyncIterator[Chunk]:
            self.prompts.append(list(prompt))
            ids = (*FINAL, 1, 2)
            yield Chunk(ids, tuple(TokenLogprob(token, -1.0) for token in ids))

    events = run(collect(AgentLoop(Overrun(), ToolRouter([PythonTool()])), PARAMS))

    chunk = next(event.chunk for event in events if isinstance(event, Sampled))
    assert list(chunk.ids) == FINAL and chunk.logprobs is not None and len(chunk.logprobs) == len(FINAL)
    assert ends(events) == [StepEnd.FINAL]


def test_max_steps_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        AgentLoop(StepEngine(FINAL), ToolRouter(), max_steps=0)
