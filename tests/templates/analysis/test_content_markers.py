"""The role header, the generation prompts, the content markers and the ends of a turn."""

from __future__ import annotations

from openchatml.templates.analysis.content import (
    bound_answer_end,
    end_marker,
    find_content,
    first_turn_marker,
    next_header_marker,
)
from openchatml.templates.analysis.header import generation_prompts, role_header, trim_header
from openchatml.templates.analysis.probes import ANSWER, ProbeRenderer, assistant_message
from openchatml.templates.analysis.reasoning import ReasoningMarkers
from openchatml.templates.analysis.thinking import ThinkingSwitch
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.format import (
    ContentFormat,
    ContentMode,
    GenerationPrompts,
    ReasoningFormat,
    ReasoningMode,
)

THINK = ReasoningFormat(ReasoningMode.TAGS, "<think>", "</think>")


def turns(answer: str = "{{ m.content }}", end: str = "<|end|>", prompt: str = "<|assistant|>") -> str:
    """A template of ``<|role|>`` turns ending with ``end``, the assistant's content written
    by ``answer``, ``prompt`` as its generation prompt."""
    return (
        "{% for m in messages %}<|{{ m.role }}|>{% if m.role == 'assistant' %}" + answer + "{% else %}"
        "{{ m.content }}{% endif %}"
        + end
        + "{% endfor %}{% if add_generation_prompt %}"
        + prompt
        + "{% endif %}"
    )


# ----------------------------------------------------------------------- the header


def test_trim_header_drops_an_empty_reasoning_block() -> None:
    header = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert trim_header(header, THINK) == "<|im_end|>\n<|im_start|>assistant\n"
    assert trim_header(header, ReasoningFormat()) == header


def test_trim_header_drops_a_trailing_punctuation_word() -> None:
    assert trim_header("<|eot_id|><|start_header_id|>assistant\n>>>", ReasoningFormat()) == (
        "<|eot_id|><|start_header_id|>assistant\n"
    )
    assert trim_header("<|end|>assistant\nall", ReasoningFormat()) == "<|end|>assistant\nall"


def test_role_header_is_where_the_generation_prompt_starts() -> None:
    header = "<|im_end|>\n<|im_start|>assistant\n"
    gens = GenerationPrompts(
        "<|im_start|>assistant\n", "<|im_start|>assistant\n", "<|im_start|>assistant\n<think>"
    )
    assert role_header(header, gens, ["<|im_end|>"]) == "<|im_start|>assistant\n"
    assert role_header(header, GenerationPrompts("", "", ""), ["<|im_end|>"]) == "<|im_start|>assistant\n"
    assert role_header(header, GenerationPrompts("", "", ""), ["<|eot|>"]) == ""


def test_generation_prompts_without_and_with_a_switch() -> None:
    source = turns(
        prompt="<|assistant|>{% if thinking is defined and not thinking %}<think></think>{% endif %}"
    )
    renderer = ProbeRenderer(ChatTemplate(source))
    assert generation_prompts(renderer, None) == GenerationPrompts(
        "<|assistant|>", "<|assistant|>", "<|assistant|>"
    )
    assert generation_prompts(renderer, ThinkingSwitch("thinking", True, False)) == GenerationPrompts(
        "<|assistant|>", "<|assistant|>", "<|assistant|><think></think>"
    )
    switch = ThinkingSwitch("thinking", True, None, ("low", "high"))
    assert generation_prompts(renderer, switch).no_thinking == "<|assistant|>"


def test_generation_prompts_by_enable_thinking_when_the_template_reads_it() -> None:
    source = turns(prompt="<|assistant|>{% if enable_thinking == false %}<think></think>{% endif %}")
    gens = generation_prompts(ProbeRenderer(ChatTemplate(source)), None)
    assert (gens.default, gens.thinking, gens.no_thinking) == (
        "<|assistant|>",
        "<|assistant|>",
        "<|assistant|><think></think>",
    )


# ------------------------------------------------------------------ content and ends


def test_content_markers_and_the_turn_end() -> None:
    renderer = ProbeRenderer(ChatTemplate(turns(answer="<answer>{{ m.content }}</answer>")))
    answer = renderer.tail(assistant_message(ANSWER)) or ""
    content, ending = find_content(renderer, answer, "<|end|><|assistant|>", ReasoningMarkers(), "")
    assert content == ContentFormat(ContentMode.ALWAYS_WRAPPED, "<answer>", "</answer>")
    assert ending == "<|end|>"


def test_plain_content_and_content_wrapped_only_with_reasoning() -> None:
    renderer = ProbeRenderer(ChatTemplate(turns()))
    answer = renderer.tail(assistant_message(ANSWER)) or ""
    header = "<|end|><|assistant|>"
    assert find_content(renderer, answer, header, ReasoningMarkers(), "") == (ContentFormat(), "<|end|>")
    wrapped = ReasoningMarkers(THINK, "<response>", "</response>")
    assert find_content(renderer, answer, header, wrapped, "")[0] == ContentFormat(
        ContentMode.WRAPPED_WITH_REASONING, "<response>", "</response>"
    )


def test_the_empty_reasoning_block_before_answers_is_no_content_marker() -> None:
    renderer = ProbeRenderer(ChatTemplate(turns(answer="<think></think>{{ m.content }}")))
    answer = renderer.tail(assistant_message(ANSWER)) or ""
    content, _ = find_content(renderer, answer, "<|end|><|assistant|>", ReasoningMarkers(THINK), "")
    assert content == ContentFormat()


def test_text_after_the_last_message_is_not_the_answers_end() -> None:
    source = turns() + "{% if messages[-1].role == 'assistant' %}<|appendix|>{% endif %}"
    renderer = ProbeRenderer(ChatTemplate(source))
    assert bound_answer_end(renderer, "<|end|><|appendix|>") == "<|end|>"


def test_an_end_written_only_before_the_next_message() -> None:
    source = (
        "{% for m in messages %}{% if not loop.first %}<|end|>{% endif %}<|{{ m.role }}|>{{ m.content }}"
        "{% endfor %}{% if add_generation_prompt %}<|end|><|assistant|>{% endif %}"
    )
    renderer = ProbeRenderer(ChatTemplate(source))
    assert bound_answer_end(renderer, "") == "<|end|>"


def test_first_turn_marker() -> None:
    renderer = ProbeRenderer(ChatTemplate(turns()))
    assert first_turn_marker(renderer, "</answer><|end|>", "") == len("</answer>")
    assert first_turn_marker(renderer, "</answer><x>", "") == 0
    assert first_turn_marker(renderer, "plain", "") == len("plain")


def test_the_next_header_ends_a_turn_without_an_end_marker() -> None:
    assert next_header_marker(ProbeRenderer(ChatTemplate(turns(end="")))) == "<|user|>"
    assert next_header_marker(ProbeRenderer(ChatTemplate(turns()))) == "<|end|>"


def test_end_marker() -> None:
    assert end_marker("\n<|im_end|>\n<|endoftext|>") == "<|im_end|>"
    assert end_marker(" END of the turn") == "END"
    assert end_marker("  ") == ""
