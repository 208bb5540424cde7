"""The hosted ``python`` tool over HTTP, end to end through the official ``openai`` SDK:
a scripted gpt-oss calls ``python`` with a ``code_interpreter`` tool, the server runs the
code in the conversation's confined kernel, gives the model the output and samples its
answer in the same response; state survives across ``previous_response_id`` turns;
cancelling stops the running code; a server without python refuses the tool. Skipped
where bubblewrap cannot be had."""

from __future__ import annotations

import base64
import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import openai
import pytest
from live import LiveServer, ScriptedEngine, completion
from openai.types.responses import ResponseCodeInterpreterToolCall
from sdk import validate_openai_event, validate_openai_response

from openchatml import Message
from openchatml.core.encoding import load_encoding
from openchatml.server.hosted import kernel_name
from openchatml.server.settings import PythonSettings, ServiceSettings

sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "python"))
from bwrap_setup import ensure_bwrap

from openchatml.tools.python import Sandbox, SandboxUnavailableError

TOOLS: list[dict[str, Any]] = [{"type": "code_interpreter", "container": {"type": "auto"}}]


@pytest.fixture(scope="module")
def python_on() -> ServiceSettings:
    """Settings with the python tool on; skips where bubblewrap cannot confine it."""
    if ensure_bwrap() is None:
        pytest.skip("bwrap is not installed and cannot be installed here")
    try:
        Sandbox()
    except SandboxUnavailableError as exc:
        pytest.skip(str(exc))
    return ServiceSettings(python=PythonSettings(timeout=90.0))


def python_call(code: str) -> Message:
    return Message.tool_call("python", code, channel="analysis", content_type="code", constrained=False)


def agent(code: Callable[[int], str], answer: str = "done") -> Callable[[Sequence[int]], list[int]]:
    """A script: call python with ``code(turn)`` unless the prompt ends in the tool's reply,
    then answer ``answer`` followed by what the tool printed."""
    encoding = load_encoding()

    def script(prompt: Sequence[int]) -> list[int]:
        text = encoding.decode(list(prompt))
        tail = text.rsplit("<|start|>", 2)
        if len(tail) == 3 and tail[1].startswith("python"):
            printed = tail[1].split("<|message|>", 1)[1].removesuffix("<|end|>")
            return completion(Message.assistant(f"{answer}: {printed.strip()}", channel="final"))
        return completion(python_call(code(text.count("<|start|>user"))))

    return script


def test_python_runs_and_the_answer_follows(
    serve: Callable[..., LiveServer], python_on: ServiceSettings
) -> None:
    engine = ScriptedEngine(agent(lambda turn: "print(6*7)"))
    server = serve(engine, settings=python_on)
    client = server.client()
    response = client.responses.create(
        model="scripted-model",
        input="what is 6*7?",
        tools=TOOLS,
        include=["code_interpreter_call.outputs"],
    )
    validate_openai_response(response.model_dump(mode="json"))
    call, message = response.output
    assert isinstance(call, ResponseCodeInterpreterToolCall)
    assert call.code == "print(6*7)" and call.status == "completed" and call.container_id == response.id
    assert call.outputs is not None and call.outputs[0].type == "logs" and call.outputs[0].logs == "42\n"
    assert message.type == "message" and "done: 42" in message.content[0].text
    first = load_encoding().decode(engine.prompts[0])
    assert "# Tools" in first and "## python" in first
    assert "time out after 90.0 seconds" in first  # the server's --python-timeout
    assert "<|start|>python to=assistant" in load_encoding().decode(engine.prompts[1])
    assert response.usage is not None and response.usage.input_tokens == len(engine.prompts[0])


def test_stream_events_and_replay(serve: Callable[..., LiveServer], python_on: ServiceSettings) -> None:
    server = serve(ScriptedEngine(agent(lambda turn: "print(6*7)")), settings=python_on)
    client = server.client()
    events = list(client.responses.create(model="scripted-model", input="6*7?", tools=TOOLS, stream=True))
    for event in events:
        validate_openai_event(event.model_dump(mode="json"))
    kinds = [event.type for event in events]
    for kind in (
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
    ):
        assert kind in kinds
    final = events[-1].response
    assert final.status == "completed"
    call = final.output[0]
    assert isinstance(call, ResponseCodeInterpreterToolCall) and call.outputs is None  # not included
    replayed = list(client.responses.retrieve(final.id, stream=True))

    def collapsed(kinds: list[str]) -> list[str]:
        return [k for n, k in enumerate(kinds) if not (k.endswith(".delta") and n and kinds[n - 1] == k)]

    assert collapsed([e.type for e in replayed]) == collapsed(kinds)


def test_state_survives_previous_response_id(
    serve: Callable[..., LiveServer], python_on: ServiceSettings
) -> None:
    engine = ScriptedEngine(agent(lambda turn: "x = 5\nprint('set')" if turn == 1 else "print(x)"))
    client = serve(engine, settings=python_on).client()
    first = client.responses.create(model="scripted-model", input="set x", tools=TOOLS)
    second = client.responses.create(
        model="scripted-model",
        input="show x",
        tools=TOOLS,
        previous_response_id=first.id,
        include=["code_interpreter_call.outputs"],
    )
    call = second.output[0]
    assert isinstance(call, ResponseCodeInterpreterToolCall)
    assert call.container_id == first.id and call.outputs is not None and call.outputs[0].logs == "5\n"


