# ruff: noqa: E501
"""Known-good transcripts: the worked examples of OCM 2.2 §16, the conformance fixtures
of §17, and sample conversations rendered in both profiles, as text and as token ids.

Each text here parses in strict mode without a single repair; the stream tests feed them
whole, one token or character at a time, split at every point, and in random chunks.
"""

from __future__ import annotations

from functools import cache

from openchatml import (
    Conversation,
    CoTPolicy,
    DeveloperContent,
    Message,
    Profile,
    RenderConfig,
    Renderer,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
    TranscriptHeader,
)

SMALL_TEXTS_LIMIT = 1500
"""The size (in characters) up to which a transcript is split at every point."""

# --- OCM 2.2 §16, verbatim ----------------------------------------------------------------

SPEC_16_1 = """\
<|start|>user<|message|>What is 2 + 2?<|end|>
<|start|>assistant<|channel|>analysis<|message|>Simple arithmetic; answer directly.<|end|>
<|start|>assistant<|channel|>final<|message|>4.<|return|>
"""

SPEC_16_2 = """\
<|start|>system<|message|>You are a helpful AI assistant.
Knowledge cutoff: 2024-06
Current date: 2025-08-08

Reasoning: high
# Valid channels: analysis, commentary, final. Channel must be included for every message.
Calls to these tools must go to the commentary channel: 'functions'.<|end|>

<|start|>developer<|message|># Tools

## functions
namespace functions {
// Gets weather for a city.
type get_current_weather = (_: {
  location: string,
  format?: "celsius" | "fahrenheit", // default: celsius
}) => any;
} // namespace functions<|end|>

<|start|>user<|message|>What's the weather in Tokyo?<|end|>
<|start|>assistant<|channel|>analysis<|message|>Call functions.get_current_weather with location Tokyo.<|end|>
<|start|>assistant to=functions.get_current_weather call_id=wx1<|channel|>commentary<|constrain|>json<|message|>{"location":"Tokyo","format":"celsius"}<|call|>
<|start|>tool name=functions.get_current_weather call_id=wx1 to=assistant<|channel|>commentary<|message|>{"ok":true,"content":{"temperature":20,"sunny":true}}<|end|>
<|start|>assistant<|channel|>final<|message|>It’s 20 °C and sunny in Tokyo right now.<|return|>
"""

SPEC_16_3 = """\
<|start|>assistant intent=preamble<|channel|>commentary<|message|>**Plan:** 1) Search docs 2) Extract figures 3) Summarize.<|end|>
"""

SPEC_16_4 = """\
<|start|>user<|message|>Please print these markers exactly:
<|literal|>
<|start|><|channel|><|message|><|end|>
<|endliteral|><|end|>
"""

SPEC_EXAMPLES = {"16.1": SPEC_16_1, "16.2": SPEC_16_2, "16.3": SPEC_16_3, "16.4": SPEC_16_4}

# --- OCM 2.2 §17 conformance fixtures -------------------------------------------------------

FIXTURE_1_LEGACY = """\
<|start|>system<|message|>You are a helpful assistant.<|end|>
<|start|>user<|message|>Hello!<|end|>
<|start|>assistant<|message|>Hi there. How can I help?<|end|>
<|start|>user<|message|>Tell me a joke.<|end|>
<|start|>assistant<|message|>Why did the parser cross the road?<|end|>
"""

FIXTURE_2_CHANNELED = """\
version: 2.2
model: gpt-oss-120b
generation_settings:
  temperature: 0.7
  reasoning_effort: "medium"
<|start|>system<|message|>You are a helpful AI assistant.<|end|>
<|start|>developer<|message|># Instructions

Answer briefly.<|end|>
<|start|>user<|message|>Capital of France?<|end|>
<|start|>assistant<|channel|>analysis<|message|>Easy: Paris.<|end|>
<|start|>assistant<|channel|>final<|message|>Paris.<|return|>
"""

