"""Tool-call grammars, checked with the engines' own grammar libraries.

Lark grammars run in llguidance (``LLMatcher`` over a byte-level tokenizer, with some
markers as special tokens where a test says so); the GBNF / EBNF text runs in xgrammar
(``Grammar.from_ebnf``), skipped where xgrammar is not installed (llguidance's own GBNF
converter lexes greedily and is no judge of GBNF). The formats are the hand-written ones of
``hand_formats.py``, one per family, spelled the way the analysis spells them.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from data_paths import CASES as CASES_FILE
from data_paths import TEMPLATES
from grammar_checks import CONFIGURE, TIME, TOOLS, WEATHER, check, from_trigger, lark_accepts, tool
from hand_formats import BY_TEMPLATE, FORMATS

from openchatml.templates.format import (
    CallIdPosition,
    ReasoningFormat,
    ReasoningMode,
    TemplateFormat,
    ToolCallFormat,
    ToolSyntax,
)
from openchatml.templates.grammar import ToolGrammar, Trigger, tool_call_grammar

# --------------------------------------------------------------------------- formats (hand_formats.py)

# The templates whose parse cases with tool calls are run through the grammars.
GRAMMAR_TEMPLATES = (
    "Qwen3.5-4B.jinja",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
    "Qwen3-Coder.jinja",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
    "unsloth-mistral-Devstral-Small-2507.jinja",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "Cohere2MoE.jinja",
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
    "google-gemma-4-31B-it.jinja",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
    "ibm-granite-granite-4.0.jinja",
    "MiMo-VL.jinja",
    "Qwen-Qwen2.5-7B-Instruct.jinja",
    "deepseek-ai-DeepSeek-V3.2.jinja",
    "GLM-4.6.jinja",
    "Kimi-K2-Thinking.jinja",
    "moonshotai-Kimi-K2.jinja",
    "Kimi-K2-Instruct.jinja",
    "LFM2-8B-A1B.jinja",
    "LFM2.5-Instruct.jinja",
    "LFM2.5-8B-A1B.jinja",
    "Apertus-8B-Instruct.jinja",
    "NVIDIA-Nemotron-Nano-v2.jinja",
    "meetkai-functionary-medium-v3.1.jinja",
    "fireworks-ai-llama-3-firefunction-v2.jinja",
    "llama-cpp-deepseek-r1.jinja",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "unsloth-Apriel-1.5.jinja",
    "GigaChat3-10B-A1.8B.jinja",
    "openbmb-MiniCPM5-1B.jinja",
)

# Cases whose output the grammar rejects on purpose: output no conforming model writes.
REJECTED_CASES: dict[int, str] = {
    17: "tool_choice required, yet content before the call",
    23: "tool_choice required, yet content before the call",
    180: "calls inside reasoning that is never closed",
    181: "calls inside reasoning that is never closed, without the section markers",
}
# Malformed calls that never open the tool-call section: plain content to the grammar.
CONTENT_CASES: dict[int, str] = {182: "a call without the section and call-end markers"}

# --------------------------------------------------------------------------- the cases


def _cases() -> list[dict[str, Any]]:
    if not CASES_FILE.exists():
        return []
    cases = json.loads(CASES_FILE.read_text())["cases"]
    return [
        c
        for c in cases
        if c["template"] in GRAMMAR_TEMPLATES
        and c["expected"]["tool_calls"]
        and not c["options"]["is_partial"]
    ]


def _prefix(fmt: TemplateFormat, generation_prompt: str) -> str:
    """What the generation prompt wrote of the assistant's message (its reasoning markers)."""
    start = fmt.reasoning.start
    if start and start in generation_prompt:
        return generation_prompt[generation_prompt.index(start) :]
    end = fmt.reasoning.end
    if end and end in generation_prompt:
        return generation_prompt[generation_prompt.index(end) :]
    return ""


