"""The thinking switch: found by rendering, whatever the variable is called; its
candidates read off the template's source; the evidence that a value turns thinking
off."""

from __future__ import annotations

from typing import Any

import pytest
from analysed_templates import compiled, fmt_of
from data_paths import TEMPLATES

from openchatml.templates.analysis import analyze_source
from openchatml.templates.analysis.probes import ProbeRenderer
from openchatml.templates.analysis.thinking import (
    ThinkingSwitch,
    closes_reasoning,
    effort_rank,
    find_switch,
    jinja_values,
    same_value,
    switch_candidates,
    try_switch,
)
from openchatml.templates.environment import ChatTemplate

needs_templates = pytest.mark.skipif(not TEMPLATES.is_dir(), reason="the shared templates are not here")


# ------------------------------------------------------------------- thinking switches

# (variable, on, off, effort levels): found by rendering, whatever the variable is called
SWITCHES: dict[str, tuple[str, Any, Any, tuple[str, ...]]] = {
    "tencent-Hy3.jinja": ("reasoning_effort", "high", "no_think", ("low", "high")),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ("thinking", True, False, ()),
    "ByteDance-Seed-OSS.jinja": ("thinking_budget", -1, 0, ()),
    "Qwen-Qwen3-0.6B.jinja": ("enable_thinking", True, False, ()),
    "Qwen3.5-4B.jinja": ("enable_thinking", True, False, ()),
    # ``thinking`` switches too, defaulting to ``enable_thinking``: the usual name wins
    "deepseek-ai-DeepSeek-V3.1.jinja": ("enable_thinking", True, False, ()),
    # ``reasoning_effort`` switches too ("none" is off): the boolean wins
    "Cohere2MoE.jinja": ("reasoning", True, False, ()),
    # "low" and "minimal" pre-close the reasoning, anything else thinks
    "upstage-Solar-Open-100B.jinja": ("reasoning_effort", "high", "minimal", ()),
    # False is the default, which writes an empty thought channel
    "google-gemma-4-31B-it.jinja": ("enable_thinking", True, False, ()),
    # history-only variables (``keep_past_thinking``, ``preserve_thinking``) are no switch
    "LFM2.5-Instruct.jinja": ("", None, None, ()),
    "LFM2.5-8B-A1B.jinja": ("", None, None, ()),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("", None, None, ()),
    "MiniMax-M2.jinja": ("", None, None, ()),
}


@needs_templates
@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_the_thinking_switch_is_found(name: str) -> None:
    r = fmt_of(name).reasoning
    assert (r.switch, r.on, r.off, r.efforts) == SWITCHES[name]


@needs_templates
@pytest.mark.parametrize("name", sorted(n for n, (switch, *_) in SWITCHES.items() if switch))
def test_the_switch_on_and_off_render_differently(name: str) -> None:
    r = fmt_of(name).reasoning
    user = [{"role": "user", "content": "Hi"}]
    on = compiled(name).render(user, add_generation_prompt=True, **{r.switch: r.on})
    off = compiled(name).render(user, add_generation_prompt=True, **{r.switch: r.off})
    assert on != off


@needs_templates
def test_what_the_switches_of_real_templates_write() -> None:
    def prompt(name: str, **variables: Any) -> str:
        user = [{"role": "user", "content": "Hi"}]
        return compiled(name).render(user, add_generation_prompt=True, **variables)

    hy3 = "tencent-Hy3.jinja"
    assert prompt(hy3, reasoning_effort="high").endswith("<think:opensource>")
    assert prompt(hy3, reasoning_effort="no_think").endswith("<think:opensource></think:opensource>")
    assert "reasoning_effort:low" in prompt(hy3, reasoning_effort="low")
    seed = fmt_of("ByteDance-Seed-OSS.jinja").generation_prompt
    assert "thinking budget is 0" in seed.no_thinking and seed.thinking == seed.default
    granite = "ibm-granite-granite-3.3-2B-Instruct.jinja"
    assert "<think></think>" in prompt(granite, thinking=True)
    assert "<think>" not in prompt(granite, thinking=False)
    qwen = fmt_of("Qwen-Qwen3-0.6B.jinja").generation_prompt
    assert qwen.no_thinking == "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert qwen.thinking == qwen.default == "<|im_start|>assistant\n"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (  # a switch under another name, on by default
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% if enable_reasoning is defined "
            "and not enable_reasoning %}<think></think>{% endif %}{% endif %}",
            ("enable_reasoning", True, False, ()),
        ),
        (  # a switch that negates: True is off, proved by the empty block it writes
            "{% set skip_thinking = skip_thinking | default(false) %}"
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% if skip_thinking %}<think>\n\n</think>\n\n"
            "{% else %}<think>\n{% endif %}{% endif %}",
            ("skip_thinking", False, True, ()),
        ),
        (  # effort levels, and an off the template names
            "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% if thinking_mode == 'off' %}<think></think>"
            "{% elif thinking_mode in ['low', 'medium', 'high'] %}<think>{{ thinking_mode }}:"
            "{% endif %}{% endif %}",
            ("thinking_mode", "high", "off", ("low", "medium", "high")),
        ),
        (  # a variable that changes history only
            "{% for m in messages %}<|{{ m.role }}|>{% if keep_thinking and m.reasoning_content %}"
            "<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|end|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}",
            ("", None, None, ()),
        ),
    ],
)
def test_made_up_thinking_switches(source: str, expected: tuple[str, Any, Any, tuple[str, ...]]) -> None:
    r = analyze_source(source, name="made-up").reasoning
    assert (r.switch, r.on, r.off, r.efforts) == expected


