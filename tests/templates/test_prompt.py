"""Prompts from OpenChatML conversations, and the text a prompt already wrote of the
assistant's message (what a parser starts from), checked against the parse cases'
reference generation prompts.

The templates and cases are read from ``$OPENCHATML_TEMPLATES`` and ``$OPENCHATML_CASES``
(defaults under ``tests/templates/data``); the tests that need them are skipped when missing.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest
from data_paths import CASES, TEMPLATES

from openchatml import (
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    ResponseFormat,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
)
from openchatml.templates.analysis import analyze_source
from openchatml.templates.environment import ChatTemplate
from openchatml.templates.errors import TemplateError, TemplateRenderError
from openchatml.templates.format import ReasoningFormat
from openchatml.templates.prompt import (
    output_prefix,
    render_prompt,
    role_header,
    template_messages,
    thinking_variables,
)

needs_templates = pytest.mark.skipif(not TEMPLATES.is_dir(), reason=f"no templates in {TEMPLATES}")
needs_cases = pytest.mark.skipif(not (CASES.is_file() and TEMPLATES.is_dir()), reason=f"no cases at {CASES}")


@cache
def template(name: str) -> ChatTemplate:
    return ChatTemplate((TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8"), name=name)


# --- template_messages -------------------------------------------------------------------------

WEATHER = ToolDescription(
    "get_weather",
    "Weather for a city.",
    {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)
NOW = ToolDescription("now", "The time.")
FUNCTIONS = {"functions": ToolNamespaceConfig("functions", None, (WEATHER, NOW))}


def conversation(*messages: Message, developer: DeveloperContent | None = None) -> Conversation:
    head = [Message.system(SystemContent(reasoning_effort=ReasoningEffort.HIGH))]
    head.append(Message.developer(developer or DeveloperContent(instructions="Be brief.", tools=FUNCTIONS)))
    return Conversation.from_messages([*head, *messages])


TURN = conversation(
    Message.user("Weather in Paris, and the time?"),
    Message.assistant("Two calls.", channel="analysis"),
    Message.assistant("Checking.", channel="commentary"),
    Message.tool_call("functions.get_weather", '{"location":"Paris"}', call_id="c1"),
    Message.tool_call("functions.now", "{}"),
    Message.tool_result("functions.get_weather", "Rain", call_id="c1"),
    Message.tool_result("functions.now", "Noon"),
    Message.assistant("Done.", channel="analysis"),
    Message.assistant("Rain at noon."),
    Message.user("Thanks"),
)


def test_template_messages_of_a_turn_with_calls() -> None:
    messages, tools = template_messages(TURN)
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris, and the time?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "reasoning_content": "Two calls.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'},
                },
                {"id": "call00001", "type": "function", "function": {"name": "now", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "content": "Rain", "name": "get_weather", "tool_call_id": "c1"},
        {"role": "tool", "content": "Noon", "name": "now", "tool_call_id": "call00001"},
        {"role": "assistant", "content": "Rain at noon.", "reasoning_content": "Done."},
        {"role": "user", "content": "Thanks"},
    ]
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"location": {"type": "string"}},
                    "required": ["location"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "now",
                "description": "The time.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ]


def test_system_and_developer_texts_merge_into_one_system_message() -> None:
    conv = Conversation.from_messages(
        [
            Message.system(SystemContent(model_identity="You are Ada.")),
            Message.system("Answer in French."),
            Message.developer(
                DeveloperContent(
                    instructions="Be brief.",
                    response_formats=(ResponseFormat("answer", {"type": "object"}),),
                )
            ),
            Message.user("Hi"),
            Message.developer("Later rule."),
        ]
    )
    messages, tools = template_messages(conv)
    assert tools is None
    assert messages[0]["role"] == "system"
    assert messages[0]["content"].startswith(
        "You are Ada.\n\nAnswer in French.\n\nBe brief.\n\n# Response Formats"
    )
    assert messages[1:] == [{"role": "user", "content": "Hi"}, {"role": "system", "content": "Later rule."}]
    # gpt-oss's default identity is not the model's
    assert template_messages([Message.system(), Message.user("Hi")])[0] == [{"role": "user", "content": "Hi"}]


def test_reasoning_after_an_answer_starts_a_new_assistant_message() -> None:
    messages, _ = template_messages(
        [
            Message.user("Q"),
            Message.assistant("A1"),
            Message.assistant("R2", channel="analysis"),
            Message.tool_call("functions.now", "{}", call_id="x"),
            Message.assistant("R3", channel="analysis"),
        ]
    )
    assert messages[1:] == [
        {"role": "assistant", "content": "A1"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "R2",
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "now", "arguments": "{}"}}],
        },
        {"role": "assistant", "content": "", "reasoning_content": "R3"},
    ]


def test_calls_outside_functions_keep_their_recipient() -> None:
    messages, _ = template_messages(
        [Message.user("Q"), Message.tool_call("browser.search", '{"query": "x"}')]
    )
    assert messages[1]["tool_calls"][0]["function"]["name"] == "browser.search"


@needs_templates
def test_render_prompt_with_qwen35() -> None:
    text = render_prompt(template("Qwen3.5-4B"), TURN, thinking=False)
    assert "Be brief.<|im_end|>\n<|im_start|>user\nWeather in Paris, and the time?<|im_end|>\n" in text
    assert "<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n</function>" in text
    assert "<tool_response>\nRain\n</tool_response>\n<tool_response>\nNoon\n</tool_response>" in text
    assert '"name": "now"' in text  # the tools section
    assert text.endswith("<|im_start|>user\nThanks<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert render_prompt(template("Qwen3.5-4B"), TURN, thinking=True).endswith("assistant\n<think>\n")
    assert render_prompt(template("Qwen3.5-4B"), TURN, thinking="none") == text
    # a template variable given as it is still reaches the template, and wins over the switch
    assert render_prompt(template("Qwen3.5-4B"), TURN, enable_thinking=False) == text
    assert render_prompt(template("Qwen3.5-4B"), TURN, thinking=True, enable_thinking=False) == text
    assert render_prompt(template("Qwen3.5-4B"), TURN, add_generation_prompt=False).endswith(
        "Thanks<|im_end|>\n"
    )


@needs_templates
def test_render_prompt_passes_the_reasoning_effort() -> None:
    conv = conversation(Message.user("Hi"))
    assert "Reasoning: high" in render_prompt(template("openai-gpt-oss-120b"), conv)
    assert "Reasoning: low" in render_prompt(template("openai-gpt-oss-120b"), conv, reasoning_effort="low")


# --- thinking switches ---------------------------------------------------------------------------

HY3_LIKE = ReasoningFormat(switch="reasoning_effort", on="high", off="no_think", efforts=("low", "high"))
BOOLEAN = ReasoningFormat(switch="enable_thinking", on=True, off=False)
BUDGET = ReasoningFormat(switch="thinking_budget", on=-1, off=0)
NO_OFF = ReasoningFormat(switch="effort", on="high", efforts=("low", "medium", "high"))


@pytest.mark.parametrize(
    ("reasoning", "thinking", "expected"),
    [
        (HY3_LIKE, None, {}),
        (HY3_LIKE, True, {"reasoning_effort": "high"}),
        (HY3_LIKE, False, {"reasoning_effort": "no_think"}),
        (HY3_LIKE, "none", {"reasoning_effort": "no_think"}),
        (HY3_LIKE, "minimal", {"reasoning_effort": "no_think"}),
        (HY3_LIKE, "low", {"reasoning_effort": "low"}),
        (HY3_LIKE, "medium", {"reasoning_effort": "high"}),  # between two levels: the higher
        (HY3_LIKE, "high", {"reasoning_effort": "high"}),
        (HY3_LIKE, "xhigh", {"reasoning_effort": "high"}),
        (HY3_LIKE, "no_think", {"reasoning_effort": "no_think"}),  # the template's own value
        (BOOLEAN, "none", {"enable_thinking": False}),
        (BOOLEAN, "minimal", {"enable_thinking": False}),
        (BOOLEAN, "low", {"enable_thinking": True}),
        (BOOLEAN, "xhigh", {"enable_thinking": True}),
        (BUDGET, "none", {"thinking_budget": 0}),
        (BUDGET, "medium", {"thinking_budget": -1}),
        (NO_OFF, "none", {"effort": "low"}),  # no off: the least effort
        (NO_OFF, "medium", {"effort": "medium"}),
        (ReasoningFormat(), True, {}),  # no switch
        (ReasoningFormat(), "none", {}),
    ],
)
def test_thinking_variables(reasoning: ReasoningFormat, thinking: bool | str | None, expected: Any) -> None:
    assert thinking_variables(reasoning, thinking) == expected


def test_thinking_variables_refuse_what_is_no_effort() -> None:
    with pytest.raises(ValueError, match="not an effort"):
        thinking_variables(HY3_LIKE, "lots")


@needs_templates
def test_render_prompt_sets_the_templates_own_switch() -> None:
    conv = conversation(Message.user("Hi"))  # a Harmony system message with effort high
    hy3 = template("tencent-Hy3")
    # the Harmony effort does not reach Hy3's switch: its default (no_think) holds
    assert render_prompt(hy3, conv).endswith("<think:opensource></think:opensource>")
    assert render_prompt(hy3, conv, thinking="none").endswith("<think:opensource></think:opensource>")
    assert render_prompt(hy3, conv, thinking="medium").endswith("｜><think:opensource>")
    assert "reasoning_effort:low" in render_prompt(hy3, conv, thinking="low", tools=[])
    seed = template("ByteDance-Seed-OSS")
    assert "thinking budget is 0" in render_prompt(seed, conv, thinking=False)
    assert "thinking budget" not in render_prompt(seed, conv, thinking=True)
    granite = template("ibm-granite-granite-3.3-2B-Instruct")
    fmt = analyze_source(granite.source, name="granite")
    plain = conversation(Message.user("Hi"), developer=DeveloperContent())
    assert "<think></think>" in render_prompt(granite, plain, thinking="high", reasoning=fmt.reasoning)
    assert "<think>" not in render_prompt(granite, plain, thinking="none", reasoning=fmt.reasoning)


PROPERTY_TURNS = {
    "user": conversation(Message.user("Hi"), developer=DeveloperContent()),
    "turn with calls": TURN,
    "history with reasoning": conversation(
        Message.user("Hi"),
        Message.assistant("Greet.", channel="analysis"),
        Message.assistant("Hello."),
        Message.user("Bye"),
    ),
}


ALL_TEMPLATES = sorted(p.stem for p in TEMPLATES.glob("*.jinja")) if TEMPLATES.is_dir() else []


@needs_templates
@pytest.mark.parametrize("name", ALL_TEMPLATES)
def test_switch_on_and_off_render_or_refuse(name: str) -> None:
    """For every template with a switch, every wish renders or fails with a template error,
    a user's message alone renders both ways, and on and off differ."""
    tpl = template(name)
    reasoning = analyze_source(tpl.source, name=name).reasoning
    if not reasoning.switch:
        return
    for label, conv in PROPERTY_TURNS.items():
        for wish in (True, False, "none", "minimal", "low", "medium", "high", "xhigh"):
            try:
                render_prompt(tpl, conv, thinking=wish, reasoning=reasoning)
            except TemplateError:
                assert label != "user", (name, wish)
    user = PROPERTY_TURNS["user"]
    on = render_prompt(tpl, user, thinking=True, reasoning=reasoning)
    assert on != render_prompt(tpl, user, thinking=False, reasoning=reasoning)


