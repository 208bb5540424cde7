"""The tool router: dispatch by recipient, concurrent calls in call order, deadlines,
cancellation, budgets, refused calls, and the reply envelope.

The fake tools wait on gates the tests open, and record what happened to them (started,
finished, unwound, told to clean up), so every test decides the order things happen in
and asserts that order, never a time. Each test runs under a generous overall bound.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openchatml.core.content import ToolDescription, ToolNamespaceConfig
from openchatml.core.errors import CallSchemaError
from openchatml.core.messages import Message, Role
from openchatml.core.ocm_events import OcmToolCancel
from openchatml.core.parse import parse_text
from openchatml.core.render import Profile
from openchatml.tools import (
    CallBudget,
    HostedCall,
    LogOutput,
    Provenance,
    Route,
    Tool,
    ToolCallDone,
    ToolCallStarted,
    ToolEvent,
    ToolFailure,
    ToolResult,
    ToolRouter,
    plain_reply,
    read_reply_envelope,
    reply_envelope,
    reply_message,
)

BOUND_S = 30.0
"""Every test's overall bound: far above what it needs, there only to fail a hang."""

SLOW_S = 3600.0
"""A sleep no test waits out: a call that returns did not sleep it through."""

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine`` run to its end in a fresh event loop, within :data:`BOUND_S`."""
    return asyncio.run(asyncio.wait_for(coroutine, BOUND_S))


def namespace(name: str, *tools: str) -> ToolNamespaceConfig:
    """A namespace ``name`` with tools ``tools`` (none: the namespace is the tool)."""
    return ToolNamespaceConfig(name, f"The {name} tool.", tuple(ToolDescription(t) for t in tools))


class EchoTool:
    """Answers with the call's body, stamped with a provenance."""

    def __init__(self, config: ToolNamespaceConfig | None = None) -> None:
        self._namespace = config or namespace("echo")
        self.calls: list[HostedCall] = []

    @property
    def namespace(self) -> ToolNamespaceConfig:
        return self._namespace

    async def call(self, request: HostedCall) -> ToolResult:
        self.calls.append(request)
        return ToolResult(request.body, provenance=Provenance("echo://"))

    async def cancel(self, call_id: str, reason: str) -> None:
        return None


class GateTool:
    """Each call waits for its gate (or sleeps :data:`SLOW_S`), recording its life:
    ``started``, ``unwound`` (its ``finally`` ran) and ``cleaned`` (``cancel`` was called)."""

    def __init__(self, name: str = "gate") -> None:
        self._namespace = namespace(name)
        self.gates: dict[str, asyncio.Event] = {}
        self.started: dict[str, asyncio.Event] = {}
        self.unwound: set[str] = set()
        self.cleaned: dict[str, str] = {}

    @property
    def namespace(self) -> ToolNamespaceConfig:
        return self._namespace

    def gate(self, call_id: str) -> asyncio.Event:
        return self.gates.setdefault(call_id, asyncio.Event())

    def started_event(self, call_id: str) -> asyncio.Event:
        return self.started.setdefault(call_id, asyncio.Event())

    async def call(self, request: HostedCall) -> ToolResult:
        self.started_event(request.call_id).set()
        try:
            if request.body == "slow":
                await asyncio.sleep(SLOW_S)
            else:
                await self.gate(request.call_id).wait()
            return ToolResult(request.body)
        finally:
            self.unwound.add(request.call_id)

    async def cancel(self, call_id: str, reason: str) -> None:
        self.cleaned[call_id] = reason


class BrokenTool:
    """Fails in the way its call's body names: ``raise``, ``ocm`` or ``nonsense``."""

    @property
    def namespace(self) -> ToolNamespaceConfig:
        return namespace("broken")

    async def call(self, request: HostedCall) -> ToolResult:
        if request.body == "raise":
            raise RuntimeError("backend down")
        if request.body == "ocm":
            raise CallSchemaError("query is required")
        return "nonsense"  # type: ignore[return-value]

    async def cancel(self, call_id: str, reason: str) -> None:
        raise RuntimeError("cleanup broke too")


