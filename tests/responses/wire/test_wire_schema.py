"""Every type the wire models exists in the Open Responses document (or is a prefixed
extension), with the schema's required fields; everything we send beyond a schema's
properties is listed here as a known extension."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
from openapi import STREAMING_EVENT_SCHEMAS, document, known, validate, validate_event

from openchatml.responses.request import parse_request
from openchatml.responses.resource import ResponseState
from openchatml.responses.wire.content import (
    InputFile,
    InputImage,
    InputText,
    InputVideo,
    LogProb,
    OutputText,
    ReasoningText,
    Refusal,
    SummaryText,
)
from openchatml.responses.wire.events import EVENT_CLASSES, load_event
from openchatml.responses.wire.items import (
    AssistantMessage,
    CompactionItem,
    CustomToolCall,
    CustomToolCallOutput,
    DeveloperMessage,
    FunctionCall,
    FunctionCallOutput,
    ItemReference,
    ReasoningItem,
    SystemMessage,
    UserMessage,
)
from openchatml.responses.wire.request import CreateResponseBody
from openchatml.responses.wire.resource import ErrorPayload
from openchatml.responses.wire.tools import (
    AllowedTool,
    AllowedTools,
    CustomChoice,
    CustomTool,
    FunctionChoice,
    FunctionTool,
    JsonObjectFormat,
    JsonSchemaFormat,
    PlainText,
)

EXTENSIONS: dict[str, set[str]] = {
    "response.function_call_arguments.done": {"name"},  # as OpenAI sends it
    "reasoning": {"status"},  # a reasoning item of a response has a status, as OpenAI's do
    "input_image": {"file_id"},
    "input_file": {"file_data", "file_id"},
    "output_text": {"logprobs"},
}
"""Fields we send beyond a schema's properties, by ``type``."""
BODY_EXTENSIONS = {"seed"}
"""Fields of a create body beyond the schema's and OpenAI's SDK's."""
SDK_FIELDS = ResponseCreateParamsStreaming.__required_keys__ | ResponseCreateParamsStreaming.__optional_keys__
"""Every parameter of OpenAI's ``responses.create``."""

SAMPLES: list[Any] = [
    UserMessage(content=(InputText(text="x"),)),
    SystemMessage(content=(InputText(text="x"),)),
    DeveloperMessage(content=(InputText(text="x"),)),
    AssistantMessage(
        content=(OutputText(text="x", logprobs=(LogProb("x", -1.0, (120,)),)),), phase="final_answer"
    ),
    FunctionCall(call_id="c", name="f", arguments="{}"),
    FunctionCallOutput(call_id="c", output="ok"),
    ReasoningItem(status="completed", content=(ReasoningText(text="t"),), summary=(SummaryText(text="s"),)),
    CompactionItem(encrypted_content="sealed"),
    ItemReference(id="msg_1"),
    InputText(text="x"),
    InputImage(image_url="data:image/png;base64,AA", file_id="file_1"),
    InputFile(filename="a.txt", file_data="YQ==", file_id="file_1"),
    InputVideo(video_url="https://x/v.mp4"),
    OutputText(text="x"),
    Refusal(refusal="no"),
    ReasoningText(text="t"),
    SummaryText(text="s"),
    FunctionTool(name="f", description=None, parameters={"type": "object"}),
    FunctionChoice(name="f"),
    AllowedTools(tools=(AllowedTool(name="f"),)),
    PlainText(),
    JsonObjectFormat(),
    JsonSchemaFormat(name="f", json_schema={"type": "object"}).echoed(),
    CustomToolCall(call_id="c", name="apply_patch", input="*** Begin Patch"),
    CustomToolCallOutput(call_id="c", output="Done."),
    CustomTool(name="apply_patch"),
    CustomChoice(name="apply_patch"),
]


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("properties", {}).get("type", {})
    if "const" in kind:
        return [kind["const"]]
    for option in [kind, *kind.get("anyOf", [])]:
        if "enum" in option:
            return list(option["enum"])
    return []


SHARED_TYPES: dict[type, set[str]] = {
    FunctionTool: {"FunctionTool", "FunctionToolParam"},
    FunctionChoice: {"FunctionToolChoice", "SpecificFunctionParam"},
    PlainText: {"TextResponseFormat"},
}
"""The schemas of models whose ``type`` other schemas share (a function tool and the
choice of one)."""


