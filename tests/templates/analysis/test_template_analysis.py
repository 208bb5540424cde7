"""Differential analysis of chat templates, whole: every real template analysed, formats
held to a snapshot, to what a reference implementation derived for the same templates, to
the spelling of real model output, and to the template's own renders; made-up templates
for each syntax.

The snapshot ``tests/templates/formats.json`` holds the format of every template in
``tests/templates/data/templates``. After a deliberate change, regenerate it with::

    OPENCHATML_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/templates/analysis -k snapshot
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from analysed_templates import (
    ROUND_TRIP_CALLS,
    TEMPLATE_NAMES,
    compiled,
    fmt_of,
    render_calls,
    tool_templates,
)
from data_paths import CASES, TEMPLATES

from openchatml.templates.analysis import analyze_source, clear_caches
from openchatml.templates.analysis.template_analysis import TemplateAnalysis
from openchatml.templates.errors import UnsupportedTemplateError
from openchatml.templates.format import (
    CallIdPosition,
    ContentMode,
    ReasoningMode,
    TemplateFormat,
    ToolCallFormat,
    ToolSyntax,
)

SNAPSHOT = Path(__file__).parents[1] / "formats.json"

pytestmark = pytest.mark.skipif(not TEMPLATES.is_dir(), reason="the shared templates are not here")


@cache
def cases_by_template() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    if CASES.is_file():
        for case in json.loads(CASES.read_text(encoding="utf-8"))["cases"]:
            out.setdefault(case["template"], []).append(case)
    return out


# --------------------------------------------------------------------- every template


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_every_template_is_analysed(name: str) -> None:
    fmt = fmt_of(name)
    assert fmt.name == name
    assert TemplateFormat.from_json(json.loads(fmt.dumps())) == fmt
    if not fmt.harmony:
        # a template that writes a generation prompt has a role header it starts with
        assert fmt.generation_prompt.header or not fmt.generation_prompt.default.strip()
        for marker in (fmt.reasoning.start, fmt.reasoning.end, fmt.content.start, fmt.tools.call_start):
            assert not any(n in marker for n in ("USERMSG", "ANSWERTEXT", "THOUGHTTEXT", "foofoo", "XXXX"))


def test_snapshot() -> None:
    formats = {name: fmt_of(name).to_json() for name in TEMPLATE_NAMES}
    if os.environ.get("OPENCHATML_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(json.dumps(formats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    assert sorted(stored) == sorted(formats)
    changed = [name for name in formats if stored[name] != formats[name]]
    assert not changed, f"formats changed (regenerate the snapshot if intended): {changed}"


def test_harmony_is_routed_to_the_core_codec() -> None:
    fmt = fmt_of("openai-gpt-oss-120b.jinja")
    assert fmt.harmony
    assert fmt.tools.syntax is ToolSyntax.NONE
    assert "<|channel|>" in fmt.preserved_tokens
    assert [n for n in TEMPLATE_NAMES if fmt_of(n).harmony] == ["openai-gpt-oss-120b.jinja"]


# ------------------------------------------------------------------ against the oracle

# The reference derives these reasoning markers from outside the template: Devstral's
# template never mentions reasoning (the reference assumes Mistral's [THINK]); LFM2-8B's
# template neither (the reference assumes <think>).
REFERENCE_REASONING_BEYOND_TEMPLATE = {"unsloth-mistral-Devstral-Small-2507.jinja", "LFM2-8B-A1B.jinja"}


@pytest.mark.parametrize("name", sorted(cases_by_template()))
def test_reasoning_markers_match_the_reference(name: str) -> None:
    fmt = fmt_of(name)
    ref = cases_by_template()[name][0]["reference_params"]
    if fmt.harmony:
        return
    expected = (ref["thinking_start_tag"], ref["thinking_end_tag"])
    if name in REFERENCE_REASONING_BEYOND_TEMPLATE:
        assert (fmt.reasoning.start, fmt.reasoning.end) == ("", "")
    elif expected == ("", ""):
        assert fmt.reasoning.mode is ReasoningMode.NONE
    else:
        assert (fmt.reasoning.start, fmt.reasoning.end) == expected


@pytest.mark.parametrize("name", sorted(cases_by_template()))
def test_generation_prompts_match_the_reference(name: str) -> None:
    fmt = fmt_of(name)
    ours = {fmt.generation_prompt.default, fmt.generation_prompt.thinking, fmt.generation_prompt.no_thinking}
    for case in cases_by_template()[name]:
        if case["options"]["continue_final_message"] == "none" and not case["options"].get("messages"):
            assert case["reference_params"]["generation_prompt"] in ours
    header = fmt.generation_prompt.header
    assert all(p.startswith(header) for p in ours if p)


@pytest.mark.parametrize("name", sorted(cases_by_template()))
def test_preserved_tokens_cover_the_reference_tool_markers(name: str) -> None:
    """The reference's tool-call triggers are markers of ours (whitespace aside)."""
    fmt = fmt_of(name)
    if fmt.harmony:
        return
    ours = "\n".join(fmt.preserved_tokens)
    for case in cases_by_template()[name]:
        for trigger in case["reference_params"]["grammar_triggers"]:
            if trigger["type"] == "word":
                word = trigger["value"].strip()
                assert word in ours or word.replace("\n\n", "\n") in ours.replace("\n\n", "\n"), word