class StubbornTool:
    """Swallows its task's cancellation once and goes on a little: a misbehaving tool."""

    @property
    def namespace(self) -> ToolNamespaceConfig:
        return namespace("stubborn")

    async def call(self, request: HostedCall) -> ToolResult:
        try:
            await asyncio.sleep(SLOW_S)
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)
        return ToolResult("too late")

    async def cancel(self, call_id: str, reason: str) -> None:
        return None


def call(recipient: str, call_id: str, body: str = "", **fields: Any) -> HostedCall:
    return HostedCall(recipient, call_id, body, **fields)


async def wait_started(tool: GateTool, *call_ids: str) -> None:
    await asyncio.gather(*(tool.started_event(i).wait() for i in call_ids))


# --- the protocol and the call ---------------------------------------------------------------


def test_fakes_and_builtins_satisfy_the_protocol() -> None:
    for tool in (EchoTool(), GateTool(), BrokenTool(), StubbornTool()):
        assert isinstance(tool, Tool)


def test_a_call_holds_the_call_body_only_never_the_reasoning() -> None:
    text = (
        "<|start|>assistant<|channel|>analysis<|message|>Let me look up the weather.<|end|>"
        "<|start|>assistant to=browser.search<|channel|>analysis<|constrain|>json<|message|>"
        '{"query": "weather Tokyo", "deadline_ms": 2500}<|call|>'
    )
    reasoning, message = parse_text(text)
    assert reasoning.channel == "analysis"
    made = HostedCall.from_message(message, call_id="c1")
    assert made == HostedCall(
        "browser.search",
        "c1",
        '{"query": "weather Tokyo", "deadline_ms": 2500}',
        channel="analysis",
        content_type="json",
        deadline_ms=2500,
    )
    assert "weather." not in made.body
    assert (made.namespace, made.tool_name) == ("browser", "search")
    assert made.arguments() == {"query": "weather Tokyo", "deadline_ms": 2500}


def test_a_call_keeps_the_messages_call_id_or_gets_a_fresh_one() -> None:
    with_id = Message.tool_call("functions.f", "{}", call_id="wx1")
    assert HostedCall.from_message(with_id, call_id="other").call_id == "wx1"
    first = HostedCall.from_message(Message.tool_call("python", "print(1)", content_type=None))
    second = HostedCall.from_message(Message.tool_call("python", "print(1)", content_type=None))
    assert first.call_id and second.call_id and first.call_id != second.call_id
    assert (first.namespace, first.tool_name, first.deadline_ms) == ("python", "", None)


@pytest.mark.parametrize(
    "body", ['{"deadline_ms": 0}', '{"deadline_ms": true}', '{"deadline_ms": "5"}', "[1]", "deadline_ms"]
)
def test_only_a_positive_integer_deadline_counts(body: str) -> None:
    assert HostedCall.from_message(Message.tool_call("echo", body)).deadline_ms is None


def test_a_message_that_is_not_a_call_is_refused() -> None:
    with pytest.raises(CallSchemaError):
        HostedCall.from_message(Message.assistant("hello"))
    with pytest.raises(CallSchemaError):
        call("echo", "c", "[1, 2]").arguments()
    with pytest.raises(CallSchemaError):
        call("echo", "c", "{nope").arguments()
    assert call("echo", "c", "  ").arguments() == {}


# --- routing -------------------------------------------------------------------------------


def test_recipients_route_to_hosted_tools_the_client_or_nobody() -> None:
    router = ToolRouter(
        [EchoTool(ToolNamespaceConfig.browser()), EchoTool(ToolNamespaceConfig.python()), GateTool("docs")]
    )
    assert router.route("browser.search") is Route.HOSTED
    assert router.route("browser.open") is Route.HOSTED
    assert router.route("browser.find") is Route.HOSTED
    assert router.route("browser.delete") is Route.UNKNOWN
    assert router.route("python") is Route.HOSTED
    assert router.route("docs") is Route.HOSTED
    assert router.route("functions.get_weather") is Route.CLIENT
    assert router.route("nowhere.tool") is Route.UNKNOWN
    assert set(router.namespaces) == {"browser", "python", "docs"}
    assert router.namespaces["browser"] is ToolNamespaceConfig.browser()


