"""A call's header: the tool's name and the call's id, however the format writes them."""

from __future__ import annotations

from hand_formats import FORMATS

from openchatml.templates.format import CallIdPosition, TemplateFormat, ToolCallFormat, ToolSyntax
from openchatml.templates.parsing.call_header import clean_name, split_header
from openchatml.templates.parsing.plan import compile_plan

SCHEMAS = {"get_weather": {}, "get": {}}


def test_clean_name() -> None:
    assert clean_name(' "get_weather" ', {}) == "get_weather"
    assert clean_name("call get_weather now", SCHEMAS) == "get_weather"  # the longest offered name
    assert clean_name("call the tool", {}) == "call"
    assert clean_name("  ", {}) == ""


def test_a_name_and_an_id_between_the_name_and_the_arguments() -> None:
    plan = compile_plan(FORMATS["mistral-small-3.2"], True, False)
    assert split_header("get_weather[CALL_ID]a1B2c3D4e", plan, SCHEMAS) == ("get_weather", "a1B2c3D4e")


def test_an_id_that_names_the_tool() -> None:
    plan = compile_plan(FORMATS["kimi-k2"], True, False)
    assert split_header("functions.get_weather:3", plan, SCHEMAS) == (
        "get_weather",
        "functions.get_weather:3",
    )


def test_an_id_before_the_name() -> None:
    fmt = TemplateFormat(
        tools=ToolCallFormat(
            syntax=ToolSyntax.TAG_JSON,
            call_start="<call>",
            id_position=CallIdPosition.BEFORE_NAME,
            id_prefix="[",
            id_suffix="]",
        )
    )
    plan = compile_plan(fmt, True, False)
    assert split_header(" [id-7] get_weather ", plan, SCHEMAS) == ("get_weather", "id-7")
    assert split_header("get_weather", plan, SCHEMAS) == ("get_weather", "")


def test_the_name_between_its_prefix_and_suffix() -> None:
    plan = compile_plan(FORMATS["qwen3.5"], True, False)
    assert split_header("<function=get_weather>\n", plan, SCHEMAS) == ("get_weather", "")
