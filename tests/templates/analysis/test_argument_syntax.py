"""The syntax of a call's arguments after its name, and the markers of tagged arguments."""

from __future__ import annotations

import pytest

from openchatml.templates.analysis.arguments import (
    TaggedArgumentMarkers,
    arguments_kind,
    arguments_span,
    string_quote,
    tagged_arguments,
    value_wrap,
)
from openchatml.templates.analysis.call_layout import ToolCallBodies

QWEN_CODER = (
    "<tool_call>\n<function=foofoo>\n<parameter=first>\n{}\n</parameter>\n{}</function>\n</tool_call>"
)
DSML = '<invoke name="foofoo">\n<parameter name="first" string="{}">{}</parameter>\n{}</invoke>'


@pytest.mark.parametrize(
    ("body", "kind", "arguments"),
    [
        ('<tool_call>foofoo\n{"first": "XXXX"}</tool_call>', "json", '{"first": "XXXX"}'),
        ("[foofoo(first='XXXX')]", "python", "(first='XXXX')"),
        ('call:foofoo{first:<|"|>XXXX<|"|>}', "object", '{first:<|"|>XXXX<|"|>}'),
        (QWEN_CODER.format("XXXX", ""), "tagged", "first>\nXXXX"),
    ],
)
def test_the_kind_of_arguments_and_where_they_are(body: str, kind: str, arguments: str) -> None:
    assert arguments_kind(body) == kind
    span = arguments_span(kind, body, "foofoo", "XXXX")
    assert span is not None
    assert body[span[0] : span[1]] == arguments


def test_no_span_without_the_name_the_value_or_the_json() -> None:
    assert arguments_span("json", "barbar{}", "foofoo", "XXXX") is None
    assert arguments_span("json", "foofoo{}", "foofoo", "XXXX") is None
    assert arguments_span("json", 'foofoo {"first": "XXXX", "more": 1}', "foofoo", "XXXX") is None
    assert arguments_span("python", "foofoo(first='XXXX'", "foofoo", "XXXX") is None


def test_the_string_quote_of_object_notation() -> None:
    body = 'call:foofoo{first:<|"|>XXXX<|"|>}'
    span = arguments_span("object", body, "foofoo", "XXXX")
    assert span is not None
    assert string_quote(body, span) == '<|"|>'


def test_tagged_arguments_one_per_line() -> None:
    bodies = ToolCallBodies(
        one=QWEN_CODER.format("XXXX", ""),
        two=None,
        followed=None,
        pair=QWEN_CODER.format("XXXX", "<parameter=second>\nZZZZ\n</parameter>\n"),
        typed=QWEN_CODER.format("1234", ""),
        markup=None,
    )
    assert tagged_arguments(bodies) == TaggedArgumentMarkers(
        name_prefix="<parameter=", name_suffix=">\n", value_suffix="\n</parameter>", separator="\n"
    )


def test_tagged_arguments_with_another_prefix_for_non_strings() -> None:
    second = '<parameter name="second" string="true">ZZZZ</parameter>\n'
    bodies = ToolCallBodies(
        one=DSML.format("true", "XXXX", ""),
        two=None,
        followed=None,
        pair=DSML.format("true", "XXXX", second),
        typed=DSML.format("false", "1234", ""),
        markup=None,
    )
    marks = tagged_arguments(bodies)
    assert (marks.name_prefix, marks.name_suffix, marks.value_suffix) == (
        '<parameter name="',
        '"',
        "</parameter>",
    )
    assert (marks.value_prefix, marks.value_prefix_json) == (' string="true">', ' string="false">')


def test_a_value_wrapped_for_markup() -> None:
    markup = "<call foofoo><arg first><![CDATA[MM<b>&\nNN]]></arg></call>"
    assert value_wrap(markup, ">", "</arg>") == ("<![CDATA[", "]]>")
    assert value_wrap("<call foofoo><arg first>MM<b>&\nNN</arg></call>", ">", "</arg>") == ("", "")
    assert value_wrap(None, ">", "</arg>") == ("", "")
    assert value_wrap(markup, ">", "") == ("", "")