# Inputs written to test a parser's recovery: calls without their section markers.
MALFORMED_INPUTS = {181, 182}


def tool_case_params() -> list[tuple[str, int]]:
    return [
        (name, case["id"])
        for name, cases in sorted(cases_by_template().items())
        for case in cases
        if case["expected"]["tool_calls"]
        and not case["options"]["is_partial"]
        and case["id"] not in MALFORMED_INPUTS
        and not name.startswith("openai-gpt")
    ]


@pytest.mark.parametrize(("name", "case_id"), tool_case_params())
def test_model_output_has_the_markers_in_order(name: str, case_id: int) -> None:
    """Real tool-call output (with what the prompt already wrote of it) holds the format's
    markers, in order."""
    case = next(c for c in cases_by_template()[name] if c["id"] == case_id)
    fmt = fmt_of(name)
    prompt = fmt.generation_prompt.default or fmt.generation_prompt.thinking
    text = prompt[len(fmt.generation_prompt.header) :] + case["input"]
    calls = [
        (c["name"], json.loads(c["arguments"]) if c["arguments"] else {})
        for c in case["expected"]["tool_calls"]
    ]
    assert_in_order(text, literal_pieces(fmt.tools, calls))


# ----------------------------------------------------------------------- round trip

# R1-Distill-Llama's template closes the section only after a second call (a template bug;
# the model closes it after every message of calls, as the other R1 templates show).
SECTION_END_AFTER_TWO_CALLS_ONLY = {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"}


@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("name", tool_templates())
def test_rendered_calls_have_the_markers_in_order(name: str, count: int) -> None:
    fmt = fmt_of(name)
    calls = ROUND_TRIP_CALLS[:count]
    text = render_calls(name, calls)
    if count == 2 and not fmt.tools.parallel:
        assert text is None or "lookup" not in (text or "")
        return
    assert text is not None
    tools = fmt.tools
    if count == 1 and name in SECTION_END_AFTER_TWO_CALLS_ONLY:
        tools = replace(tools, section_end="")
    ids = [i for _, _, i in calls] if tools.id_position is not CallIdPosition.NONE or tools.id_key else None
    pieces = literal_pieces(tools, [(n, a) for n, a, _ in calls], ids=ids)
    assert_in_order(text, pieces)


def literal_pieces(
    t: ToolCallFormat, calls: Sequence[tuple[str, Mapping[str, Any]]], ids: Sequence[str] | None = None
) -> list[str]:
    """The literal texts a message with ``calls`` holds, in order (whitespace at marker
    edges stripped: model output may differ there; non-string values are written in many
    ways, so only strings are looked for)."""
    out: list[str] = []

    def add(*texts: str) -> None:
        out.extend(x.strip() for x in texts if x.strip())

    add(t.section_start)
    for index, (name, args) in enumerate(calls):
        if index:
            add(t.separator)
        add(t.call_start)
        call_id = t.id_pattern.format(name=name, index=index) if t.id_pattern else (ids[index] if ids else "")
        if t.syntax is ToolSyntax.JSON:
            arg_keys = [] if t.arguments_as_string else [json.dumps(k) for k in args]
            if t.name_is_key:
                add(json.dumps(name), *arg_keys)
            for key in t.key_order:
                add(json.dumps(key))
                if key == t.wrapper_key:
                    add(json.dumps(t.name_key), json.dumps(name), json.dumps(t.arguments_key), *arg_keys)
                elif key == t.name_key:
                    add(json.dumps(name))
                elif key == t.arguments_key:
                    add(*arg_keys)
                elif key == t.id_key and call_id:
                    add(json.dumps(call_id))
        else:
            if t.id_position is CallIdPosition.BEFORE_NAME and call_id:
                add(t.id_prefix, call_id, t.id_suffix)
            if t.id_pattern and t.id_position is CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS:
                add(call_id)
            else:
                add(t.name_prefix + name + t.name_suffix)
                if t.id_position is CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS and call_id:
                    add(t.id_prefix, call_id, t.id_suffix)
            add(t.arguments_start)
            for key, value in args.items():
                string = isinstance(value, str)
                if t.syntax is ToolSyntax.TAG_TAGGED:
                    add(t.arg_name_prefix + key + t.arg_name_suffix)
                    add(
                        t.arg_value_prefix
                        if string or not t.arg_value_prefix_json
                        else t.arg_value_prefix_json
                    )
                    add(value if string else "", t.arg_value_suffix)
                elif t.syntax is ToolSyntax.OBJECT_NOTATION:
                    add(f"{key}:" + (f"{t.string_quote}{value}{t.string_quote}" if string else ""))
                elif t.syntax is ToolSyntax.PYTHONIC:
                    add(f"{key}=")
                else:
                    add(json.dumps(key), json.dumps(value) if string else "")
            add(t.arguments_end)
            if t.id_position is CallIdPosition.AFTER_ARGUMENTS and call_id:
                add(t.id_prefix, call_id, t.id_suffix)
        if index == len(calls) - 1 or t.syntax is not ToolSyntax.JSON or not t.array:
            add(t.call_end)
    add(t.section_end)
    return out


def assert_in_order(text: str, pieces: Sequence[str]) -> None:
    pos = 0
    for piece in pieces:
        found = text.find(piece, pos)
        assert found != -1, f"{piece!r} not found after offset {pos} in {text!r}"
        pos = found + len(piece)


# ------------------------------------------------------------- made-up templates

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<tool_call>\n"
    "{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}\n</tool_call>\n"
    "{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_chatml_template_with_json_calls_and_reasoning() -> None:
    fmt = analyze_source(CHATML, name="chatml")
    assert fmt.reasoning.mode is ReasoningMode.TAGS
    assert (fmt.reasoning.start, fmt.reasoning.end) == ("<think>", "</think>")
    assert fmt.content.mode is ContentMode.PLAIN
    t = fmt.tools
    assert t.syntax is ToolSyntax.JSON
    # each call ends with a line break, the last one too
    assert (t.call_start, t.call_end, t.separator, t.parallel) == (
        "<tool_call>\n",
        "\n</tool_call>\n",
        "",
        True,
    )
    assert (t.name_key, t.arguments_key, t.array) == ("name", "arguments", False)
    assert fmt.end_markers == ("<|im_end|>",)
    assert fmt.generation_prompt.default == fmt.generation_prompt.header == "<|im_start|>assistant\n"
    assert fmt.preserved_tokens == ("<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>")


TAGGED = (
    "{% for m in messages %}[{{ m.role }}]{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<call name={{ c.function.name }} id={{ c.id }}>"
    "{% for k, v in c.function.arguments.items() %}<arg {{ k }}{% if v is string %}>{{ v }}"
    "{% else %} json>{{ v | tojson }}{% endif %}</arg>{% endfor %}</call>{% endfor %}[end]{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)


def test_a_made_up_tagged_template() -> None:
    fmt = analyze_source(TAGGED, name="tagged")
    t = fmt.tools
    assert t.syntax is ToolSyntax.TAG_TAGGED
    assert (t.name_prefix, t.id_position, t.id_prefix, t.id_suffix) == (
        "<call name=",
        CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS,
        " id=",
        ">",
    )
    assert (t.arg_name_prefix, t.arg_value_suffix, t.arguments_end) == ("<arg ", "</arg>", "</call>")
    assert (t.arg_value_prefix, t.arg_value_prefix_json) == (">", " json>")
    assert t.parallel and t.separator == ""
    assert fmt.end_markers == ("[end]",)


PYTHONIC = (
    "{% for m in messages %}<|{{ m.role }}|>{{ m.content or '' }}{% if m.tool_calls %}<calls>["
    "{% for c in m.tool_calls %}{{ c.function.name }}("
    "{% for k, v in c.function.arguments.items() %}{{ k }}={{ v | tojson }}"
    "{% if not loop.last %}, {% endif %}{% endfor %})"
    "{% if not loop.last %}, {% endif %}{% endfor %}]</calls>{% endif %}<|end|>{% endfor %}"
)


def test_a_made_up_pythonic_template() -> None:
    t = analyze_source(PYTHONIC, name="pythonic").tools
    assert t.syntax is ToolSyntax.PYTHONIC
    assert (t.section_start, t.section_end, t.separator, t.array) == ("<calls>", "</calls>", ", ", True)


def _simple(calls: str, answer: str = "{{ m.content or '' }}") -> str:
    """A made-up template: ``<|role|>`` turns ending with ``<|end|>``, the assistant's
    answer written by ``answer`` and each call by ``calls`` (``c`` is the call)."""
    return (
        "{% for m in messages %}<|{{ m.role }}|>"
        "{% if m.role == 'assistant' and not m.tool_calls %}"
        + answer
        + "{% else %}{{ m.content or '' }}{% endif %}"
        "{% for c in m.tool_calls or [] %}" + calls + "{% endfor %}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        (  # OpenAI's own shape: the name and arguments in a "function" object, an id beside it
            "<call>{{ {'id': c.id, 'type': 'function', 'function': c.function} | tojson }}</call>",
            {"syntax": ToolSyntax.JSON, "wrapper_key": "function", "id_key": "id", "call_start": "<call>"},
        ),
        (  # arguments as a JSON-encoded string
            '<call>{"name": "{{ c.function.name }}", '
            '"arguments": {{ c.function.arguments | tojson | tojson }}}</call>',
            {"syntax": ToolSyntax.JSON, "arguments_as_string": True},
        ),
        (  # the id after the arguments
            "<call>{{ c.function.name }}\n{{ c.function.arguments | tojson }}<id>{{ c.id }}</id></call>",
            {
                "syntax": ToolSyntax.TAG_JSON,
                "arguments_start": "\n",
                "id_position": CallIdPosition.AFTER_ARGUMENTS,
                "id_prefix": "<id>",
                "id_suffix": "</id>",
                "call_end": "</call>",
            },
        ),
        (  # a name as the key, calls in one array
            "{% if loop.first %}<calls>[{% endif %}{{ {c.function.name: c.function.arguments} | tojson }}"
            "{% if not loop.last %}, {% else %}]</calls>{% endif %}",
            {"syntax": ToolSyntax.JSON, "name_is_key": True, "array": True, "section_start": "<calls>"},
        ),
    ],
)
def test_made_up_call_shapes(calls: str, expected: Mapping[str, Any]) -> None:
    t = analyze_source(_simple(calls), name="made-up").tools
    assert {k: getattr(t, k) for k in expected} == dict(expected)
    assert t.parallel