def test_namespaces_register_at_run_time() -> None:
    router = ToolRouter()
    label = EchoTool(namespace("docs_server", "lookup"))
    assert router.route("docs_server.lookup") is Route.UNKNOWN
    router.register(label)
    assert router.route("docs_server.lookup") is Route.HOSTED
    assert run(router.run_one(call("docs_server.lookup", "c1", "{}"))).ok
    with pytest.raises(ValueError, match="already registered"):
        router.register(EchoTool(namespace("docs_server")))
    with pytest.raises(ValueError, match="client"):
        router.register(EchoTool(namespace("functions")))
    with pytest.raises(ValueError, match="without dots"):
        router.register(EchoTool(namespace("a.b")))
    assert router.unregister("docs_server") is label
    assert router.route("docs_server.lookup") is Route.UNKNOWN


def test_unknown_and_client_recipients_get_typed_failures_not_exceptions() -> None:
    echo = EchoTool()
    router = ToolRouter([echo])
    results = run(
        router.run([call("nowhere", "a"), call("functions.get_weather", "b", "{}"), call("echo", "c", "hi")])
    )
    assert [r.error.code if r.error else None for r in results] == [
        "E-CALL-SCHEMA",
        "E-TOOL-NOT-HOSTED",
        None,
    ]
    assert "nowhere" in results[0].error.message  # type: ignore[union-attr]
    assert results[2].content == "hi"
    assert [c.call_id for c in echo.calls] == ["c"]


def test_builtins_may_be_called_from_analysis_other_tools_from_commentary_only() -> None:
    router = ToolRouter([EchoTool(ToolNamespaceConfig.python()), EchoTool(namespace("docs", "lookup"))])
    results = run(
        router.run(
            [
                call("python", "a", "1", channel="analysis"),
                call("python", "b", "2", channel="commentary"),
                call("docs.lookup", "c", "3", channel="commentary"),
                call("docs.lookup", "d", "4", channel="analysis"),
                call("python", "e", "5", channel="final"),
                call("docs.lookup", "f", "6", channel=None),
            ]
        )
    )
    assert [r.ok for r in results] == [True, True, True, False, False, True]
    refused = ToolFailure("E-CALL-SCHEMA", "docs.lookup cannot be called on the analysis channel")
    assert results[3].error == refused


def test_a_call_id_already_running_is_refused() -> None:
    async def scenario() -> list[ToolResult]:
        gate = GateTool()
        router = ToolRouter([gate])
        turn = asyncio.create_task(router.run([call("gate", "x", "first"), call("gate", "x", "second")]))
        await wait_started(gate, "x")
        gate.gate("x").set()
        return await turn

    first, second = run(scenario())
    assert first.content == "first"
    assert second.error is not None and second.error.code == "E-CALL-SCHEMA"


def test_tools_that_break_give_failed_results_and_spare_the_other_calls() -> None:
    router = ToolRouter([BrokenTool(), EchoTool()])
    results = run(
        router.run(
            [
                call("broken", "a", "raise"),
                call("broken", "b", "ocm"),
                call("broken", "c", "nonsense"),
                call("echo", "d", "fine"),
            ]
        )
    )
    assert results[0].error == ToolFailure("E-TOOL-FAILED", "broken failed: RuntimeError: backend down")
    assert results[1].error == ToolFailure("E-CALL-SCHEMA", "query is required")
    assert results[2].error is not None and results[2].error.code == "E-TOOL-FAILED"
    assert results[3] == ToolResult("fine", provenance=Provenance("echo://"))


