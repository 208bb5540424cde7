"""The tools the client runs over HTTP, end to end, through the official ``openai`` SDK:
gpt-oss (a scripted engine) and a chat-template model (a real Qwen3 tokenizer and
template) call ``shell``, ``local_shell`` and ``apply_patch``; the SDK reads each call as
its own item type (``shell_call`` streamed command by command), the outputs given back
reach the model; web search is accepted and echoed but never offered; computer tools are
a 400 naming the param. Every body and event holds to the SDK's types and the Open
Responses schema. A random-weight model under ``tool_choice: {"type": "shell"}`` calls
the shell with arguments of its parameters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from live import ScriptedEngine, completion
from openai.types.responses import (
    ApplyPatchTool,
    FunctionShellTool,
    ResponseApplyPatchToolCall,
    ResponseFunctionShellToolCall,
    ResponseShellCallCommandAddedEvent,
    ResponseShellCallCommandDeltaEvent,
    ResponseShellCallCommandDoneEvent,
    ToolChoiceShell,
    WebSearchTool,
)
from openai.types.responses.response_output_item import LocalShellCall
from openapi import known, validate
from sdk import validate_openai_event, validate_openai_response
from test_responses_api import check_stream, prompt_text, sse_events
from test_template_model import ScriptedTemplateEngine, qwen_engine  # noqa: F401 (a fixture)
from test_template_model import serve as serve_template

from openchatml import Message

TOOLS: list[dict[str, Any]] = [
    {"type": "shell", "environment": {"type": "local"}},
    {"type": "local_shell"},
    {"type": "apply_patch"},
    {"type": "web_search", "search_context_size": "low"},
]
COMMANDS = ["ls -la", 'grep -n "TODO" src/*.py']
DIFF = "@@ def main():\n-    pass\n+    print('hi')\n"


def call(name: str, arguments: dict[str, Any]) -> Message:
    return Message.tool_call(f"functions.{name}", json.dumps(arguments, separators=(",", ":")))


def test_the_sdk_streams_a_shell_call_and_sends_its_output_back(serve: Any) -> None:
    engine = ScriptedEngine(completion(call("shell", {"commands": COMMANDS})), chunk=1, enforces_grammar=True)
    client = serve(engine).client()
    events = list(
        client.responses.create(model="scripted-model", input="Find the TODOs.", tools=TOOLS, stream=True)
    )
    added = [e for e in events if e.type == "response.shell_call_command.added"]
    deltas = [e for e in events if e.type == "response.shell_call_command.delta"]
    done = [e for e in events if e.type == "response.shell_call_command.done"]
    assert all(type(e) is ResponseShellCallCommandAddedEvent for e in added) and len(added) == 2
    assert all(type(e) is ResponseShellCallCommandDeltaEvent for e in deltas) and len(deltas) > 4
    assert [type(e) for e in done] == [ResponseShellCallCommandDoneEvent] * 2
    assert [e.command for e in done] == COMMANDS
    assert ["".join(e.delta for e in deltas if e.command_index == i) for i in (0, 1)] == COMMANDS
    final = events[-1].response
    (item,) = final.output
    assert type(item) is ResponseFunctionShellToolCall and item.action.commands == COMMANDS
    assert [type(t) for t in final.tools[:1]] == [FunctionShellTool]
    assert type(final.tools[3]) is WebSearchTool and final.tools[3].search_context_size == "low"
    text = prompt_text(engine)
    assert "type shell = (_: {" in text and "web_search" not in text and "search" not in text

    outputs = [
        {"stdout": "a.py\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
        {"stdout": "", "stderr": "no match", "outcome": {"type": "exit", "exit_code": 1}},
    ]
    follow = client.responses.create(
        model="scripted-model",
        previous_response_id=final.id,
        tools=TOOLS,
        input=[{"type": "shell_call_output", "call_id": item.call_id, "output": outputs}],
    )
    assert follow.status == "completed"
    text = prompt_text(engine)
    assert (
        '<|start|>assistant to=functions.shell<|channel|>commentary <|constrain|>json<|message|>{"commands":'
        in text
    )
    assert (
        '<|start|>functions.shell to=assistant<|channel|>commentary<|message|>[{"stdout": "a.py\\n"' in text
    )
    items = client.responses.input_items.list(follow.id)
    assert [i.type for i in items.data] == ["shell_call_output"]
    replayed = list(client.responses.retrieve(final.id, stream=True))
    assert [e.command for e in replayed if e.type == "response.shell_call_command.done"] == COMMANDS


def test_local_shell_and_apply_patch_calls_are_their_own_items(serve: Any) -> None:
    local = call("local_shell", {"command": ["ls", "-la"], "working_directory": "/repo"})
    patch = call("apply_patch", {"type": "update_file", "path": "main.py", "diff": DIFF})
    engine = ScriptedEngine(lambda prompt: completion(local if len(engine.prompts) == 1 else patch))
    client = serve(engine).client()
    first = client.responses.create(model="scripted-model", input="Fix main.py.", tools=TOOLS)
    (shell,) = first.output
    assert type(shell) is LocalShellCall and shell.action.command == ["ls", "-la"]
    assert shell.action.working_directory == "/repo" and shell.action.env == {}
    second = client.responses.create(
        model="scripted-model",
        previous_response_id=first.id,
        tools=TOOLS,
        input=[{"type": "local_shell_call_output", "id": shell.call_id, "output": '{"stdout": "main.py"}'}],
    )
    (edit,) = second.output
    assert type(edit) is ResponseApplyPatchToolCall and edit.status == "completed"
    assert (edit.operation.type, edit.operation.path, edit.operation.diff) == ("update_file", "main.py", DIFF)
    assert type(second.tools[2]) is ApplyPatchTool
    text = prompt_text(engine)
    assert (
        '<|start|>functions.local_shell to=assistant<|channel|>commentary<|message|>{"stdout": "main.py"}'
        in text
    )
    client.responses.create(
        model="scripted-model",
        previous_response_id=second.id,
        tools=TOOLS,
        input=[{"type": "apply_patch_call_output", "call_id": edit.call_id, "status": "completed"}],
    )
    assert (
        "<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>Done.<|end|>"
        in prompt_text(engine)
    )


def test_bodies_and_events_hold_to_both_schemas(serve: Any) -> None:
    shell = call("shell", {"commands": COMMANDS, "timeout_ms": 10000})
    server = serve(ScriptedEngine(completion(shell), chunk=2, enforces_grammar=True))
    body = {"model": "scripted-model", "input": "Look.", "tools": TOOLS, "tool_choice": {"type": "shell"}}
    with server.http() as http:
        plain = http.post("/v1/responses", json=body).json()
        streamed = sse_events(http.post("/v1/responses", json={**body, "stream": True}).text)
        as_openai = http.post("/v1/responses", json=body, headers={"OpenChatML-Wire": "openai"}).json()
        openai_events = sse_events(
            http.post(
                "/v1/responses", json={**body, "stream": True}, headers={"OpenChatML-Wire": "openai"}
            ).text
        )
    check_stream(streamed)
    assert {"openai:response.shell_call_command.added", "openai:response.shell_call_command.done"} <= {
        e["type"] for e in streamed
    }
    assert plain["output"][0]["type"] == "openai:shell_call"
    assert [t["type"] for t in plain["tools"]] == [
        "openai:shell",
        "openai:local_shell",
        "openai:apply_patch",
        "openai:web_search",
    ]
    validate(known(plain), "ResponseResource")
    validate_openai_response(as_openai)
    for event in openai_events:
        validate_openai_event(event)
    assert as_openai["tool_choice"] == {"type": "shell"} and as_openai["output"][0]["type"] == "shell_call"
    typed = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).responses.retrieve(
        plain["id"]
    )
    assert type(typed.tool_choice) is ToolChoiceShell


@pytest.mark.parametrize("kind", ["computer_use_preview", "computer"])
def test_computer_tools_are_a_400_naming_the_param(serve: Any, kind: str) -> None:
    client = serve(ScriptedEngine([])).client()
    tool = {"type": kind, "display_width": 1024, "display_height": 768, "environment": "linux"}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="scripted-model", input="Click.", tools=[{"type": "shell"}, tool])
    error = caught.value
    assert (error.status_code, error.param, error.code) == (400, "tools[1].type", "unsupported_tool_type")
    assert "screenshots" in error.message


def test_web_search_choice_leaves_nothing_to_call(serve: Any) -> None:
    engine = ScriptedEngine(completion(Message.assistant("I cannot search here.", channel="final")))
    client = serve(engine).client()
    response = client.responses.create(
        model="scripted-model",
        input="News?",
        tools=[{"type": "web_search_preview"}, {"type": "shell"}],
        tool_choice={"type": "web_search_preview"},
    )
    assert response.status == "completed" and response.output_text == "I cannot search here."
    assert response.tool_choice.type == "web_search_preview"
    assert "namespace" not in prompt_text(engine)


def test_a_template_model_calls_the_client_tools(qwen_engine: Any, tmp_path: Path) -> None:  # noqa: F811
    arguments = json.dumps({"type": "delete_file", "path": "old.py"})
    said = f'<tool_call>\n{{"name": "apply_patch", "arguments": {arguments}}}\n</tool_call><|im_end|>'
    engine = ScriptedTemplateEngine(qwen_engine.tokenizer, said, chunk=3)
    server = serve_template(engine, tmp_path)
    try:
        client = server.client()
        response = client.responses.create(model="scripted-qwen3", input="Remove old.py.", tools=TOOLS)
        (edit,) = response.output[-1:]
        assert type(edit) is ResponseApplyPatchToolCall
        assert (edit.operation.type, edit.operation.path) == ("delete_file", "old.py")
        prompt = qwen_engine.tokenizer.hf_tokenizer.decode(engine.prompts[-1])
        assert (
            '"name": "apply_patch"' in prompt and '"name": "shell"' in prompt and "web_search" not in prompt
        )
        client.responses.create(
            model="scripted-qwen3",
            previous_response_id=response.id,
            tools=TOOLS,
            input=[
                {
                    "type": "apply_patch_call_output",
                    "call_id": edit.call_id,
                    "status": "failed",
                    "output": "gone",
                }
            ],
        )
        prompt = qwen_engine.tokenizer.hf_tokenizer.decode(engine.prompts[-1])
        assert f'<tool_call>\n{{"name": "apply_patch", "arguments": {arguments}}}\n</tool_call>' in prompt
        assert "<tool_response>\nFailed: gone\n</tool_response>" in prompt
    finally:
        server.__exit__()


def test_a_random_gpt_oss_calls_the_shell_it_must(serve: Any, tiny_engine: Any) -> None:
    pytest.importorskip("torch")
    client = serve(tiny_engine).client()
    calls = []
    for seed in range(3):
        response = client.responses.create(
            model="tiny",
            input="List the files.",
            tools=TOOLS,
            tool_choice={"type": "shell"},
            max_output_tokens=320,
            extra_body={"seed": seed},
        )
        if response.status == "completed":
            calls.append(response.output[-1])
    assert len(calls) >= 2, calls
    for item in calls:
        assert type(item) is ResponseFunctionShellToolCall
        assert isinstance(item.action.commands, list)
        assert all(isinstance(command, str) for command in item.action.commands)
