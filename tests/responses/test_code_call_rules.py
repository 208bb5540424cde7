"""The code interpreter (gpt-oss's built-in ``python``) under what a request constrains:
the system message describes it only where ``tool_choice`` lets the model call it (with
the server's timeout), the grammar of the first step forces it where the choice does and
the later steps' grammar leaves it to the model, and the check after parsing takes a
python call as a hosted call whose input is any text."""

from __future__ import annotations

from typing import Any

import pytest

from openchatml import Message, Renderer
from openchatml.engines.base import SamplingParams
from openchatml.responses.call_rules import CallRules, later_steps
from openchatml.responses.code_calls import CodeCalls
from openchatml.responses.dialect import constrained, step_params
from openchatml.responses.grammar import ModelFormat, response_grammar
from openchatml.responses.input import PromptSettings, system_message
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.runner import Prepared
from openchatml.responses.stream import EventBuilder
from openchatml.templates.grammar import Trigger

PYTHON = {"type": "code_interpreter", "container": {"type": "auto"}}
TIME = {"type": "function", "name": "get_time", "parameters": {"type": "object", "properties": {}}}
FORCED = {"type": "code_interpreter"}
ONLY_TIME = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "get_time"}]}


def request(choice: Any = "auto", tools: list[Any] | None = None) -> Any:
    return parse_request({"input": "6 * 7?", "tools": tools or [PYTHON, TIME], "tool_choice": choice})


@pytest.mark.parametrize(
    ("choice", "described"),
    [("auto", True), ("required", True), (FORCED, True), ("none", False), (ONLY_TIME, False)],
)
def test_the_system_message_describes_python_where_it_may_be_called(choice: Any, described: bool) -> None:
    (content,) = system_message(request(choice), PromptSettings(python_timeout=30)).content
    tools = getattr(content, "tools", None) or {}
    assert ("python" in tools) is described
    if described:
        description = tools["python"].description
        assert "time out after 30.0 seconds" in description and "120.0" not in description


def test_a_forced_python_call_is_forced_once() -> None:
    forced = request(FORCED)
    rules = CallRules.of(forced)
    assert rules is not None and (rules.mode, rules.allowed) == ("required", frozenset({"python"}))
    assert rules.refusal("python", "print(6 * 7)\n") == ""  # any text: no JSON check
    assert "does not allow" in rules.refusal("get_time", "{}")
    assert rules.unmet(0)
    later = rules.after_first_step(forced)
    assert (later.mode, later.allowed) == ("auto", frozenset({"python", "get_time"}))
    assert later_steps(forced).tool_choice == "auto"


def test_none_refuses_a_python_call_and_allowed_tools_keep_their_list() -> None:
    rules = CallRules.of(request("none"))
    assert rules is not None and "'none'" in rules.name_refusal("python")
    only = request({"type": "allowed_tools", "mode": "required", "tools": [FORCED]})
    assert later_steps(only).tool_choice.mode == "auto"
    assert CallRules.of(later_steps(only)).allowed == frozenset({"python"})  # type: ignore[union-attr]
    kept = request(ONLY_TIME)
    assert later_steps(kept) is kept


def test_the_first_step_is_forced_and_the_later_ones_are_not() -> None:
    forced = request(FORCED)
    grammar = response_grammar(forced, ModelFormat())
    assert grammar is not None and grammar.tools == ("python",) and not grammar.lazy
    prepared = Prepared([1, 2], SamplingParams(max_tokens=400, grammar=grammar))
    params_for = step_params(prepared, forced)
    assert params_for(0) is prepared.params
    later = params_for(1).grammar
    assert later is not None and later.lazy and set(later.tools) == {"get_time", "python"}
    assert Trigger(" to=python") in later.triggers
    assert params_for(2) is params_for(1)  # compiled once
    auto = request("auto")
    assert step_params(prepared, auto)(3) is prepared.params


def test_python_alone_is_constrained_under_auto_and_not_under_none() -> None:
    grammar = constrained(
        Prepared([1], SamplingParams()), request("auto", [PYTHON]), ModelFormat()
    ).params.grammar
    assert grammar is not None and grammar.tools == ("python",) and grammar.lazy
    refusing = response_grammar(request("none", [PYTHON]), ModelFormat())
    assert refusing is not None and refusing.tools == ()  # the answer only


def _events(choice: Any, *messages: Message) -> list[dict[str, Any]]:
    """The events of a response whose model wrote ``messages`` (ending in a call left
    unrun), under the rules of ``tool_choice``."""
    forced = request(choice)
    state = ResponseState("resp_1", forced, "m")
    python = CodeCalls(state.output, "c1", offered=forced.code_interpreter is not None, outputs=False)
    stream = EventBuilder(state, rules=CallRules.of(forced), hosted=[python])
    ids = [t for m in messages for t in Renderer().message_tokens(m)][2:]
    return [event.to_json() for event in stream.begin() + stream.feed(ids) + stream.finish("stop")]


CODE = Message.tool_call("python", "print(6 * 7)", channel="analysis", content_type="code", constrained=False)


def test_a_python_call_meets_a_forced_choice_and_breaks_none() -> None:
    forced = _events(FORCED, CODE)
    assert forced[-1]["type"] == "response.completed"  # the call met the requirement
    (item,) = forced[-1]["response"]["output"]
    assert item["type"] == "openai:code_interpreter_call" and item["container_id"] == "c1"
    refused = _events("none", CODE)
    assert refused[-1]["type"] == "response.failed"
    assert refused[-1]["response"]["error"]["code"] == "invalid_tool_call"
    assert not [e for e in refused if "code_interpreter" in e["type"]]  # nothing of it shown
    assert refused[-1]["response"]["output"] == []
