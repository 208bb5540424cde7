"""The tools the client runs (``local_shell``, ``shell``, ``apply_patch``), web search and the
computer tools, from request to prompt, calls out and calls in: which types are taken, how
the model is offered each, the items its calls become (with the events of each, whatever
the split of the ids), their outputs read back to the model, and the input item fields
clients send (``phase``, ``status``, ``id``, fields of their own)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from openapi import known, validate
from sdk import validate_openai_event
from test_dialect import GPT_OSS, QWEN3, qwen3_dialect, request_of
from test_stream import check

from openchatml import Message, Renderer
from openchatml.responses.call_rules import CallRules
from openchatml.responses.client_calls import CommandsReader
from openchatml.responses.errors import RequestError
from openchatml.responses.input import PromptSettings, build_conversation, item_messages
from openchatml.responses.replay import replay
from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.stream import EventBuilder
from openchatml.responses.tool_index import ToolIndex
from openchatml.responses.wire.dialects import WireDialect
from openchatml.responses.wire.items import (
    ApplyPatchCall,
    AssistantMessage,
    LocalShellCall,
    ShellCall,
    load_item,
)
from openchatml.responses.wire.resource import load_resource
from openchatml.responses.wire.tools import (
    OFFERED_TOOL_TYPES,
    REFUSED_TOOL_TYPES,
    UNOFFERED_TOOL_TYPES,
    ApplyPatchTool,
    LocalShellTool,
    ShellTool,
    ToolTypeChoice,
    WebSearchTool,
)

SHELL = {"type": "shell"}
LOCAL_SHELL = {"type": "local_shell"}
APPLY_PATCH = {"type": "apply_patch"}
CLIENT = [LOCAL_SHELL, SHELL, APPLY_PATCH]
WEB = {"type": "web_search", "search_context_size": "low", "user_location": {"type": "approximate"}}
SETTINGS = PromptSettings(current_date="2026-01-02")
DIFF = '@@\n-old line\n+new "line" é\n'
templates = pytest.mark.skipif(not (QWEN3.is_file() and GPT_OSS.is_file()), reason="no chat templates")


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "input": "Fix the build.", "tools": CLIENT, **fields}


def prompt(**fields: Any) -> str:
    request = parse_request(body(**fields))
    return Renderer().completion_text(build_conversation(request, request.items, settings=SETTINGS))


def said(*messages: Message) -> list[int]:
    renderer = Renderer()
    return [t for m in messages for t in renderer.message_tokens(m)][2:]


def call(name: str, arguments: Any) -> Message:
    return Message.tool_call(f"functions.{name}", json.dumps(arguments, separators=(",", ":")))


def events_of(
    ids: list[int], cuts: list[int] | None = None, *, hold: bool = False, **fields: Any
) -> list[Any]:
    """The typed events of ``ids`` fed in pieces cut at ``cuts``, under the request's rules."""
    request = parse_request(body(**fields))
    builder = EventBuilder(
        ResponseState("resp_1", request, "m"), rules=CallRules.of(request), hold_calls=hold
    )
    events = builder.begin()
    points = [0, *(cuts or []), len(ids)]
    for a, b in itertools.pairwise(points):
        events += builder.feed(ids[a:b])
    return events + builder.finish("stop")


def as_json(typed: list[Any]) -> list[dict[str, Any]]:
    if typed[-1].type != "response.failed":  # the SDK's error codes hold no invalid_tool_call
        for event in typed:
            validate_openai_event(event.to_json(WireDialect.OPENAI))
    return [event.to_json() for event in typed]


# --- which tool types are taken ------------------------------------------------------------


def test_the_type_lists_say_what_is_offered_accepted_and_refused() -> None:
    assert OFFERED_TOOL_TYPES == ("function", "custom", "namespace", "local_shell", "shell", "apply_patch")
    assert UNOFFERED_TOOL_TYPES == (
        "web_search",
        "web_search_2025_08_26",
        "web_search_preview",
        "web_search_preview_2025_03_11",
    )
    assert REFUSED_TOOL_TYPES == ("computer", "computer_use_preview")


