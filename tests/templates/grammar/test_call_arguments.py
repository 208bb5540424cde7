"""Tool-call arguments in each syntax: JSON call objects, Python keyword arguments,
object notation, tagged arguments."""

from __future__ import annotations

from grammar_checks import CONFIGURE, TOOLS, check, tool
from hand_formats import FORMATS

from openchatml.templates.format import TemplateFormat, ToolCallFormat, ToolSyntax
from openchatml.templates.grammar import tool_call_grammar


def test_json_call_shapes() -> None:
    """A wrapper object, an id, a key the template writes that is neither, and arguments as
    a JSON-encoded string."""
    fmt = TemplateFormat(
        name="wrapped",
        tools=ToolCallFormat(
            syntax=ToolSyntax.JSON,
            call_start="<call>",
            call_end="</call>",
            wrapper_key="function",
            id_key="id",
            arguments_as_string=True,
            key_order=("id", "type", "function", "name", "arguments"),
        ),
    )
    grammar = tool_call_grammar(fmt, TOOLS, tool_choice="required")
    good = (
        '<call>{"id": "c1", "type": "function", "function": {"name": "get_weather", '
        '"arguments": "{\\"city\\": \\"Oslo\\", \\"days\\": 2}"}}</call>'
    )
    check(grammar, fmt, good, True)
    check(grammar, fmt, good.replace('"id": "c1", "type": "function", ', ""), True)
    check(grammar, fmt, good.replace('\\"days\\": 2', '\\"days\\": \\"2\\"'), False)
    check(grammar, fmt, good.replace('"{\\"city\\": \\"Oslo\\", \\"days\\": 2}"', '{"city": "Oslo"}'), False)
    check(grammar, fmt, good.replace("Oslo", 'O\\\\\\"slo\\\\n'), True)


def test_pythonic_arguments() -> None:
    fmt = FORMATS["lfm2"]
    grammar = tool_call_grammar(fmt, [*TOOLS, CONFIGURE], tool_choice="required")

    def call(body: str) -> str:
        return f"<|tool_call_start|>[{body}]<|tool_call_end|>"

    for body in (
        "get_weather(city='Oslo', days=2)",
        'get_weather(days=2, city="Oslo")',
        "get_weather(unit='celsius', city='Oslo')",
        "configure(count=1, name='n', options={'mode': 'slow', 'level': 1}, enabled=False, note=None)",
        'configure(name="n", count=1, enabled=true, note=null, tags=["a", \'b\'])',
        "get_time(city='Oslo'), get_weather(city='Oslo')",
    ):
        check(grammar, fmt, call(body), True)
    for body in (
        "get_weather(days=2)",
        "get_weather(city='Oslo', city='Oslo')",
        "get_weather(city=Oslo)",
        "get_weather(city='Oslo', unit='kelvin')",
        "configure(name='n', count=1.5)",
        "configure(name='n', count=1, options={'mode': 'slow'})",
    ):
        check(grammar, fmt, call(body), False)


def test_object_notation_arguments() -> None:
    fmt = FORMATS["gemma4"]
    grammar = tool_call_grammar(fmt, [*TOOLS, CONFIGURE], tool_choice="required")
    q = '<|"|>'

    def call(body: str) -> str:
        return f"<|tool_call>call:{body}<tool_call|>"

    for body in (
        f"get_weather{{city:{q}Oslo{q},days:2}}",
        f'get_weather{{days:2,city:{q}Oslo, "Norway"{q}}}',
        f"configure{{count:1,name:{q}n{q},options:{{mode:{q}fast{q},level:3}},tags:[{q}a{q}],note:null}}",
    ):
        check(grammar, fmt, call(body), True)
    for body in ('get_weather{city:"Oslo"}', f"get_weather{{town:{q}Oslo{q}}}", f"configure{{name:{q}n{q}}}"):
        check(grammar, fmt, call(body), False)


def test_tagged_arguments() -> None:
    fmt = FORMATS["qwen3-coder"]
    grammar = tool_call_grammar(fmt, [*TOOLS, CONFIGURE], tool_choice="required")

    def call(name: str, *args: tuple[str, str]) -> str:
        params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in args)
        return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"

    check(grammar, fmt, call("get_weather", ("days", "3"), ("city", "<b>Oslo</b>\n & more")), True)
    check(grammar, fmt, call("get_weather", ("city", "Oslo"), ("unit", "celsius")), True)
    check(
        grammar,
        fmt,
        call("configure", ("count", "2"), ("name", "x"), ("enabled", "True"), ("note", "None")),
        True,
    )
    check(grammar, fmt, call("configure", ("name", "x"), ("count", "2"), ("options", "{'level': 1}")), True)
    check(grammar, fmt, call("get_weather", ("city", "Oslo"), ("city", "Bergen")), False)
    check(grammar, fmt, call("get_weather", ("city", "Oslo"), ("unit", "kelvin")), False)
    check(grammar, fmt, call("configure", ("name", "x"), ("count", "two")), False)
    check(grammar, fmt, call("get_weather", ("unit", "celsius")), False)


def test_tagged_values_with_a_json_prefix() -> None:
    fmt = FORMATS["deepseek-v3.2"]
    grammar = tool_call_grammar(fmt, [CONFIGURE], tool_choice="required", prefix="<think></think>")

    def call(*args: tuple[str, str, str]) -> str:
        params = "".join(
            f'<｜DSML｜parameter name="{k}" string="{s}">{v}</｜DSML｜parameter>\n' for k, s, v in args
        )
        return (
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="configure">\n'
            f"{params}</｜DSML｜invoke>\n</｜DSML｜function_calls>"
        )

    check(grammar, fmt, call(("name", "true", "x <y>"), ("count", "false", "2")), True)
    check(grammar, fmt, call(("name", "true", "x"), ("count", "false", "2"), ("note", "false", "null")), True)
    check(grammar, fmt, call(("name", "true", "x"), ("count", "false", "2"), ("note", "true", "text")), True)
    check(grammar, fmt, call(("name", "true", "x"), ("count", "true", "2")), False)
    check(grammar, fmt, call(("name", "false", '"x"'), ("count", "false", "2")), False)


def test_cdata_values() -> None:
    fmt = FORMATS["minicpm5"]
    grammar = tool_call_grammar(
        fmt, [tool("html", {"markup": {"type": "string"}}, ["markup"])], tool_choice="required"
    )

    def call(value: str) -> str:
        return f'<function name="html"><param name="markup">{value}</param></function>'

    check(grammar, fmt, call("<![CDATA[<a>x</a> </param> ]]>"), True)
    check(grammar, fmt, call("plain <b>text</b>"), True)
    check(grammar, fmt, call("<![CDATA[never closed </param>"), False)