@needs_templates
def test_render_prompt_tools_override() -> None:
    text = render_prompt(template("Qwen-Qwen2.5-7B-Instruct"), conversation(Message.user("Hi")), tools=[])
    assert "get_weather" not in text


# --- role_header and output_prefix ---------------------------------------------------------------

USER = [{"role": "user", "content": "Hello"}]


@needs_templates
@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("Qwen3.5-4B", "<|im_start|>assistant\n"),
        ("meta-llama-Llama-3.1-8B-Instruct", "<|start_header_id|>assistant<|end_header_id|>\n\n"),
        ("meetkai-functionary-medium-v3.2", "<|start_header_id|>assistant<|end_header_id|>\n\n"),
        ("deepseek-ai-DeepSeek-V3.2", "<｜Assistant｜>"),
        ("Cohere2MoE", "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"),
        ("openai-gpt-oss-120b", "<|start|>assistant"),
        ("Kimi-K2-Thinking", "<|im_assistant|>assistant<|im_middle|>"),
        ("google-gemma-4-31B-it", "<|turn>model\n"),
        ("tencent-Hy3", "<｜hy_Assistant:opensource｜>"),
        ("poolside-Laguna-S-2.1", "<assistant>"),
        ("GLM-4.7-Flash", "<|assistant|>"),
        ("mistralai-Mistral-Nemo-Instruct-2407", ""),
    ],
)
def test_role_header(name: str, header: str) -> None:
    assert role_header(template(name)) == header


