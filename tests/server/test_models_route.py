"""``GET /v1/models`` and ``/v1/models/{id}`` say what a client needs to size its requests
(context window, default output bound, capabilities), and a request without
``max_output_tokens`` samples under the server's default bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai.types
import pytest
from live import LiveServer, ScriptedEngine, completion

from openchatml.core.messages import Message
from openchatml.demo_models import tiny_chat, tiny_random
from openchatml.responses.dialect import TemplateDialect
from openchatml.responses.limits import DEFAULT_MAX_OUTPUT_TOKENS
from openchatml.responses.wire.tools import OFFERED_TOOL_TYPES
from openchatml.server.service import ResponseService
from openchatml.server.settings import PythonSettings, ServiceSettings

ANSWER = completion(Message.assistant("Hello there!", channel="final"))


def test_the_model_object_carries_its_window_output_bound_and_capabilities(serve: Any) -> None:
    server = serve(ScriptedEngine(ANSWER, context_length=8192))
    client = server.client()
    model = client.models.retrieve("scripted-model")
    assert isinstance(model, openai.types.Model) and model.id == "scripted-model"
    card = model.model_dump()
    assert card["context_length"] == card["max_model_len"] == 8192
    assert card["max_output_tokens"] == DEFAULT_MAX_OUTPUT_TOKENS
    assert card["capabilities"] == {
        "tools": True,
        "reasoning": True,
        "vision": False,
        "enforced_decoding": False,
    }
    assert "namespace" in card["tool_types"]["offered"] and "function" in card["tool_types"]["offered"]
    assert card["tool_types"]["offered"] == list(OFFERED_TOOL_TYPES)  # python is off
    assert "code_interpreter" not in card["tool_types"]["offered"]
    assert {"web_search", "web_search_preview"} <= set(card["tool_types"]["accepted_not_offered"])
    assert "computer_use_preview" in card["tool_types"]["refused"]
    listed = client.models.list().data
    assert [m.model_dump() for m in listed] == [card]
    with server.http() as http:
        missing = http.get("/v1/models/other-model")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"


def test_the_code_interpreter_is_offered_where_python_is_on(serve: Any) -> None:
    server = serve(ScriptedEngine(ANSWER), settings=ServiceSettings(python=PythonSettings(unsafe=True)))
    card = server.client().models.retrieve("scripted-model").model_dump()
    assert card["tool_types"]["offered"] == [*OFFERED_TOOL_TYPES, "code_interpreter"]
    assert "code_interpreter" not in card["tool_types"]["accepted_not_offered"]


@pytest.fixture(scope="module")
def llama_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The in-process engine over the tiny Llama 3.1 (tool calls, no reasoning)."""
    from openchatml.demo_models.catalog import ensure_demo_model
    from openchatml.engines.transformers import TransformersEngine

    folder = ensure_demo_model("tiny-chat-llama", tmp_path_factory.mktemp("home"))
    yield TransformersEngine.load(folder, model_id="tiny-chat-llama", device="cpu")


def test_a_template_model_reports_what_its_template_spells(llama_engine: Any, tmp_path: Path) -> None:
    dialect = TemplateDialect.of_engine(llama_engine)
    assert dialect is not None
    python_on = ServiceSettings(python=PythonSettings(unsafe=True))  # offered as a function
    service = ResponseService(llama_engine, None, dialect=dialect, settings=python_on)
    with LiveServer(service) as server, server.http() as http:
        card = http.get("/v1/models/tiny-chat-llama").json()
    assert card["context_length"] == tiny_chat.CONTEXT_LENGTH == 131072
    assert card["capabilities"]["tools"] is True
    assert card["capabilities"]["reasoning"] is False  # Llama 3.1's template has no thinking
    assert card["capabilities"]["enforced_decoding"] is True
    assert card["tool_types"]["offered"] == [*OFFERED_TOOL_TYPES, "code_interpreter"]


def test_without_max_output_tokens_the_server_default_bounds_sampling(serve: Any) -> None:
    engine = ScriptedEngine(ANSWER, context_length=200_000)
    server = serve(engine)
    client = server.client()
    unbounded = client.responses.create(model="scripted-model", input="Hi")
    assert engine.params[-1].max_tokens == DEFAULT_MAX_OUTPUT_TOKENS
    assert unbounded.max_output_tokens is None  # echoed as the request said
    client.responses.create(model="scripted-model", input="Hi", max_output_tokens=50)
    assert engine.params[-1].max_tokens == 50
    small = ScriptedEngine(ANSWER, context_length=1000)
    serve(small).client().responses.create(model="scripted-model", input="Hi")
    assert 0 < small.params[-1].max_tokens < 1000  # the window's room, below the default


def test_a_server_without_a_default_gives_the_window_room(serve: Any) -> None:
    engine = ScriptedEngine(ANSWER, context_length=200_000)
    server = serve(engine, settings=ServiceSettings(default_max_output_tokens=None))
    server.client().responses.create(model="scripted-model", input="Hi")
    room = engine.params[-1].max_tokens
    assert room is not None and room == 200_000 - len(engine.prompts[-1])


def test_the_demo_models_take_a_coding_agents_prompt(serve: Any) -> None:
    """A developer message of about 7,000 tokens (Codex's base prompt and tools) fits the
    tiny gpt-oss's window and is answered."""
    from openchatml.engines.transformers import TransformersEngine

    assert tiny_random.CONTEXT_LENGTH == 131072
    engine = TransformersEngine.load(tiny_random.ensure_tiny_model(), device="cpu")
    server = serve(engine)
    instructions = " ".join(f"Rule {n}: keep the patch small and run the tests." for n in range(700))
    response = server.client().responses.create(
        model=engine.info.id, input="Say hello", instructions=instructions, max_output_tokens=16
    )
    assert response.usage is not None and response.usage.input_tokens > 7000
    assert response.status in ("completed", "incomplete")