# ------------------------------------------------------------------ the candidates

EFFORTS = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>"
    "{% if reasoning_effort is defined and reasoning_effort not in ['low', 'high'] %}"
    "{{ raise_exception('unknown effort') }}{% endif %}"
    "{% if reasoning_effort == 'low' %}<think></think>{% else %}<think>{% endif %}{% endif %}"
)


def test_literals_of_jinja_source() -> None:
    assert jinja_values("['high', \"low\", 0, -1, true, False]") == ["high", "low", 0, -1, True, False]
    assert jinja_values("(none)") == []


def test_effort_ranks_and_strict_equality() -> None:
    ranks = [effort_rank(v) for v in ("none", "minimal", "LOW", "medium", "high", "xhigh")]
    assert ranks == [0, 1, 2, 3, 4, 5]
    assert effort_rank("turbo") == effort_rank(3) == -1
    assert same_value(1, [1]) and same_value(True, [True])
    assert not same_value(True, [1]) and not same_value(0, [False])


def test_switch_candidates_are_the_callers_variables_with_their_literals() -> None:
    source = (
        "{% set thinking_note = 'x' %}{{ thinking_note }}"  # the template's own variable
        "{% set skip_reasoning = skip_reasoning | default(false) %}"  # set only when undefined
        "{% if budget == 0 %}{% endif %}{% if colour == 'red' %}{% endif %}" + EFFORTS
    )
    candidates = {name: (values, own) for name, values, own in switch_candidates(ChatTemplate(source))}
    assert sorted(candidates) == ["budget", "reasoning_effort", "skip_reasoning"]
    assert candidates["budget"] == ((0,), (0,))
    assert candidates["skip_reasoning"] == ((True, False), (False,))
    values, own = candidates["reasoning_effort"]
    assert values == ("low", "high", "none", "minimal", "medium")
    assert own == ("low", "high", "low")


def test_a_block_closed_in_the_prompt_turns_thinking_off() -> None:
    assert closes_reasoning("<|assistant|><think>", "<|assistant|><think></think>")
    assert closes_reasoning("<|assistant|>", "<|assistant|><think></think>")
    assert not closes_reasoning("<|assistant|><think></think>", "<|assistant|><think>")
    assert not closes_reasoning("<|assistant|>", "<|assistant|><think>")


# ------------------------------------------------------------------ trying values


def test_refused_values_are_dropped_and_not_reported() -> None:
    renderer = ProbeRenderer(ChatTemplate(EFFORTS, name="efforts"))
    switch = find_switch(renderer)
    assert switch == ThinkingSwitch("reasoning_effort", "high", "low", ())
    assert renderer.errors == []


def test_a_variable_that_changes_nothing_is_no_switch() -> None:
    source = (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}{% if enable_thinking %}{% endif %}"
    )
    renderer = ProbeRenderer(ChatTemplate(source))
    assert try_switch(renderer, "enable_thinking", (True, False), ()) is None
    assert find_switch(renderer) is None


def test_a_budget_is_on_at_its_default_and_off_at_zero() -> None:
    source = (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>"
        "{% if thinking_budget is defined and thinking_budget == 0 %}[no thinking]"
        "{% elif thinking_budget is defined and thinking_budget > 0 %}[budget {{ thinking_budget }}]"
        "{% endif %}{% endif %}"
    )
    switch = try_switch(ProbeRenderer(ChatTemplate(source)), "thinking_budget", (0, 512), (0, 0))
    assert switch == ThinkingSwitch("thinking_budget", 512, 0, ())