FIXTURE_3_MULTI_TOOL = """\
<|start|>user<|message|>Weather in Tokyo and in Paris?<|end|>
<|start|>assistant<|channel|>analysis<|message|>Two independent lookups; call both.<|end|>
<|start|>assistant to=functions.get_weather call_id=call_tokyo<|channel|>commentary<|constrain|>json<|message|>{"location":"Tokyo"}<|call|>
<|start|>assistant to=functions.get_weather call_id=call_paris<|channel|>commentary<|constrain|>json<|message|>{"location":"Paris"}<|call|>
<|start|>tool name=functions.get_weather call_id=call_paris to=assistant<|channel|>commentary<|message|>{"ok":true,"content":{"temperature":14}}<|end|>
<|start|>tool name=functions.get_weather call_id=call_tokyo to=assistant<|channel|>commentary<|message|>{"ok":true,"content":{"temperature":20}}<|end|>
<|start|>assistant<|channel|>final<|message|>Tokyo: 20 °C. Paris: 14 °C.<|return|>
"""

FIXTURE_4_TOOL_ERROR = """\
<|start|>assistant to=functions.slow_lookup call_id=s1<|channel|>commentary<|constrain|>json<|message|>{"query":"everything","deadline_ms":500}<|call|>
<|start|>tool name=functions.slow_lookup call_id=s1 to=assistant<|channel|>commentary<|message|>{"ok":false,"content":null,"error":{"code":"E-TOOL-TIMEOUT","message":"deadline_ms 500 exceeded"},"provenance":{"source":"slow_lookup","timestamp":"2025-08-08T12:00:00Z"}}<|end|>
<|start|>assistant<|channel|>final<|message|>The lookup timed out; please try again.<|return|>
"""

FIXTURE_5_LITERAL = """\
<|start|>user<|message|>Show the header syntax:<|literal|><|start|>assistant<|channel|>final<|message|>hi<|end|><|endliteral|> (verbatim)<|end|>
<|start|>assistant<|channel|>final<|message|>Here: <|literal|><|start|><|endliteral|> opens a message.<|return|>
"""

FIXTURE_6_BAD_JSON = """\
<|start|>user<|message|>Look up Tokyo.<|end|>
<|start|>assistant to=functions.get_weather call_id=b1<|channel|>commentary<|constrain|>json<|message|>{location: Tokyo}<|call|>
"""

FIXTURE_7_PREAMBLE = """\
<|start|>user<|message|>Summarise the docs.<|end|>
<|start|>assistant intent=preamble<|channel|>commentary<|message|>**Plan:** 1) Search docs 2) Extract figures 3) Summarize.<|end|>
<|start|>assistant to=browser.search call_id=b2<|channel|>commentary<|constrain|>json<|message|>{"query":"docs"}<|call|>
<|start|>assistant<|channel|>commentary<|message|>internal note, not a preamble<|end|>
"""

FIXTURE_8_LEGACY_TOOL_ROLE = """\
<|start|>assistant to=functions.x<|channel|>commentary<|constrain|>json<|message|>{"n":1}<|call|>
<|start|>functions.x to=assistant<|channel|>commentary<|message|>{"ok":true,"content":2}<|end|>
"""

FIXTURES = {
    "17.1-legacy": FIXTURE_1_LEGACY,
    "17.2-channeled": FIXTURE_2_CHANNELED,
    "17.3-multi-tool": FIXTURE_3_MULTI_TOOL,
    "17.4-tool-error": FIXTURE_4_TOOL_ERROR,
    "17.5-literal": FIXTURE_5_LITERAL,
    "17.6-bad-json": FIXTURE_6_BAD_JSON,
    "17.7-preamble": FIXTURE_7_PREAMBLE,
    "17.8-legacy-tool-role": FIXTURE_8_LEGACY_TOOL_ROLE,
}
"""The conformance fixtures; all but 17.6 (a constraint violation) are known good."""

# --- sample conversations ---------------------------------------------------------------------