# --- concurrency ------------------------------------------------------------------------------


def test_calls_of_one_turn_run_concurrently_and_answer_in_call_order() -> None:
    async def scenario() -> tuple[list[ToolResult], list[ToolEvent]]:
        events: list[ToolEvent] = []
        gate = GateTool()
        router = ToolRouter([gate], on_event=events.append)
        turn = asyncio.create_task(router.run([call("gate", "a", "A"), call("gate", "b", "B")]))
        await wait_started(gate, "a", "b")
        assert not gate.unwound
        assert set(router.running) == {"a", "b"}
        gate.gate("b").set()
        while "b" not in gate.unwound:
            await asyncio.sleep(0)
        gate.gate("a").set()
        return await turn, events

    results, events = run(scenario())
    assert [r.content for r in results] == ["A", "B"]
    kinds = [(type(e).__name__, e.call_id) for e in events]
    assert kinds == [
        ("ToolCallStarted", "a"),
        ("ToolCallStarted", "b"),
        ("ToolCallDone", "b"),
        ("ToolCallDone", "a"),
    ]


@given(st.permutations(range(6)).flatmap(lambda p: st.tuples(st.just(p), st.integers(1, 6))))
def test_results_come_in_call_order_whatever_the_completion_order(case: tuple[list[int], int]) -> None:
    permutation, size = case
    order = [i for i in permutation if i < size]

    async def scenario() -> tuple[list[ToolResult], list[str]]:
        done: list[str] = []
        finished = asyncio.Event()

        def record(event: ToolEvent) -> None:
            if isinstance(event, ToolCallDone):
                done.append(event.call_id)
                finished.set()

        gate = GateTool()
        router = ToolRouter([gate], on_event=record)
        ids = [f"call{i}" for i in range(size)]
        turn = asyncio.create_task(router.run([call("gate", i, i.upper()) for i in ids]))
        await wait_started(gate, *ids)
        for index in order:
            finished.clear()
            gate.gate(ids[index]).set()
            await finished.wait()
        return await turn, done

    results, done = run(scenario())
    assert done == [f"call{i}" for i in order]
    assert [r.content for r in results] == [f"CALL{i}" for i in range(size)]


# --- deadlines and cancellation -------------------------------------------------------------


def test_a_call_past_its_deadline_times_out_and_its_task_is_cancelled() -> None:
    events: list[ToolEvent] = []
    gate = GateTool()
    router = ToolRouter([gate], on_event=events.append)
    result = run(router.run_one(call("gate", "t1", "slow", deadline_ms=20)))
    assert result.error == ToolFailure("E-TOOL-TIMEOUT", "gate ran past its deadline of 20 ms")
    assert gate.unwound == {"t1"}
    assert gate.cleaned == {"t1": "deadline of 20 ms exceeded"}
    assert OcmToolCancel("t1", "deadline of 20 ms exceeded") in events
    assert router.running == ()


def test_the_deadline_comes_from_the_body_the_default_and_the_cap() -> None:
    gate = GateTool()
    from_body = HostedCall.from_message(Message.tool_call("gate", '{"deadline_ms": 15}'))
    assert from_body.deadline_ms == 15
    router = ToolRouter([gate], default_deadline_ms=None)
    assert run(router.run_one(from_body)).error == ToolFailure(
        "E-TOOL-TIMEOUT", "gate ran past its deadline of 15 ms"
    )
    router = ToolRouter([gate], default_deadline_ms=25)
    assert "of 25 ms" in run(router.run_one(call("gate", "d", "slow"))).error.message  # type: ignore[union-attr]
    router = ToolRouter([gate], default_deadline_ms=None, max_deadline_ms=30)
    capped = run(router.run_one(call("gate", "c", "slow", deadline_ms=10_000_000)))
    assert capped.error == ToolFailure("E-TOOL-TIMEOUT", "gate ran past its deadline of 30 ms")
    assert gate.unwound >= {"d", "c"}


