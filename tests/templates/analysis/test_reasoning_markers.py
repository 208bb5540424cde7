"""The reasoning markers: from an answer with and without reasoning, or, for a template
that drops reasoning from history, from its generation prompt and what it cuts."""

from __future__ import annotations

from openchatml.templates.analysis import analyze_source
from openchatml.templates.analysis.probes import THOUGHT, ProbeRenderer
from openchatml.templates.analysis.reasoning import (
    ReasoningMarkers,
    cuts_reasoning,
    find_reasoning,
    markers_around_thought,
    markers_from_prompt,
    plausible,
    reasoning_variants,
)
from openchatml.templates.analysis.thinking import ThinkingSwitch
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.format import GenerationPrompts, ReasoningFormat, ReasoningMode


def cutting(prompt: str, end: str = "</think>") -> str:
    """A template that keeps only what follows ``end`` of an answer and writes ``prompt``
    as its generation prompt."""
    return (
        "{% for m in messages %}<|{{ m.role }}|>{% if m.role == 'assistant' %}"
        "{{ m.content.split('" + end + "')[-1] }}{% else %}{{ m.content }}{% endif %}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}" + prompt + "{% endif %}"
    )


def test_plausible_markers() -> None:
    assert plausible("<think>") and plausible('<thinking mode="on">') and plausible("")
    assert not plausible("THOUGHTTEXT</think>")
    assert not plausible("['")
    assert not plausible("{")


def test_markers_around_the_thought() -> None:
    found = markers_around_thought("<a>ANSWERTEXT<e>", "<a><think>THOUGHTTEXT</think>ANSWERTEXT<e>")
    assert found == ReasoningMarkers(ReasoningFormat(ReasoningMode.TAGS, "<think>", "</think>"))


def test_an_empty_block_in_the_plain_answer_gives_both_markers() -> None:
    found = markers_around_thought("<a><think></think>ANSWERTEXT", "<a><think>THOUGHTTEXT</think>ANSWERTEXT")
    assert found is not None
    assert (found.fmt.mode, found.fmt.start, found.fmt.end) == (ReasoningMode.TAGS, "<think>", "</think>")


def test_an_end_marker_alone_is_a_delimiter() -> None:
    found = markers_around_thought("ANSWERTEXT", "THOUGHTTEXT[/THINK]ANSWERTEXT")
    assert found is not None
    assert (found.fmt.mode, found.fmt.start, found.fmt.end) == (ReasoningMode.DELIMITER, "", "[/THINK]")
    assert markers_around_thought("ANSWERTEXT", "THOUGHTTEXTANSWERTEXT") is None
    assert markers_around_thought("ANSWERTEXT", "ANSWERTEXT!") is None


def test_a_content_wrapper_opened_after_the_reasoning() -> None:
    found = markers_around_thought(
        "<a>ANSWERTEXT</response>", "<a><think>THOUGHTTEXT</think><response>ANSWERTEXT</response>"
    )
    assert found is not None
    assert (found.fmt.start, found.fmt.end) == ("<think>", "</think>")
    assert (found.content_start, found.content_end) == ("<response>", "</response>")


def test_reasoning_variants_likeliest_first() -> None:
    renderer = ProbeRenderer(ChatTemplate("{{ messages }}"))
    variants = list(reasoning_variants(renderer, None, ThinkingSwitch("think", True, False)))
    fields = [next((k for k in with_r if k not in without), "chunks") for with_r, without, _ in variants]
    assert fields == ["reasoning_content", "reasoning", "thinking", "chunks"] * 2
    assert [opts for _, _, opts in variants] == [{}] * 4 + [{"think": True}] * 4
    assert all(THOUGHT not in str(without) for _, without, _ in variants)


def test_the_prompt_opens_a_block_the_template_cuts_from_history() -> None:
    renderer = ProbeRenderer(ChatTemplate(cutting("<|assistant|><think>\n")))
    assert cuts_reasoning(renderer, "</think>")
    assert not cuts_reasoning(renderer, "</reasoning>")
    gens = GenerationPrompts("<|assistant|><think>\n", "<|assistant|><think>\n", "<|assistant|><think>\n")
    found = markers_from_prompt(renderer, gens, False, "<|end|><|assistant|>")
    assert found == ReasoningMarkers(ReasoningFormat(ReasoningMode.TAGS, "<think>", "</think>"))


def test_an_empty_block_in_the_prompt_shows_both_markers() -> None:
    renderer = ProbeRenderer(ChatTemplate(cutting("<|assistant|>")))
    gens = GenerationPrompts("<|assistant|>", "<|assistant|>", "<|assistant|>[THINK][/THINK]")
    found = markers_from_prompt(renderer, gens, True, "<|end|><|assistant|>")
    assert found.fmt == ReasoningFormat(ReasoningMode.TAGS, "[THINK]", "[/THINK]", toggles=True)


def test_the_usual_markers_when_the_template_cuts_them() -> None:
    fmt = analyze_source(cutting("<|assistant|>", end="[/THINK]"), name="cuts").reasoning
    assert (fmt.mode, fmt.start, fmt.end) == (ReasoningMode.TAGS, "[THINK]", "[/THINK]")
    fmt = analyze_source(cutting("<|assistant|>", end="</nothing>"), name="cuts nothing known").reasoning
    assert fmt.mode is ReasoningMode.NONE


def test_the_switch_is_recorded_with_the_markers() -> None:
    source = (
        "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}"
        "<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    renderer = ProbeRenderer(ChatTemplate(source))
    gens = GenerationPrompts("<|assistant|>", "<|assistant|>", "<|assistant|>")
    switch = ThinkingSwitch("reasoning_effort", "high", "none", ("low", "high"))
    fmt = find_reasoning(renderer, gens, None, "<|end|><|assistant|>", switch).fmt
    assert (fmt.start, fmt.end, fmt.toggles, fmt.tools_only) == ("<think>", "</think>", False, False)
    assert (fmt.switch, fmt.on, fmt.off, fmt.efforts) == ("reasoning_effort", "high", "none", ("low", "high"))
    assert find_reasoning(renderer, gens, None, "<|end|><|assistant|>", None).fmt.switch == ""