def test_client_tools_and_web_search_are_kept_and_echoed() -> None:
    request = parse_request(body(tools=[*CLIENT, WEB, {"type": "web_search_preview"}]))
    assert [type(t) for t in request.client_tools] == [LocalShellTool, ShellTool, ApplyPatchTool]
    assert [type(t) for t in request.hosted_tools] == [WebSearchTool, WebSearchTool]
    assert [t.call_name for t in ToolIndex.of(request).tools] == ["local_shell", "shell", "apply_patch"]
    state = ResponseState("resp_1", request, "m")
    openai = state.to_json(WireDialect.OPENAI)["tools"]
    assert [t["type"] for t in openai] == [
        "local_shell",
        "shell",
        "apply_patch",
        "web_search",
        "web_search_preview",
    ]
    assert openai[3] == WEB
    assert [t["type"] for t in state.to_json()["tools"]][:2] == ["openai:local_shell", "openai:shell"]
    validate(known(state.to_json()), "ResponseResource")


@pytest.mark.parametrize("kind", ["computer_use_preview", "computer"])
def test_computer_tools_are_refused_saying_why(kind: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(body(tools=[SHELL, {"type": kind, "display_width": 1024, "environment": "linux"}]))
    error = caught.value
    assert (error.param, error.code) == ("tools[1].type", "unsupported_tool_type")
    assert "cannot see the screenshots" in error.message


@pytest.mark.parametrize("kind", ["file_search", "image_generation", "wat"])
def test_other_tool_types_stay_unsupported(kind: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(body(tools=[{"type": kind}]))
    assert (caught.value.param, caught.value.code) == ("tools[0].type", "unsupported_tool_type")


def test_an_mcp_tool_needs_its_server_label() -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(body(tools=[{"type": "mcp", "server_url": "https://mcp.example/mcp"}]))
    assert caught.value.param == "tools[0].server_label"


@pytest.mark.parametrize("container", [None, {"type": "auto"}, "cntr_abc"])
@pytest.mark.parametrize("choice", ["auto", "required", {"type": "code_interpreter"}])
def test_the_code_interpreter_is_taken_as_a_hosted_tool(container: Any, choice: Any) -> None:
    tool: dict[str, Any] = {"type": "code_interpreter"}
    if container is not None:
        tool["container"] = container
    request = parse_request(body(tools=[SHELL, tool], tool_choice=choice))
    assert request.code_interpreter is not None
    assert request.hosted_tools == (request.code_interpreter,)
    assert [t.type for t in request.all_tools][-1] == "openai:code_interpreter"


def test_only_one_code_interpreter_is_taken() -> None:
    tool = {"type": "code_interpreter", "container": {"type": "auto"}}
    with pytest.raises(RequestError) as caught:
        parse_request(body(tools=[tool, tool]))
    assert caught.value.param == "tools[1].type" and "Duplicate tool name" in caught.value.message


@pytest.mark.parametrize(
    ("tools", "param"),
    [
        ([SHELL, {"type": "function", "name": "shell"}], "tools[1].name"),
        ([{"type": "function", "name": "apply_patch"}, APPLY_PATCH], "tools[1].type"),
        ([SHELL, SHELL], "tools[1].type"),
    ],
)
def test_a_name_the_model_could_not_tell_apart_is_a_400(tools: list[Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(body(tools=tools))
    assert caught.value.param == param and "Duplicate tool name" in caught.value.message


# --- tool choice ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("choice", "selected"),
    [
        ({"type": "shell"}, ("required", ("shell",))),
        ({"type": "apply_patch"}, ("required", ("apply_patch",))),
        ({"type": "local_shell"}, ("required", ("local_shell",))),
        ({"type": "web_search_preview"}, ("none", ())),
        (
            {"type": "allowed_tools", "mode": "required", "tools": [SHELL, APPLY_PATCH]},
            ("required", ("shell", "apply_patch")),
        ),
        ({"type": "allowed_tools", "mode": "auto", "tools": [{"type": "web_search_preview"}]}, ("none", ())),
    ],
)
def test_tool_choices_of_the_client_tools(choice: dict[str, Any], selected: Any) -> None:
    request = parse_request(body(tools=[*CLIENT, {"type": "web_search_preview"}], tool_choice=choice))
    assert ToolIndex.of(request).selection(request.tool_choice) == selected
    assert ResponseState("resp_1", request, "m").to_json(WireDialect.OPENAI)["tool_choice"] == choice
    if "tools" not in choice:
        assert isinstance(request.tool_choice, ToolTypeChoice)


@pytest.mark.parametrize(
    ("tools", "choice", "param"),
    [
        ([SHELL], {"type": "apply_patch"}, "tool_choice.type"),
        ([SHELL], {"type": "web_search"}, "tool_choice.type"),
        ([SHELL], {"type": "computer_use_preview"}, "tool_choice.type"),
        ([SHELL], {"type": "allowed_tools", "tools": [LOCAL_SHELL]}, "tool_choice.tools[0]"),
        ([WEB], "required", "tool_choice"),
    ],
)
def test_a_choice_of_a_tool_not_given_is_a_400(tools: list[Any], choice: Any, param: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(body(tools=tools, tool_choice=choice))
    assert caught.value.param == param


# --- the prompt ----------------------------------------------------------------------------


def test_gpt_oss_is_offered_the_client_tools_as_functions_and_no_web_search() -> None:
    text = prompt(tools=[{"type": "function", "name": "get_time"}, *CLIENT, WEB])
    assert "namespace functions {\n\ntype get_time = () => any;\n\n// Runs a command on the user's" in text
    assert (
        "type local_shell = (_: {\n// The program and its arguments, one string each: "
        '["ls", "-la"].\ncommand: string[],\n'
    ) in text
    assert "type shell = (_: {\n// Shell command lines, run in order" in text
    kinds = '"create_file" | "update_file" | "delete_file"'
    assert f"type apply_patch = (_: {{\n// What to do with the file.\ntype: {kinds}," in text
    assert "web" not in text.lower()
    assert "## " not in prompt(tools=[WEB])


@templates
def test_a_template_model_is_offered_the_client_tools_as_functions() -> None:
    dialect = qwen3_dialect()
    request, conversation = request_of(input="Fix it.", tools=[*CLIENT, WEB])
    text = dialect.prepare(request, conversation, context_length=None).text or ""
    tools = [json.loads(line) for line in text.split("<tools>\n")[1].split("\n</tools>")[0].splitlines()]
    assert [t["function"]["name"] for t in tools] == ["local_shell", "shell", "apply_patch"]
    assert tools[1]["function"]["parameters"]["required"] == ["commands"]


# --- calls out -----------------------------------------------------------------------------


def test_a_shell_call_streams_its_commands_at_every_split() -> None:
    commands = ["ls -la", 'echo "hi" \\ é', ""]
    ids = said(Message.assistant("Look around.", channel="analysis"), call("shell", {"commands": commands}))
    for cut in range(0, len(ids) + 1, 3):
        events = as_json(events_of(ids, [cut]))
        final = check(events)
        (item,) = [i for i in final["output"] if i["type"] == "openai:shell_call"]
        assert item["action"]["commands"] == commands and item["status"] == "completed"
        added = [
            e["command_index"] for e in events if e["type"] == "openai:response.shell_call_command.added"
        ]
        done = [e["command"] for e in events if e["type"] == "openai:response.shell_call_command.done"]
        assert added == [0, 1, 2] and done == commands
        for index, command in enumerate(commands):
            deltas = [
                e["delta"] for e in events if e.get("command_index") == index and e["type"].endswith("delta")
            ]
            assert "".join(deltas) == command
        kinds = [e["type"] for e in events if e.get("output_index") == 1]
        assert kinds[0] == "response.output_item.added" and kinds[-1] == "response.output_item.done"
    one_by_one = as_json(events_of(ids, list(range(1, len(ids)))))
    assert len([e for e in one_by_one if e["type"].endswith("shell_call_command.delta")]) > 4


def test_local_shell_and_apply_patch_calls_show_once_complete() -> None:
    local = said(
        call("local_shell", {"command": ["ls", "-la"], "working_directory": "/tmp", "timeout_ms": 500})
    )
    events = as_json(events_of(local, [5]))
    final = check(events)
    (item,) = final["output"]
    assert item["type"] == "openai:local_shell_call"
    assert item["action"] == {
        "type": "exec",
        "command": ["ls", "-la"],
        "env": {},
        "timeout_ms": 500,
        "working_directory": "/tmp",
    }
    assert [e["type"] for e in events[2:-1]] == ["response.output_item.added", "response.output_item.done"]
    patch = said(call("apply_patch", {"type": "update_file", "path": "src/a.py", "diff": DIFF}))
    final = check(as_json(events_of(patch, [9])))
    (item,) = final["output"]
    assert item["type"] == "openai:apply_patch_call" and item["status"] == "completed"
    assert item["operation"] == {"type": "update_file", "path": "src/a.py", "diff": DIFF}
    delete = said(call("apply_patch", {"type": "delete_file", "path": "old.txt"}))
    (item,) = check(as_json(events_of(delete)))["output"]
    assert item["operation"] == {"type": "delete_file", "path": "old.txt"}


@pytest.mark.parametrize("hold", [False, True])
def test_calls_whose_arguments_break_the_tool_fail_the_response(hold: bool) -> None:
    for bad in (
        call("apply_patch", {"type": "rename_file", "path": "a"}),
        call("local_shell", {"command": "ls -la"}),
        call("shell", {"commands": [1, 2]}),
        Message.tool_call("functions.shell", "not json"),
    ):
        final = check(as_json(events_of(said(bad), hold=hold)))
        assert final["status"] == "failed" and final["error"]["code"] == "invalid_tool_call"
        assert all(i.get("status") != "completed" for i in final["output"])
    create = call("apply_patch", {"type": "create_file", "path": "a"})  # a created file needs its diff
    request = parse_request(body())
    builder = EventBuilder(ResponseState("resp_1", request, "m"))  # no rules: the item is the judge
    events = builder.begin() + builder.feed(said(create)) + builder.finish("stop")
    final = check(as_json(events))
    assert final["status"] == "failed" and final["output"] == []


def test_a_call_cut_short_is_dropped_or_incomplete() -> None:
    patch = said(call("apply_patch", {"type": "update_file", "path": "a", "diff": DIFF}))
    request = parse_request(body())
    builder = EventBuilder(ResponseState("resp_1", request, "m"), rules=CallRules.of(request))
    events = as_json(builder.begin() + builder.feed(patch[:-4]) + builder.finish("length"))
    final = check(events)
    assert final["status"] == "incomplete" and final["output"] == []
    shell = said(call("shell", {"commands": ["make", "make test"]}))
    builder = EventBuilder(ResponseState("resp_1", request, "m"), rules=CallRules.of(request))
    final = check(as_json(builder.begin() + builder.feed(shell[:-3]) + builder.finish("length")))
    (item,) = final["output"]
    assert item["status"] == "incomplete" and item["action"]["commands"] == ["make", "make test"]


def test_a_held_shell_call_shows_whole_once_checked() -> None:
    ids = said(call("shell", {"commands": ["ls", "pwd"]}))
    events = as_json(events_of(ids, list(range(1, len(ids))), hold=True))
    final = check(events)
    kinds = [e["type"] for e in events[2:-1]]
    assert kinds == ["response.output_item.added", "response.output_item.done"]
    assert final["output"][0]["action"]["commands"] == ["ls", "pwd"]


@templates
def test_a_template_model_calls_the_shell() -> None:
    dialect = qwen3_dialect()
    request, conversation = request_of(input="Look.", tools=CLIENT)
    prepared = dialect.prepare(request, conversation, context_length=None)
    tokenizer = dialect.tokenizer
    text = '<tool_call>\n{"name": "shell", "arguments": {"commands": ["ls", "cat \\"a b\\""]}}\n</tool_call>'
    ids = [*tokenizer.encode(text), tokenizer.markers["<|im_end|>"]]
    builder = EventBuilder(
        ResponseState("resp_1", request, "m"),
        parser=dialect.parser(request, prepared),
        vocabulary=tokenizer,
        rules=CallRules.of(request),
    )
    events = as_json(builder.begin() + [e for t in ids for e in builder.feed([t])] + builder.finish("stop"))
    final = check(events)
    assert [i["type"] for i in final["output"]] == ["openai:shell_call"]
    assert final["output"][0]["action"]["commands"] == ["ls", 'cat "a b"']
    done = [e["command"] for e in events if e["type"].endswith("shell_call_command.done")]
    assert done == ["ls", 'cat "a b"']


@pytest.mark.parametrize(
    ("arguments", "steps"),
    [
        ('{"commands": ["a", "b"]}', [("added", 0, ""), ("delta", 0, "a"), ("done", 0, "a"),
                                       ("added", 1, ""), ("delta", 1, "b"), ("done", 1, "b")]),
        ('{"timeout_ms": 5, "commands": ["x\\ny"]}',
         [("added", 0, ""), ("delta", 0, "x\ny"), ("done", 0, "x\ny")]),
        ('{"other": ["no"], "commands": []}', []),
        ('{"commands": ["cut', [("added", 0, ""), ("delta", 0, "cut"), ("done", 0, "cut")]),
    ],
)  # fmt: skip
def test_the_commands_reader_at_every_split(arguments: str, steps: list[Any]) -> None:
    for cut in range(len(arguments) + 1):
        reader = CommandsReader()
        got = reader.feed(arguments[:cut]) + reader.feed(arguments[cut:]) + reader.close()
        merged: list[Any] = []
        for step in got:
            if merged and step[0] == "delta" and merged[-1][0] == "delta":
                merged[-1] = ("delta", step[1], merged[-1][2] + step[2])
            else:
                merged.append(step)
        assert merged == steps, cut


# --- calls in ------------------------------------------------------------------------------

CALLS_AND_OUTPUTS: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the build."},
    {"type": "shell_call", "call_id": "c1", "action": {"commands": ["make"], "timeout_ms": 1000},
     "status": "completed", "environment": {"type": "local"}},
    {"type": "shell_call_output", "call_id": "c1", "max_output_length": 100,
     "output": [{"stdout": "ok\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0},
                 "created_by": "x"}]},
    {"type": "local_shell_call", "id": "lsh_1", "call_id": "c2", "status": "completed",
     "action": {"type": "exec", "command": ["ls"], "env": {"A": "1"}}},
    {"type": "local_shell_call_output", "id": "c2", "output": '{"output": "a.txt\\n"}'},
    {"type": "apply_patch_call", "call_id": "c3", "status": "completed",
     "operation": {"type": "create_file", "path": "a.txt", "diff": "+hi\n"}},
    {"type": "apply_patch_call_output", "call_id": "c3", "status": "failed", "output": "exists"},
    {"type": "local_shell_call", "id": "lsh_2", "call_id": "c4", "status": "in_progress",
     "action": {"type": "exec", "command": ["pwd"], "env": {}}},
    {"type": "function_call_output", "call_id": "c4", "output": "/tmp"},
]  # fmt: skip


def test_calls_and_outputs_given_back_are_read_to_the_model() -> None:
    text = prompt(input=CALLS_AND_OUTPUTS)
    assert (
        "<|start|>assistant to=functions.shell<|channel|>commentary <|constrain|>json<|message|>"
        '{"commands":["make"],"timeout_ms":1000}<|call|>'
        "<|start|>functions.shell to=assistant<|channel|>commentary<|message|>"
        '[{"stdout": "ok\\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]<|end|>'
    ) in text
    assert (
        "<|start|>assistant to=functions.local_shell<|channel|>commentary <|constrain|>json<|message|>"
        '{"command":["ls"],"env":{"A":"1"}}<|call|><|start|>functions.local_shell to=assistant'
        '<|channel|>commentary<|message|>{"output": "a.txt\\n"}<|end|>'
    ) in text
    assert (
        '{"type":"create_file","path":"a.txt","diff":"+hi\\n"}<|call|>'
        "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>Failed: exists<|end|>"
    ) in text
    assert "<|start|>functions.local_shell to=assistant<|channel|>commentary<|message|>/tmp<|end|>" in text
    request = parse_request(body(input=CALLS_AND_OUTPUTS))
    for item in request.items:
        assert load_item(item.to_json(WireDialect.OPENAI)) == item
        assert load_item(item.to_json()) == item


@pytest.mark.parametrize(
    ("item", "param"),
    [
        ({"type": "shell_call_output", "call_id": "nope", "output": []}, "input[1].call_id"),
        ({"type": "local_shell_call_output", "id": "nope", "output": "{}"}, "input[1].id"),
        ({"type": "apply_patch_call_output", "call_id": "nope", "status": "completed"}, "input[1].call_id"),
        ({"type": "apply_patch_call_output", "call_id": "c", "status": "done"}, "input[1].status"),
        ({"type": "shell_call", "call_id": "c", "action": {"commands": "ls"}}, "input[1].action.commands"),
    ],
)
def test_a_bad_call_or_output_is_a_400(item: dict[str, Any], param: str) -> None:
    with pytest.raises(RequestError) as caught:
        request = parse_request(body(input=[{"role": "user", "content": "x"}, item]))
        build_conversation(request, request.items, settings=SETTINGS)
    assert caught.value.param == param


@templates
def test_a_template_model_reads_the_client_calls_given_back() -> None:
    dialect = qwen3_dialect()
    request, conversation = request_of(input=CALLS_AND_OUTPUTS[:3], tools=CLIENT)
    text = dialect.prepare(request, conversation, context_length=None).text or ""
    arguments = '{"commands": ["make"], "timeout_ms": 1000}'
    assert f'<tool_call>\n{{"name": "shell", "arguments": {arguments}}}\n</tool_call>' in text
    assert '<tool_response>\n[{"stdout": "ok\\n", "stderr": "", "outcome"' in text


def test_a_finished_response_replays_its_client_calls() -> None:
    ids = said(
        call("shell", {"commands": ["make", "make test"]}),
    )
    events = events_of(ids)
    snapshot = events[-1].response.to_json()
    resource = load_resource(snapshot)
    state_events = [e.to_json() for e in replay(resource)]
    check(state_events)
    live = [{k: v for k, v in e.to_json().items() if k != "sequence_number"} for e in events]
    again = [{k: v for k, v in e.items() if k != "sequence_number"} for e in state_events]
    command_events = [e for e in again if "shell_call_command" in e["type"]]
    assert [e["type"].rsplit(".", 1)[1] for e in command_events] == ["added", "delta", "done"] * 2
    assert [e for e in live if "done" in e["type"] and "command" in e] == [
        e for e in again if "done" in e["type"] and "command" in e
    ]
    patch = said(call("apply_patch", {"type": "delete_file", "path": "a"}))
    replayed = replay(load_resource(events_of(patch)[-1].response.to_json()))
    assert [e.type for e in replayed][2:-1] == ["response.output_item.added", "response.output_item.done"]
    for event in replayed:
        validate_openai_event(event.to_json(WireDialect.OPENAI))


# --- input item fields ---------------------------------------------------------------------


def test_input_item_fields_clients_send_are_taken() -> None:
    items = [
        {"type": "message", "role": "user", "id": "msg_u1", "status": "in_progress",
         "content": [{"type": "input_text", "text": "Hi.", "cache_control": {"x": 1}}]},
        {"type": "message", "role": "assistant", "id": "msg_a1", "status": "completed", "phase": "commentary",
         "content": [{"type": "output_text", "text": "Looking.", "annotations": [], "logprobs": []}]},
        {"type": "message", "role": "assistant", "phase": "final_answer", "status": "incomplete",
         "content": [{"type": "output_text", "text": "Done.", "annotations": []}], "end_turn": True},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}",
         "status": "in_progress", "caller": {"type": "direct"}, "async": False},
        {"type": "function_call_output", "id": None, "call_id": "c1", "output": "ok", "name": "f",
         "namespace": None, "status": "incomplete"},
    ]  # fmt: skip
    request = parse_request(
        {"model": "m", "input": items, "tools": [{"type": "function", "name": "f", "defer_loading": True}]}
    )
    assert [getattr(i, "id", None) for i in request.items][:4] == [
        "msg_u1",
        "msg_a1",
        request.items[2].id,
        "fc_1",
    ]
    assert all(i.status == "completed" for i in request.items)
    assert [i.phase for i in request.items if isinstance(i, AssistantMessage)] == [
        "commentary",
        "final_answer",
    ]
    messages = item_messages(request.items)
    assert [(m.channel, m.text) for m in messages[1:3]] == [("commentary", "Looking."), ("final", "Done.")]
    assert messages[1].intent == "preamble"
    text = Renderer().completion_text(build_conversation(request, request.items, settings=SETTINGS))
    assert "<|start|>assistant<|channel|>commentary<|message|>Looking.<|end|>" in text


def test_client_call_items_are_the_sdk_shapes() -> None:
    shell = ShellCall.model_validate({"call_id": "c", "action": {"commands": ["ls"]}})
    local = LocalShellCall.model_validate({"call_id": "c", "action": {"command": ["ls"]}})
    patch = ApplyPatchCall.model_validate({"call_id": "c", "operation": {"type": "delete_file", "path": "a"}})
    for item in (shell, local, patch):
        data = item.to_json(WireDialect.OPENAI)
        assert data["type"] == item.type.removeprefix("openai:") and data["id"]
        assert load_item(data) == item
    assert patch.to_json(WireDialect.OPENAI)["operation"] == {"type": "delete_file", "path": "a"}