@needs_templates
@pytest.mark.parametrize(
    ("name", "thinking", "prefix"),
    [
        ("Qwen3.5-4B", True, "<think>\n"),  # forced open
        ("Qwen3.5-4B", False, "<think>\n\n</think>\n\n"),  # forced closed
        ("Qwen-QwQ-32B", True, "<think>\n"),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", True, "<think>\n"),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", False, "<think>\n</think>"),
        ("deepseek-ai-DeepSeek-V3.2", True, "<think>"),
        ("Cohere2MoE", None, "<|START_THINKING|>"),
        ("meetkai-functionary-medium-v3.2", None, ">>>"),
        ("Apriel-1.6-15b-Thinker-fixed", None, "Here are my reasoning steps:\n"),
        ("Qwen-Qwen2.5-7B-Instruct", None, ""),  # plain
        ("meta-llama-Llama-3.1-8B-Instruct", None, ""),
        ("openai-gpt-oss-120b", None, ""),
        ("mistralai-Mistral-Nemo-Instruct-2407", None, ""),  # no generation prompt at all
    ],
)
def test_output_prefix_after_a_generation_prompt(name: str, thinking: bool | None, prefix: str) -> None:
    variables = {} if thinking is None else {"enable_thinking": thinking}
    assert output_prefix(template(name), USER, **variables) == prefix
    assert output_prefix(template(name), USER, add_generation_prompt=False, **variables) == ""


