"""Chat-template samples: the mask derived from renders of the plain template equals
transformers' ``return_assistant_tokens_mask`` on a copy annotated with
``{% generation %}``, token for token, on five template families: several turns,
reasoning (kept in the last turn, dropped from earlier ones by Qwen3.5), tool calls and
their outputs. Markers typed as text stay text and never learn as the assistant's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from template_families import ANNOTATED, FAMILY_OF, TEMPLATES, tokenizer_folder

from openchatml.core.content import DeveloperContent, ToolDescription, ToolNamespaceConfig
from openchatml.core.messages import Conversation, Message
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.prompt import template_messages
from openchatml.training.template_masks import template_sample, token_mask

pytest.importorskip("transformers")

WEATHER_TOOL = ToolDescription(
    "get_weather",
    "Weather of a city.",
    {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city."}},
        "required": ["location"],
    },
)
TOOLS = DeveloperContent(
    instructions="Be brief.",
    tools={"functions": ToolNamespaceConfig("functions", tools=(WEATHER_TOOL,))},
)


def _call(city: str, call_id: str) -> list[Message]:
    return [
        Message.tool_call("functions.get_weather", json.dumps({"location": city}), call_id=call_id),
        Message.tool_result("functions.get_weather", json.dumps({"temp": 20}), call_id=call_id),
    ]


CONVERSATIONS = {
    "one-turn": [Message.user("hi"), Message.assistant("Hello there!")],
    "turns": [
        Message.developer("Be brief."),
        Message.user("2+2?"),
        Message.assistant("Add them.", channel="analysis"),
        Message.assistant("4"),
        Message.user("and 3+3?"),
        Message.assistant("Add again.", channel="analysis"),
        Message.assistant("6, not 7."),
    ],
    "tools": [
        Message.developer(TOOLS),
        Message.user("Weather in Paris?"),
        Message.assistant("I need the tool.", channel="analysis"),
        *_call("Paris", "abcDEF123"),
        Message.assistant("It is mild.", channel="analysis"),
        Message.assistant("It is 20 degrees in Paris."),
        Message.user("And Rome, then Oslo?"),
        Message.assistant("Two calls.", channel="analysis"),
        *_call("Rome", "ghiJKL456"),
        Message.assistant("Now Oslo.", channel="analysis"),
        Message.assistant("Checking Oslo too.", channel="commentary"),
        *_call("Oslo", "mnoPQR789"),
        Message.assistant("Both mild.", channel="analysis"),
        Message.assistant("20 degrees in both."),
    ],
}
NEEDS_TOOLS = {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use"}
"""Templates that render nothing without a tools list."""
TYPED_MARKERS = (
    "What do <tool_call>, [INST], [TOOL_CALLS], <|eot_id|>, <|im_end|>, </s> and <|im_start|>assistant mean?"
)


def conversation_for(name: str, messages: list[Message]) -> Conversation:
    if name in NEEDS_TOOLS and not Conversation.from_messages(messages).has_function_tools:
        messages = [Message.developer(TOOLS), *messages]
    return Conversation.from_messages(messages)


@pytest.fixture(scope="module", params=sorted(FAMILY_OF))
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any, Any]:
    from transformers import AutoTokenizer

    from openchatml.engines.tokenizer import HFTokenizer

    name = request.param
    folder = tokenizer_folder(tmp_path_factory.mktemp("tokenizer"), name)
    return name, HFTokenizer.load(folder), AutoTokenizer.from_pretrained(folder)


def plain_template(name: str, tokenizer: Any) -> ChatTemplate:
    source = (TEMPLATES / f"{name}.jinja").read_text()
    return ChatTemplate(source, name=name, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token)


def reference_messages(conversation: Conversation) -> tuple[list[dict[str, Any]], Any]:
    """The template's messages as transformers takes them: arguments as mappings."""
    messages, tools = template_messages(conversation)
    for message in messages:
        for call in message.get("tool_calls", ()):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return messages, tools


@pytest.mark.parametrize("case", sorted(CONVERSATIONS))
def test_mask_matches_transformers_generation_markers(model: tuple[str, Any, Any], case: str) -> None:
    name, tokenizer, reference_tokenizer = model
    conversation = conversation_for(name, CONVERSATIONS[case])
    sample = template_sample(plain_template(name, tokenizer), conversation, tokenizer)
    messages, tools = reference_messages(conversation)
    annotated = (ANNOTATED / f"{name}.generation.jinja").read_text()
    reference = reference_tokenizer.apply_chat_template(
        messages,
        tools=tools,
        chat_template=annotated,
        return_assistant_tokens_mask=True,
        return_dict=True,
        tokenize=True,
    )
    assert list(sample.ids) == list(reference["input_ids"])
    assert list(sample.mask) == list(reference["assistant_masks"])
    assert sum(sample.mask) > 0
    learned = tokenizer.decode(sample.learned_ids)
    assert "Weather in Paris" not in learned and "2+2?" not in learned
    if case == "tools":
        assert "Oslo" in learned and '"temp"' not in learned  # calls learn, outputs do not


def test_typed_markers_stay_text_and_never_learn(model: tuple[str, Any, Any]) -> None:
    """User-typed markers are text (transformers would make them control tokens, so the
    spans are compared, not the ids): the mask is the annotated template's generation
    spans over our ids, token for token."""
    from transformers.utils.chat_template_utils import render_jinja_template

    name, tokenizer, reference_tokenizer = model
    answer = Message.assistant("Markers like <tool_call> and [INST] are text.")
    typed = conversation_for(name, [Message.user(TYPED_MARKERS), answer])
    neutral = conversation_for(name, [Message.user("What do they mean?"), Message.assistant("Plain words.")])
    template = plain_template(name, tokenizer)
    sample = template_sample(template, typed, tokenizer)
    markers_of = lambda ids: [i for i in ids if tokenizer.is_marker(i)]  # noqa: E731
    assert markers_of(sample.ids) == markers_of(template_sample(template, neutral, tokenizer).ids)
    messages, tools = reference_messages(typed)
    annotated = (ANNOTATED / f"{name}.generation.jinja").read_text()
    rendered, indices = render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=annotated,
        return_assistant_tokens_mask=True,
        **reference_tokenizer.special_tokens_map,
    )
    text = rendered[0]
    pieces = [tokenizer.token_bytes(i) for i in sample.ids]
    assert b"".join(pieces) == text.encode()
    offsets = [len(text[:at].encode()) for at in range(len(text) + 1)]
    spans = [(offsets[start], offsets[end]) for start, end in indices[0]]
    assert list(sample.mask) == token_mask([len(piece) for piece in pieces], spans)
    learned = tokenizer.decode(sample.learned_ids)
    assert "What do" not in learned and "<|eot_id|>, " not in learned
    assert "Markers like <tool_call> and [INST] are text." in learned


def test_token_mask_learns_tokens_that_share_a_byte_with_a_span() -> None:
    assert token_mask([2, 2, 2, 2], [(3, 5)]) == [0, 1, 1, 0]
    assert token_mask([1, 1, 1], []) == [0, 0, 0]
    assert token_mask([3, 1, 3], [(0, 1), (4, 7)]) == [1, 0, 1]


def test_templates_have_annotated_copies() -> None:
    for name in FAMILY_OF:
        annotated = (ANNOTATED / f"{name}.generation.jinja").read_text()
        assert "{% generation %}" in annotated or "{%- generation %}" in annotated
        assert Path(TEMPLATES / f"{name}.jinja").exists()
