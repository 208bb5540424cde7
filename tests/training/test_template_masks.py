"""Chat-template samples: the mask derived from renders of the plain template equals
transformers' ``return_assistant_tokens_mask`` on a copy annotated with
``{% generation %}``, token for token."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openchatml.core.messages import Conversation, Message
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.prompt import template_messages
from openchatml.training.template_masks import template_sample

pytest.importorskip("transformers")

TEMPLATES = Path(__file__).parents[1] / "templates" / "data" / "templates"
ANNOTATED = Path(__file__).parent / "data"
CASES = [("Qwen-Qwen2.5-7B-Instruct", "qwen3")]

CONVERSATIONS = [
    Conversation.from_messages([Message.user("hi"), Message.assistant("Hello there!")]),
    Conversation.from_messages(
        [
            Message.developer("Be brief."),
            Message.user("2+2?"),
            Message.assistant("4"),
            Message.user("and 3+3?"),
            Message.assistant("6, not 7."),
        ]
    ),
]


@pytest.fixture(scope="module", params=CASES, ids=[name for name, _ in CASES])
def model(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any, Any]:
    from openchatml.demo_models.tiny_chat import ensure_tiny_chat_model
    from openchatml.engines.tokenizer import HFTokenizer

    name, family = request.param
    folder = ensure_tiny_chat_model(
        tmp_path_factory.mktemp("home"), TEMPLATES / f"{name}.jinja", family=family
    )
    from transformers import AutoTokenizer

    return name, HFTokenizer.load(folder), AutoTokenizer.from_pretrained(folder)


@pytest.mark.parametrize("conversation", CONVERSATIONS)
def test_mask_matches_transformers_generation_markers(
    model: tuple[str, Any, Any], conversation: Conversation
) -> None:
    name, tokenizer, reference_tokenizer = model
    plain = ChatTemplate((TEMPLATES / f"{name}.jinja").read_text(), name=name)
    sample = template_sample(plain, conversation, tokenizer)
    annotated = (ANNOTATED / f"{name}.generation.jinja").read_text()
    messages, _ = template_messages(conversation)
    reference = reference_tokenizer.apply_chat_template(
        messages, chat_template=annotated, return_assistant_tokens_mask=True, return_dict=True, tokenize=True
    )
    assert list(sample.ids) == list(reference["input_ids"])
    assert list(sample.mask) == list(reference["assistant_masks"])
    assert sum(sample.mask) > 0