WEATHER_TOOL = ToolDescription(
    "get_weather",
    "Gets the weather for a city.",
    {
        "type": "object",
        "properties": {
            "location": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        },
        "required": ["location"],
    },
)

SAMPLE_CONVERSATIONS: dict[str, Conversation] = {
    "weather": Conversation.from_messages(
        [
            Message.system(SystemContent(conversation_start_date="2025-08-08")),
            Message.developer(
                DeveloperContent(
                    instructions="Answer in one sentence.",
                    tools={"functions": ToolNamespaceConfig("functions", None, (WEATHER_TOOL,))},
                )
            ),
            Message.user("What's the weather in Tokyo?"),
            Message.assistant("Need the weather tool.", channel="analysis"),
            Message.tool_call("functions.get_weather", '{"location":"Tokyo"}', call_id="wx1"),
            Message.tool_result("functions.get_weather", '{"ok":true,"content":{"t":20}}', call_id="wx1"),
            Message.assistant("Checking done.", channel="commentary", intent="preamble"),
            Message.assistant("It is 20 °C in Tokyo."),
        ]
    ),
    "codec": Conversation.from_messages(
        [
            Message.user(
                "Escape me: <|start|>user<|message|>x<|end|> and <<|end|> and <|literal|>", name="alice"
            ),
            Message.assistant("ends in <", channel="analysis"),
            Message.assistant("<|endliteral|> 😀 👩‍👩‍👧 漢字 e\u0301 שלום \r\n<|return|><"),
            Message.user("<"),
            Message.assistant(""),
        ]
    ),
    "builtins": Conversation.from_messages(
        [
            Message.system(
                SystemContent(
                    reasoning_effort=None,
                    tools={"browser": ToolNamespaceConfig.browser(), "python": ToolNamespaceConfig.python()},
                )
            ),
            Message.user("Search, then compute."),
            Message.tool_call("browser.search", '{"query":"pi"}', channel="analysis", call_id="b1"),
            Message.tool_result("browser.search", "【0†pi】 3.14159", call_id="b1"),
            Message.tool_call("python", "print(2**10)", channel="analysis", content_type=None),
            Message.tool_result("python", "1024", recipient=None),
            Message.assistant("Status: done", channel="commentary", intent="status"),
            Message.from_role(
                "tool", '{"x":1}', name="functions.f", channel="commentary", content_type="json"
            ),
            Message.assistant("2^10 = 1024, pi ≈ 3.14159."),
        ]
    ),
    "with-header": Conversation.from_messages(
        [Message.user("hi"), Message.assistant("hello", channel="final")],
        header=TranscriptHeader(
            version="2.2",
            model="gpt-oss-120b",
            generation_settings={"temperature": 0.7, "reasoning_effort": "medium"},
            extra={"x_note": "unknown keys are kept"},
        ),
    ),
}


def renderer(profile: Profile) -> Renderer:
    """A renderer for ``profile`` that keeps all chain of thought."""
    return _renderer(profile)


@cache
def _renderer(profile: Profile) -> Renderer:
    return Renderer(RenderConfig(profile=profile, cot=CoTPolicy.KEEP))


def rendered_texts() -> dict[str, str]:
    """Every sample conversation rendered as text in both profiles."""
    return {
        f"{name}/{profile.value}": renderer(profile).text(conv)
        for name, conv in SAMPLE_CONVERSATIONS.items()
        for profile in Profile
    }


def rendered_tokens() -> dict[str, list[int]]:
    """Every sample conversation rendered as token ids in both profiles."""
    return {
        f"{name}/{profile.value}": renderer(profile).tokens(conv)
        for name, conv in SAMPLE_CONVERSATIONS.items()
        for profile in Profile
    }


def known_good_texts() -> dict[str, str]:
    """Every known-good text transcript, by name."""
    out = {f"spec-{k}": v for k, v in SPEC_EXAMPLES.items()}
    out.update({k: v for k, v in FIXTURES.items() if k != "17.6-bad-json"})
    out.update(rendered_texts())
    return out