PARTIAL = [
    {"role": "user", "content": "Hey there!"},
    {"role": "assistant", "content": "Hello, ", "reasoning_content": "I'm thinking"},
]
PARTIAL_REASONING = [
    {"role": "user", "content": "Hey there!"},
    {"role": "assistant", "content": "", "reasoning_content": "I'm"},
]


@needs_templates
@pytest.mark.parametrize(
    ("name", "markers", "content", "reasoning"),
    [
        ("Qwen3.5-4B", None, "<think>\nI'm thinking\n</think>\n\nHello, ", "<think>\nI'm"),
        ("deepseek-ai-DeepSeek-V3.2", None, "<think>I'm thinking</think>Hello, ", "<think>I'm"),
        # templates that drop the final message's reasoning: written between the markers
        ("Qwen-QwQ-32B", ("<think>", "</think>"), "<think>\nI'm thinking</think>Hello, ", "<think>\nI'm"),
        ("Kimi-K2-Thinking", ("<think>", "</think>"), "<think>I'm thinking</think>Hello, ", "<think>I'm"),
        (
            "mistralai-Ministral-3-14B-Reasoning-2512",
            ("[THINK]", "[/THINK]"),
            "[THINK]I'm thinking[/THINK]Hello, ",
            "[THINK]I'm",
        ),
        (
            "openai-gpt-oss-120b",
            None,
            "<|channel|>analysis<|message|>I'm thinking<|end|>"
            "<|start|>assistant<|channel|>final<|message|>Hello, ",
            "<|channel|>analysis<|message|>I'm",
        ),
        # a template without reasoning keeps only the content
        ("google-gemma-2-2b-it", None, "Hello, ", None),
        ("meetkai-functionary-medium-v3.2", None, ">>>all\nHello, ", None),
    ],
)
def test_output_prefix_of_a_continued_message(
    name: str, markers: tuple[str, str] | None, content: str, reasoning: str | None
) -> None:
    tpl = template(name)
    on = {"enable_thinking": True}
    assert (
        output_prefix(tpl, PARTIAL, continue_final_message=True, reasoning_markers=markers, **on) == content
    )
    assert (
        output_prefix(tpl, PARTIAL, continue_final_message="content", reasoning_markers=markers, **on)
        == content
    )
    if reasoning is None:
        with pytest.raises(TemplateRenderError, match="reasoning"):
            output_prefix(tpl, PARTIAL_REASONING, continue_final_message="reasoning", **on)
    else:
        got = output_prefix(
            tpl, PARTIAL_REASONING, continue_final_message=True, reasoning_markers=markers, **on
        )
        assert got == reasoning