def test_cancel_lands_during_a_slow_call() -> None:
    async def scenario() -> tuple[ToolResult, list[ToolEvent], GateTool, bool, bool]:
        events: list[ToolEvent] = []
        gate = GateTool()
        router = ToolRouter([gate], on_event=events.append)
        turn = asyncio.create_task(router.run([call("gate", "slow1", "slow"), call("gate", "fast", "ok")]))
        await wait_started(gate, "slow1", "fast")
        assert router.cancel("nope", "no such call") is False
        cancelled = router.cancel("slow1", "user pressed stop")
        gate.gate("fast").set()
        slow, fast = await turn
        assert fast.content == "ok"
        return slow, events, gate, cancelled, router.cancel("slow1", "again")

    slow, events, gate, cancelled, again = run(scenario())
    assert cancelled and not again
    assert slow.error == ToolFailure("E-TOOL-CANCELLED", "gate was cancelled: user pressed stop")
    assert "slow1" in gate.unwound
    assert gate.cleaned == {"slow1": "user pressed stop"}
    cancels = [e for e in events if isinstance(e, OcmToolCancel)]
    assert cancels == [OcmToolCancel("slow1", "user pressed stop")]
    assert cancels[0].to_dict() == {"type": "tool.cancel", "call_id": "slow1", "reason": "user pressed stop"}


def test_cancel_all_stops_every_running_call() -> None:
    async def scenario() -> tuple[list[ToolResult], int, GateTool]:
        gate = GateTool()
        router = ToolRouter([gate])
        turn = asyncio.create_task(router.run([call("gate", "a", "slow"), call("gate", "b", "slow")]))
        await wait_started(gate, "a", "b")
        count = router.cancel_all("shutting down")
        return await turn, count, gate

    results, count, gate = run(scenario())
    assert count == 2
    assert [r.error.code if r.error else None for r in results] == ["E-TOOL-CANCELLED"] * 2
    assert gate.unwound == {"a", "b"}
    assert gate.cleaned == {"a": "shutting down", "b": "shutting down"}


def test_cancelling_the_turn_stops_its_calls() -> None:
    async def scenario() -> GateTool:
        gate = GateTool()
        router = ToolRouter([gate])
        turn = asyncio.create_task(router.run([call("gate", "a", "slow"), call("gate", "b", "slow")]))
        await wait_started(gate, "a", "b")
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert router.running == ()
        return gate

    gate = run(scenario())
    assert gate.unwound == {"a", "b"}
    assert set(gate.cleaned) == {"a", "b"}


def test_a_tool_that_ignores_cancellation_is_not_waited_for_past_the_cleanup_bound() -> None:
    router = ToolRouter([StubbornTool(), BrokenTool()], cleanup_timeout_s=0.01)
    result = run(router.run_one(call("stubborn", "s", deadline_ms=10)))
    assert result.error is not None and result.error.code == "E-TOOL-TIMEOUT"


def test_a_failing_cleanup_does_not_escape() -> None:
    class MessyTool(GateTool):
        async def cancel(self, call_id: str, reason: str) -> None:
            raise RuntimeError("cleanup broke")

    async def scenario() -> tuple[ToolResult, MessyTool]:
        messy = MessyTool()
        router = ToolRouter([messy])
        turn = asyncio.create_task(router.run_one(call("gate", "x", "slow")))
        await wait_started(messy, "x")
        assert router.cancel("x", "stop")
        return await turn, messy

    result, messy = run(scenario())
    assert result.error == ToolFailure("E-TOOL-CANCELLED", "gate was cancelled: stop")
    assert messy.unwound == {"x"}


# --- max_tool_calls ----------------------------------------------------------------------------


