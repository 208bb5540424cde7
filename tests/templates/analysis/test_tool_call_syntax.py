"""The tool-call syntax: what surrounds the calls, JSON calls, calls written as a name
then arguments, and what follows a message's calls."""

from __future__ import annotations

from typing import Any

import pytest

from openchatml.templates.analysis import analyze_source
from openchatml.templates.analysis.call_layout import (
    CallLayout,
    body_of,
    layout_calls,
    masked,
    split_sections,
    strip_reasoning,
)
from openchatml.templates.analysis.json_calls import json_keys
from openchatml.templates.analysis.named_calls import numbered_id
from openchatml.templates.analysis.probes import ProbeRenderer, render_tool_probes
from openchatml.templates.analysis.tool_calls import ToolCallAnalysis
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.format import CallIdPosition, ReasoningFormat, ReasoningMode, ToolSyntax

THINK = ReasoningFormat(ReasoningMode.TAGS, "<think>", "</think>")


def made_up(calls: str, after_calls: str = "<|end|>") -> str:
    """A template of ``<|role|>`` turns whose assistant writes each call ``c`` by ``calls``
    and ends a message of calls with ``after_calls``."""
    return (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content or '' }}"
        "{% for c in m.tool_calls or [] %}" + calls + "{% endfor %}"
        "{% if m.tool_calls %}" + after_calls + "{% else %}<|end|>{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )


def analysis_of(source: str, header: str = "<|end|><|assistant|>") -> ToolCallAnalysis:
    """The tool-call analysis of a template (``header``: the user's end and the
    assistant's role)."""
    probes = render_tool_probes(ProbeRenderer(ChatTemplate(source, name="made-up")))
    assert probes is not None
    return ToolCallAnalysis("made-up", probes, header, ReasoningFormat())


# ------------------------------------------------------------------------- the layout


def test_names_and_ids_are_masked_to_the_same_length() -> None:
    call_id, name = "\x03" * 9, "\x01" * 6
    assert masked("call00001:foofoo,call99999:barbar") == f"{call_id}:{name},{call_id}:{name}"


def test_the_layout_of_two_calls() -> None:
    body = "pre<tools><call>foofoo(1)</call>, <call>barbar(2)</call></tools>post"
    first, second = body.index("foofoo"), body.index("barbar")
    cores = [(first, body.index("</call>")), (second, body.rindex("</call>"))]
    assert layout_calls(body, cores) == CallLayout("pre<tools>", "<call>", "</call>", ", ", "</tools>post")


def test_the_layout_of_one_call() -> None:
    body = "<call>foofoo(1)</call>"
    assert layout_calls(body, [(6, 15)]) == CallLayout("<call>", "", "", "", "</call>")


def test_an_empty_reasoning_block_before_calls_is_stripped() -> None:
    assert strip_reasoning("<think></think>\n<tool_call>", THINK) == "\n<tool_call>"
    assert strip_reasoning("\n</think>\n<tool_call>", THINK) == "\n<tool_call>"
    assert strip_reasoning("x</think><tool_call>", THINK) == "x</think><tool_call>"
    assert strip_reasoning("<tool_call>", THINK) == "<tool_call>"


def test_sections_of_one_call_belong_to_the_call() -> None:
    layout = CallLayout("\n<tools>", "<call>", "", "", "")
    assert split_sections(layout, False, THINK) == ("<tools>", "<call>")
    assert split_sections(layout, True, THINK) == ("", "<tools>")
    after_reasoning = CallLayout("<think></think>\n", "<call>", "", "", "")
    assert split_sections(after_reasoning, False, THINK) == ("", "<call>")


def test_a_body_is_a_tail_without_the_role_header() -> None:
    assert body_of("<|assistant|><call>", "<|assistant|>") == "<call>"
    assert body_of("<|assistant|><call>", "<|assistant|>\n") == "<call>"
    assert body_of(None, "<|assistant|>") is None


# ---------------------------------------------------------------------------- JSON


@pytest.mark.parametrize(
    ("element", "expected"),
    [
        (
            {"name": "foofoo", "arguments": {"first": "XXXX"}},
            {"name_key": "name", "arguments_key": "arguments", "key_order": ("name", "arguments")},
        ),
        ({"foofoo": {"first": "XXXX"}}, {"name_is_key": True}),
        (
            {"id": "call00001", "function": {"name": "foofoo", "arguments": '{"first": "XXXX"}'}},
            {"wrapper_key": "function", "id_key": "id", "arguments_as_string": True},
        ),
        (
            {"tool": "foofoo", "params": {"first": "XXXX"}, "index": 0},
            {"name_key": "tool", "arguments_key": "params", "id_key": "index", "id_pattern": "{index}"},
        ),
    ],
)
def test_json_keys(element: dict[str, Any], expected: dict[str, Any]) -> None:
    keys = json_keys(element)
    assert {k: keys[k] for k in expected} == expected


