"""The Jinja environment for chat templates: every real template renders the standard
scenarios (or refuses them in its own words), renders as transformers does, and the
sandbox still holds.

The templates are read from ``$OPENCHATML_TEMPLATES`` (default ``tests/templates/data/templates``);
the tests that need them are skipped when the folder is missing.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from data_paths import TEMPLATES

from openchatml.templates.environment import ChatTemplate, ToolArguments, tool_arguments
from openchatml.templates.errors import TemplateRenderError, TemplateSyntaxError

TEMPLATE_FILES = sorted(TEMPLATES.glob("*.jinja")) if TEMPLATES.is_dir() else []
needs_templates = pytest.mark.skipif(not TEMPLATE_FILES, reason=f"no templates in {TEMPLATES}")

NOW = datetime(2025, 3, 4, 5, 6, 7)

# --- the standard scenarios -----------------------------------------------------------

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city."},
                    "days": {"type": "integer", "description": "How many days."},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to look for."}},
                "required": ["query"],
            },
        },
    },
]
# nine alphanumeric characters: the Mistral templates refuse any other call id
CALL_1 = {
    "id": "call00001",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"location": "Paris", "days": 2}'},
}
CALL_2 = {
    "id": "call00002",
    "type": "function",
    "function": {"name": "search", "arguments": '{"query": "news"}'},
}
SYSTEM = {"role": "system", "content": "You are terse."}
USER = {"role": "user", "content": "What is the weather like?"}

SCENARIOS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "system_user": ([SYSTEM, USER], None),
    "user_assistant": ([USER, {"role": "assistant", "content": "Sunny."}], None),
    "reasoning": (
        [USER, {"role": "assistant", "content": "Sunny.", "reasoning_content": "Look it up."}],
        None,
    ),
    "one_call": ([USER, {"role": "assistant", "content": "", "tool_calls": [CALL_1]}], TOOLS),
    "two_calls": ([USER, {"role": "assistant", "content": "", "tool_calls": [CALL_1, CALL_2]}], TOOLS),
    "tool_result": (
        [
            USER,
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": "Ask the tool.",
                "tool_calls": [CALL_1],
            },
            {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "Rain, 12 C"},
            {"role": "assistant", "content": "Rain."},
        ],
        TOOLS,
    ),
}
THINKING: tuple[dict[str, bool], ...] = ({}, {"enable_thinking": True}, {"enable_thinking": False})

# What the templates themselves refuse, in their own words (raise_exception).
REFUSALS: dict[tuple[str, str], str] = {
    ("google-gemma-2-2b-it", "system_user"): "System role not supported",
    ("google-gemma-2-2b-it", "tool_result"): "Conversation roles must alternate",
    ("meta-llama-Llama-3.1-8B-Instruct", "two_calls"): "only supports single tool-calls",
    ("meta-llama-Llama-3.2-3B-Instruct", "two_calls"): "only supports single tool-calls",
    ("meta-llama-Llama-3.3-70B-Instruct", "two_calls"): "only supports single tool-calls",
}
# Templates that write no tool calls of an assistant message at all (their models had none,
# or they expect them inside the content), and those that write only the first call.
NO_CALLS = {
    "HuggingFaceTB-SmolLM3-3B",
    "LFM2-8B-A1B",
    "LFM2.5-Instruct",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",  # writes calls only when content is None
    "google-gemma-2-2b-it",
    "ibm-granite-granite-3.3-2B-Instruct",
    "llama-cpp-rwkv-world",
    "microsoft-Phi-3.5-mini-instruct",
}
FIRST_CALL_ONLY = {"GigaChat3-10B-A1.8B", "GigaChat3.1-10B-A1.8B", "openai-gpt-oss-120b"}
NO_TOOL_RESULTS = {"llama-cpp-rwkv-world", "microsoft-Phi-3.5-mini-instruct"}
# With a generation prompt, this one leaves out a final assistant message (it starts anew).
FINAL_ASSISTANT_REPLACED = {"NVIDIA-Nemotron-Nano-v2"}

_compiled: dict[Path, ChatTemplate] = {}


def template(path: Path) -> ChatTemplate:
    if path not in _compiled:
        _compiled[path] = ChatTemplate(
            path.read_text(encoding="utf-8"), name=path.stem, bos_token="<s>", now=NOW
        )
    return _compiled[path]


@needs_templates
@pytest.mark.parametrize("path", TEMPLATE_FILES, ids=lambda p: p.stem)
def test_every_template_renders_every_scenario_or_refuses_it_explicitly(path: Path) -> None:
    tpl = template(path)
    for scenario, (messages, tools) in SCENARIOS.items():
        refusal = REFUSALS.get((path.stem, scenario))
        for generation in (False, True):
            for thinking in THINKING:
                if refusal is not None:
                    with pytest.raises(TemplateRenderError, match="refused: .*" + refusal):
                        tpl.render(messages, tools=tools, add_generation_prompt=generation, **thinking)
                    continue
                text = tpl.render(messages, tools=tools, add_generation_prompt=generation, **thinking)
                assert USER["content"] in text, (scenario, thinking)
                if generation and path.stem in FINAL_ASSISTANT_REPLACED:
                    continue
                if scenario in ("one_call", "two_calls") and path.stem not in NO_CALLS:
                    assert "Paris" in text, (scenario, thinking)
                if scenario == "two_calls" and path.stem not in NO_CALLS | FIRST_CALL_ONLY:
                    assert "news" in text, thinking
                if scenario == "tool_result" and path.stem not in NO_TOOL_RESULTS:
                    assert "Rain, 12 C" in text, thinking


@needs_templates
def test_the_refusals_listed_are_all_real() -> None:
    names = {p.stem for p in TEMPLATE_FILES}
    assert {name for name, _ in REFUSALS} <= names
    assert names >= NO_CALLS | FIRST_CALL_ONLY | NO_TOOL_RESULTS | FINAL_ASSISTANT_REPLACED


@needs_templates
def test_the_five_templates_that_used_to_fail() -> None:
    """command-r-plus (tool parameter descriptions), firefunction-v2 (``functions``),
    gemma-2 (system role: its own refusal), llama-cpp-deepseek-r1 (``tojson`` of a
    generator), functionary v3.2 (``str + arguments``)."""
    messages, tools = SCENARIOS["one_call"]
    r_plus = template(TEMPLATES / "CohereForAI-c4ai-command-r-plus-tool_use.jinja")
    text = r_plus.render(messages, tools=tools)
    assert "location (str): The city." in text and '"location": "Paris"' in text
    # the template writes every parameter's description: one without is its error, named
    bare = copy.deepcopy(tools)
    del bare[0]["function"]["parameters"]["properties"]["days"]["description"]
    with pytest.raises(TemplateRenderError, match=r"has no attribute 'description'.*\(at line \d+"):
        r_plus.render(messages, tools=bare)

    fire = template(TEMPLATES / "fireworks-ai-llama-3-firefunction-v2.jinja")
    text = fire.render(messages, tools=tools)
    assert json.dumps(tools, indent=2) in text
    assert "Today is 2025-03-04 05:06:07." in text
    assert 'functools[{"name": "get_weather", "arguments": {"location": "Paris", "days": 2}}]' in text
    assert "functions=" not in text
    assert fire.render([USER], functions="CALLER'S", datetime="NOW").count("CALLER'S\nToday is NOW.") == 1

    with pytest.raises(TemplateRenderError, match="google-gemma-2-2b-it refused: System role not supported"):
        template(TEMPLATES / "google-gemma-2-2b-it.jinja").render([SYSTEM, USER])

    r1 = template(TEMPLATES / "llama-cpp-deepseek-r1.jinja").render(messages, tools=tools)
    assert json.dumps([t["function"] for t in tools], indent=2) in r1

    functionary = template(TEMPLATES / "meetkai-functionary-medium-v3.2.jinja").render(messages, tools=tools)
    assert functionary.endswith('>>>get_weather\n{"location": "Paris", "days": 2}<|eot_id|>')


# --- against transformers -----------------------------------------------------------------


@needs_templates
def test_renders_as_transformers_does_wherever_transformers_renders() -> None:
    chat_template_utils = pytest.importorskip("transformers.utils.chat_template_utils")
    compared = 0
    for path in TEMPLATE_FILES:
        source = path.read_text(encoding="utf-8")
        ours = ChatTemplate(source, name=path.stem, bos_token="<s>", eos_token="</s>")
        for scenario, (messages, tools) in SCENARIOS.items():
            # transformers reads arguments as a mapping, and copies reasoning to `thinking`
            # only; we give it both forms and every reasoning name
            theirs_messages = copy.deepcopy(messages)
            for message in theirs_messages:
                for call in message.get("tool_calls", []):
                    call["function"]["arguments"] = json.loads(call["function"]["arguments"])
                if "reasoning_content" in message:
                    message["reasoning"] = message["reasoning_content"]
            for generation in (False, True):
                for thinking in THINKING:
                    try:
                        (expected,), _ = chat_template_utils.render_jinja_template(
                            [theirs_messages],
                            tools=tools,
                            chat_template=source,
                            add_generation_prompt=generation,
                            bos_token="<s>",
                            eos_token="</s>",
                            **thinking,
                        )
                    except Exception:  # where transformers fails there is nothing to compare
                        continue
                    got = ours.render(messages, tools=tools, add_generation_prompt=generation, **thinking)
                    assert got == expected, (path.stem, scenario, generation, thinking)
                    compared += 1
    assert compared > 1500


@needs_templates
@pytest.mark.parametrize("path", TEMPLATE_FILES, ids=lambda p: p.stem)
def test_arguments_as_text_or_mapping_render_alike(path: Path) -> None:
    tpl = template(path)
    for scenario in ("one_call", "two_calls", "tool_result"):
        messages, tools = SCENARIOS[scenario]
        as_mapping = copy.deepcopy(messages)
        for message in as_mapping:
            for call in message.get("tool_calls", []):
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        try:
            expected = tpl.render(as_mapping, tools=tools)
        except TemplateRenderError:
            assert (path.stem, scenario) in REFUSALS
            continue
        assert tpl.render(messages, tools=tools) == expected


# --- tool-call arguments --------------------------------------------------------------------


def render(source: str, messages: list[dict[str, Any]] | None = None, **variables: Any) -> str:
    return ChatTemplate(source, now=NOW).render(messages or [], **variables)


def call_message(arguments: Any) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "f", "arguments": arguments}}],
        }
    ]


ARGS = "{% set a = messages[0].tool_calls[0].function.arguments %}"


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("{{ a }}", '{"b":1,"c":"x"}'),  # the text as it came, not re-serialised
        ("{{ '>' + a + '<' }}", '>{"b":1,"c":"x"}<'),
        ("{{ a ~ '' }}", '{"b":1,"c":"x"}'),
        ("{{ a | string }}", '{"b":1,"c":"x"}'),
        ("{{ a | tojson }}", '{"b": 1, "c": "x"}'),
        ("{% for k, v in a | items %}{{ k }}={{ v }};{% endfor %}", "b=1;c=x;"),
        ("{% for k, v in a.items() %}{{ k }}={{ v }};{% endfor %}", "b=1;c=x;"),
        ("{{ a.b }} {{ a['c'] }} {{ a | length }}", "1 x 2"),
        ("{{ a is mapping }} {{ a is string }}", "True False"),
        ("{{ a.startswith('{') }} {{ a.strip() }}", 'True {"b":1,"c":"x"}'),
        ("{{ a | from_json is mapping }}", "True"),
        ("{% do a.update({'d': 2}) %}{{ a }}", '{"b": 1, "c": "x", "d": 2}'),  # changed: re-serialised
    ],
)
def test_arguments_work_as_mapping_and_as_text(expression: str, expected: str) -> None:
    assert render(ARGS + expression, call_message('{"b":1,"c":"x"}')) == expected


def test_arguments_given_as_mapping_have_json_text() -> None:
    assert (
        render(ARGS + "{{ '' + a }}|{{ a.b }}", call_message({"b": [1, "é"]})) == '{"b": [1, "é"]}|[1, \'é\']'
    )


@pytest.mark.parametrize("arguments", ["print('hi')", '{"truncated": ', "[1, 2]", ""])
def test_arguments_that_are_not_a_json_object_stay_text(arguments: str) -> None:
    assert tool_arguments(arguments) == arguments
    assert render(ARGS + "{{ a is string }}:{{ a }}", call_message(arguments)) == f"True:{arguments}"


def test_tool_arguments_type() -> None:
    value = tool_arguments(' {"k": 1}')
    assert isinstance(value, ToolArguments) and value == {"k": 1} and str(value) == ' {"k": 1}'
    assert tool_arguments(value) is value
    assert "x" + value == 'x {"k": 1}' and value + "y" == ' {"k": 1}y'


def test_top_level_call_arguments_too() -> None:
    messages = [{"role": "assistant", "tool_calls": [{"name": "f", "arguments": '{"k":1}'}]}]
    assert render("{{ messages[0].tool_calls[0].arguments.k }}", messages) == "1"


# --- filters, globals, tags -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ {'b': 1, 'a': '<&>'} | tojson }}", '{"b": 1, "a": "<&>"}'),  # no sorting, no escaping
        ("{{ 'é' | tojson }}", '"é"'),
        ("{{ 'é' | tojson(ensure_ascii=True) }}", '"\\u00e9"'),
        ("{{ {'b': 1, 'a': 2} | tojson(sort_keys=True) }}", '{"a": 2, "b": 1}'),
        ("{{ [1, {'a': 2}] | tojson(indent=2) }}", '[\n  1,\n  {\n    "a": 2\n  }\n]'),
        ("{{ {'a': [1, 2]} | tojson(separators=(',', ':')) }}", '{"a":[1,2]}'),
        ("{{ [{'a': 1}, {'a': 2}] | map(attribute='a') | tojson }}", "[1, 2]"),  # a generator
        ("{{ ['b', 'a'] | unique | tojson }}", '["b", "a"]'),
        ("{{ nothing | tojson }}", "null"),
        ("{{ '{\"a\": [1]}' | from_json | tojson }}", '{"a": [1]}'),
        ("{{ '[1]' | fromjson | length }}", "1"),
    ],
)
def test_json_filters(source: str, expected: str) -> None:
    assert render(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ 'a,b'.split(',') | join('|') }}", "a|b"),
        ("{{ ' x '.strip() }}{{ '\\nx'.lstrip() }}{{ 'x\\n'.rstrip() }}", "xxx"),
        ("{{ 'abc'.startswith('a') }} {{ 'abc'.endswith('c') }}", "True True"),
        (
            "{{ 'a b'.replace(' ', '_') }} {{ 'hi there'.title() }} {{ 'x'.upper() }} {{ 'X'.lower() }}",
            "a_b Hi There X x",
        ),
        ("{{ '{} and {}'.format(1, 'two') }}", "1 and two"),
        ("{{ '-'.join(['a', 'b']) }} {{ 'aXb'.count('X') }} {{ 'abc'.find('c') }}", "a-b 1 2"),
    ],
)
def test_python_string_methods(source: str, expected: str) -> None:
    assert render(source) == expected


def test_mutable_lists_and_dicts() -> None:
    source = (
        "{% set l = [1] %}{% set d = {'a': 1} %}"
        "{% do l.append(2) %}{% do l.extend([3, 4]) %}{% set _ = l.insert(0, 0) %}{% do l.remove(3) %}"
        "{% set last = l.pop() %}{% do d.update({'b': 2}) %}{% set c = d.setdefault('c', 3) %}"
        "{{ l | tojson }} {{ last }} {{ d | tojson }} {{ d.pop('a') }} {{ d.get('z', 'none') }}"
    )
    assert render(source) == '[0, 1, 2] 4 {"a": 1, "b": 2, "c": 3} 1 none'


def test_a_render_never_changes_the_callers_data() -> None:
    messages = [{"role": "user", "content": "hi", "extra": [1]}]
    tools = [{"type": "function", "function": {"name": "f"}}]
    before = copy.deepcopy((messages, tools))
    out = render(
        "{% do messages[0].extra.append(2) %}{% do messages.append({}) %}{% do tools.pop() %}"
        "{{ messages | length }}{{ messages[0].extra | length }}",
        messages,
        tools=tools,
    )
    assert out == "22"
    assert (messages, tools) == before


def test_loop_controls_and_namespaces() -> None:
    source = (
        "{% set ns = namespace(n=0) %}{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}"
        "{% if i > 3 %}{% break %}{% endif %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"
    )
    assert render(source) == "5"  # 0 + 2 + 3


def test_generation_tag_renders_its_body() -> None:
    assert render("a{% generation %}b{{ 1 + 1 }}{% endgeneration %}c") == "ab2c"


def test_trim_and_lstrip_blocks_as_transformers() -> None:
    assert render("  {% if true %}\nx\n  {% endif %}\ny\n") == "x\ny"


def test_strftime_now_and_datetime_read_the_clock() -> None:
    assert render("{{ strftime_now('%d %b %Y') }}") == "04 Mar 2025"
    assert render("{{ datetime }}") == "2025-03-04 05:06:07"
    assert render("{{ datetime }}", datetime="given") == "given"
    live = ChatTemplate("{{ strftime_now('%Y') }}").render([])
    assert live == str(datetime.now().year)


def test_functions_variable_only_for_templates_that_read_it() -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert render("{{ functions }}", tools=tools) == json.dumps(tools, indent=2)
    assert render("[{{ functions }}]") == "[]"
    assert render("{{ functions is defined }}{{ datetime is defined }}x", tools=tools) == "TrueTruex"
    assert render("{{ tools | length }}", tools=tools) == "1"


def test_raise_exception_is_a_refusal_with_its_line() -> None:
    source = "line one\n{{ raise_exception('No system role, please.') }}"
    with pytest.raises(TemplateRenderError) as info:
        ChatTemplate(source, name="strict").render([])
    assert info.value.message == "strict refused: No system role, please."
    assert info.value.position is not None and info.value.position.line == 2
    assert info.value.code == "E-TEMPLATE-RENDER"


def test_template_bugs_are_render_errors_with_their_line() -> None:
    with pytest.raises(TemplateRenderError, match=r"t: TypeError: .*\(at line 3, column 1\)"):
        ChatTemplate("\n\n{{ 'a' + 1 }}", name="t").render([])
    with pytest.raises(TemplateRenderError, match="UndefinedError"):
        render("{{ messages[0].content.upper() }}")


def test_syntax_errors() -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        ChatTemplate("ok\n{% if %}", name="broken")
    assert info.value.message.startswith("broken: ")
    assert info.value.position is not None and info.value.position.line == 2
    with pytest.raises(TemplateSyntaxError):
        ChatTemplate("{% endgeneration %}")


def test_tools_are_undefined_unless_given_and_bare_functions_are_wrapped() -> None:
    assert render("{{ tools is defined }}") == "False"
    assert render("{{ tools is defined }}", tools=[]) == "True"
    bare = [{"name": "f", "description": "d", "parameters": {}}]
    assert render("{{ tools[0].type }}:{{ tools[0].function.name }}", tools=bare) == "function:f"


@pytest.mark.parametrize("given", ["reasoning_content", "thinking", "reasoning"])
def test_reasoning_under_every_name(given: str) -> None:
    messages = [{"role": "assistant", "content": "x", given: "R"}]
    out = render(
        "{% set m = messages[0] %}{{ m.reasoning_content }}{{ m.thinking }}{{ m.reasoning }}", messages
    )
    assert out == "RRR"


def test_variables_and_tokens_reach_the_template() -> None:
    tpl = ChatTemplate("{{ bos_token }}|{{ eos_token }}|{{ enable_thinking }}|{{ add_generation_prompt }}")
    assert tpl.render([], enable_thinking=False) == "||False|False"
    tpl = ChatTemplate("{{ bos_token }}{{ eos_token }}", bos_token="<s>", eos_token="</s>")
    assert tpl.render([], add_generation_prompt=True) == "<s></s>"


def test_compiled_template_lists_the_variables_it_reads() -> None:
    tpl = ChatTemplate("{% set x = 1 %}{{ x }}{{ enable_thinking }}{% for m in messages %}{% endfor %}")
    assert tpl.variables == {"enable_thinking", "messages"}


# --- the sandbox ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__ }}",
        "{% if ''.__class__ is defined %}x{% endif %}",
        "{{ ().__class__.__base__.__subclasses__() }}",
        "{{ messages.__class__ }}",
        "{{ cycler.__init__.__globals__ }}",
        "{{ raise_exception.__globals__ }}",
        "{{ strftime_now.__globals__ }}",
        "{{ lipsum.__globals__ }}",
        "{{ namespace.__init__ }}",
        "{{ dict.mro() }}",
        "{{ self._TemplateReference__context }}",
        "{{ '{0.__class__}'.format('') }}",
        "{{ messages | attr('__class__') }}",
        "{{ messages | map(attribute='__class__') | list }}",
        "{{ messages[0].tool_calls[0].function.arguments._text }}",
        "{{ messages[0].tool_calls[0].function.arguments.__class__ }}",
        "{{ messages[0].items.__self__ }}",
        "{% set ns = namespace() %}{% set ns._secret = 1 %}",
        "{{ namespace(_x=1) }}",
    ],
)
def test_sandbox_blocks_internals(source: str) -> None:
    with pytest.raises(TemplateRenderError):
        ChatTemplate(source).render(call_message('{"k": 1}'))