def test_a_content_wrapper_that_calls_do_not_share() -> None:
    fmt = analyze_source(
        _simple("<call>{{ c.function.name }}</call>", answer="<answer>{{ m.content }}</answer>")
    )
    assert (fmt.content.mode, fmt.content.start, fmt.content.end) == (
        ContentMode.ALWAYS_WRAPPED,
        "<answer>",
        "</answer>",
    )
    assert fmt.end_markers == ("<|end|>",)


def test_a_template_without_tools_or_reasoning() -> None:
    fmt = analyze_source(
        "{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}"
        "{% if add_generation_prompt %}<start_of_turn>assistant\n{% endif %}"
    )
    assert fmt.tools == ToolCallFormat()
    assert fmt.reasoning.mode is ReasoningMode.NONE
    assert fmt.end_markers == ("<end_of_turn>",)


def test_a_template_that_drops_answers_is_unsupported() -> None:
    source = "{% for m in messages %}{% if m.role == 'user' %}<u>{{ m.content }}</u>{% endif %}{% endfor %}"
    with pytest.raises(UnsupportedTemplateError, match="content cannot be derived"):
        analyze_source(source, name="mute")


def test_a_template_that_refuses_every_conversation_is_unsupported() -> None:
    with pytest.raises(UnsupportedTemplateError, match="not even one user message"):
        analyze_source("{{ raise_exception('no') }}", name="refuser")


