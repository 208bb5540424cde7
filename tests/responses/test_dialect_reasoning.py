"""Template dialects and the reasoning their prompts open: ``reasoning.effort`` switches
thinking through the template's switch; where the prompt opens the reasoning whatever the
caller sets (DeepSeek-R1's ``<think>\\n``, Apriel's steps), ``none`` closes it in the prompt
as an empty block, and the grammar of a constrained request then lets no reasoning open.
Other efforts leave the prompt as the template writes it: the output starts inside the open
block, and reasoning comes before the forced call or the structured answer."""

from __future__ import annotations

from typing import Any

import pytest
from test_dialect import TEMPLATES, TokenizedEngine, request_of

from char_tokenizer import CharTokenizer
from openchatml.demo_models.tiny_chat import template_markers
from openchatml.engines.guidance import in_language
from openchatml.responses.dialect import TemplateDialect
from openchatml.responses.grammar import ModelFormat, response_grammar
from openchatml.responses.runner import Prepared
from openchatml.templates.analysis.thinking import open_reasoning, reasoning_closer
from openchatml.templates.format import ReasoningMode

ALWAYS_OPEN = (
    "Apriel-1.6-15b-Thinker-fixed.jinja",
    "MiniMax-M2.jinja",
    "NVIDIA-Nemotron-Nano-v2.jinja",
    "StepFun3.5-Flash.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    "llama-cpp-deepseek-r1.jinja",
)
"""Templates whose prompt opens the reasoning whatever the caller sets (no switch)."""
SWITCHED = {
    "Qwen3.5-4B.jinja": "<think>\n\n</think>\n\n",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": "<think></think>",
    "deepseek-ai-DeepSeek-V3.1.jinja": "<think></think>",
    "Cohere2MoE.jinja": "<|START_THINKING|><|END_THINKING|>",
}
"""Templates whose switch closes the reasoning their prompt opens, with the prefix it writes off."""
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
JSON_FORMAT = {"format": {"type": "json_schema", "name": "n", "schema": SCHEMA, "strict": True}}
ANSWER = '{"n": 1}'


def dialect_of(name: str) -> TemplateDialect:
    path = TEMPLATES / name
    if not path.is_file():
        pytest.skip(f"no template {name} in {TEMPLATES}")
    source = path.read_text(encoding="utf-8")
    dialect = TemplateDialect.of_engine(
        TokenizedEngine(CharTokenizer(template_markers(source), chat_template=source))
    )
    assert dialect is not None
    return dialect


def prepared(dialect: TemplateDialect, **body: Any) -> Prepared:
    request, conversation = request_of(input="Is it warm?", **body)
    result: Prepared = dialect.prepare(request, conversation, context_length=None)
    return result


def accepts(dialect: TemplateDialect, result: Prepared, output: str, **body: Any) -> bool:
    """Whether the grammar of the request ``body`` (markers spelled as text) takes ``output``."""
    request, _conversation = request_of(input="Is it warm?", **body)
    grammar = response_grammar(request, ModelFormat(dialect.format), prefix=result.prefix)
    assert grammar is not None
    return in_language("lark", grammar.lark, output)


def markers_of(dialect: TemplateDialect) -> tuple[str, str]:
    reasoning = dialect.format.reasoning
    start = reasoning.start.strip() if reasoning.mode is ReasoningMode.TAGS else ""
    return start, reasoning.end.strip()


@pytest.mark.parametrize("name", ALWAYS_OPEN)
def test_no_reasoning_closes_the_block_the_prompt_opened(name: str) -> None:
    dialect = dialect_of(name)
    opened = prepared(dialect)
    assert open_reasoning(dialect.format.reasoning, opened.prefix)
    assert prepared(dialect, reasoning={"effort": "high"}).prefix == opened.prefix
    off = prepared(dialect, reasoning={"effort": "none"})
    closer = reasoning_closer(dialect.format.reasoning, opened.prefix)
    assert closer and off.prefix == opened.prefix + closer
    assert not open_reasoning(dialect.format.reasoning, off.prefix)
    assert off.text is not None and opened.text is not None and off.text == opened.text + closer
    assert dialect.tokenizer.decode(off.prompt) == off.text
    assert off.prompt[: len(opened.prompt)] == opened.prompt
    assert off.prompt[len(opened.prompt) :] == dialect.tokenizer.encode(closer)


@pytest.mark.parametrize("name", sorted(SWITCHED))
def test_a_switch_closes_the_block_itself(name: str) -> None:
    dialect = dialect_of(name)
    assert open_reasoning(dialect.format.reasoning, prepared(dialect, reasoning={"effort": "high"}).prefix)
    off = prepared(dialect, reasoning={"effort": "none"})
    assert off.prefix == SWITCHED[name]  # the template's own closing, nothing added
    assert off.text is not None and dialect.tokenizer.decode(off.prompt) == off.text


@pytest.mark.parametrize("name", [*ALWAYS_OPEN, *sorted(SWITCHED)])
def test_reasoning_comes_before_the_answer_unless_switched_off(name: str) -> None:
    dialect = dialect_of(name)
    start, end = markers_of(dialect)
    on = prepared(dialect, reasoning={"effort": "high"}, text=JSON_FORMAT)
    assert accepts(dialect, on, f"Warm, then.\n{end}\n\n{ANSWER}", text=JSON_FORMAT)
    assert accepts(dialect, on, f"{end}\n\n{ANSWER}", text=JSON_FORMAT)  # reasoning skipped
    assert not accepts(dialect, on, ANSWER, text=JSON_FORMAT)  # the open block closes first
    off_body: dict[str, Any] = {"reasoning": {"effort": "none"}, "text": JSON_FORMAT}
    off = prepared(dialect, **off_body)
    assert accepts(dialect, off, ANSWER, **off_body)
    assert not accepts(dialect, off, f"Warm, then.\n{end}\n\n{ANSWER}", **off_body)
    if start:
        assert not accepts(dialect, off, f"{start}\nWarm, then.\n{end}\n\n{ANSWER}", **off_body)


def test_no_reasoning_opens_where_the_model_may_open_it() -> None:
    """Reka's prompt with thinking off opens nothing, and its model may still think: a
    request with effort ``none`` lets no block open."""
    dialect = dialect_of("Reka-Edge.jinja")
    start, end = markers_of(dialect)
    block = f"{start}\nWarm, then.\n{end}\n\n"
    free = prepared(dialect, text=JSON_FORMAT)
    assert free.prefix == ""
    assert accepts(dialect, free, block + ANSWER, text=JSON_FORMAT)
    off_body: dict[str, Any] = {"reasoning": {"effort": "none"}, "text": JSON_FORMAT}
    off = prepared(dialect, **off_body)
    assert off.prefix == ""
    assert accepts(dialect, off, ANSWER, **off_body)
    assert not accepts(dialect, off, block + ANSWER, **off_body)