def _case_grammar(case: dict[str, Any], choice: str | None = None) -> tuple[TemplateFormat, ToolGrammar]:
    fmt = FORMATS[BY_TEMPLATE[case["template"]]]
    options = case["options"]
    grammar = tool_call_grammar(
        fmt,
        options["tools"],
        tool_choice=choice or options["tool_choice"],
        parallel=options["parallel_tool_calls"],
        prefix=_prefix(fmt, case["reference_params"]["generation_prompt"]),
    )
    return fmt, grammar


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[f"{c['id']}-{c['template'][:-6]}" for c in CASES])
def test_case_outputs(case: dict[str, Any]) -> None:
    fmt, grammar = _case_grammar(case)
    check(grammar, fmt, case["input"], case["id"] not in REJECTED_CASES)


@pytest.mark.parametrize(
    "case_id", sorted(k for k in REJECTED_CASES if REJECTED_CASES[k].startswith("tool_choice"))
)
def test_required_cases_are_accepted_under_auto(case_id: int) -> None:
    case = next(c for c in CASES if c["id"] == case_id)
    fmt, grammar = _case_grammar(case, choice="auto")
    check(grammar, fmt, case["input"], True)


@pytest.mark.parametrize("case_id", sorted(CONTENT_CASES))
def test_malformed_calls_are_only_content(case_id: int) -> None:
    case = next(c for c in CASES if c["id"] == case_id)
    fmt, grammar = _case_grammar(case, choice="required")
    check(grammar, fmt, case["input"], False)


def test_cases_cover_every_family() -> None:
    if not CASES:
        pytest.skip("no shared cases here")
    used = {BY_TEMPLATE[c["template"]] for c in CASES}
    assert used >= {BY_TEMPLATE[t] for t in GRAMMAR_TEMPLATES}


# --------------------------------------------------------------------------- calls rendered by the templates

PING = tool("ping", {})
RENDER_TOOLS = [WEATHER, TIME, CONFIGURE, PING]
TYPED_ARGS = {
    "name": 'a "quoted"\nline',
    "count": 3,
    "ratio": 0.5,
    "enabled": True,
    "tags": ["x", "y"],
    "options": {"level": 2, "mode": "fast"},
    "note": None,
}
SHAPES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "one": [("get_weather", {"city": "Paris"})],
    "typed": [("configure", TYPED_ARGS)],
    "two": [("get_weather", {"city": "Paris", "unit": "celsius"}), ("get_time", {"city": "Tokyo"})],
    "empty": [("ping", {})],
}
# One template per family, two for Devstral's (Ministral's template writes reasoning,
# Devstral's none); Hermes' and Command R+'s templates are left out: they do not render
# tools given as Chat Completions objects here. Each is read with its family's format
# (``hand_formats.BY_TEMPLATE``).
RENDERED = (
    "Qwen3-Coder.jinja",
    "Qwen3.5-4B.jinja",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
    "unsloth-mistral-Devstral-Small-2507.jinja",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "Cohere2MoE.jinja",
    "google-gemma-4-31B-it.jinja",
    "deepseek-ai-DeepSeek-V3.2.jinja",
    "GLM-4.6.jinja",
    "Kimi-K2-Thinking.jinja",
    "LFM2.5-8B-A1B.jinja",
    "Apertus-8B-Instruct.jinja",
    "NVIDIA-Nemotron-Nano-v2.jinja",
    "meetkai-functionary-medium-v3.1.jinja",
    "fireworks-ai-llama-3-firefunction-v2.jinja",
    "llama-cpp-deepseek-r1.jinja",
    "unsloth-Apriel-1.5.jinja",
    "GigaChat3-10B-A1.8B.jinja",
    "openbmb-MiniCPM5-1B.jinja",
    "meta-llama-Llama-3.1-8B-Instruct.jinja",
)