def test_refused_variations_are_skipped() -> None:
    """A template that refuses system messages and parallel calls is analysed from the
    variations it renders."""
    source = CHATML.replace(
        "{% for m in messages %}",
        "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system') }}{% endif %}"
        "{% if (m.tool_calls or []) | length > 1 %}{{ raise_exception('one call only') }}{% endif %}",
        1,
    )
    fmt = analyze_source(source, name="strict")
    assert fmt.tools.syntax is ToolSyntax.JSON
    assert not fmt.tools.parallel
    assert fmt.reasoning.start == "<think>"


def test_a_template_that_needs_a_system_message_is_probed_after_one() -> None:
    source = (
        "{% if messages[0].role != 'system' %}{{ raise_exception('a system message first') }}{% endif %}"
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    fmt = analyze_source(source, name="system-first")
    assert fmt.end_markers == ("<|end|>",)
    assert fmt.generation_prompt.header == "<|assistant|>"


def test_calls_that_render_but_cannot_be_read_are_not_offered() -> None:
    """A call written as a JSON value that is not an object has no format."""
    fmt = analyze_source(_simple("<call>{{ [c.function.name, c.id] | tojson }}</call>"), name="list-calls")
    assert fmt.tools == ToolCallFormat()
    assert fmt.end_markers == ("<|end|>",)


def test_patches_are_applied_after_the_analysis() -> None:
    name = "ibm-granite-granite-3.3-2B-Instruct.jinja"
    raw = TemplateAnalysis(compiled(name)).run()
    assert raw.patches == ()
    assert raw.content.mode is ContentMode.PLAIN
    assert fmt_of(name).content.mode is ContentMode.WRAPPED_WITH_REASONING


def test_harmony_is_recognised_by_its_tokens() -> None:
    raw = TemplateAnalysis(compiled("openai-gpt-oss-120b.jinja")).run()
    assert raw.harmony
    assert raw.generation_prompt.header == "<|start|>assistant"
    assert raw.end_markers == ("<|return|>", "<|call|>", "<|end|>")


def test_clear_caches_empties_every_cache_of_the_package() -> None:
    package = importlib.import_module("openchatml.templates.analysis")
    modules = [
        importlib.import_module(m.name)
        for m in pkgutil.iter_modules(package.__path__, "openchatml.templates.analysis.")
    ]
    caches = [
        value
        for module in modules
        for value in vars(module).values()
        if hasattr(value, "cache_info") and value.__module__ == module.__name__
    ]
    assert {f"{c.__module__}.{c.__name__}" for c in caches} >= {
        "openchatml.templates.analysis.thinking._switch_candidates_of",
        "openchatml.templates.analysis.template_analysis._compiled",
    }
    analyze_source(CHATML, name="chatml")
    assert all(c.cache_info().currsize for c in caches)
    clear_caches()
    assert not any(c.cache_info().currsize for c in caches)