def test_json_calls_in_a_section() -> None:
    analysis = analysis_of(
        made_up(
            "{% if loop.first %}<tools>{% endif %}<call>{{ {'name': c.function.name, "
            "'arguments': c.function.arguments} | tojson }}</call>{% if loop.last %}</tools>{% endif %}"
        )
    )
    t = analysis.run()
    assert t.syntax is ToolSyntax.JSON
    assert (t.section_start, t.call_start, t.call_end, t.parallel) == ("<tools>", "<call>", "</call>", True)
    assert (analysis.section, analysis.rest) == ("<tools>", "</tools><|end|>")
    assert analysis.split_rest("<|end|>") == ("</tools>", "<|end|>")


# ------------------------------------------------------------------- name, then arguments


def test_object_notation() -> None:
    t = analyze_source(
        made_up(
            "<call>{{ c.function.name }}{ {%- for k, v in c.function.arguments.items() %}"
            "{{ k }}:<q>{{ v }}<q>{% endfor %}}</call>"
        )
    ).tools
    assert t.syntax is ToolSyntax.OBJECT_NOTATION
    assert (t.call_start, t.call_end, t.string_quote, t.parallel) == ("<call>", "</call>", "<q>", True)


def test_an_id_numbered_by_the_template() -> None:
    t = analyze_source(
        made_up(
            "<|call|>functions.{{ c.function.name }}:{{ loop.index0 }}<|args|>"
            "{{ c.function.arguments | tojson }}<|call_end|>"
        )
    ).tools
    assert t.syntax is ToolSyntax.TAG_JSON
    assert (t.name_prefix, t.arguments_start, t.call_end) == ("functions.", "<|args|>", "<|call_end|>")
    assert (t.id_position, t.id_prefix) == (CallIdPosition.BETWEEN_NAME_AND_ARGUMENTS, ":")
    assert t.id_pattern == "functions.{name}:{index}"


def test_numbered_id_reads_the_numbers_between_name_and_arguments() -> None:
    body = 'foofoo:0<|a|>{"first": "XXXX"} barbar:1<|a|>{"first": "YYYY"}'
    cores = [(0, body.index(" ")), (body.index("barbar"), len(body))]
    assert numbered_id(body, cores, "json") == (":", "<|a|>")
    same = body.replace(":1", ":0")
    assert numbered_id(same, cores, "json") is None


# ----------------------------------------------------------- what follows the calls


def test_what_follows_the_calls_is_cut_where_a_tool_result_would_follow() -> None:
    analysis = analysis_of(
        made_up(
            "<call>{{ c.function.name }} {{ c.function.arguments | tojson }}</call>",
            after_calls="<|end|>{% if loop.last %}[call the tool now]{% endif %}",
        )
    )
    analysis.run()
    assert analysis.rest == "<|end|>"


def test_the_turn_after_calls_ends_at_the_next_header_without_an_end_marker() -> None:
    source = (
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content or '' }}"
        "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }} {{ c.function.arguments | tojson }}"
        "</call>{% endfor %}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    analysis = analysis_of(source, header="<|assistant|>")
    analysis.run()
    assert analysis.rest == ""
    assert analysis.following() == "<|tool|>RESULTTEXT"
    assert analysis.next_header_marker("") == "<|tool|>"
    fmt = analyze_source(source)
    assert fmt.tools.call_end == "</call>"
    assert set(fmt.end_markers) == {"<|user|>", "<|tool|>"}


def test_split_rest() -> None:
    analysis = analysis_of(made_up("<call>{{ c.function.name }} {{ c.function.arguments | tojson }}</call>"))
    analysis.section, analysis.rest = "", "<|end|>"
    assert analysis.split_rest("<|end|>") == ("", "<|end|>")
    analysis.section, analysis.rest = "```calls\n", "\n```<|end|>"
    assert analysis.split_rest("<|end|>\n") == ("\n```", "<|end|>")
    analysis.section, analysis.rest = "```calls\n", "\n```<|eot|>"
    assert analysis.split_rest("") == ("\n```", "<|eot|>")
    analysis.section, analysis.rest = "```calls\n", "\n```"
    assert analysis.split_rest("") == ("\n```", "")