def rendered(name: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[str, str]:
    """(prefix, output): what template ``name`` writes for an assistant message making
    ``calls``, after the generation prompt and before the end of the turn."""
    from openchatml.templates.environment import ChatTemplate

    path = TEMPLATES / name
    if not path.exists():
        pytest.skip("no shared templates here")
    fmt = FORMATS[BY_TEMPLATE[name]]
    # one clock for both renders: a template that writes the time must not differ between them
    template = ChatTemplate(path.read_text(), name=path.name, now=datetime(2026, 1, 2, 3, 4, 5))
    user = {"role": "user", "content": "Hi"}
    tool_calls = [
        {"id": f"c{i}abcdefg", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(calls)
    ]
    assistant = {"role": "assistant", "content": "", "tool_calls": tool_calls}
    full = template.render([user, assistant], tools=RENDER_TOOLS)
    head = template.render([user], tools=RENDER_TOOLS, add_generation_prompt=True)
    n = 0
    while n < min(len(full), len(head)) and full[n] == head[n]:
        n += 1
    if n < len(head):  # the generation prompt goes on differently: do not split a marker
        cut = max(head.rfind("<", 0, n), head.rfind("[", 0, n), head.rfind("\n", 0, n) + 1)
        n = max(cut, 0)
    out = full[n:]
    cuts = [i for marker in fmt.end_markers if (i := out.find(marker, 1)) > 0]
    prefix = _prefix(fmt, head[max(0, n - 64) : n])
    if fmt.reasoning.end and out.lstrip().startswith(fmt.reasoning.end) and not prefix:
        prefix = fmt.reasoning.start  # the template closes what its generation prompt opened
    return prefix, out[: min(cuts)] if cuts else out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", RENDERED)
def test_rendered_calls(name: str, shape: str) -> None:
    fmt = FORMATS[BY_TEMPLATE[name]]
    if shape == "two" and not fmt.tools.parallel:
        pytest.skip("the format writes one call per message")
    prefix, out = rendered(name, SHAPES[shape])
    for choice in ("auto", "required"):
        check(tool_call_grammar(fmt, RENDER_TOOLS, tool_choice=choice, prefix=prefix), fmt, out, True)


@pytest.mark.parametrize("name", RENDERED)
def test_rejects_malformed_calls(name: str) -> None:
    fmt = FORMATS[BY_TEMPLATE[name]]
    prefix, good = rendered(name, [("get_weather", {"city": "Paris"})])
    grammar = tool_call_grammar(fmt, RENDER_TOOLS, prefix=prefix)
    required = tool_call_grammar(fmt, RENDER_TOOLS, tool_choice="required", prefix=prefix)
    check(grammar, fmt, good, True)
    check(grammar, fmt, good.replace("get_weather", "get_wether"), False)  # not an offered tool
    _, missing = rendered(name, [("configure", {"name": "x"})])  # count is required
    check(grammar, fmt, missing, False)
    _, wrong = rendered(name, [("configure", {"name": "x", "count": "three"})])  # count: integer
    check(grammar, fmt, wrong, False)
    _, unknown = rendered(name, [("get_time", {"city": "Paris", "zone": "CET"})])  # closed schema
    check(grammar, fmt, unknown, False)
    check(grammar, fmt, good.rstrip()[:-1], False)  # the closing marker cut short
    check(required, fmt, good.rstrip()[:-1], False)
    tail = from_trigger(grammar, fmt, good)
    assert tail is not None
    check(required, fmt, good[: len(good) - len(tail)] + "Sure. " + tail, False)  # content before the call
    plain = "The weather in Paris is sunny."
    check(tool_call_grammar(fmt, RENDER_TOOLS, tool_choice="required"), fmt, plain, False)
    check(tool_call_grammar(fmt, RENDER_TOOLS), fmt, plain, True)
    named = tool_call_grammar(
        fmt, RENDER_TOOLS, tool_choice={"type": "function", "name": "get_time"}, prefix=prefix
    )
    check(named, fmt, good, False)
    check(named, fmt, rendered(name, [("get_time", {"city": "Paris"})])[1], True)


@pytest.mark.parametrize("name", [n for n in RENDERED if FORMATS[BY_TEMPLATE[n]].tools.parallel])
def test_one_call_only_without_parallel(name: str) -> None:
    fmt = FORMATS[BY_TEMPLATE[name]]
    prefix, two = rendered(name, SHAPES["two"])
    check(tool_call_grammar(fmt, RENDER_TOOLS, prefix=prefix, parallel=False), fmt, two, False)
    check(tool_call_grammar(fmt, RENDER_TOOLS, prefix=prefix, parallel=True), fmt, two, True)


# --------------------------------------------------------------------------- reasoning, content, choices


def test_reasoning_follows_the_prefix() -> None:
    fmt = FORMATS["qwen3.5"]
    call = (
        "<tool_call>\n<function=get_time>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
    )
    opened = tool_call_grammar(fmt, TOOLS, tool_choice="required", prefix="<think>\n")
    check(opened, fmt, "Paris, then.\n</think>\n\n" + call, True)
    check(opened, fmt, call, False)  # the open reasoning must be closed first
    closed = tool_call_grammar(fmt, TOOLS, tool_choice="required", prefix="<think>\n\n</think>\n\n")
    check(closed, fmt, call, True)
    check(closed, fmt, "<think>x</think>" + call, False)
    free = tool_call_grammar(fmt, TOOLS, tool_choice="required")
    check(free, fmt, call, True)
    check(free, fmt, "<think>\nA call <tool_call> inside.\n</think>\n" + call, True)
    check(free, fmt, "<think>\nnever closed " + call, False)
    auto = tool_call_grammar(fmt, TOOLS)
    check(auto, fmt, "<think>\nhm\n</think>\n\nJust text.", True)
    check(auto, fmt, "<think>\nhm\n</think>\n\nLet me look. " + call, True)
    check(auto, fmt, "Text, " + call + " and more text", False)


# --------------------------------------------------------------------------- triggers and special tokens


@pytest.mark.parametrize(
    ("family", "trigger"),
    [
        ("qwen3-coder", Trigger("<tool_call>")),
        ("kimi-k2", Trigger("<|tool_calls_section_begin|>")),
        ("mistral-small-3.2", Trigger("[TOOL_CALLS]")),
        ("functionary-v3.1", Trigger("<function=")),
        ("minicpm5", Trigger('<function name="')),
        ("command-r-plus", Trigger("Action:\n```json")),
        ("llama3.1", Trigger(r"^\s*(\{)", "pattern")),
    ],
)
def test_triggers(family: str, trigger: Trigger) -> None:
    grammar = tool_call_grammar(FORMATS[family], TOOLS)
    assert grammar.lazy
    assert grammar.triggers == (trigger,)
    assert not tool_call_grammar(FORMATS[family], TOOLS, tool_choice="required").lazy


def test_bare_json_calls() -> None:
    fmt = FORMATS["llama3.1"]
    grammar = tool_call_grammar(fmt, TOOLS)
    call = '{"name": "get_time", "parameters": {"city": "Oslo"}}'
    check(grammar, fmt, call, True)
    check(grammar, fmt, "\n " + call, True)
    check(grammar, fmt, "It is noon in Oslo.", True)
    check(grammar, fmt, '{"name": "get_time"}', False)  # begins like a call: must be one
    check(grammar, fmt, "Sure: " + call, True)  # a call only at the start; here it is text
    required = tool_call_grammar(fmt, TOOLS, tool_choice="required")
    check(required, fmt, "Sure: " + call, False)


def test_special_tokens_are_token_references() -> None:
    fmt = FORMATS["kimi-k2"]
    markers = ["<think>", "</think>", *(m for m in _markers(fmt) if m.startswith("<|"))]
    ids = {m: 257 + i for i, m in enumerate(markers)}
    grammar = tool_call_grammar(fmt, TOOLS, special_tokens=ids)
    assert grammar.triggers == (
        Trigger("<|tool_calls_section_begin|>", "word", ids["<|tool_calls_section_begin|>"]),
    )
    assert "<[" in grammar.lark and '"<|tool_call_begin|>"' not in grammar.lark
    call = (
        "<think>Oslo.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
        '<|tool_call_argument_begin|>{"city": "Oslo"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    assert lark_accepts(grammar.lark, call, markers)
    assert lark_accepts(grammar.lark, "<think>Oslo.</think>It is noon.", markers)
    assert not lark_accepts(grammar.lark, call.replace("get_time", "get_tim"), markers)
    # a grammar that spells the markers as text never matches the special tokens
    textual = tool_call_grammar(fmt, TOOLS)
    assert not lark_accepts(textual.lark, call, markers)
    assert lark_accepts(textual.lark, call)


def _markers(fmt: TemplateFormat) -> list[str]:
    t = fmt.tools
    return [
        m.strip() for m in (t.section_start, t.section_end, t.call_start, t.call_end, t.arguments_start) if m
    ]


def test_reasoning_before_a_delimiter() -> None:
    fmt = TemplateFormat(
        name="delimited",
        reasoning=ReasoningFormat(mode=ReasoningMode.DELIMITER, end="[BEGIN FINAL RESPONSE]"),
        tools=FORMATS["apriel-1.5"].tools,
    )
    call = '<tool_calls>[{"name": "get_time", "arguments": {"city": "Oslo"}}]</tool_calls>'
    auto = tool_call_grammar(fmt, TOOLS)
    check(auto, fmt, "Hm, <tool_calls> later.\n[BEGIN FINAL RESPONSE]\nIt is noon.", True)
    check(auto, fmt, "Hm.\n[BEGIN FINAL RESPONSE]\n" + call, True)
    required = tool_call_grammar(fmt, TOOLS, tool_choice="required")
    check(auto, fmt, call, False)  # the reasoning comes first, until the delimiter
    check(required, fmt, "Hm.\n[BEGIN FINAL RESPONSE]\n" + call, True)
    check(required, fmt, "[BEGIN FINAL RESPONSE]" + call, True)
    check(required, fmt, "Hm.\n[BEGIN FINAL RESPONSE]\nIt is noon.", False)
    done = tool_call_grammar(fmt, TOOLS, tool_choice="required", prefix="Hm.\n[BEGIN FINAL RESPONSE]\n")
    check(done, fmt, call, True)
    check(done, fmt, "Hm.\n[BEGIN FINAL RESPONSE]\n" + call, False)


def test_an_id_that_holds_the_name() -> None:
    """``id_pattern`` with the name in it, written where the name would be."""
    fmt = TemplateFormat(
        name="kimi-ids",
        tools=ToolCallFormat(
            syntax=ToolSyntax.TAG_JSON,
            section_start="<|tool_calls_section_begin|>",
            section_end="<|tool_calls_section_end|>",
            call_start="<|tool_call_begin|>",
            call_end="<|tool_call_end|>",
            parallel=True,
            arguments_start="<|tool_call_argument_begin|>",
            id_position=CallIdPosition.BEFORE_NAME,
            id_pattern="functions.{name}:{index}",
        ),
    )
    grammar = tool_call_grammar(fmt, TOOLS, tool_choice="required")
    call = "<|tool_call_begin|>functions.get_time:{i}<|tool_call_argument_begin|>{{}}<|tool_call_end|>"
    call = call.replace("{{}}", '{{"city": "Oslo"}}')
    good = "<|tool_calls_section_begin|>" + call.format(i=0) + call.format(i=1) + "<|tool_calls_section_end|>"
    check(grammar, fmt, good, True)
    check(grammar, fmt, good.replace("functions.get_time:1", "functions.get_tim:1"), False)
    check(grammar, fmt, good.replace("get_time:1", "get_time:"), False)