def schemas_of(kind: str) -> dict[str, dict[str, Any]]:
    """Every schema of the document whose ``type`` is ``kind``."""
    return {n: s for n, s in document()["components"]["schemas"].items() if kind in _types(s)}


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: type(s).__name__)
def test_every_modelled_type_is_in_the_document(sample: Any) -> None:
    data = sample.to_json()
    found = schemas_of(data["type"])
    if type(sample) in SHARED_TYPES:
        assert SHARED_TYPES[type(sample)] <= set(found)
        found = {n: s for n, s in found.items() if n in SHARED_TYPES[type(sample)]}
    assert found or ":" in data["type"], f"{data['type']} is neither in the schema nor prefixed"
    for name, schema in found.items():
        role = schema.get("properties", {}).get("role", {}).get("enum")
        if role is not None and data.get("role") not in role:
            continue  # another role's message schema
        assert set(schema.get("required", [])) <= set(data), (name, data)
        extra = set(data) - set(schema["properties"]) - EXTENSIONS.get(data["type"], set())
        assert not extra, (name, extra)


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.type)
def test_every_event_is_in_the_document_with_its_fields(cls: type) -> None:
    if ":" in cls.type:  # a prefixed extension: the document has no schema of it
        assert (
            cls.type.startswith("openai:") and cls.type.removeprefix("openai:") not in STREAMING_EVENT_SCHEMAS
        )
        return
    name = STREAMING_EVENT_SCHEMAS.get(cls.type) or _event_schema_name(cls.type)
    schema = document()["components"]["schemas"][name]
    ours = {"type", *(f.name for f in dataclasses.fields(cls))}
    assert set(schema["required"]) <= ours
    assert ours - set(schema["properties"]) == EXTENSIONS.get(cls.type, set())


def _event_schema_name(kind: str) -> str:
    (name,) = [n for n in schemas_of(kind) if n.endswith("StreamingEvent")]
    return name


def test_the_body_has_the_schemas_fields() -> None:
    spec = document()["components"]["schemas"]["CreateResponseBody"]["properties"]
    assert set(CreateResponseBody.model_fields) - set(spec) - SDK_FIELDS == BODY_EXTENSIONS
    assert set(spec) <= set(CreateResponseBody.model_fields)
    assert set(CreateResponseBody.model_fields) >= SDK_FIELDS  # each a known field, typed


def test_a_complete_response_and_its_events_validate() -> None:
    request = parse_request(
        {
            "model": "m",
            "input": "x",
            "tools": [{"name": "f", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "allowed_tools", "tools": [{"type": "function", "name": "f"}]},
            "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}},
            "metadata": {"k": "v"},
        }
    )
    state = ResponseState("resp_1", request, "m")
    state.output.extend(
        s for s in SAMPLES[:7] if isinstance(s, AssistantMessage | FunctionCall | ReasoningItem)
    )
    validate(state.to_json(), "ResponseResource")
    custom = parse_request(
        {
            "input": "x",
            "tools": [{"name": "f"}, {"type": "custom", "name": "apply_patch"}],
            "tool_choice": {"type": "allowed_tools", "tools": [{"type": "custom", "name": "apply_patch"}]},
        }
    )
    extended = ResponseState("resp_2", custom, "m")
    extended.output.extend([SAMPLES[3], CustomToolCall(call_id="c", name="apply_patch", input="x")])
    snapshot = extended.to_json()
    assert [t["type"] for t in snapshot["tools"]] == ["function", "openai:custom"]
    validate(known(snapshot), "ResponseResource")
    assert [i["type"] for i in known(snapshot)["output"]] == ["message"]
    for cls in EVENT_CLASSES:
        if cls.type == "error":
            validate_event(
                {"type": "error", "sequence_number": 0, "error": ErrorPayload(message="x").to_json()}
            )
            continue
        event = load_event({**_sample_event(cls), "type": cls.type})
        validate_event(event.to_json())


def _sample_event(cls: type) -> dict[str, Any]:
    values: dict[str, Any] = {
        "sequence_number": 3,
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "summary_index": 0,
        "annotation_index": 0,
        "annotation": {"type": "url_citation", "url": "u", "title": "t", "start_index": 0, "end_index": 1},
        "delta": "d",
        "text": "t",
        "refusal": "r",
        "arguments": "{}",
        "input": "*** Begin Patch",
        "command_index": 0,
        "command": "ls -la",
        "code": "print(6 * 7)",
        "name": "f",
        "logprobs": [],
        "part": OutputText(text="t").to_json(),
        "item": SAMPLES[3].to_json(),
        "response": ResponseState("resp_1", parse_request({"input": "x"}), "m").to_json(),
    }
    return {f.name: values[f.name] for f in dataclasses.fields(cls)}