@needs_templates
def test_continuing_needs_something_to_continue() -> None:
    tpl = template("Qwen3.5-4B")
    with pytest.raises(TemplateRenderError, match="needs a final message"):
        output_prefix(tpl, [], continue_final_message=True)
    with pytest.raises(TemplateRenderError, match="no reasoning to continue"):
        output_prefix(tpl, [*USER, {"role": "assistant", "content": "x"}], continue_final_message="reasoning")
    # QwQ writes no reasoning of the final message: without its markers it cannot be continued
    with pytest.raises(TemplateRenderError, match="reasoning markers"):
        output_prefix(template("Qwen-QwQ-32B"), PARTIAL_REASONING, continue_final_message="reasoning")


# --- against the parse cases' reference prompts --------------------------------------------------


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _case_configs() -> list[dict[str, Any]]:
    if not CASES.is_file():
        return []
    seen: dict[str, dict[str, Any]] = {}
    for case in json.loads(CASES.read_text(encoding="utf-8"))["cases"]:
        options = case["options"]
        key = json.dumps(
            [
                case["template"],
                options["enable_thinking"],
                options["continue_final_message"],
                options["add_generation_prompt"],
                options["messages"],
                bool(options["tools"]),
            ]
        )
        seen.setdefault(key, case)
    return list(seen.values())


@needs_cases
@pytest.mark.parametrize("case", _case_configs(), ids=lambda c: f"{c['id']}-{c['template']}")
def test_prefix_matches_the_reference_generation_prompt(case: dict[str, Any]) -> None:
    options, reference = case["options"], case["reference_params"]
    tpl = template(case["template"].removesuffix(".jinja"))
    continued = options["continue_final_message"]
    messages = options["messages"] or [{"role": "user", "content": "Hello"}]
    variables = {} if options["enable_thinking"] is None else {"enable_thinking": options["enable_thinking"]}
    markers = (
        (reference["thinking_start_tag"], reference["thinking_end_tag"])
        if reference["thinking_end_tag"]
        else None
    )
    prefix = output_prefix(
        tpl,
        messages,
        tools=options["tools"] or None,
        add_generation_prompt=options["add_generation_prompt"],
        continue_final_message=continued if continued != "none" else False,
        reasoning_markers=markers,
        **variables,
    )
    written = role_header(tpl, tools=options["tools"] or None, **variables) + prefix
    generation_prompt: str = reference["generation_prompt"]
    if continued == "none":
        assert generation_prompt.endswith(written)
        return
    # the reference writes the same markers, with its own spacing around them
    assert _squash(generation_prompt).endswith(_squash(written))
    final = messages[-1]
    if continued == "content":
        assert prefix.endswith(final["content"])
    expected_reasoning = case["expected"]["reasoning_content"]
    reasoning = final.get("reasoning_content") or ""
    if expected_reasoning:
        assert reasoning in prefix
    else:
        assert reasoning not in prefix