def test_cancel_stops_the_running_code(serve: Callable[..., LiveServer], python_on: ServiceSettings) -> None:
    service_settings = python_on
    server = serve(
        ScriptedEngine(agent(lambda turn: "import time\ntime.sleep(60)")), settings=service_settings
    )
    client = server.client()
    created = client.responses.create(model="scripted-model", input="sleep", tools=TOOLS, background=True)
    started = time.monotonic()
    kernels = server.service.kernels
    assert kernels is not None
    name = kernel_name("", created.id)  # no API keys: every caller is the same owner
    while name not in kernels and time.monotonic() - started < 30:
        time.sleep(0.1)
    kernel = kernels.kernel(name)
    assert kernel is not None
    time.sleep(0.5)
    cancelled = client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    assert time.monotonic() - started < 30
    assert name not in kernels or kernels.kernel(name) is not kernel


def test_a_cell_past_its_time_limit_fails_and_the_loop_goes_on(
    serve: Callable[..., LiveServer], python_on: ServiceSettings
) -> None:
    """A cell that runs past ``--python-timeout``: the call ends ``failed`` with
    ``E-TOOL-TIMEOUT`` in its logs, the model reads the error and answers, long before the
    cell's sleep would have ended."""
    settings = dataclasses.replace(python_on, python=PythonSettings(timeout=2.0))
    engine = ScriptedEngine(agent(lambda turn: "import time\nprint('start', flush=True)\ntime.sleep(60)"))
    client = serve(engine, settings=settings).client()
    started = time.monotonic()
    response = client.responses.create(
        model="scripted-model", input="sleep", tools=TOOLS, include=["code_interpreter_call.outputs"]
    )
    assert time.monotonic() - started < 45
    call, message = response.output
    assert isinstance(call, ResponseCodeInterpreterToolCall) and call.status == "failed"
    assert call.outputs is not None
    logs = [output.logs for output in call.outputs if output.type == "logs"]
    assert logs[-1].startswith("E-TOOL-TIMEOUT: ") and "start" in logs[0]
    assert response.status == "completed" and message.type == "message"
    assert "E-TOOL-TIMEOUT" in load_encoding().decode(engine.prompts[1])


FIGURE = """
import sys, types
png = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + b"figure bytes"
class Figure:
    def savefig(self, name):
        open(name, "wb").write(png)
pyplot = types.ModuleType("matplotlib.pyplot")
pyplot.get_fignums = lambda: [1]
pyplot.figure = lambda number: Figure()
pyplot.close = lambda figure: None
sys.modules["matplotlib.pyplot"] = pyplot
print("drawn")
"""


def test_a_figure_comes_back_as_an_image(
    serve: Callable[..., LiveServer], python_on: ServiceSettings
) -> None:
    """A figure the cell leaves open (a stand-in for matplotlib's pyplot) is saved in the
    kernel's folder and comes back among the call's outputs as a PNG ``data:`` URL."""
    client = serve(ScriptedEngine(agent(lambda turn: FIGURE)), settings=python_on).client()
    response = client.responses.create(
        model="scripted-model", input="plot", tools=TOOLS, include=["code_interpreter_call.outputs"]
    )
    call = response.output[0]
    assert isinstance(call, ResponseCodeInterpreterToolCall) and call.outputs is not None
    [image] = [output for output in call.outputs if output.type == "image"]
    assert image.url.startswith("data:image/png;base64,")
    assert base64.b64decode(image.url.split(",", 1)[1]).endswith(b"figure bytes")


def test_a_server_without_python_refuses(serve: Callable[..., LiveServer]) -> None:
    client = serve(ScriptedEngine([])).client()
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="scripted-model", input="hi", tools=TOOLS)
    assert raised.value.body["param"] == "tools[0].type"  # type: ignore[index]


def test_a_kernel_is_its_owners(serve: Callable[..., LiveServer], python_on: ServiceSettings) -> None:
    """Another API key that carries a container id into its own chain of responses gets a
    kernel of its own, never the state of the key that ran it."""
    encoding = load_encoding()

    def script(prompt: Sequence[int]) -> list[int]:
        text = encoding.decode(list(prompt))
        tail = text.rsplit("<|start|>", 2)
        if len(tail) == 3 and tail[1].startswith("python"):
            printed = tail[1].split("<|message|>", 1)[1].removesuffix("<|end|>")
            return completion(Message.assistant(f"printed: {printed.strip()}", channel="final"))
        asked = text.rsplit("<|start|>user<|message|>", 1)[1]
        if asked.startswith("keep"):
            return completion(python_call("secret = 41\nprint('kept')"))
        if asked.startswith("show"):
            return completion(python_call("print(secret)"))
        return completion(Message.assistant("ok", channel="final"))

    server = serve(ScriptedEngine(script), settings=python_on, keys=("key-a", "key-b"))
    first = server.client("key-a").responses.create(model="scripted-model", input="keep it", tools=TOOLS)
    [call] = [item for item in first.output if isinstance(item, ResponseCodeInterpreterToolCall)]
    carried = {
        "type": "code_interpreter_call",
        "id": call.id,
        "code": call.code,
        "container_id": call.container_id,
        "status": "completed",
        "outputs": None,
    }
    other = server.client("key-b")
    # key-b's chain now holds a call naming key-a's container, and no call of its own
    hello = other.responses.create(
        model="scripted-model", input=[carried, {"role": "user", "content": "hi"}], tools=TOOLS
    )
    shown = other.responses.create(
        model="scripted-model",
        input="show it",
        tools=TOOLS,
        previous_response_id=hello.id,
        include=["code_interpreter_call.outputs"],
    )
    [probe] = [item for item in shown.output if isinstance(item, ResponseCodeInterpreterToolCall)]
    assert probe.outputs is not None
    assert "NameError" in str(probe.outputs[0]) and "41" not in str(probe.outputs[0])