def test_the_budget_counts_hosted_calls_across_turns() -> None:
    echo = EchoTool()
    router = ToolRouter([echo])
    budget = CallBudget(3)
    first = run(router.run([call("echo", "a"), call("nowhere", "x"), call("echo", "b")], budget=budget))
    assert [r.ok for r in first] == [True, False, True]
    assert budget.remaining == 1
    second = run(router.run([call("echo", "c"), call("echo", "d")], budget=budget))
    assert second[0].ok
    assert second[1].error == ToolFailure("E-TOOL-LIMIT", "max_tool_calls (3) reached")
    assert [c.call_id for c in echo.calls] == ["a", "b", "c"]
    assert CallBudget().remaining is None and CallBudget().take()


# --- the reply ----------------------------------------------------------------------------------


def test_the_reply_envelope_has_the_fields_the_spec_lists() -> None:
    result = ToolResult(
        "20 °C and sunny",
        provenance=Provenance("https://weather.example/tokyo", "2025-08-08T12:00:00Z"),
        outputs=(LogOutput("fetched"),),
    )
    envelope = json.loads(reply_envelope(result))
    assert envelope == {
        "ok": True,
        "content": "20 °C and sunny",
        "error": None,
        "provenance": {"source": "https://weather.example/tokyo", "timestamp": "2025-08-08T12:00:00Z"},
    }
    failed = json.loads(reply_envelope(ToolResult(error=ToolFailure("E-TOOL-TIMEOUT", "too slow"))))
    assert failed == {
        "ok": False,
        "content": "",
        "error": {"code": "E-TOOL-TIMEOUT", "message": "too slow"},
        "provenance": None,
    }


texts = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(["<|start|>", '{"a": 1}', ""])
maybe_texts = st.none() | texts
failures = st.none() | st.builds(ToolFailure, st.sampled_from(["E-TOOL-TIMEOUT", "E-TOOL-CANCELLED"]), texts)
provenances = st.none() | st.builds(Provenance, maybe_texts, maybe_texts, maybe_texts)


@given(st.builds(ToolResult, texts, failures, provenances))
def test_the_reply_envelope_round_trips(result: ToolResult) -> None:
    assert read_reply_envelope(reply_envelope(result)) == result


def test_an_envelope_with_structured_content_reads_as_json_text() -> None:
    result = read_reply_envelope('{"ok":true,"content":{"temperature":20,"sunny":true}}')
    assert result == ToolResult('{"temperature":20,"sunny":true}')
    assert read_reply_envelope('{"ok":false,"error":"boom"}').error == ToolFailure("E-TOOL-FAILED", "boom")
    for bad in ("not json", "[]", '{"ok": "yes"}'):
        with pytest.raises(Exception, match="E-BODY-CONSTRAINT-VIOLATION"):
            read_reply_envelope(bad)


def test_the_reply_message_answers_its_call_in_either_profile() -> None:
    made = call("browser.search", "c9", '{"query": "x"}', channel="analysis")
    result = ToolResult("partial", error=ToolFailure("E-TOOL-TIMEOUT", "too slow"))
    assert plain_reply(result) == "partial\nE-TOOL-TIMEOUT: too slow"
    assert plain_reply(ToolResult("all good")) == "all good"
    harmony = reply_message(made, result)
    assert harmony == Message.tool_result(
        "browser.search", "partial\nE-TOOL-TIMEOUT: too slow", call_id="c9", channel="analysis"
    )
    ocm = reply_message(made, result, Profile.OCM)
    assert json.loads(ocm.text)["error"] == {"code": "E-TOOL-TIMEOUT", "message": "too slow"}
    header = (ocm.role, ocm.name, ocm.call_id, ocm.recipient, ocm.channel)
    assert header == (Role.TOOL, "browser.search", "c9", "assistant", "analysis")


def test_events_say_who_started_and_finished() -> None:
    events: list[ToolEvent] = []
    router = ToolRouter([EchoTool()], on_event=events.append)
    run(router.run([call("echo", "e1", "x"), call("nowhere", "e2")]))
    assert events[0] == ToolCallStarted("e1", "echo")
    assert {type(e) for e in events[1:]} == {ToolCallDone}
    assert {e.call_id for e in events[1:]} == {"e1", "e2"}
